"""Issue 17's targets, each measured as a ratio in one run, and met or not.

    .venv/bin/python bench/bench_targets.py [--output-dir bench/results]

Runs, one after another, each in a process of its own:

- bench_prefix.py: the indexed benefit policy's prefix replay against S3FIFO's,
  at every capacity of both bundled traces (target: at most 3 times), and `kvspec compare` of the
  conversation trace end to end (target: under 10 s);
- bench_startup.py: `kvspec --help` (target: under 0.15 s) and `kvspec replay` end to end against
  a naive S3FIFO script (target: at most 1.2 times, wall and CPU);
- bench_certify.py --only adapters: the reference served over the protocol against the reference
  in-process, examples per CPU-second, every policy (target: at least half);
- bench_parallel.py: the speed-up of `kvspec sweep --jobs 2` and on a Dask LocalCluster of two
  workers (no target: what two cores give).

Each writes its own results beside this one's; this script reads them and writes targets.md and
targets.json: every target, the figure measured, and whether it is met. Run it on a quiet
machine: the ratios are of figures taken in the same run, but a busy machine slows the side
that waits (a served certification, a cluster) more than the side that computes.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = {"prefix_vs_s3fifo": 3.0, "compare_wall_s": 10.0, "served_vs_in_process": 0.5}  # the startup targets: bench_startup.py's


def bench(script: str, *args: str) -> None:
    started = time.perf_counter()
    print(f"{script} {' '.join(args)}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, str(HERE / script), *args], check=True)
    print(f"  {time.perf_counter() - started:.0f} s", file=sys.stderr)


def prefix_rows(results: dict) -> list[dict[str, object]]:
    """The indexed benefit policy's CPU time over S3FIFO's, per trace and capacity."""
    cpu = {(r["trace"], r["capacity_gib"], r["policy"]): r["cpu_s"] for r in results["rows"]}
    points = sorted({(trace, gib) for trace, gib, _ in cpu}, key=lambda point: (point[0], point[1]))
    rows = []
    for trace, gib in points:
        ratio = cpu[trace, gib, "benefit (indexed)"] / cpu[trace, gib, "s3fifo"]
        rows.append({"target": f"benefit prefix replay / S3FIFO's, {trace.split('_')[0]}, {gib} GiB", "measured": ratio,
                     "limit": TARGETS["prefix_vs_s3fifo"], "met": ratio <= TARGETS["prefix_vs_s3fifo"], "unit": "x (CPU)"})
    wall = results["compare"]["wall_s"]
    rows.append({"target": "kvspec compare conversation, end to end", "measured": wall, "limit": TARGETS["compare_wall_s"],
                 "met": wall < TARGETS["compare_wall_s"], "unit": f"s (wall; {results['compare']['cpu_s']:.2f} s CPU)"})
    return rows


def startup_rows(results: dict) -> list[dict[str, object]]:
    targets = results["targets"]
    help_wall = results["best"]["kvspec --help"]["wall_s"]
    rows = [{"target": "kvspec --help", "measured": help_wall, "limit": targets["help_wall_s"], "met": help_wall < targets["help_wall_s"],
             "unit": "s (wall)"}]
    for kind in ("wall", "cpu"):
        ratio = results["ratios"][f"replay_vs_naive_{kind}"]
        rows.append({"target": f"kvspec replay / the naive script, end to end ({kind})", "measured": ratio,
                     "limit": targets["replay_vs_naive"], "met": ratio <= targets["replay_vs_naive"], "unit": "x"})
    return rows


def served_rows(table: str) -> list[dict[str, object]]:
    """From bench_certify's adapter table: each policy's last column, served / in-process."""
    rows = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) > 2 and cells[0] in ("s3fifo", "lru", "fifo", "benefit"):
            ratio = float(cells[-1])
            rows.append({"target": f"reference served / in-process, {cells[0]}", "measured": ratio, "limit": TARGETS["served_vs_in_process"],
                         "met": ratio >= TARGETS["served_vs_in_process"], "unit": "x (examples per CPU-second)"})
    return rows


def parallel_rows(results: dict) -> list[dict[str, object]]:
    rows = []
    for sweep in results["speed_up"]:
        for mode in ("--jobs 2", "LocalCluster of 2"):
            rows.append({"target": f"sweep {sweep['sweep']}: {mode} against --jobs 1", "measured": sweep["modes"][mode]["speed_up"],
                         "limit": None, "met": sweep["identical_output"], "unit": "x (wall; met: the same output)"})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=HERE / "results")
    args = parser.parse_args()
    out = args.output_dir
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    bench("bench_prefix.py", "--output-dir", str(out))
    bench("bench_startup.py", "--output-dir", str(out))
    bench("bench_certify.py", "--only", "adapters", "--output", str(out / "adapters.md"))
    bench("bench_parallel.py", "--output", str(out / "parallel.json"))
    rows = (prefix_rows(json.loads((out / "prefix.json").read_text())) + startup_rows(json.loads((out / "startup.json").read_text()))
            + served_rows((out / "adapters.md").read_text()) + parallel_rows(json.loads((out / "parallel.json").read_text())))
    command = f"{os.path.relpath(sys.executable)} bench/bench_targets.py"
    lines = [f"`{command}`, {time.strftime('%Y-%m-%d')}: Python {platform.python_version()}, {platform.machine()}, "
             f"{len(os.sched_getaffinity(0))} CPUs, {time.perf_counter() - started:.0f} s in all. Each ratio is of two "
             "figures measured in the same run (prefix.md, startup.md, adapters.md and parallel.json beside this file give them).", "",
             "| target | limit | measured | met |", "|---|---:|---:|---|"]
    for row in rows:
        limit = "" if row["limit"] is None else f"{row['limit']:g}"
        lines.append(f"| {row['target']} | {limit} | {row['measured']:.3g} {row['unit']} | {'yes' if row['met'] else 'NO'} |")
    (out / "targets.md").write_text("\n".join(lines) + "\n")
    (out / "targets.json").write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")
    print("\n".join(lines))
    return 0 if all(row["met"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
