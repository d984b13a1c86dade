"""`kvspec sweep` one job after another (--jobs 1), in two local processes (--jobs 2) and on a Dask
LocalCluster of two worker processes (--scheduler), and what each of its jobs costs: the figures of
docs/scaling.md.

    python bench/bench_parallel.py [--rounds 3] [--ablate-rounds 1] [--output bench/results/parallel.json]

Speed-up: each run is a fresh `kvspec sweep` (contracts off), the three ways interleaved round
after round, the best wall time of each kept, its ratio to --jobs 1's measured in the same run; the
outputs must be identical byte for byte (MISMATCH and exit status 1 otherwise). CPU time is
kvspec's and its local workers' (os.wait4); a Dask worker's is its own, not counted. The cluster
is started once, outside the timing, and warmed up by one untimed sweep (its workers import
kvspec on their first task). The sweeps: the default one of the bundled conversation trace (three
policies at five capacities, a cache that never evicts and the offline optimum: 17 jobs) and
`--ablate` (both bundled traces, 212 jobs).

Costs: every job of the default sweep of each bundled trace, run in this process one after
another: its CPU time (time.process_time), then in a second, untimed pass its peak of Python
allocations (tracemalloc); the ablation's jobs' CPU time; what a job costs to run elsewhere (200
jobs that do nothing, on two local processes and on the cluster, and the cluster's connection);
and the resident size of a fresh process that has imported what a worker imports. On a shared machine, CPU time and the ratios are the figures to read.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

TRACES = ("conversation", "synthetic")


def kvspec() -> list[str]:
    script = Path(sys.executable).with_name("kvspec")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kvspec.conformance.cli"]


def one_sweep(argv: list[str], output: Path) -> tuple[float, float, bytes]:
    """A fresh `kvspec sweep`: its wall time, the CPU time of it and its children, and its JSON."""
    started = time.perf_counter()
    process = subprocess.Popen([*kvspec(), "sweep", *argv, "--output", str(output)], env={**os.environ, "KVSPEC_CONTRACTS": "0"},
                               stderr=subprocess.PIPE)
    stderr = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"kvspec sweep {' '.join(argv)} failed: {stderr.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, output.read_bytes()


def start_cluster() -> tuple[subprocess.Popen[str], str]:
    """A LocalCluster of two worker processes, one thread each, in a process of its own."""
    code = ("import time\nfrom distributed import LocalCluster\nif __name__ == '__main__':\n"
            "    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=':0', "
            "worker_dashboard_address=':0')\n    print(cluster.scheduler_address, flush=True)\n    time.sleep(86400)\n")
    folder = Path(tempfile.mkdtemp())
    (folder / "cluster.py").write_text(code)
    process = subprocess.Popen([sys.executable, str(folder / "cluster.py")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def speed_up(name: str, argv: list[str], rounds: int, address: str, folder: Path) -> dict[str, object]:
    modes = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"], "LocalCluster of 2": ["--scheduler", address]}
    one_sweep([*argv, *modes["LocalCluster of 2"]], folder / "warm-up.json")
    runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    outputs = {}
    for _ in range(rounds):
        for mode, extra in modes.items():
            wall, cpu, output = one_sweep([*argv, *extra], folder / "out.json")
            runs[mode].append((wall, cpu))
            outputs[mode] = output
            print(f"{name}, {mode}: {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
    if len(set(outputs.values())) != 1:
        sys.exit(f"MISMATCH: {name}: the outputs differ between {', '.join(modes)}")
    best = {mode: min(times) for mode, times in runs.items()}
    serial = best["--jobs 1"][0]
    return {"sweep": name, "argv": argv, "rounds": rounds, "identical_output": True,
            "modes": {mode: {"best_wall_s": wall, "cpu_s_of_best": cpu, "speed_up": serial / wall, "all": runs[mode]}
                      for mode, (wall, cpu) in best.items()}}


def job_costs(trace_name: str) -> dict[str, object]:
    """Each job of the default sweep of a bundled trace: CPU time, then peak Python allocations."""
    from kvspec.conformance.measurement.sweep import DEFAULT_CAPACITIES, sweep
    from kvspec.reference import POLICIES, ReplayConfig, TraceFile, bundled_trace_path

    trace = TraceFile(bundled_trace_path(f"{trace_name}_trace.jsonl.gz"))
    requests = accesses = 0
    for _, record in trace.records():
        requests += 1
        accesses += len(record.hash_ids)
    costs: list[tuple[float, str]] = []
    sweep(lambda label: trace.records(), trace.path, ReplayConfig(), list(POLICIES), list(DEFAULT_CAPACITIES), run=timed(costs))
    rows: list[dict[str, object]] = [{"job": label, "cpu_s": cpu} for cpu, label in costs]

    def traced(jobs):  # type: ignore[no-untyped-def]
        results = []
        for job, row in zip(jobs, rows, strict=True):
            tracemalloc.start()
            results.append(job())
            row["peak_traced_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        return results

    sweep(lambda label: trace.records(), trace.path, ReplayConfig(), list(POLICIES), list(DEFAULT_CAPACITIES), run=traced)
    return {"trace": trace_name, "requests": requests, "block_accesses": accesses, "jobs": rows}


def timed(costs: list[tuple[float, str]]):  # type: ignore[no-untyped-def]
    """A runner of a command's jobs one after another, each one's CPU time and label added to ``costs``."""
    def run(jobs):  # type: ignore[no-untyped-def]
        results = []
        for job in jobs:
            cpu = time.process_time()
            results.append(job())
            costs.append((time.process_time() - cpu, job.label))
        return results

    return run


def ablation_costs() -> dict[str, object]:
    """Each job of `kvspec sweep --ablate` (both bundled traces): their count, CPU time in all, and the longest."""
    from kvspec.conformance.measurement.sweep import DEFAULT_CAPACITIES, ablate
    from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path

    costs: list[tuple[float, str]] = []
    traces = [TraceFile(bundled_trace_path(f"{name}_trace.jsonl.gz")) for name in TRACES]
    ablate([(trace.path, lambda label, trace=trace: trace.records()) for trace in traces], ReplayConfig(), list(DEFAULT_CAPACITIES), timed(costs))
    longest = max(costs)
    return {"jobs": len(costs), "cpu_s": sum(cpu for cpu, _ in costs), "longest_cpu_s": longest[0], "longest": longest[1]}


def overheads(address: str, count: int = 200) -> dict[str, float]:
    """What running a job elsewhere costs: ``count`` jobs that do nothing (the length of their label),
    on two local processes and on the cluster, and the cluster's connection (with the check of its
    workers' versions)."""
    from kvspec.conformance.core.parallel import Cluster, Processes, TraceJob

    jobs = [TraceJob(f"job {n}", len, str, ()) for n in range(count)]
    started = time.perf_counter()
    Processes(2, lambda *told: None).run(jobs)
    local = time.perf_counter() - started
    cluster = Cluster(address, lambda *told: None)
    started = time.perf_counter()
    cluster.connect()
    connect = time.perf_counter() - started
    started = time.perf_counter()
    cluster.run(jobs)
    remote = time.perf_counter() - started
    cluster.close()
    return {"local_ms_a_job": 1000 * local / count, "cluster_ms_a_job": 1000 * remote / count, "cluster_connect_s": connect}


def worker_rss_mib() -> float:
    """VmRSS of a fresh interpreter that has imported what a sweep's worker runs."""
    code = ("import kvspec.conformance.measurement.sweep, kvspec.conformance.core.parallel\n"
            "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    return int(run.stdout) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the default sweep, the three ways interleaved (default 3)")
    parser.add_argument("--ablate-rounds", type=int, default=1, help="rounds of sweep --ablate (default 1; 0 leaves it out)")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "parallel.json")
    parser.add_argument("--costs", action="store_true", help=argparse.SUPPRESS)  # the job costs, in this process
    parser.add_argument("--overheads", help=argparse.SUPPRESS)  # ADDRESS: the overheads, in this process
    args = parser.parse_args()
    if args.costs:
        print(json.dumps({"sweeps": [job_costs(name) for name in TRACES], "ablation": ablation_costs()}))
        return 0
    if args.overheads:
        print(json.dumps(overheads(args.overheads)))
        return 0
    run = subprocess.run([sys.executable, __file__, "--costs"], capture_output=True, text=True, check=True,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    costs = json.loads(run.stdout)
    cluster, address = start_cluster()
    try:
        run = subprocess.run([sys.executable, __file__, "--overheads", address], capture_output=True, text=True, check=True,
                             env={**os.environ, "KVSPEC_CONTRACTS": "0"})
        overhead = json.loads(run.stdout)
        with tempfile.TemporaryDirectory() as folder:
            speed = [speed_up("conversation, default", ["conversation"], args.rounds, address, Path(folder))]
            if args.ablate_rounds:
                speed.append(speed_up("--ablate, both traces", ["--ablate"], args.ablate_rounds, address, Path(folder)))
    finally:
        cluster.terminate()
        cluster.wait()
    result = {"machine": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                          "load_average_at_end": os.getloadavg()},
              "speed_up": speed, "job_costs": costs["sweeps"], "ablation_costs": costs["ablation"], "overheads": overhead,
              "worker_rss_mib": worker_rss_mib()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    for entry in speed:
        print(f"{entry['sweep']}: " + "; ".join(f"{mode} {m['best_wall_s']:.2f} s (x{m['speed_up']:.2f}), {m['cpu_s_of_best']:.2f} s CPU"
                                               for mode, m in entry["modes"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
