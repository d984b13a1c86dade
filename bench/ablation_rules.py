"""How often the rules behind docs/dialects-ablation.md fire: S3FIFO in a dialect (the canonical one
included) replayed over both bundled Mooncake traces, with counters on the reference's own rules.

    python bench/ablation_rules.py [--capacities 256,1000,4096,16384] [--dialects canonical,global-eviction,...]

Prints one markdown table per trace. Block size 512, small_ratio 0.1, max_freq 3, as in the
ablation. The counters wrap the functions of kvspec.reference.dialects.s3fifo (the rule each
counts is named in its column); nothing in the reference changes. Run without KVSPEC_CONTRACTS.
"""

import argparse
from collections import Counter

import kvspec.reference.dialects.s3fifo as rules
from kvspec.reference import TraceFile, bundled_trace_path
from kvspec.reference.dialects import VARIATIONS, DialectS3FIFO, dialect_for
from kvspec.reference.replay import replay_request

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
counts: Counter[str] = Counter()
main_victims: set[int] = set()  # the hashes whose last way into G was as M's victim (S3-ADMIT-M-3)


def counted_promote_or_forget(cache: DialectS3FIFO, victim: int, victim_freq: int, *, per_queue: bool) -> bool:
    promoted = original_promote_or_forget(cache, victim, victim_freq, per_queue=per_queue)
    if promoted:
        counts["promoted at freq 1" if victim_freq == 1 else "promoted at freq >= 2"] += 1
    else:
        counts["S victims to G"] += 1
        main_victims.discard(victim)
    return promoted


def counted_main_victim(cache: DialectS3FIFO, h: int) -> None:
    counts["M evictions"] += 1
    main_victims.add(h)
    original_main_victim(cache, h)


def counted_chance_spent(cache: DialectS3FIFO, freq: int) -> int:
    counts["M requeues"] += 1
    return original_chance_spent(cache, freq)


def counted_placed_in_main(cache: DialectS3FIFO, from_ghost: bool) -> bool:
    to_main = original_placed_in_main(cache, from_ghost)
    counts["new blocks to M (DIALECT-S3-15)"] += to_main and not from_ghost and cache.caps.small_cap > 0
    return to_main


def counted_access(cache: DialectS3FIFO, h: int) -> None:
    if h in cache.ghost and h not in cache.small and h not in cache.main:
        counts["G hits"] += 1
        counts["G hits on M victims"] += h in main_victims
    original_access(cache, h)


original_promote_or_forget, rules.promote_or_forget = rules.promote_or_forget, counted_promote_or_forget
original_main_victim, rules.main_victim = rules.main_victim, counted_main_victim
original_chance_spent, rules.chance_spent = rules.chance_spent, counted_chance_spent
original_placed_in_main, rules.placed_in_main = rules.placed_in_main, counted_placed_in_main
original_access, DialectS3FIFO.access = DialectS3FIFO.access, counted_access


def one_run(records: list[tuple[list[int], int]], capacity: int, name: str) -> dict[str, float | int | str]:
    """The counters of one replay, and the queues' mean fill after each request."""
    counts.clear()
    main_victims.clear()
    dialect = frozenset() if name == "canonical" else dialect_for("s3fifo", None, (name, *VARIATIONS[name].requires))
    cache = DialectS3FIFO.empty(dialect, capacity, 0.1, 3)
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
