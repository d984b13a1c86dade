"""What the serving engines' hit rates on the bundled Mooncake traces differ from canonical LRU's
and FIFO's by (docs/engines.md): each engine's dialect, canonical LRU, FIFO and S3FIFO, replayed
by the reference at the comparison's capacities, with the state read between requests.

    python bench/engine_differences.py [--capacities 256,1024,4096] [--output bench/results/engines.json]

Run without KVSPEC_CONTRACTS (about ten minutes on a shared core). For each trace it prints:

- the hash ids' predecessors: how many ids follow more than one (the first block's "predecessor"
  is the start of the request), which decides whether a hash id has one ancestor path;
- for canonical LRU, FIFO, S3FIFO and each engine dialect: hit rate, the mean fill (resident
  blocks over capacity, after each request), the share of resident blocks that no future request
  can reach because an ancestor is not resident (mean over requests, and after the last), for
  vLLM the share of its slots that hold a path another slot holds already (LRU-DIALECT-6: no
  de-duplication), and for SGLang the blocks evicted beyond what the request asked to free and
  beyond the slots it lacked (LRU-DIALECT-5: whole leaves, and a page more asked);
- each engine replay point (spec/dialects.md section 7) alone on LRU and FIFO under path-ids, and
  the decomposition of each engine's difference from its canonical policy into its replay and its
  own rule.

A block's ancestors: under path-ids (REPLAY-DIALECT-3) its path's parents
(reference/dialects/baselines.py Paths.parent_of); for a cache of hash ids, each id's predecessor
in the requests that bring it, one per id on both bundled traces (checked, and the run stops if not).
"""

import argparse
import json
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy
from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS, BlockPool, RadixCache, dialect_for
from kvspec.reference.dialects.baselines import ROOT, DialectFIFO, DialectLRU
from kvspec.reference.dialects.engine import EngineReplay
from kvspec.reference.fifo import FIFO
from kvspec.reference.lru import LRU
from kvspec.reference.replay import hit_tokens
from kvspec.reference.request import step
from kvspec.reference.s3fifo import S3FIFO
from kvspec.reference.trace import TraceRecord

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
BLOCK_SIZE = 512
ENGINES = ("vllm", "sglang-lru", "sglang-fifo", "lmcache-lru", "lmcache-fifo")
START = -1  # a hash id's "predecessor" at a request's start; the trace's hash ids are never negative
ENGINE_REPLAY_POINTS = ("hit-cap-last-token", "full-blocks-only", "too-long-skipped", "pin-request")
# Each engine's own rule (the policy), the rest of its dialect being the engine replay; lmcache's
# allocate-then-put is how its store runs (REPLAY-DIALECT-9) and so counts with its rule.
ENGINE_RULES = {"vllm": ("lru-free-queue",), "sglang-lru": ("radix-lru-leaves",), "sglang-fifo": ("radix-fifo-leaves",),
                "lmcache-lru": ("allocate-then-put", "lru-reverse-touch"), "lmcache-fifo": ("allocate-then-put",)}


def read(trace: str) -> list[TraceRecord]:
    return [record for _, record in TraceFile(bundled_trace_path(trace)).records()]


def partial_blocks_named_again(records: list[TraceRecord]) -> tuple[int, int]:
    """How many requests end in a partial block, and how many of those blocks a later request names."""
    later: set[int] = set()
    partial = again = 0
    for record in reversed(records):
        if record.input_length < len(record.hash_ids) * BLOCK_SIZE:
            partial += 1
            again += record.hash_ids[-1] in later  # one predecessor per id: the same hash id is the same prefix path
        later.update(record.hash_ids)
    return partial, again


def predecessors(records: Iterable[TraceRecord]) -> dict[int, set[int]]:
    """Each hash id's predecessors over every request (START at a request's start)."""
    found: dict[int, set[int]] = {}
    for record in records:
        for before, h in zip([START, *record.hash_ids], record.hash_ids):
            found.setdefault(h, set()).add(before)
    return found


@dataclass
class Measure:
    """What one replay's state shows between requests, summed over requests."""

    requests: int = 0
    prompt: int = 0
    hits: int = 0
    fill: float = 0.0
    unreachable: float = 0.0
    duplicates: float = 0.0
    end_unreachable: float = 0.0
    end_resident: int = 0
    asked: int = 0  # SGLang: blocks its requests asked to free
    evicted: int = 0  # SGLang: blocks it evicted
    beyond: int = 0  # SGLang: blocks evicted past what the request asked for
    beyond_need: int = 0  # SGLang: blocks evicted past the slots the request lacked (no page more)
    partial_hits: int = 0  # hit tokens of partial last blocks


def held_blocks(cache: object) -> tuple[Collection[int], list[int], Callable[[int], int] | None]:
    """The resident blocks (a set to look up), each slot's block (a block held twice counts twice:
    vLLM's pool), and the path-ids parent function, or None for a cache of hash ids."""
    if isinstance(cache, EngineReplay):
        cache = cache.cache
    if isinstance(cache, BlockPool):
        return cache.slots_of, list(cache.queue.values()), cache.paths.parent_of.__getitem__
    if isinstance(cache, RadixCache):
        return cache.resident, list(cache.resident), cache.paths.parent_of.__getitem__
    if isinstance(cache, DialectLRU | DialectFIFO):
        queue = cache.recency if isinstance(cache, DialectLRU) else cache.arrival
        return queue, list(queue), cache.paths.parent_of.__getitem__ if "path-ids" in cache.dialect else None
    if isinstance(cache, LRU):
        return cache.recency, list(cache.recency), None
    if isinstance(cache, FIFO):
        return cache.arrival, list(cache.arrival), None
    assert isinstance(cache, S3FIFO)
    resident = cache.small.keys() | cache.main.keys()
    return resident, list(resident), None


def unreachable_slots(resident: Collection[int], slots: list[int], parent: Callable[[int], int], root: int) -> int:
    """How many of ``slots`` hold a block with an ancestor that is not resident (``root``, the
    empty prefix, always is)."""
    reachable = {root: True}
    for block in resident:
        chain = []
        while block not in reachable:
            if block not in resident:
                reachable[block] = False
                break
            chain.append(block)
            block = parent(block)
        for b in chain:
            reachable[b] = reachable[block]
    return sum(not reachable[b] for b in slots)


def replay(records: list[TraceRecord], policy: str, dialect: frozenset[str], capacity: int,
           hash_parent: dict[int, int] | None) -> Measure:
    """One replay, as `kvspec compare` runs it (reference/benefit/prefix.py replay_blocks); with
    ``hash_parent``, the state read after every request."""
    cache = make_policy(ReplayConfig(policy=policy, capacity=capacity, block_size=BLOCK_SIZE, dialect=dialect))  # type: ignore[arg-type]
    m = Measure()
    for record in records:
        before, stored_before = cache.resident_count(), cache.stored if isinstance(cache, RadixCache) else 0
        k = step(cache, record.hash_ids, record.input_length)
        m.requests, m.prompt, m.hits = m.requests + 1, m.prompt + record.input_length, m.hits + hit_tokens(k, BLOCK_SIZE, record.input_length)
        if k == len(record.hash_ids):
            m.partial_hits += record.input_length - (k - 1) * BLOCK_SIZE if record.input_length < k * BLOCK_SIZE else 0
        if isinstance(cache, RadixCache) and len(record.hash_ids) <= capacity:  # a request not run asks for nothing
            asked = max(0, len(record.hash_ids) - k + 1 - (capacity - before))  # radix.py run: a page more than it needs
            evicted = before + cache.stored - stored_before - cache.resident_count()
            m.asked, m.evicted, m.beyond = m.asked + asked, m.evicted + evicted, m.beyond + max(0, evicted - asked)
            m.beyond_need += max(0, evicted - max(0, asked - 1))
        if hash_parent is None:
            continue
        resident, slots, parent = held_blocks(cache)
        lost = unreachable_slots(resident, slots, parent or hash_parent.__getitem__, ROOT if parent else START)
        m.fill += len(slots) / capacity
        m.unreachable += lost / len(slots) if slots else 0.0
        if isinstance(cache, BlockPool):
            m.duplicates += 1 - len(cache.slots_of) / len(slots) if slots else 0.0
        m.end_unreachable, m.end_resident = lost / len(slots) if slots else 0.0, len(slots)
    return m


def engine_rows(engine: str) -> list[tuple[str, str, frozenset[str]]]:
    """The engine's decomposition, each row (label, policy, dialect): its policy with the engine's
    replay (the dialect without the engine's rule); its policy with only the points the rule
    requires, prefix paths included (every engine's rule is on them); the rule on those points;
    the whole dialect."""
    (policy, full), = KNOWN_DIALECTS[engine].items()
    rules = ENGINE_RULES[engine]
    required = frozenset({"path-ids"}.union(*(VARIATIONS[r].requires for r in rules)) - set(rules))
    return [(f"{policy} with {engine}'s replay", policy, frozenset(full) - set(rules)),
            (f"{policy} with the points {engine}'s rule requires", policy, required),
            (f"{engine}'s rule alone", policy, required | set(rules)),
            (engine, policy, dialect_for(policy, engine))]


def rows_for() -> list[tuple[str, str, frozenset[str], bool]]:
    """(label, policy, dialect, whether to read the state) for every replay at a capacity."""
    rows = [(policy, policy, frozenset(), True) for policy in ("lru", "fifo", "s3fifo")]
    rows += [(engine, policy, dialect_for(policy, engine), True) for engine in ENGINES for policy in KNOWN_DIALECTS[engine]]
    rows += [(f"{policy} + path-ids", policy, frozenset({"path-ids"}), False) for policy in ("lru", "fifo")]
    rows += [(f"{policy} + path-ids, {point}", policy, frozenset({"path-ids", point}), False)
             for policy in ("lru", "fifo") for point in ENGINE_REPLAY_POINTS]
    seen = {(policy, dialect) for _, policy, dialect, _ in rows}
    for engine in ENGINES:
        for label, policy, dialect in engine_rows(engine)[:3]:
            if (policy, dialect) not in seen:
                seen.add((policy, dialect))
                rows.append((label, policy, dialect, False))
    return rows


def decomposition(engine: str, runs: dict[str, dict[str, object]]) -> str:
    """The engine's difference from its canonical policy, split into its replay and its rule, and
    its rule's alone (on the replay points it requires)."""
    rate = {(r["policy"], frozenset(r["variations"])): r["hit_tokens"] / r["prompt_tokens"] for r in runs.values()}  # type: ignore[operator, arg-type]
    (_, policy, with_replay), (_, _, required), (_, _, alone), (_, _, full) = engine_rows(engine)
    canonical = rate[policy, frozenset()]
    return (f"{engine:<13} {100 * (rate[policy, full] - canonical):+6.2f} = replay {100 * (rate[policy, with_replay] - canonical):+6.2f}"
            f" + rule {100 * (rate[policy, full] - rate[policy, with_replay]):+6.2f};"
            f" rule alone {100 * (rate[policy, alone] - rate[policy, required]):+6.2f} (on {', '.join(sorted(required))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="256,1024,4096")
    parser.add_argument("--output", type=Path, default=Path("bench/results/engines.json"))
    args = parser.parse_args()
    capacities = [int(c) for c in args.capacities.split(",")]
    results: dict[str, object] = {}
    for trace in TRACES:
        records = read(trace)
        before = predecessors(records)
        several = {h: p for h, p in before.items() if len(p) > 1}
        print(f"\n## {trace}: {len(records):,} requests, {len(before):,} hash ids, {len(several):,} with more than one predecessor")
        if several:
            raise SystemExit("a hash id has two predecessors: its ancestors depend on the request, which this bench does not follow")
        hash_parent = {h: next(iter(p)) for h, p in before.items()}
        partial, again = partial_blocks_named_again(records)
        print(f"{partial:,} requests end in a partial block; a later request names {again:,} of those blocks")
        runs: dict[str, dict[str, dict[str, object]]] = {}
        for capacity in capacities:
            runs[str(capacity)] = {}
            for label, policy, dialect, state in rows_for():
                m = replay(records, policy, dialect, capacity, hash_parent if state else None)
                runs[str(capacity)][label] = {
                    "policy": policy, "variations": sorted(dialect), "hit_tokens": m.hits, "prompt_tokens": m.prompt,
                    "partial_block_hit_tokens": m.partial_hits,
                    **({"mean_fill": m.fill / m.requests, "mean_unreachable": m.unreachable / m.requests,
                        "end_unreachable": m.end_unreachable, "end_resident": m.end_resident} if state else {}),
                    **({"mean_duplicates": m.duplicates / m.requests} if state and "lru-free-queue" in dialect else {}),
                    **({"asked_to_free": m.asked, "evicted": m.evicted, "evicted_beyond_asked": m.beyond,
                        "evicted_beyond_lacking": m.beyond_need} if m.evicted else {}),
                }
                print(f"{capacity:>6} {label:<48} {m.hits / m.prompt:7.2%}" + (
                    f"  fill {m.fill / m.requests:6.1%}  unreachable {m.unreachable / m.requests:6.1%} (end {m.end_unreachable:6.1%})"
                    if state else "") + (f"  duplicates {m.duplicates / m.requests:5.1%}" if "lru-free-queue" in dialect and state else "")
                    + (f"  evicted {m.evicted:,}, {m.beyond:,} beyond the {m.asked:,} asked ({m.beyond_need:,} beyond the slots lacking)"
                       if m.evicted else ""), flush=True)
        for capacity in capacities:
            print(f"\n{capacity:,} blocks: each engine's difference from its canonical policy (percentage points of hit rate)")
            for engine in ENGINES:
                print("  " + decomposition(engine, runs[str(capacity)]))
        results[trace] = {"requests": len(records), "hash_ids": len(before), "ids_with_several_predecessors": len(several),
                          "requests_ending_in_a_partial_block": partial, "partial_blocks_named_again": again, "runs": runs}
    args.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {args.output}")


if __name__ == "__main__":
    main()
