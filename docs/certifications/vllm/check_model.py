"""Replays the real vLLM prefix cache (adapter.py here) and the independent model CI certifies
kvspec's vllm dialect against (tests/engines/vllm_model.py) side by side, and prints where they
differ: each request's hit tokens and the resident count after it. On the random traces it also
checks that the engine's hit_tokens leaves vLLM's pool exactly as it was.

    /work/engines/vllm/venv/bin/python docs/certifications/vllm/check_model.py [--random N]

Run it in the venv holding vLLM (README.md), with kvspec installed there too (pip install -e).
Both bundled Mooncake traces at block size 512 and capacities 64, 256 and 4,096, each request with
its own input_length (a partial last block); then N random small traces (short alphabets of hash
ids, shared prefixes, capacities 1 to 12, block sizes 1 to 4, requests up to twice as long as the
pool). Exit status 1 if any request differs or a lookup changed the pool.
"""

import argparse
import gzip
import importlib.util
import json
import random
import sys
import time
from pathlib import Path

from kvspec.adapters.interface import AdapterConfig
from kvspec.reference.trace import bundled_trace_path

ROOT = Path(__file__).resolve().parents[3]
TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
CAPACITIES = (64, 256, 4096)
MOONCAKE_BLOCK_SIZE = 512
# Where a hash is held twice, the lookup takes the copy cached first (block_pool.py:63-72): here
# request 4 touches the older copy of path (1, 2), so request 5 evicts 3 and request 6 misses it;
# touching the newer copy instead would keep 3 and hit it.
COPY_A_LOOKUP_TAKES = [([1, 2], 2), ([3], 1), ([1, 2], 2), ([1, 2, 4], 3), ([5], 1), ([3, 6], 2)]


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.adapter()


class Tally:
    def __init__(self) -> None:
        self.requests = self.differences = self.not_run = self.with_copies = self.lookups_changing = 0

    def compare(self, where: str, engine: tuple[int, int], model: tuple[int, int]) -> None:
        self.requests += 1
        if engine != model:
            self.differences += 1
            if self.differences <= 10:
                print(f"  DIFFERENT {where}: engine (hit, resident) {engine}, model {model}")


def pool_state(engine) -> tuple:
    """Everything of vLLM's pool a request can change: the free queue's order, each block's reference
    count and hash, the hash map."""
    pool = engine.manager.block_pool
    queue = tuple(block.block_id for block in pool.free_block_queue.get_all_free_blocks())
    blocks = tuple((block.ref_cnt, block.block_hash) for block in pool.blocks)
    cached = {key: holders.block_id if hasattr(holders, "block_id") else tuple(holders)
              for key, holders in pool.cached_block_hash_to_block._cache.items()}
    return queue, blocks, cached


def replay(engine, model, config: AdapterConfig, requests: list[tuple[list[int], int]], tally: Tally, name: str,
           check_lookup: bool = False) -> None:
    """``check_lookup``: also check that the engine's hit_tokens changes nothing of its pool."""
    engine.configure(config)
    model.configure(config)
    for index, (hash_ids, input_length) in enumerate(requests):
        before = pool_state(engine) if check_lookup else None
        hits = engine.hit_tokens(hash_ids, input_length), model.hit_tokens(hash_ids, input_length)
        if check_lookup and pool_state(engine) != before:
            tally.lookups_changing += 1
        engine.access(hash_ids, input_length=input_length)
        model.access(hash_ids, input_length=input_length)
        resident = model.resident_count()
        tally.compare(f"{name} request {index}", (hits[0], engine.resident_count()), (hits[1], resident))
        tally.not_run += -(-input_length // config.block_size) > config.capacity
        tally.with_copies += resident > len(model.cached.blocks)


def unreachable(model) -> int:
    """Resident blocks whose parent's hash is held by no block: no lookup can reach them."""
    parents = {block_hash: parent for (parent, _), block_hash in model.paths.items()}
    held = model.cached.blocks
    return sum(len(blocks) for block_hash, blocks in held.items() if parents[block_hash] != -1 and parents[block_hash] not in held)


def mooncake(engine, model, tally: Tally) -> None:
    for trace in TRACES:
        with gzip.open(bundled_trace_path(trace)) as lines:
            requests = [(record["hash_ids"], record["input_length"]) for record in map(json.loads, lines)]
        for capacity in CAPACITIES:
            before, not_run, copies, start = tally.differences, tally.not_run, tally.with_copies, time.monotonic()
            config = AdapterConfig(policy="lru", capacity=capacity, block_size=MOONCAKE_BLOCK_SIZE)
            replay(engine, model, config, requests, tally, f"{trace} capacity {capacity}")
            duplicates = model.cached.count() - len(model.cached.blocks)
            print(f"{trace} capacity {capacity}: {len(requests)} requests, {tally.differences - before} different, "
                  f"{tally.not_run - not_run} not run, {tally.with_copies - copies} leaving a hash held twice; at the end "
                  f"resident {model.resident_count()} ({duplicates} a second copy, {unreachable(model)} unreachable), "
                  f"{time.monotonic() - start:.0f} s")


def random_requests(rng: random.Random, capacity: int, block_size: int) -> list[tuple[list[int], int]]:
    alphabet, requests = rng.randint(1, 4), []
    for _ in range(rng.randint(1, 30)):
        blocks = rng.randint(1, capacity) if rng.random() < 0.85 else rng.randint(capacity + 1, 2 * capacity + 1)
        if requests and rng.random() < 0.6:  # a prefix of an earlier request, then anything
            earlier = rng.choice(requests)[0]
            hash_ids = earlier[: rng.randint(0, len(earlier))]
            hash_ids += [rng.randrange(alphabet) for _ in range(max(1, blocks - len(hash_ids)) if rng.random() < 0.7 else 0)]
            hash_ids = hash_ids or [rng.randrange(alphabet)]
        else:
            hash_ids = [rng.randrange(alphabet) for _ in range(blocks)]
        requests.append((hash_ids, (len(hash_ids) - 1) * block_size + rng.randint(1, block_size)))
    return requests


def random_traces(engine, model, tally: Tally, examples: int) -> None:
    rng = random.Random(16)
    start = tally.requests
    for example in range(examples):
        capacity, block_size = rng.randint(1, 12), rng.randint(1, 4)
        config = AdapterConfig(policy="lru", capacity=capacity, block_size=block_size)
        replay(engine, model, config, random_requests(rng, capacity, block_size), tally, f"random example {example} ({config})",
               check_lookup=True)
    print(f"random: {examples} traces, {tally.requests - start} requests, {tally.lookups_changing} where hit_tokens changed the pool")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=2000, help="random small traces (default 2000)")
    parser.add_argument("--no-mooncake", action="store_true", help="the random traces only")
    arguments = parser.parse_args()
    engine = load(Path(__file__).with_name("adapter.py"), "vllm_adapter")
    model = load(ROOT / "tests" / "engines" / "vllm_model.py", "vllm_model")
    tally = Tally()
    replay(engine, model, AdapterConfig(policy="lru", capacity=5, block_size=1), COPY_A_LOOKUP_TAKES, tally, "the copy a lookup takes")
    if not arguments.no_mooncake:
        mooncake(engine, model, tally)
    random_traces(engine, model, tally, arguments.random)
    print(f"{tally.requests} requests compared, {tally.differences} different; {tally.not_run} longer than the pool (not run), "
          f"{tally.with_copies} leaving a hash held twice")
    return 1 if tally.differences or tally.lookups_changing else 0


if __name__ == "__main__":
    sys.exit(main())
