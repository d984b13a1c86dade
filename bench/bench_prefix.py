"""Time and memory of the prefix-cache replay of spec/benefit.md section 20, per trace, policy
and capacity: the benefit policy against S3FIFO, LRU and FIFO.

    python bench/bench_prefix.py [--capacities 16,64,256] [--output-dir bench/results]

Each run is a fresh subprocess with the contracts off (KVSPEC_CONTRACTS is read at import), so
that its peak RSS is its own. The trace is parsed before the clock starts; the time is the
replay alone, wall and CPU. Writes prefix.md and prefix.json to the output folder.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")
POLICIES = ("benefit", "s3fifo", "lru", "fifo")


def one_run(trace: str, policy: str, capacity: int) -> dict[str, object]:
    from kvspec.reference import TraceFile, bundled_trace_path
    from kvspec.reference.benefit.prefix import replay_benefit, replay_blocks

    records = list(TraceFile(bundled_trace_path(trace)).records())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    side = replay_benefit(records, capacity) if policy == "benefit" else replay_blocks(records, policy, capacity)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"trace": trace, "policy": policy, "capacity_gib": capacity >> 30, "wall_s": wall, "cpu_s": cpu, "rss_growth_kib": growth,
            "requests_per_s": side.requests / wall, "hit_tokens": side.hit_tokens}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="16,64,256", help="GiB, comma-separated (default 16,64,256)")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # trace policy capacity: one run, in this process
    args = parser.parse_args()
    if args.run:
        print(json.dumps(one_run(args.run[0], args.run[1], int(args.run[2]))))
        return 0
    rows = []
    env = {**os.environ, "KVSPEC_CONTRACTS": "0"}
    for trace in TRACES:
        for gib in (int(c) for c in args.capacities.split(",")):
            for policy in POLICIES:
                run = subprocess.run([sys.executable, __file__, "--run", trace, policy, str(gib << 30)], capture_output=True, text=True,
                                     env=env, check=True)
                rows.append(json.loads(run.stdout))
                row = rows[-1]
                print(f"{trace:<28} {gib:>4} GiB {policy:<8} {row['wall_s']:>7.2f} s {row['requests_per_s']:>9,.0f} req/s "
                      f"{row['rss_growth_kib'] / 1024:>7.1f} MiB", file=sys.stderr)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "prefix.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    lines = ["| trace | capacity | policy | replay (s) | CPU (s) | requests/s | peak RSS growth (MiB) |", "|---|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {r['trace']} | {r['capacity_gib']} GiB | {r['policy']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['requests_per_s']:,.0f} | "
              f"{r['rss_growth_kib'] / 1024:.1f} |" for r in rows]
    (args.output_dir / "prefix.md").write_text(f"Python {machine['python']}, {machine['machine']}, {machine['cpus']} CPUs, contracts off.\n\n"
                                               + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
