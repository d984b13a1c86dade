"""Time of the lifecycle (spec/lifecycle.md, reference/lifecycle.py) run one request at a time over a
bundled Mooncake trace, beside the replay it must equal (LIFE-LIMIT-1), and of the trace served as a
server runs it (section 6, reference/serve.py, the default service model), per policy and capacity.

    python bench/bench_lifecycle.py [--trace conversation_trace.jsonl.gz] [--capacities 4096] [--rounds 3] [--repeat 5]

Each request arrives, is allocated, computes all its blocks and finishes before the next arrives;
the replay is the request step of reference/request.py on the canonical policy. The trace is parsed
before the clock starts; the figure is the best wall time of ``--rounds`` interleaved rounds of
``--repeat`` runs, each on an empty pool, with the contracts off (the process sets KVSPEC_CONTRACTS=0
before it imports the reference, which reads it once). The two must give the same total hit tokens,
or the script stops with MISMATCH and exit status 1. Writes lifecycle.md and lifecycle.json to the
output folder.
"""

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ["KVSPEC_CONTRACTS"] = "0"

from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path  # noqa: E402
from kvspec.reference.caches import make_policy, server_for  # noqa: E402
from kvspec.reference.dialects import dialect_for  # noqa: E402
from kvspec.reference.lifecycle import Pool  # noqa: E402
from kvspec.reference.replay import hit_tokens  # noqa: E402
from kvspec.reference.request import step  # noqa: E402
from kvspec.reference.serve import served  # noqa: E402
from kvspec.reference.service import ServiceModel  # noqa: E402
from kvspec.reference.trace import Request  # noqa: E402

BLOCK_SIZE = 512
Records = list[tuple[list[int], int]]


def one_at_a_time(config: ReplayConfig, records: Records) -> int:
    """The lifecycle, each request run to completion before the next: its total hit tokens."""
    pool, total = Pool.empty(config), 0
    for rid, (hash_ids, input_length) in enumerate(records):
        pool.arrive(rid, hash_ids, input_length)
        pool.allocate(rid)
        pool.compute(rid, len(hash_ids))
        total += pool.finish(rid).hit_tokens or 0
    return total


def replay(config: ReplayConfig, records: Records) -> int:
    """The replay of spec/replay.md: its total hit tokens."""
    policy = make_policy(config)
    return sum(hit_tokens(step(policy, hash_ids, input_length), BLOCK_SIZE, input_length) for hash_ids, input_length in records)


def serving(requests: list[tuple[int, Request]]) -> Callable[[ReplayConfig, Records], int]:
    """The served replay of the trace's requests (timestamps and output lengths with them), over the
    configuration's pool (vLLM's in its dialect, spec/dialects.md section 9): its total hit tokens."""
    return lambda config, records: served(requests, config, ServiceModel(), server=server_for(config)).total_hit_tokens


def vllm_row(config: ReplayConfig, records: Records, requests: list[tuple[int, Request]], rounds: int, repeat: int) -> dict:
    """The engine replay in vLLM's dialect (LRU-DIALECT-6) and the served replay over vLLM's pool; no lifecycle one at a time."""
    times = {"replay": float("inf"), "served": float("inf")}
    totals: dict[str, int] = {}
    for _ in range(rounds):
        for name, run in (("replay", replay), ("served", serving(requests))):
            seconds, totals[name] = best_time(run, config, records, repeat)
            times[name] = min(times[name], seconds)
    return {"policy": "lru (vllm)", "capacity": config.capacity, "lifecycle_s": None, "replay_s": round(times["replay"], 4), "ratio": None,
            "hit_tokens": totals["replay"], "served_s": round(times["served"], 4), "served_ratio": round(times["served"] / times["replay"], 2),
            "served_hit_tokens": totals["served"]}


def best_time(run: Callable[[ReplayConfig, Records], int], config: ReplayConfig, records: Records, repeat: int) -> tuple[float, int]:
    best, total = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        total = run(config, records)
        best = min(best, time.perf_counter() - start)
    return best, total


def cell(value: float | None, places: int) -> str:
    return "–" if value is None else f"{value:.{places}f}"


def capacities(text: str) -> list[int]:
    try:
        values = [int(c) for c in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated capacities in blocks, each at least 1")
    return values


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="conversation_trace.jsonl.gz", help="a bundled trace's name")
    parser.add_argument("--capacities", type=capacities, default=[4096], help="comma-separated capacities in blocks")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    requests = list(TraceFile(bundled_trace_path(args.trace)).requests())
    records = [(r.hash_ids, r.input_length) for _, r in requests]
    rows = []
    for policy in ("s3fifo", "lru", "fifo"):
        for capacity in args.capacities:
            config = ReplayConfig(policy, capacity, BLOCK_SIZE)
            times: dict[str, float] = {"lifecycle": float("inf"), "replay": float("inf"), "served": float("inf")}
            totals: dict[str, int] = {}
            for _ in range(args.rounds):
                for name, run in (("lifecycle", one_at_a_time), ("replay", replay), ("served", serving(requests))):
                    seconds, totals[name] = best_time(run, config, records, args.repeat)
                    times[name] = min(times[name], seconds)
            if totals["lifecycle"] != totals["replay"]:
                print(f"MISMATCH: {policy} at {capacity}: lifecycle {totals['lifecycle']} hit tokens, replay {totals['replay']}", file=sys.stderr)
                return 1
            rows.append({"policy": policy, "capacity": capacity, "lifecycle_s": round(times["lifecycle"], 4),
                         "replay_s": round(times["replay"], 4), "ratio": round(times["lifecycle"] / times["replay"], 2),
                         "hit_tokens": totals["replay"], "served_s": round(times["served"], 4),
                         "served_ratio": round(times["served"] / times["replay"], 2), "served_hit_tokens": totals["served"]})
    for capacity in args.capacities:
        rows.append(vllm_row(ReplayConfig("lru", capacity, BLOCK_SIZE, dialect=dialect_for("lru", "vllm")), records, requests, args.rounds,
                             args.repeat))
    table = ["| policy | capacity | lifecycle (s) | replay (s) | ratio | served (s) | served / replay |", "|---|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {r['policy']} | {r['capacity']:,} | {cell(r['lifecycle_s'], 3)} | {r['replay_s']:.3f} | {cell(r['ratio'], 2)} "
              f"| {r['served_s']:.3f} | {r['served_ratio']:.2f} |" for r in rows]
    heading = f"{args.trace}, {len(records):,} requests, best of {args.rounds} x {args.repeat}, contracts off, Python {sys.version.split()[0]}"
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "lifecycle.md").write_text(f"# Lifecycle one at a time, and served, vs the replay\n\n{heading}\n\n" + "\n".join(table) + "\n")
    (args.output_dir / "lifecycle.json").write_text(json.dumps({"trace": args.trace, "rows": rows}, indent=1) + "\n")
    print(heading, *table, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
