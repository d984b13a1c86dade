"""Drives random interleavings of the lifecycle's operations (spec/adapter-protocol.md section 7) through
adapter.py's lifecycle, vLLM's real KVCacheManager with several requests in flight, through kvspec's
reference, reference/dialects/in_flight_lifecycle.py (spec/dialects.md LIFE-VLLM-10 to LIFE-VLLM-16),
and through the independent model CI holds the reference to, tests/engines/vllm_model.py, side by
side, and prints every difference.

    $V/python docs/certifications/vllm/check_lifecycle.py [--interleavings N] [--seed S]

Run it in the venv holding vLLM ($V of README.md's "Installing it"), with kvspec installed there too
(pip install -e). Each interleaving (seeded: interleaving i of seed S draws from random.Random(S *
10**6 + i)) is a pool of 1 to 16 blocks of 1 to 4 tokens, and 10 to 120 operations over up to 6
request ids, each operation one the state allows (PROTO-36), drawn with weights: arrivals whose hash
ids come from an alphabet of 1 to 4 ids or extend a prefix of an earlier request (shared and
divergent prefixes), a partial last block one time in three, requests of up to one block more than
the pool and a few of up to twice it (so nearly full pools, and allocations and decodes refused);
lookups, allocations, computes to a random block, decodes, finishes and preemptions. Then --large
interleavings (default 100) the same way on pools of 64 to 1,024 blocks of 16 tokens, 100 to 300
operations each, most requests at most a quarter of the pool, where the adapter's speed is that of
a pool of a realistic size.

It compares each answer (lookup's k, allocate's and decode's made, finish's hit and recomputed tokens)
of the three and, after every operation, vLLM's pool and the model's each with the reference's: the
free block count, the cached blocks (a multiset: each vLLM or model block hash named by the
reference's block at the same position of the same request, one name a hash and one hash a name) and
the free queue, head to tail (None: a block holding no hash). An interleaving stops at its first
difference, which is printed; the next goes on. Exit status 1 if any differs. The time the adapter's
own calls take is measured apart, for its speed.
"""

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

from vllm.v1.core.kv_cache_utils import get_block_hash

from kvspec.adapters.interface import AdapterConfig
from kvspec.reference import ReplayConfig
from kvspec.reference.caches import pool_for
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight_lifecycle import VllmLifecycle

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[3] / "tests" / "engines"))
from adapter import VllmPrefixCache  # noqa: E402  (beside this script, not a package)
from vllm_model import VllmModel  # noqa: E402  (kvspec's tests, not a package here)

VLLM = dialect_for("lru", "vllm")
MAX_IDS = 6
UNNAMED = "a block kvspec never named"
WEIGHTS = {"arrive": 3, "lookup": 2, "allocate": 4, "compute": 4, "decode": 3, "finish": 2, "preempt": 1}


class Difference(Exception):
    """The first operation of an interleaving where vLLM and the reference differ."""


class Pair:
    """One interleaving's three pools, the adapter's (vLLM), the model's and the reference's, with the block names paired."""

    def __init__(self, capacity: int, block_size: int, tally: Counter[str]) -> None:
        self.vllm, self.model, self.tally = VllmPrefixCache(), VllmModel(), tally
        self.vllm.configure(AdapterConfig("lru", capacity, block_size, 0.1, 3))
        self.model.configure(AdapterConfig("lru", capacity, block_size, 0.1, 3))
        factory = pool_for(ReplayConfig("lru", capacity, block_size, dialect=VLLM))
        self.kvspec: VllmLifecycle = factory()
        self.name_of: dict[bytes, int] = {}  # vLLM block hash -> the reference's block
        self.hash_of: dict[int, bytes] = {}
        self.paired: Counter[int] = Counter()  # per request: positions paired so far
        self.model_name_of: dict[int, int] = {}  # the model's block hash -> the reference's block
        self.model_hash_of: dict[int, int] = {}

    def operation(self, where: str, op: str, rid: int, *args: object) -> object:
        """The operation made by both, timed on vLLM's side; its answers and then the pools compared."""
        if op == "arrive":
            self.paired[rid] = 0  # an id is free again once its request finishes (PROTO-35)
        start = time.perf_counter()
        theirs = getattr(self.vllm, op)(rid, *args)
        self.tally["adapter_seconds_us"] += round((time.perf_counter() - start) * 1e6)
        ours, modelled = getattr(self.kvspec, op)(rid, *args), getattr(self.model, op)(rid, *args)
        self.tally["operations"] += 1
        self.tally[op] += 1
        if op == "finish":
            theirs, ours, modelled = ((done.hit_tokens, done.recomputed_tokens) for done in (theirs, ours, modelled))
        if theirs != ours or theirs != modelled:
            raise Difference(f"{where}: {op}{(rid, *args)}: vLLM {theirs}, kvspec {ours}, the model {modelled}")
        if op in ("allocate", "decode") and not ours:
            self.tally[f"{op}_refused"] += 1
        if op != "finish":
            self.pair(where, rid)
        model = self.model_pools()
        for part, (vllm_part, kvspec_part) in self.pools().items():
            if vllm_part != kvspec_part:
                raise Difference(f"{where}: after {op}{(rid, *args)}, the {part} differ: vLLM {vllm_part}, kvspec {kvspec_part}")
            if model[part] != kvspec_part:
                raise Difference(f"{where}: after {op}{(rid, *args)}, the {part} differ: the model {model[part]}, kvspec {kvspec_part}")
        self.tally["held_twice"] += len(self.kvspec.pool.block_of) > len(self.kvspec.pool.slots_of)
        return ours

    def pair(self, where: str, rid: int) -> None:
        """LIFE-VLLM-2: the request's blocks named by both so far, position by position, one name one hash."""
        hashes = self.vllm.in_flight[rid].request.block_hashes
        blocks = self.kvspec.pool.requests[rid].blocks
        for position in range(self.paired[rid], min(len(hashes), len(blocks))):
            block_hash, block = hashes[position], blocks[position]
            if self.name_of.setdefault(block_hash, block) != block or self.hash_of.setdefault(block, block_hash) != block_hash:
                raise Difference(f"{where}: position {position} of request {rid} is kvspec's block {block}, and vLLM's hash names "
                                 f"{self.name_of[block_hash]}")
        for block_hash, block in zip(self.model.in_flight[rid].block_hashes, blocks, strict=False):
            if self.model_name_of.setdefault(block_hash, block) != block or self.model_hash_of.setdefault(block, block_hash) != block_hash:
                raise Difference(f"{where}: a position of request {rid} is kvspec's block {block}, and the model's hash names "
                                 f"{self.model_name_of[block_hash]}")
        self.paired[rid] = max(self.paired[rid], min(len(hashes), len(blocks)))

    def pools(self) -> dict[str, tuple[object, object]]:
        """(vLLM's, kvspec's): the free blocks, the cached blocks and the free queue, head first."""
        block_pool, pool = self.vllm.configured().block_pool, self.kvspec.pool
        queue = [self.named(block.block_hash) for block in block_pool.free_block_queue.get_all_free_blocks()]
        cached = Counter(self.named(block.block_hash) for block in block_pool.blocks if block.block_hash is not None)
        return {"free blocks": (block_pool.get_num_free_blocks(), pool.free()),
                "cached blocks": (cached, Counter(pool.block_of.values())),
                "free queues": (queue, [None] * pool.empty + [pool.block_of[slot] for slot in pool.queue])}

    def model_pools(self) -> dict[str, object]:
        """The model's free blocks, cached blocks and free queue, named as pools() names vLLM's."""
        queue, names = self.model.free_queue, self.model_name_of
        held = [None if b.block_hash is None else names.get(b.block_hash, UNNAMED) for b in [*queue.front, *queue.back.values()]]
        return {"free blocks": len(queue),
                "cached blocks": Counter(names.get(h, UNNAMED) for h, holders in self.model.cached.blocks.items() for _ in holders),
                "free queues": held[:len(queue.front)] + [None] * (queue.last_id - queue.next_unused + 1) + held[len(queue.front):]}

    def named(self, block_hash: object) -> int | str | None:
        return None if block_hash is None else self.name_of.get(get_block_hash(block_hash), UNNAMED)


def arrival(rng: random.Random, earlier: list[list[int]], capacity: int, block_size: int, alphabet: int,
            part: int) -> tuple[list[int], int]:
    """Hash ids from the alphabet, or an earlier request's prefix then its own; at most a part of the pool and
    one block more, but one time in eight up to twice the pool; a partial last block one time in three."""
    blocks = rng.randint(1, capacity // part + 1) if rng.random() < 0.875 else rng.randint(1, 2 * capacity)
    if earlier and rng.random() < 0.6:
        base = rng.choice(earlier)
        ids = base[:rng.randint(1, len(base))]
        ids = (ids + [rng.randint(1, alphabet) for _ in range(blocks)])[:max(blocks, 1)] if rng.random() < 0.7 else ids
    else:
        ids = [rng.randint(1, alphabet) for _ in range(blocks)]
    length = len(ids) * block_size - (rng.randint(1, block_size - 1) if block_size > 1 and rng.random() < 0.33 else 0)
    return ids, length


# the capacities, block sizes and operation counts an interleaving draws from, and the part of the pool most requests take at most
SMALL = ((1, 16), (1, 4), (10, 120), 1)
LARGE = ((64, 1024), (16, 16), (100, 300), 4)


def interleaving(rng: random.Random, tally: Counter[str], sizes: tuple) -> None:
    capacities, block_sizes, lengths, part = sizes
    capacity, block_size, alphabet = rng.randint(*capacities), rng.randint(*block_sizes), rng.randint(1, 4)
    pair, earlier = Pair(capacity, block_size, tally), []
    waiting: dict[int, int] = {}  # rid -> its block count
    running: dict[int, list[int]] = {}  # rid -> [blocks computed, block count]
    for number in range(rng.randint(*lengths)):
        free_ids = [rid for rid in range(MAX_IDS) if rid not in waiting and rid not in running]
        allowed = {"arrive": free_ids, "lookup": sorted(waiting), "allocate": sorted(waiting),
                   "compute": [r for r, (c, n) in running.items() if c < n], "decode": [r for r, (c, n) in running.items() if c == n],
                   "finish": [r for r, (c, n) in running.items() if c == n], "preempt": sorted(running)}
        ops = [op for op, rids in allowed.items() if rids]
        op = rng.choices(ops, [WEIGHTS[o] for o in ops])[0]
        rid = rng.choice(allowed[op])
        where = f"operation {number} (pool {capacity} x {block_size})"
        if op == "arrive":
            ids, length = arrival(rng, earlier, capacity, block_size, alphabet, part)
            earlier.append(ids)
            pair.operation(where, op, rid, ids, length)
            waiting[rid] = len(ids)
            tally["arrivals"] += 1
            tally["partial_last_block"] += length < len(ids) * block_size
            tally["longer_than_pool"] += len(ids) > capacity
        elif op == "allocate":
            if pair.operation(where, op, rid):
                running[rid] = [0, waiting.pop(rid)]
        elif op == "compute":
            computed, count = running[rid]
            upto = rng.randint(computed + 1, count)
            pair.operation(where, op, rid, upto)
            running[rid][0] = upto
        elif op in ("finish", "preempt"):
            pair.operation(where, op, rid)
            count = running.pop(rid)[1]
            if op == "preempt":
                waiting[rid] = count
        else:
            pair.operation(where, op, rid)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interleavings", type=int, default=5000, help="interleavings on pools of 1 to 16 blocks of 1 to 4 tokens")
    parser.add_argument("--large", type=int, default=100, help="interleavings on pools of 64 to 1,024 blocks of 16 tokens")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"check_lifecycle.py --interleavings {args.interleavings} --large {args.large} --seed {args.seed}: vLLM "
          f"{VllmPrefixCache.identity.version}, kvspec's reference reference/dialects/in_flight_lifecycle.py and the model "
          f"tests/engines/vllm_model.py")
    differences: list[str] = []
    large = range(args.interleavings, args.interleavings + args.large)
    phases = (("small pools", range(args.interleavings), SMALL), ("large pools", large, LARGE))
    for name, numbers, sizes in phases:
        tally: Counter[str] = Counter()
        found, start = len(differences), time.perf_counter()
        for i in numbers:
            try:
                interleaving(random.Random(args.seed * 10**6 + i), tally, sizes)
            except Difference as difference:
                differences.append(f"interleaving {i}: {difference}")
        adapter_seconds = tally["adapter_seconds_us"] / 1e6
        print(f"{name}: {len(numbers)} interleavings, {tally['operations']} operations compared, {len(differences) - found} differences")
        print("  operations: " + ", ".join(f"{op} {tally[op]}" for op in WEIGHTS))
        print(f"  refused by the pool: {tally['allocate_refused']} allocations, {tally['decode_refused']} decodes; arrivals: "
              f"{tally['arrivals']}, {tally['partial_last_block']} with a partial last block, {tally['longer_than_pool']} longer than "
              f"the pool; {tally['held_twice']} operations leaving a block cached in two slots")
        print(f"  the adapter's own calls: {adapter_seconds:.1f} s, {tally['operations'] / max(adapter_seconds, 1e-9):,.0f} operations/s "
              f"(the whole phase {time.perf_counter() - start:.1f} s)")
    for difference in differences:
        print(difference)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
