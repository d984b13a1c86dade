"""How often the rules behind docs/dialects-ablation.md fire: S3FIFO in a dialect (the canonical one
included) replayed over both bundled Mooncake traces, with counters on the reference's own rules.

    python bench/ablation_rules.py [--capacities 256,1000,4096,16384] [--dialects canonical,global-eviction,...]

Prints one markdown table per trace. Block size 512, small_ratio 0.1, max_freq 3, as in the
ablation. The counters wrap the decisions in a dialect's rules (kvspec.reference.dialects.s3fifo's
rules_for: the canonical rules with the dialect's overrides; the decision each counts is named in
its column); nothing in the reference changes. Run without KVSPEC_CONTRACTS.
"""

import argparse
from collections import Counter
from collections.abc import Callable
from typing import Any

from kvspec.reference import TraceFile, bundled_trace_path
from kvspec.reference.dialects import VARIATIONS, DialectS3FIFO, dialect_for
from kvspec.reference.replay import replay_request

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
counts: Counter[str] = Counter()
main_victims: set[int] = set()  # the hashes whose last way into G was as M's victim (S3-ADMIT-M-3)
retiring: list[bool] = [False]  # whether insert_to_ghost is taking M's victim rather than S's
counted_rules: set[int] = set()  # the rules (one dict per set of overrides) whose names are counted


def counting(names: dict[str, Any]) -> None:
    """Wrap the decisions the columns count in one dialect's rules, once: the rules read these
    names when called, so every rule that takes the decision is counted."""
    if id(names) in counted_rules:
        return
    counted_rules.add(id(names))
    wrap: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
        "freq_in_main": counted_promotion, "insert_to_ghost": counted_to_ghost, "retire_from_main": counted_retirement,
        "chance_spent": counted_requeue, "admit_to_small": counted_new,
    }
    for name, wrapper in wrap.items():
        names[name] = wrapper(names[name])


def counted_promotion(rule: Callable[[int], int]) -> Callable[[int], int]:
    def counted(freq: int) -> int:
        counts["promoted at freq 1" if freq == 1 else "promoted at freq >= 2"] += 1
        return rule(freq)
    return counted


def counted_to_ghost(rule: Callable[[DialectS3FIFO, int], None]) -> Callable[[DialectS3FIFO, int], None]:
    def counted(cache: DialectS3FIFO, h: int) -> None:
        if not retiring[0]:
            counts["S victims to G"] += 1
            main_victims.discard(h)
        rule(cache, h)
    return counted


def counted_retirement(rule: Callable[[DialectS3FIFO, int], None]) -> Callable[[DialectS3FIFO, int], None]:
    def counted(cache: DialectS3FIFO, h: int) -> None:
        counts["M evictions"] += 1
        main_victims.add(h)
        retiring[0] = True
        try:
            rule(cache, h)
        finally:
            retiring[0] = False
    return counted


def counted_requeue(rule: Callable[[int], int]) -> Callable[[int], int]:
    def counted(freq: int) -> int:
        counts["M requeues"] += 1
        return rule(freq)
    return counted


def counted_new(rule: Callable[[DialectS3FIFO, int], None]) -> Callable[[DialectS3FIFO, int], None]:
    def counted(cache: DialectS3FIFO, h: int) -> None:
        rule(cache, h)
        counts["new blocks to M (DIALECT-S3-15)"] += h in cache.main and cache.caps.small_cap > 0
    return counted


def counted_access(cache: DialectS3FIFO, h: int) -> None:
    if h in cache.ghost and h not in cache.small and h not in cache.main:
        counts["G hits"] += 1
        counts["G hits on M victims"] += h in main_victims
    original_access(cache, h)


original_access, DialectS3FIFO.access = DialectS3FIFO.access, counted_access


def one_run(records: list[tuple[list[int], int]], capacity: int, name: str) -> dict[str, float | int | str]:
    """The counters of one replay, and the queues' mean fill after each request."""
    counts.clear()
    main_victims.clear()
    dialect = frozenset() if name == "canonical" else dialect_for("s3fifo", None, (name, *VARIATIONS[name].requires))
    cache = DialectS3FIFO.empty(dialect, capacity, 0.1, 3)
    counting(cache.rules)
    resident = small = main = 0.0
    over = 0
    hits = prompt = 0
    for hash_ids, input_length in records:
        hits += replay_request(cache, hash_ids, input_length, 512)
        prompt += input_length
        resident += cache.resident_count() / capacity
        small += len(cache.small) / cache.caps.small_cap
        main += len(cache.main) / cache.caps.main_cap
        over += len(cache.main) > cache.caps.main_cap
    n = len(records)
    return {"dialect": name, "capacity": capacity, "hit rate %": f"{100 * hits / prompt:.2f}",
            "resident % of C (mean)": f"{100 * resident / n:.1f}", "S / small_cap (mean)": f"{small / n:.2f}",
            "M / main_cap (mean)": f"{main / n:.2f}", "requests ending with M over main_cap": over, **counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="256,1000,4096,16384")
    parser.add_argument("--dialects", default=",".join(["canonical", *(v.id for v in VARIATIONS.values() if "s3fifo" in v.policies)]))
    args = parser.parse_args()
    columns = ["dialect", "capacity", "hit rate %", "resident % of C (mean)", "S / small_cap (mean)", "M / main_cap (mean)",
               "requests ending with M over main_cap", "S victims to G", "promoted at freq 1", "promoted at freq >= 2", "G hits",
               "G hits on M victims", "M evictions", "M requeues", "new blocks to M (DIALECT-S3-15)"]
    for trace in TRACES:
        records = [(record.hash_ids, record.input_length) for _, record in TraceFile(bundled_trace_path(trace)).records()]
        print(f"\n{trace}: {len(records):,} requests, {sum(len(h) for h, _ in records):,} block accesses\n")
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for capacity in map(int, args.capacities.split(",")):
            for name in args.dialects.split(","):
                row = one_run(records, capacity, name)
                print("| " + " | ".join(f"{row.get(c, 0):,}" if isinstance(row.get(c, 0), int) else str(row[c]) for c in columns) + " |", flush=True)


if __name__ == "__main__":
    main()
