"""Time and memory of the prefix-cache replay of spec/benefit.md section 20, per trace, policy
and capacity: the benefit policy, the reference's and the indexed one
(conformance/measurement/indexed_benefit.py), beside S3FIFO, LRU and FIFO; and `kvspec compare`
of the conversation trace end to end.

    python bench/bench_prefix.py [--capacities 16,64,256] [--rounds 3] [--skip-reference] [--output-dir bench/results]

Each run is a fresh subprocess with the contracts off (KVSPEC_CONTRACTS is read at import), so
that its peak RSS is its own. The trace is parsed before the clock starts; the time is the
replay alone, CPU and wall. The indexed benefit policy and the block policies run ``--rounds``
times, interleaved, and each reports its least CPU time: the ratio indexed / S3FIFO (the target
of issue 17: at most 3) is of two figures measured in the same run. The reference's benefit
policy runs once per point (about 1 to 15 s each; ``--skip-reference`` leaves it out), and its
results must be the indexed policy's, or the script stops with MISMATCH and exit status 1.
Writes prefix.md and prefix.json to the output folder.
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
POLICIES = ("benefit (reference)", "benefit (indexed)", "s3fifo", "lru", "fifo")
REPEATED = POLICIES[1:]
COMPARED = "reference/traces/conversation_trace.jsonl.gz"
ROOT = Path(__file__).resolve().parent.parent


def one_run(trace: str, policy: str, capacity: int) -> dict[str, object]:
    from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
    from kvspec.reference import TraceFile, bundled_trace_path
    from kvspec.reference.benefit import BenefitPolicy
    from kvspec.reference.benefit.prefix import replay_benefit, replay_blocks

    records = list(TraceFile(bundled_trace_path(trace)).records())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    if policy.startswith("benefit"):
        side = replay_benefit(records, capacity, policy_class=IndexedBenefitPolicy if policy == "benefit (indexed)" else BenefitPolicy)
    else:
        side = replay_blocks(records, policy, capacity)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"trace": trace, "policy": policy, "capacity_gib": capacity >> 30, "wall_s": wall, "cpu_s": cpu, "rss_growth_kib": growth,
            "requests_per_s": side.requests / wall, "side": side.model_dump()}


def run_once(trace: str, policy: str, gib: int) -> dict[str, object]:
    run = subprocess.run([sys.executable, __file__, "--run", trace, policy, str(gib << 30)], capture_output=True, text=True,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"}, check=True)
    row: dict[str, object] = json.loads(run.stdout)
    print(f"{trace:<28} {gib:>4} GiB {policy:<20} {row['cpu_s']:>7.2f} s CPU {row['wall_s']:>7.2f} s wall", file=sys.stderr)
    return row


def best(rows: list[dict[str, object]]) -> dict[str, object]:
    """The run of least CPU time, with every run's CPU time."""
    least = min(rows, key=lambda row: float(row["cpu_s"]))  # type: ignore[arg-type]
    return {**least, "cpu_s_runs": [row["cpu_s"] for row in rows]}


def measure_point(trace: str, gib: int, rounds: int, reference: bool) -> list[dict[str, object]]:
    """Every policy at one trace and capacity, the repeated ones interleaved round by round."""
    runs: dict[str, list[dict[str, object]]] = {policy: [] for policy in POLICIES}
    for round_number in range(rounds):
        for policy in POLICIES if reference and round_number == 0 else REPEATED:
            runs[policy].append(run_once(trace, policy, gib))
    rows = [best(runs[policy]) for policy in POLICIES if runs[policy]]
    if reference and rows[0]["side"] != rows[1]["side"]:
        raise SystemExit(f"MISMATCH {trace} {gib} GiB: the reference's benefit policy gives {rows[0]['side']}, "
                         f"the indexed one {rows[1]['side']}")
    return rows


def compare_end_to_end() -> dict[str, float]:
    """`kvspec compare` of the conversation trace: the process's CPU time (user + sys, from wait4) and wall time."""
    wall = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "kvspec.conformance.cli", "compare", str(ROOT / COMPARED)], stdout=subprocess.DEVNULL,
                               env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    _, status, usage = os.wait4(process.pid, 0)
    if status:
        raise SystemExit(f"kvspec compare {COMPARED} failed")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.perf_counter() - wall}


def ratio_lines(rows: list[dict[str, object]]) -> list[str]:
    """Per trace and capacity: the indexed policy's CPU time over S3FIFO's, and the reference's over the indexed one's."""
    lines = ["| trace | capacity | benefit (indexed) CPU (s) | s3fifo CPU (s) | indexed / s3fifo | reference / indexed |",
             "|---|---:|---:|---:|---:|---:|"]
    points = sorted({(str(r["trace"]), int(r["capacity_gib"])) for r in rows}, key=lambda p: (TRACES.index(p[0]), p[1]))  # type: ignore[call-overload]
    for trace, gib in points:
        cpu = {r["policy"]: float(r["cpu_s"]) for r in rows if (r["trace"], r["capacity_gib"]) == (trace, gib)}  # type: ignore[arg-type]
        speedup = f"{cpu['benefit (reference)'] / cpu['benefit (indexed)']:.1f}" if "benefit (reference)" in cpu else "not run"
        lines.append(f"| {trace} | {gib} GiB | {cpu['benefit (indexed)']:.2f} | {cpu['s3fifo']:.2f} | "
                     f"{cpu['benefit (indexed)'] / cpu['s3fifo']:.2f} | {speedup} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="16,64,256", help="GiB, comma-separated (default 16,64,256)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of the indexed benefit policy and of each block policy, interleaved (default 3)")
    parser.add_argument("--skip-reference", action="store_true", help="leave out the reference's benefit policy (about 1 to 15 s a point)")
    parser.add_argument("--output-dir", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # trace policy capacity: one run, in this process
    args = parser.parse_args()
    if args.run:
        print(json.dumps(one_run(args.run[0], args.run[1], int(args.run[2]))))
        return 0
    rows = [row for trace in TRACES for gib in (int(c) for c in args.capacities.split(","))
            for row in measure_point(trace, gib, args.rounds, not args.skip_reference)]
    compare = compare_end_to_end()
    print(f"kvspec compare {COMPARED}: {compare['cpu_s']:.2f} s CPU, {compare['wall_s']:.2f} s wall", file=sys.stderr)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    results = {"machine": machine, "rounds": args.rounds, "rows": rows, "compare": compare}
    (args.output_dir / "prefix.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = ["| trace | capacity | policy | CPU (s) | replay (s) | requests/s | peak RSS growth (MiB) |",
             "|---|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {r['trace']} | {r['capacity_gib']} GiB | {r['policy']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | "
              f"{r['requests_per_s']:,.0f} | {r['rss_growth_kib'] / 1024:.1f} |" for r in rows]
    header = (f"Python {machine['python']}, {machine['machine']}, {machine['cpus']} CPUs, contracts off. "
              f"The least CPU time of {args.rounds} interleaved runs (the reference's benefit policy: one run).\n\n")
    footer = f"\n\n`kvspec compare {COMPARED}`: {compare['cpu_s']:.2f} s CPU, {compare['wall_s']:.2f} s wall.\n"
    (args.output_dir / "prefix.md").write_text(header + "\n".join(lines) + "\n\n" + "\n".join(ratio_lines(rows)) + footer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
