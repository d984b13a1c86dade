"""Check the served replay in LMCache's dialect (reference/dialects/in_flight_lmcache.py, LIFE-LMCACHE-1
to LIFE-LMCACHE-8) against LMCache 0.5.6's real LocalCPUBackend: every operation of the pool is made on
both, as the vLLM connector makes it (adapter.py's calls, which check_model.py's ThroughTheEngine shows
are LMCacheEngine's): a lookup pins the resident prefix of a request's chunks and touches it
(``batched_contains(keys, pin=True)``, ``touch_cache()``), a read unpins it (``unpin(key)``, as
``lookup_unpin`` does), a store allocates then puts (``allocate(..., busy_loop=False)`` until one fails,
``batched_submit_put_task``, ``ref_count_down``). After each, the lookup's hit, the chunks stored and the
pin count of each chunk the operation named are compared, and every 64 steps and at the end the backend's
hot cache, in order, with the pool's queue. First both bundled traces served at 256, 1,024 and 4,096
blocks, LRU and FIFO; then random operations of the pool on small stores, in any order: stores made
while other requests hold pins, which no served replay makes (LIFE-LMCACHE-4), so that the pin rule
(LIFE-LMCACHE-5: a pinned chunk is never a victim, a store stops when every chunk is pinned) is the
engine's. Run it in the LMCache venv, with kvspec installed there (README.md):

    /work/engines/lmcache/venv/bin/python docs/certifications/lmcache/check_served.py [--quick]

It prints one line a run and exits 1 at the first difference.
"""

import argparse
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

from adapter import LMCacheLocalCPU  # noqa: E402
from lmcache.v1.memory_management import MemoryFormat  # noqa: E402

from kvspec.adapters.interface import AdapterConfig  # noqa: E402
from kvspec.reference import ReplayConfig  # noqa: E402
from kvspec.reference.dialects import dialect_for  # noqa: E402
from kvspec.reference.dialects.in_flight_lmcache import LmcachePool, LmcacheRequest, LmcacheServer  # noqa: E402
from kvspec.reference.service import ServiceModel  # noqa: E402
from kvspec.reference.trace import Request, TraceFile, bundled_trace_path  # noqa: E402


class Different(Exception):
    pass


class Mirrored(LmcachePool):
    """LmcachePool, each operation made on LMCache's backend too and compared."""

    def mirror(self, engine: LMCacheLocalCPU) -> "Mirrored":
        self.engine, self.keys_of, self.block_of, self.operations = engine, {}, {}, 0  # type: ignore[attr-defined]
        self.pinned_stores = 0  # type: ignore[attr-defined]  # the stores made while a chunk was pinned
        return self

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        super().arrive(rid, hash_ids, input_length)
        request, keys = self.requests[rid], self.engine.keys(hash_ids, input_length)  # type: ignore[attr-defined]
        assert len(keys) == len(request.blocks)
        self.keys_of[id(request)] = keys  # type: ignore[attr-defined]
        self.block_of.update(zip(keys, request.blocks))  # type: ignore[attr-defined]

    def lookup(self, rid: int) -> int:
        k = super().lookup(rid)
        backend, keys = self.engine.backend, self.keys_of[id(self.requests[rid])]  # type: ignore[attr-defined]
        hit = backend.batched_contains(keys, pin=True)
        backend.touch_cache()
        self.same(f"lookup of {rid}: hit {hit} chunks (kvspec {k})", hit == k, keys[:k])
        return k

    def read(self, rid: int) -> None:
        request = self.requests[rid]
        keys = self.keys_of[id(request)][:len(request.pinned)]  # type: ignore[attr-defined]
        super().read(rid)
        for key in keys:
            self.engine.backend.unpin(key)  # type: ignore[attr-defined]
        self.same(f"read of {rid}", True, keys)

    def put(self, request: LmcacheRequest, whole: int) -> None:
        saved, before = request.saved, self.store.stored
        self.pinned_stores += bool(self.pins) and whole > saved  # type: ignore[attr-defined]
        super().put(request, whole)
        engine = self.engine  # type: ignore[attr-defined]
        backend, keys = engine.backend, self.keys_of[id(request)][saved:whole]  # type: ignore[attr-defined]
        stored, objects = [], []
        for key in keys:
            memory = backend.allocate(engine.shapes, engine.dtypes, fmt=MemoryFormat.KV_2LTD, eviction=True, busy_loop=False)
            if memory is None:
                break
            stored.append(key)
            objects.append(memory)
        put = sum(1 for key in stored if key not in backend.hot_cache)  # a put of a resident key does nothing
        if objects:
            backend.batched_submit_put_task(stored, objects)
        for memory in objects:
            memory.ref_count_down()
        self.same(f"store of {len(keys)} chunks: {put} put (kvspec {self.store.stored - before})", put == self.store.stored - before, keys)

    def same(self, what: str, agrees: bool, keys: list) -> None:
        """The operation's own figure, and each named chunk's pin count and residence, as the pool has them."""
        self.operations += 1  # type: ignore[attr-defined]
        hot = self.engine.backend.hot_cache  # type: ignore[attr-defined]
        for key in keys:
            block = self.block_of[key]  # type: ignore[attr-defined]
            pins = hot[key].meta.pin_count if key in hot else None
            agrees = agrees and (key in hot) == self.store.is_resident(block) and (pins or 0) == self.pins.get(block, 0)
        if not agrees:
            raise Different(what)

    def whole(self, where: str) -> None:
        """The backend's hot cache, in order, against the pool's queue; and every pin count."""
        hot = self.engine.backend.hot_cache  # type: ignore[attr-defined]
        queue = self.store.cache.recency if hasattr(self.store.cache, "recency") else self.store.cache.arrival  # type: ignore[union-attr]
        pins = {self.block_of[key]: memory.meta.pin_count for key, memory in hot.items() if memory.meta.pin_count}  # type: ignore[attr-defined]
        if [self.block_of[key] for key in hot] != list(queue) or pins != dict(self.pins):  # type: ignore[attr-defined]
            raise Different(f"the hot cache {where}: {len(hot)} chunks, {len(pins)} pinned (kvspec {len(queue)}, {len(self.pins)})")


class MirroredServer(LmcacheServer):
    def empty_pool(self, config: ReplayConfig) -> Mirrored:  # type: ignore[override]
        pool = super().empty_pool(config)
        engine = LMCacheLocalCPU()
        engine.configure(AdapterConfig(policy=config.policy, capacity=config.capacity, block_size=config.block_size))
        return Mirrored(pool.store).mirror(engine)

    def run_step(self, chunks: list[tuple[int, int]]) -> None:
        super().run_step(chunks)
        if self.steps % 64 == 0:
            self.pool.whole(f"after step {self.steps}")  # type: ignore[attr-defined]


def served(name: str, policy: str, capacity: int) -> str:
    records = list(TraceFile(bundled_trace_path(f"{name}_trace.jsonl.gz")).requests())
    config = ReplayConfig(policy=policy, capacity=capacity, block_size=512, dialect=dialect_for(policy, "lmcache"))
    server = MirroredServer(config, ServiceModel(), None)
    try:
        result = server.serve(records, name)
        server.pool.whole("at the end")  # type: ignore[attr-defined]
    finally:
        server.pool.engine.close()  # type: ignore[attr-defined]
    pool = server.pool
    return (f"{pool.operations:,} operations agree, hit tokens {result.total_hit_tokens:,}, "  # type: ignore[attr-defined]
            f"at most {result.peak_referenced_blocks} chunks pinned, {pool.pinned_stores} stores made while one was")  # type: ignore[attr-defined]


def random_operations(rng: random.Random, policy: str) -> tuple[int, int]:
    """One small store through random operations: requests arrive, are looked up (pinning), read
    (unpinning) and store some of their chunks, in any order; several hold pins at once."""
    capacity, block_size = rng.randint(1, 8), rng.randint(1, 4)
    config = ReplayConfig(policy, capacity, block_size, dialect=dialect_for(policy, "lmcache"))
    server = MirroredServer(config, ServiceModel(), None)
    pool = server.pool
    try:
        alphabet, waiting, looked = rng.randint(1, 3), [], []
        for rid in range(rng.randint(1, 40)):
            n = rng.randint(1, 8)
            pool.arrive(rid, [rng.randrange(alphabet) for _ in range(n)], rng.randint((n - 1) * block_size + 1, n * block_size))
            waiting.append(rid)
            while waiting and rng.random() < 0.6:
                looked.append(waiting.pop(0))
                pool.lookup(looked[-1])
            for rid in [r for r in looked if rng.random() < 0.3]:
                request = pool.requests[rid]
                if rng.random() < 0.5:
                    pool.read(rid)
                if request.saved < len(request.blocks):
                    pool.put(request, rng.randint(request.saved + 1, len(request.blocks)))
            pool.whole(f"after request {rid}")  # type: ignore[attr-defined]
        return pool.operations, pool.pinned_stores  # type: ignore[attr-defined]
    finally:
        pool.engine.close()  # type: ignore[attr-defined]


def check(rng: random.Random, quick: bool) -> None:
    """Random operations of the pool, then (unless quick) both traces served: one line a run."""
    for policy in ("lru", "fifo"):
        start, operations, pinned = time.perf_counter(), 0, 0
        runs = 200 if quick else 1000
        for _ in range(runs):
            made = random_operations(rng, policy)
            operations, pinned = operations + made[0], pinned + made[1]
        print(f"random {policy}: {runs} stores (capacities 1-8, block sizes 1-4), {operations:,} operations agree, "
              f"{pinned:,} stores made while a chunk was pinned ({time.perf_counter() - start:.0f} s)", flush=True)
    for name in () if quick else ("conversation", "synthetic"):
        for policy in ("lru", "fifo"):
            for capacity in (256, 1024, 4096):
                start = time.perf_counter()
                line = served(name, policy, capacity)
                print(f"{name} {policy} capacity {capacity}: {line} ({time.perf_counter() - start:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="the served replay in lmcache against LMCache's LocalCPUBackend")
    parser.add_argument("--seed", type=int, default=31, help="of the random operations")
    parser.add_argument("--quick", action="store_true", help="random operations only, fewer of them")
    options = parser.parse_args()
    try:
        check(random.Random(options.seed), options.quick)
    except Different as difference:
        print(f"DIFFERENT: {difference}")
        sys.exit(1)


if __name__ == "__main__":
    main()
