"""Check tests/engines/lmcache_model.py (the independent model CI certifies the lmcache-lru and
lmcache-fifo dialects against) against LMCache's real LocalCPUBackend, through adapter.py, request
by request: each request's hit tokens before it runs, and the resident count after it (on the
Mooncake traces, after the last). On random traces, the model is also checked against the same
cache driven through LMCacheEngine's own lookup and store (ThroughTheEngine), which shows that the
adapter's direct calls to the backend are the engine's. Then it measures how far LMCache's LRU is
from kvspec's canonical LRU on the conversation trace. Run it in the LMCache venv, with kvspec installed there (README.md):

    /work/engines/lmcache/venv/bin/python docs/certifications/lmcache/check_model.py [--quick]

It prints one line a run and exits 1 at the first disagreement between the engine and the model.
"""

import argparse
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("LMCACHE_TRACK_USAGE", "false")  # LMCacheEngine reports usage to stats.lmcache.ai otherwise

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2] / "tests" / "engines")]

import torch  # noqa: E402
from adapter import LMCacheLocalCPU  # noqa: E402
from lmcache.v1.cache_engine import LMCacheEngine  # noqa: E402
from lmcache.v1.gpu_connector.mock_gpu_connector import MockGPUConnector  # noqa: E402
from lmcache.v1.token_database import ChunkedTokenDatabase  # noqa: E402
from lmcache_model import LMCacheModel  # noqa: E402

from kvspec.adapters.interface import AdapterConfig  # noqa: E402
from kvspec.reference import ReplayConfig, replay  # noqa: E402
from kvspec.reference.trace import TraceFile, bundled_trace_path  # noqa: E402

Request = tuple[list[int], int]


def mooncake(name: str) -> list[Request]:
    return [(r.hash_ids, r.input_length) for _, r in TraceFile(bundled_trace_path(f"{name}_trace.jsonl.gz")).records()]


def random_trace(rng: random.Random, block_size: int) -> list[Request]:
    """Short alphabets, so that prefixes recur and diverge; lengths up to 16 blocks, past every
    pool of 1 to 12; a partial last block most of the time; up to 60 requests, as it takes many
    for a chunk resident past a hole to be stored again (FIFO leaves it where it is)."""
    alphabet = rng.randint(1, 4)
    requests = []
    for _ in range(rng.randint(1, 60)):
        n = rng.randint(1, 16)
        hash_ids = [rng.randrange(alphabet) for _ in range(n)]
        requests.append((hash_ids, rng.randint((n - 1) * block_size + 1, n * block_size)))
    return requests


class ThroughTheEngine(LMCacheLocalCPU):
    """The adapter's cache, driven instead through LMCacheEngine's own lookup, retrieve,
    lookup_unpin and store, with the MockGPUConnector LMCache ships for running without a GPU, in
    the order its vLLM connector calls them (vllm_v1_adapter.py:1431, 855-868, 1145-1236): the
    check that adapter.py's direct calls to the backend are the ones the engine makes. 20-35 times
    slower (an engine and its storage manager's thread a configuration), so random traces only;
    its thread keeps the process alive until close()."""

    def configure(self, config: AdapterConfig) -> None:
        super().configure(config)
        assert self.backend is not None and self.tokens is not None
        metadata, kv_shape, pool = self.tokens.metadata, (1, 2, config.block_size, 1, 1), self.backend.memory_allocator.size
        self.backend.close()  # the engine makes its own backend from the same configuration
        self.engine = LMCacheEngine(self.backend.config, metadata, ChunkedTokenDatabase(self.backend.config, metadata),
                                    MockGPUConnector(kv_shape), None, None)
        self.engine.post_init()
        assert self.engine.storage_manager is not None
        self.backend = self.engine.storage_manager.storage_backends["LocalCPUBackend"]
        assert self.backend.memory_allocator.size == pool
        self.requests = 0

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return self.engine.lookup(tokens=self.prompt(hash_ids, input_length), pin=False)

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        block_size = self.configured()[1]
        prompt = self.prompt(hash_ids, len(hash_ids) * block_size if input_length is None else input_length)
        self.requests += 1
        request = f"r{self.requests}"
        hit = self.engine.lookup(tokens=prompt, lookup_id=request, pin=True)
        if hit - (hit == len(prompt)) > 0:  # something to load (vllm_v1_adapter.py:1451-1455, 1527-1528)
            self.engine.retrieve(prompt[:hit], torch.ones(hit, dtype=torch.bool), req_id=request, slot_mapping=torch.arange(hit))
            self.engine.lookup_unpin(request)
        self.engine.lookup_unpin(request)
        whole = len(prompt) // block_size * block_size
        if hit < whole:
            mask = torch.ones(whole, dtype=torch.bool)
            mask[:hit] = False
            self.engine.store(prompt[:whole], mask=mask, req_id=request, slot_mapping=torch.arange(whole))

    def close(self) -> None:
        if getattr(self, "engine", None) is not None:
            self.engine.close()  # closes the backend and ends the storage manager's thread
            self.engine, self.backend = None, None
        super().close()

    def prompt(self, hash_ids: list[int], input_length: int) -> list[int]:
        block_size = self.configured()[1]
        return [h for h in hash_ids for _ in range(block_size)][:input_length]


def lockstep(requests: list[Request], config: AdapterConfig, every_count: bool,
             engine_class: type = LMCacheLocalCPU) -> tuple[list[int], int]:
    """Both sides through the protocol's calls; the engine's hits and final count, or exit at the first difference."""
    engine, model = engine_class(), LMCacheModel()
    engine.configure(config)
    model.configure(config)
    hits = []
    try:
        for index, (hash_ids, input_length) in enumerate(requests):
            hit, expected = engine.hit_tokens(hash_ids, input_length), model.hit_tokens(hash_ids, input_length)
            engine.access(hash_ids, input_length=input_length)
            model.access(hash_ids, input_length=input_length)
            count = engine.resident_count() if every_count or index == len(requests) - 1 else None
            if hit != expected or (count is not None and count != model.resident_count()):
                counts = f"resident {count} (model {model.resident_count()})"
                print(f"DIFFERENT at request {index} of {config}: hit {hit} (model {expected}), {counts}")
                print(f"requests: {requests[: index + 1]}")
                sys.exit(1)
            hits.append(hit)
        return hits, engine.resident_count()
    finally:
        engine.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="random traces only, fewer of them")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    examples = 100 if args.quick else 600
    for engine_class, label, share in ((LMCacheLocalCPU, "adapter.py", 1), (ThroughTheEngine, "through LMCacheEngine", 6)):
        for policy in ("lru", "fifo"):
            start = time.perf_counter()
            for _ in range(examples // share):
                block_size = rng.randint(1, 4)
                config = AdapterConfig(policy=policy, capacity=rng.randint(1, 12), block_size=block_size)
                lockstep(random_trace(rng, block_size), config, True, engine_class)
            seconds = time.perf_counter() - start
            traces = f"{examples // share} traces (capacities 1-12, block sizes 1-4)"
            print(f"random {policy}, {label}: {traces} agree, {seconds:.1f} s", flush=True)
    if args.quick:
        return
    for name in ("conversation", "synthetic"):
        requests = mooncake(name)
        for policy in ("lru", "fifo"):
            for capacity in (64, 256, 1024, 4096):
                start = time.perf_counter()
                hits, count = lockstep(requests, AdapterConfig(policy=policy, capacity=capacity, block_size=512), every_count=False)
                line = f"{name} {policy} capacity {capacity}: {len(requests)} requests agree, hit tokens {sum(hits):,}, resident {count:,}"
                if name == "conversation" and policy == "lru":
                    line += "; " + against_canonical_lru(name, capacity, hits)
                print(f"{line} ({time.perf_counter() - start:.0f} s)", flush=True)


def against_canonical_lru(name: str, capacity: int, hits: list[int]) -> str:
    """The issue's claim: LMCache's LRU agrees with kvspec's canonical LRU on every request. Asked
    of the trace as it is, and of the trace cut to whole blocks (each request without its partial
    last block), which LMCache never caches."""
    records = [record for _, record in TraceFile(bundled_trace_path(f"{name}_trace.jsonl.gz")).records()]
    whole = [r.model_copy(update={"hash_ids": r.hash_ids[: r.input_length // 512], "input_length": r.input_length // 512 * 512})
             for r in records]
    assert all(r.input_length for r in whole), "a request with no whole block"
    traces = (("as it is", records), ("cut to whole blocks", whole))
    return "; ".join(canonical_differences(label, trace, capacity, hits) for label, trace in traces)


def canonical_differences(label: str, records: list, capacity: int, hits: list[int]) -> str:
    result = replay(enumerate(records, start=1), ReplayConfig(policy="lru", capacity=capacity, block_size=512), per_request=True)
    assert result.per_request is not None
    canonical = [r.hit_tokens for r in result.per_request]
    differ = [i for i, (a, b) in enumerate(zip(hits, canonical)) if a != b]
    first = f", the first at request {differ[0]} (LMCache {hits[differ[0]]}, kvspec {canonical[differ[0]]})" if differ else ""
    return f"kvspec's canonical LRU on the trace {label}: {result.total_hit_tokens:,} hit tokens, differs on {len(differ)} requests{first}"


if __name__ == "__main__":
    main()
