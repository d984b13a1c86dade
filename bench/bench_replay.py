"""Benchmark the reference's S3FIFO replay loop against a naive S3FIFO.

Run from the repository root with the project's interpreter:

    python bench/bench_replay.py                      # the default run (about 3.5 minutes on 2 cores)
    python bench/bench_replay.py --no-contracts       # only the contract-free rows (about 30 s)

What is timed: the replay loop alone, over a trace parsed once into plain lists (hash_ids,
input_length) before the clock starts. Each variant runs in its own fresh subprocess, because
the reference reads KVSPEC_CONTRACTS once, at import:

- reference              the reference, contracts off (KVSPEC_CONTRACTS unset)
- naive                  bench/naive_s3fifo.py, three OrderedDicts in one class
- reference contracts=1  the reference with KVSPEC_CONTRACTS=1
- reference contracts=all the reference with KVSPEC_CONTRACTS=all

and, as one extra row, the end-to-end `kvspec replay` of the trace at the default capacity
(process wall time: interpreter start, reading and checking the lines, replay and JSON output).

The contract variants are slow (the per-request state invariants are O(cache size)), so by
default they run once under a time budget (--contract-budget seconds): a run that hits the
budget stops after the request in progress and reports the rate over the requests it
replayed, marked as partial, together with how many blocks were resident when it stopped.

The reference and the naive implementation must agree on total_hit_tokens and
final_cache_blocks at every capacity (a partial run is checked against the naive replay of
the same prefix); the script exits with status 1 and a MISMATCH message if they do not.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import gzip
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK_SIZE = 512

# name -> (KVSPEC_CONTRACTS value or None for unset, label in the table)
VARIANTS = {
    "reference": (None, "reference (contracts off)"),
    "naive": (None, "naive S3FIFO"),
    "contracts-1": ("1", "reference, KVSPEC_CONTRACTS=1"),
    "contracts-all": ("all", "reference, KVSPEC_CONTRACTS=all"),
}


# --------------------------------------------------------------------------------------------
# Worker: one variant, one capacity, in a fresh process.
# --------------------------------------------------------------------------------------------


def load_trace(path: str) -> tuple[list[list[int]], list[int]]:
    """The trace as two plain lists, read line by line (no pydantic, no validation)."""
    with open(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if compressed else open
    hash_ids: list[list[int]] = []
    lengths: list[int] = []
    with opener(path, "rb") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            hash_ids.append(record["hash_ids"])
            lengths.append(record["input_length"])
    return hash_ids, lengths


def proc_status_kib(field: str) -> int | None:
    """VmRSS or VmHWM of this process from /proc/self/status (Linux), in KiB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); ru_maxrss cannot be reset."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def make_runner(variant: str, capacity: int):
    """Return (new_cache, resident): a maker of fresh empty caches, and its resident count."""
    if variant == "naive":
        sys.path.insert(0, str(HERE))
        from naive_s3fifo import NaiveS3FIFO

        return (lambda: NaiveS3FIFO(capacity)), (lambda cache: cache.resident_count())

    from kvspec.reference import ReplayConfig, make_policy

    config = ReplayConfig(policy="s3fifo", capacity=capacity, block_size=BLOCK_SIZE)
    return (lambda: make_policy(config)), (lambda policy: policy.resident_count())


def replay_loop(variant: str, new_cache, hash_ids, lengths):
    """The timed loop, written out per variant so that neither pays for a wrapper."""
    if variant == "naive":
        cache = new_cache()
        request = cache.request
        total = 0
        for ids, length in zip(hash_ids, lengths):
            total += request(ids, length, BLOCK_SIZE)
        return cache, total, len(hash_ids)
    from kvspec.reference.replay import replay_request

    policy = new_cache()
    total = 0
    for ids, length in zip(hash_ids, lengths):
        total += replay_request(policy, ids, length, BLOCK_SIZE)
    return policy, total, len(hash_ids)


def budgeted_loop(variant: str, new_cache, hash_ids, lengths, deadline: float):
    """The same loop, stopping after the first request that ends past ``deadline``."""
    from kvspec.reference.replay import replay_request

    assert variant != "naive"
    policy = new_cache()
    total = 0
    done = 0
    clock = time.perf_counter
    for ids, length in zip(hash_ids, lengths):
        total += replay_request(policy, ids, length, BLOCK_SIZE)
        done += 1
        if clock() > deadline:
            break
    return policy, total, done


def naive_prefix(capacity: int, hash_ids, lengths, n: int) -> tuple[int, int]:
    sys.path.insert(0, str(HERE))
    from naive_s3fifo import NaiveS3FIFO

    cache = NaiveS3FIFO(capacity)
    total = sum(cache.request(ids, length, BLOCK_SIZE) for ids, length in zip(hash_ids[:n], lengths[:n]))
    return total, cache.resident_count()


def worker(args: argparse.Namespace) -> None:
    level = os.environ.get("KVSPEC_CONTRACTS")
    hash_ids, lengths = load_trace(args.trace)
    new_cache, resident = make_runner(args.variant, args.capacity)
    if args.variant != "naive":
        import kvspec.reference.contracts as contracts  # the level the reference actually read

        level = contracts.LEVEL
    out: dict = {
        "variant": args.variant,
        "contracts": level,
        "capacity": args.capacity,
        "requests_total": len(hash_ids),
        "accesses_total": sum(map(len, hash_ids)),
    }
    gc.collect()

    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
        tracemalloc.reset_peak()
        cache, total, done = replay_loop(args.variant, new_cache, hash_ids, lengths)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.update(tracemalloc_peak_bytes=peak, tracemalloc_end_bytes=current, total_hit_tokens=total, final_cache_blocks=resident(cache))
        print(json.dumps(out))
        return

    # ru_maxrss is a high-water mark that survives exec: a fresh process starts with its parent's
    # peak. The driver stays small (it never imports pydantic) so that this process's own
    # baseline, with the trace parsed, is above it; maxrss_headroom_kib records the gap, which
    # is how much growth ru_maxrss could miss. VmHWM, reset here, is a second reading.
    rss_before = proc_status_kib("VmRSS")
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm_reset = reset_peak_rss()
    times: list[float] = []
    cpu_times: list[float] = []
    results = set()
    done = len(hash_ids)
    budgeted = args.budget > 0 and args.variant.startswith("contracts")
    for run in range(args.repeat):
        # A budgeted run after the first replays the prefix the first one reached, so that
        # every repeat times the same work.
        ids_run, lengths_run = (hash_ids, lengths) if run == 0 else (hash_ids[:done], lengths[:done])
        start = time.perf_counter()
        cpu_start = time.process_time()
        if budgeted and run == 0:
            cache, total, done = budgeted_loop(args.variant, new_cache, hash_ids, lengths, start + args.budget)
        else:
            cache, total, done = replay_loop(args.variant, new_cache, ids_run, lengths_run)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        results.add((total, resident(cache), done))
        del cache
    maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm_after = proc_status_kib("VmHWM") if hwm_reset else None
    if len(results) != 1:
        raise SystemExit(f"MISMATCH: {args.variant} gave different results across repeats: {sorted(results)}")
    total, final_blocks, done = results.pop()
    accesses = sum(map(len, hash_ids[:done]))
    best = min(times)
    out.update(
        complete=done == len(hash_ids),
        requests_done=done,
        accesses_done=accesses,
        repeat=args.repeat,
        seconds=times,
        best_seconds=best,
        accesses_per_second=accesses / best,
        cpu_seconds=cpu_times,
        best_cpu_seconds=min(cpu_times),
        total_hit_tokens=total,
        final_cache_blocks=final_blocks,
        rss_before_kib=rss_before,
        maxrss_before_kib=maxrss_before,
        maxrss_after_kib=maxrss_after,
        maxrss_growth_kib=maxrss_after - maxrss_before,
        maxrss_headroom_kib=None if rss_before is None else max(maxrss_before - rss_before, 0),
        vmhwm_growth_kib=None if hwm_after is None or rss_before is None else hwm_after - rss_before,
    )
    if done != len(hash_ids):
        naive_total, naive_blocks = naive_prefix(args.capacity, hash_ids, lengths, done)
        out.update(naive_prefix_total_hit_tokens=naive_total, naive_prefix_final_cache_blocks=naive_blocks)
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def child_env(level: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KVSPEC_CONTRACTS", None)
    if level is not None:
        env["KVSPEC_CONTRACTS"] = level
    return env


def run_variant(variant: str, capacity: int, trace: str, repeat: int, budget: float, tracemalloc: bool = False) -> dict:
    level, label = VARIANTS[variant]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--variant", variant, "--capacity", str(capacity), "--trace", trace,
           "--repeat", str(repeat), "--budget", str(budget)]
    if tracemalloc:
        cmd.append("--tracemalloc")
    what = f"{label} @ {capacity:,}" + (" (tracemalloc)" if tracemalloc else "")
    print(f"  running {what} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=child_env(level), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"{what} failed with status {proc.returncode}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["label"] = label
    print(f"    done in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return result


def kvspec_command() -> list[str]:
    script = Path(sys.executable).parent / "kvspec"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from kvspec.conformance.cli import main; sys.exit(main())"]


def run_end_to_end(trace: str, repeat: int, default_trace: bool) -> dict:
    cmd = kvspec_command() + ["replay"] + ([] if default_trace else [trace])
    print(f"  running {' '.join(cmd)} x{repeat} ...", file=sys.stderr, flush=True)
    times: list[float] = []
    cpu_times: list[float] = []
    maxrss: list[int] = []
    output = None
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=child_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU time and peak RSS
        times.append(time.perf_counter() - start)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode != 0:
            sys.stderr.write(stderr.decode())
            raise SystemExit(f"kvspec replay failed with status {proc.returncode}")
        cpu_times.append(usage.ru_utime + usage.ru_stime)
        maxrss.append(usage.ru_maxrss)
        output = json.loads(stdout)
    assert output is not None
    return {
        "variant": "kvspec-replay",
        "label": "`kvspec replay` end to end (contracts off)",
        "command": cmd,
        "contracts": None,
        "capacity": output["cache_capacity_blocks"],
        "repeat": repeat,
        "seconds": times,
        "best_seconds": min(times),
        "cpu_seconds": cpu_times,
        "best_cpu_seconds": min(cpu_times),
        "requests_done": output["requests"],
        "total_hit_tokens": output["total_hit_tokens"],
        "final_cache_blocks": output["final_cache_blocks"],
        "process_maxrss_kib": max(maxrss),
        "complete": True,
    }


def check_same(capacity: int, reference: dict, naive: dict) -> None:
    if (reference["total_hit_tokens"], reference["final_cache_blocks"]) != (naive["total_hit_tokens"], naive["final_cache_blocks"]):
        raise SystemExit(
            f"MISMATCH at capacity {capacity:,}: {reference['label']} gave total_hit_tokens={reference['total_hit_tokens']},"
            f" final_cache_blocks={reference['final_cache_blocks']}; {naive['label']} gave"
            f" total_hit_tokens={naive['total_hit_tokens']}, final_cache_blocks={naive['final_cache_blocks']}"
        )


def check_partial(capacity: int, result: dict) -> None:
    got = (result["total_hit_tokens"], result["final_cache_blocks"])
    want = (result["naive_prefix_total_hit_tokens"], result["naive_prefix_final_cache_blocks"])
    if got != want:
        raise SystemExit(
            f"MISMATCH at capacity {capacity:,} over the first {result['requests_done']:,} requests: {result['label']} gave"
            f" (total_hit_tokens, final_cache_blocks)={got}, the naive S3FIFO gave {want}"
        )


def git_state() -> dict:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    dirty = git("status", "--porcelain", "--", "reference")
    return {"commit": git("rev-parse", "HEAD"), "reference_dirty": bool(dirty) if dirty is not None else None}


def machine_info() -> dict:
    cpu_model = None
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "loadavg_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        **git_state(),
    }


def mib(kib: float | None) -> str:
    return "—" if kib is None else f"{kib / 1024:.1f}"


def table(rows: list[dict], naive: dict[int, dict]) -> str:
    head = (
        "| Variant | Capacity (blocks) | Requests replayed | Block accesses | Best wall time (s) | Block accesses/s |"
        " vs naive | Best CPU time (s) | vs naive, CPU | Peak RSS growth (MiB) | tracemalloc peak (MiB) | total_hit_tokens"
        " | final_cache_blocks | Runs |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for r in rows:
        if r["variant"] == "kvspec-replay":
            accesses = r["accesses"]
            rate = accesses / r["best_seconds"]
            vs, vs_cpu = versus(r, accesses, naive)
            lines.append(
                f"| {r['label']} | {r['capacity']:,} | {r['requests_done']:,} | {accesses:,} | {r['best_seconds']:.3f} | {rate:,.0f} |"
                f" {vs} | {r['best_cpu_seconds']:.3f} | {vs_cpu} | {mib(r['process_maxrss_kib'])} (whole process) | — |"
                f" {r['total_hit_tokens']:,} | {r['final_cache_blocks']:,} | best of {r['repeat']} |"
            )
            continue
        partial = "" if r["complete"] else f" (partial: stopped at the budget, {r['final_cache_blocks']:,} blocks resident)"
        rate = r["accesses_per_second"]
        vs, vs_cpu = versus(r, r["accesses_done"], naive)
        tm = r.get("tracemalloc_peak_bytes")
        lines.append(
            f"| {r['label']}{partial} | {r['capacity']:,} | {r['requests_done']:,} | {r['accesses_done']:,} | {r['best_seconds']:.3f} |"
            f" {rate:,.0f} | {vs} | {r['best_cpu_seconds']:.3f} | {vs_cpu} | {mib(r['maxrss_growth_kib'])} | {'—' if tm is None else f'{tm / 2**20:.1f}'} |"
            f" {r['total_hit_tokens']:,} | {r['final_cache_blocks']:,} | best of {r['repeat']} |"
        )
    return head + "\n".join(lines) + "\n"


def markdown(info: dict, rows: list[dict], naive: dict[int, dict], args: argparse.Namespace) -> str:
    return (
        f"# kvspec replay benchmark: {info['date']}\n\n"
        f"Machine: {info['cpu_model']}, {info['cpu_count']} CPUs, {info['platform']}, Python {info['python']}"
        f" ({info['implementation']}); load average at start {info['loadavg_at_start']}.\n"
        f"Code: commit {info['commit']}{' with uncommitted changes in reference/' if info['reference_dirty'] else ''}.\n"
        f"Trace: {args.trace_name}. S3FIFO, block size {BLOCK_SIZE}, small_ratio 0.1, max_freq 3.\n"
        f"Command: `{' '.join(['python bench/bench_replay.py', *args.argv])}`\n\n"
        + table(rows, naive)
        + "\nBlock accesses/s = block accesses replayed / best wall time; vs naive = that rate / the naive S3FIFO's rate at the"
        " same capacity (above 1.00x = faster than naive); the CPU columns do the same with the process's CPU time, which"
        " other load on the machine disturbs less. Peak RSS growth = ru_maxrss after the timed runs minus before them, in a"
        " fresh process with the trace already parsed (latest.json also has a VmHWM reading); tracemalloc peak is the"
        " Python allocations' peak during one replay, from a separate, untimed run. Contract rows run once, under a"
        f" {args.contract_budget:g} s budget; a partial row's rate covers the requests it replayed, with a cache still filling.\n"
    )


def bundled_trace() -> Path:
    """kvspec.reference.bundled_trace_path(), found without importing kvspec.reference: the
    driver must stay small, since every worker inherits its peak RSS as ru_maxrss."""
    import importlib.util

    spec = importlib.util.find_spec("kvspec.reference")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kvspec.reference is not installed; run with the project's venv")
    return Path(list(spec.submodule_search_locations)[0]) / "traces" / "conversation_trace.jsonl.gz"


def versus(row: dict, accesses: int, naive: dict[int, dict]) -> tuple[str, str]:
    """This row's rate over the naive S3FIFO's at the same capacity, by wall and by CPU time."""
    base = naive.get(row["capacity"])
    if base is None:
        return "—", "—"
    wall = ratio(accesses / row["best_seconds"], base["accesses_done"] / base["best_seconds"])
    cpu = ratio(accesses / row["best_cpu_seconds"], base["accesses_done"] / base["best_cpu_seconds"])
    return wall, cpu


def ratio(rate: float, base: float) -> str:
    x = rate / base
    return f"{x:.2f}x" if x >= 0.1 else f"{x:.3f}x" if x >= 0.001 else f"{x:.1e}x"


def merge_rounds(results: list[dict]) -> dict:
    """One row from several rounds of the same variant: every run's times, the best of them."""
    for other in results[1:]:
        check_same(results[0]["capacity"], results[0], other)
    merged = dict(results[0])
    merged["seconds"] = [t for r in results for t in r["seconds"]]
    merged["cpu_seconds"] = [t for r in results for t in r["cpu_seconds"]]
    merged["best_seconds"] = min(merged["seconds"])
    merged["best_cpu_seconds"] = min(merged["cpu_seconds"])
    merged["accesses_per_second"] = merged["accesses_done"] / merged["best_seconds"]
    merged["repeat"] = len(merged["seconds"])
    merged["maxrss_growth_kib"] = max(r["maxrss_growth_kib"] for r in results)
    return merged


def driver(args: argparse.Namespace) -> None:
    capacities = [int(c) for c in args.capacities.split(",") if c]
    skip_all = {int(c) for c in args.skip_all_at.split(",") if c}
    default_trace = args.trace is None
    trace = str(bundled_trace() if default_trace else Path(args.trace).resolve())
    args.trace_name = Path(trace).name + (" (bundled)" if default_trace else "")
    info = machine_info()
    started = time.perf_counter()
    rows: list[dict] = []
    naive_by_cap: dict[int, dict] = {}
    for capacity in capacities:
        # Alternate the two in several rounds of fresh processes, so that a burst of other load
        # on this shared machine cannot land on one variant's runs only.
        rounds = [(run_variant("reference", capacity, trace, args.repeat, 0), run_variant("naive", capacity, trace, args.repeat, 0))
                  for _ in range(args.rounds)]
        reference, naive = merge_rounds([r for r, _ in rounds]), merge_rounds([n for _, n in rounds])
        check_same(capacity, reference, naive)
        naive_by_cap[capacity] = naive
        if not args.no_tracemalloc:
            for r in (reference, naive):
                traced = run_variant(r["variant"], capacity, trace, 1, 0, tracemalloc=True)
                check_same(capacity, traced, naive)
                r["tracemalloc_peak_bytes"] = traced["tracemalloc_peak_bytes"]
        rows += [reference, naive]
    if not args.no_contracts:
        for capacity in capacities:
            for variant in ("contracts-1", "contracts-all"):
                if variant == "contracts-all" and capacity in skip_all:
                    continue
                result = run_variant(variant, capacity, trace, args.contract_repeat, args.contract_budget)
                if result["complete"]:
                    check_same(capacity, result, naive_by_cap[capacity])
                else:
                    check_partial(capacity, result)
                rows.append(result)
    if args.e2e_repeat > 0:
        e2e = run_end_to_end(trace, args.e2e_repeat, default_trace)
        e2e["accesses"] = rows[0]["accesses_total"]
        if e2e["capacity"] in naive_by_cap:
            check_same(e2e["capacity"], e2e, naive_by_cap[e2e["capacity"]])
        rows.append(e2e)
    info["bench_wall_seconds"] = round(time.perf_counter() - started, 1)

    text = markdown(info, rows, naive_by_cap, args)
    print(text)
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "latest.md").write_text(text)
    raw = {"machine": info, "trace": trace, "block_size": BLOCK_SIZE, "argv": args.argv, "results": rows}
    (out_dir / "latest.json").write_text(json.dumps(raw, indent=2) + "\n")
    print(f"wrote {out_dir / 'latest.md'} and {out_dir / 'latest.json'} ({info['bench_wall_seconds']} s)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacities", default="4096,65536", help="comma-separated cache capacities in blocks (default: 4096,65536)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of the contract-free variants; the best counts (default: 5)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of fresh processes for the contract-free variants (default: 3)")
    parser.add_argument("--trace", help="a Mooncake trace (JSON lines, plain or gzip); default: the bundled conversation trace")
    parser.add_argument("--contract-repeat", type=int, default=1, help="timed runs of the contract variants (default: 1)")
    parser.add_argument("--contract-budget", type=float, default=45.0,
                        help="seconds after which a contract variant stops and reports a partial rate; 0 = replay the whole trace (default: 45)")
    parser.add_argument("--skip-all-at", default="", metavar="CAPACITIES", help="comma-separated capacities at which to skip KVSPEC_CONTRACTS=all")
    parser.add_argument("--no-contracts", action="store_true", help="skip both contract variants")
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the tracemalloc runs")
    parser.add_argument("--e2e-repeat", type=int, default=3, help="timed runs of `kvspec replay` end to end; 0 skips it (default: 3)")
    parser.add_argument("--output-dir", default=str(HERE / "results"), help="where latest.md and latest.json go (default: bench/results)")
    # Worker mode (internal): one variant in this fresh process, JSON on stdout.
    parser.add_argument("--variant", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--capacity", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.variant:
        worker(args)
    else:
        driver(args)


if __name__ == "__main__":
    main()
