"""Check tests/engines/lmcache_model.py (the independent model CI certifies the lmcache-lru and
lmcache-fifo dialects against) against LMCache's real LocalCPUBackend, through adapter.py, request
by request: each request's hit tokens before it runs, and the resident count after it (on the
Mooncake traces, after the last). Then measure how far LMCache's LRU is from kvspec's canonical LRU
on the conversation trace. Run it in the LMCache venv, with kvspec installed there (README.md):

    /work/engines/lmcache/venv/bin/python docs/certifications/lmcache/check_model.py [--quick]

It prints one line a run and exits 1 at the first disagreement between the engine and the model.
"""

import argparse
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[2] / "tests" / "engines")]

from adapter import LMCacheLocalCPU  # noqa: E402
from lmcache_model import LMCacheModel  # noqa: E402

from kvspec.adapters.interface import AdapterConfig  # noqa: E402
from kvspec.reference.replay import ReplayConfig, replay  # noqa: E402
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


def lockstep(requests: list[Request], config: AdapterConfig, every_count: bool) -> tuple[list[int], int]:
    """Both sides through the protocol's calls; the engine's hits and final count, or exit at the first difference."""
    engine, model = LMCacheLocalCPU(), LMCacheModel()
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
    for policy in ("lru", "fifo"):
        start = time.perf_counter()
        for _ in range(examples):
            block_size = rng.randint(1, 4)
            config = AdapterConfig(policy=policy, capacity=rng.randint(1, 12), block_size=block_size)
            lockstep(random_trace(rng, block_size), config, every_count=True)
        seconds = time.perf_counter() - start
        print(f"random {policy}: {examples} traces (capacities 1-12, block sizes 1-4) agree, {seconds:.1f} s", flush=True)
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
