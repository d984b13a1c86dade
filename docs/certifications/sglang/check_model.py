"""Check tests/engines/sglang_model.py against SGLang's real RadixCache (adapter.py), request by request.

    cd <kvspec checkout> && OMP_NUM_THREADS=1 PYTHONPATH=tests/engines:docs/certifications/sglang \
        /work/engines/sglang/venv/bin/python -W ignore docs/certifications/sglang/check_model.py [--quick]

(kvspec installed in that venv, or its package on PYTHONPATH.) Replays both bundled Mooncake traces
(block_size 512) at capacities 64, 256 and 4096 blocks under LRU and FIFO, then random small traces
(short hash-id alphabets, capacities 1 to 12, block sizes 1 to 4, requests longer than the pool
among them), through the real engine and the model side by side, comparing for every request the
hit tokens each reports (and the real ``match_prefix``'s own hit against the adapter's read-only
lookup) and the resident count after it. Also measures, on the conversation trace at 4,096 blocks,
how many blocks eviction frees beyond what the allocation asked, with the engine's real clock too.
Prints one line per replay and exits non-zero on the first divergence.
"""

import gzip
import json
import random
import sys
import time
from pathlib import Path

from adapter import SGLangRadixCache
from sglang_model import SGLangModel

from kvspec.adapters.interface import AdapterConfig

TRACES = Path(__file__).resolve().parents[3] / "reference" / "traces"


def trace(name: str) -> list[tuple[list[int], int]]:
    with gzip.open(TRACES / name, "rt") as lines:
        return [(r["hash_ids"], r["input_length"]) for r in map(json.loads, lines)]


def replay(requests, policy: str, capacity: int, block_size: int, engine: SGLangRadixCache, label: str) -> tuple[int, int]:
    config = AdapterConfig(policy=policy, capacity=capacity, block_size=block_size)
    model = SGLangModel()
    engine.configure(config)
    model.configure(config)
    hits = 0
    for number, (hash_ids, length) in enumerate(requests):
        asked = engine.hit_tokens(hash_ids, length), model.hit_tokens(hash_ids, length)
        engine.access(hash_ids, input_length=length)
        model.access(hash_ids, input_length=length)
        counts = engine.resident_count(), model.resident_count()
        looked_up = engine.last_match_tokens
        if asked[0] != asked[1] or looked_up != asked[0] or counts[0] != counts[1]:
            sys.exit(f"DIVERGED {label} request {number}: hit engine/model {asked}, match_prefix {looked_up}, resident {counts}")
        hits += asked[0]
    return hits, counts[0]


def measure_overshoot(requests, engine: SGLangRadixCache, capacity: int = 4096, block_size: int = 512) -> dict:
    """Blocks evicted beyond the evict() call's ask, and beyond the pages the allocation lacked."""
    engine.configure(AdapterConfig(policy="lru", capacity=capacity, block_size=block_size))
    cache, totals = engine.cache, {"evicted": 0, "beyond_ask": 0, "beyond_need": 0, "calls": 0}
    real_evict, need = cache.evict, {}

    def evict(params):
        result = real_evict(params)
        evicted, asked = result.num_tokens_evicted // block_size, -(-params.num_tokens // block_size)
        totals["calls"] += 1
        totals["evicted"] += evicted
        totals["beyond_ask"] += max(0, evicted - asked)
        totals["beyond_need"] += max(0, evicted - need["pages"])
        return result

    cache.evict = evict
    for hash_ids, length in requests:
        if -(-length // block_size) <= capacity:
            hit = engine.hit_tokens(hash_ids, length) // block_size
            free = cache.token_to_kv_pool_allocator.available_size() // block_size
            need["pages"] = max(0, -(-length // block_size) - hit - free)
        engine.access(hash_ids, input_length=length)
    return totals


def random_requests(rng: random.Random, capacity: int, block_size: int) -> list[tuple[list[int], int]]:
    alphabet = rng.randint(1, 4)
    requests = []
    for _ in range(rng.randint(1, 14)):
        blocks = rng.randint(1, capacity + 2)
        hash_ids = [rng.randrange(alphabet) for _ in range(blocks)]
        requests.append((hash_ids, (blocks - 1) * block_size + rng.randint(1, block_size)))
    return requests


def main() -> None:
    quick = "--quick" in sys.argv
    engine = SGLangRadixCache()
    for name in ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"):
        requests = trace(name)
        for capacity in (64, 256, 4096):
            for policy in ("lru", "fifo"):
                started = time.perf_counter()
                hits, resident = replay(requests, policy, capacity, 512, engine, f"{name} {policy} {capacity}")
                print(f"{name} {policy:4} capacity {capacity:5}: {len(requests)} requests agree, hit tokens {hits}, "
                      f"resident {resident} ({time.perf_counter() - started:.0f} s)", flush=True)
    rng = random.Random(16)
    cases = 2000 if quick else 20000
    for case in range(cases):
        capacity, block_size = rng.randint(1, 12), rng.randint(1, 4)
        for policy in ("lru", "fifo"):
            replay(random_requests(rng, capacity, block_size), policy, capacity, block_size, engine, f"random case {case} {policy} c{capacity} b{block_size}")
    print(f"random: {cases} traces x 2 policies agree", flush=True)
    conversation = trace("conversation_trace.jsonl.gz")
    print("overshoot, counting clock:", measure_overshoot(conversation, engine), flush=True)
    real_clock = SGLangRadixCache(clock=time)
    print("overshoot, real clock:    ", measure_overshoot(conversation, real_clock), flush=True)
    hits = {}
    for label, clocked in (("counting", SGLangRadixCache()), ("real", SGLangRadixCache(clock=time))):
        for policy in ("lru", "fifo"):
            config = AdapterConfig(policy=policy, capacity=4096, block_size=512)
            clocked.configure(config)
            total = 0
            for hash_ids, length in conversation:
                total += clocked.hit_tokens(hash_ids, length)
                clocked.access(hash_ids, input_length=length)
            hits[label, policy] = (total, clocked.resident_count())
    print("conversation at 4096, (hit tokens, resident) by clock:", hits, flush=True)


if __name__ == "__main__":
    main()
