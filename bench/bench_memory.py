"""Peak memory of `kvspec replay` against the length of the trace, with and without --per-request.

    python bench/bench_memory.py [--sizes 10000,100000,1000000,10000000] [--output bench/results/memory.json]

Each size gets a synthetic Mooncake trace (gzip, in a temporary folder): the bundled conversation
trace tiled until it has that many lines, every copy's hash ids renamed (the copy's number put
in front of each zero-padded id) so that each copy brings blocks the cache has not seen, with the
prefix sharing of the real trace inside a copy. Each run is a fresh `kvspec replay TRACE
[--per-request] --output FILE` with the contracts off, S3FIFO at the default 4,096 blocks; its
peak RSS and CPU time are its own (os.wait4). A child's ru_maxrss starts at its parent's peak
(it survives fork and exec), so the driver stays small: it neither imports kvspec nor writes the
traces (a subprocess of its own does), and records its own peak beside the rows. The 10M trace
takes about 25 s to write, and its runs about 2.1 GB of temporary disk (the trace, the spool and
the result); the whole run takes about 6 minutes on two cores.
"""

import argparse
import gzip
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

DEFAULT_SIZES = "10000,100000,1000000,10000000"


def templates() -> tuple[list[tuple[int, str]], int]:
    """The bundled trace's lines as (timestamp, text with {c} before each hash id), and its span in time."""
    from kvspec.reference import bundled_trace_path

    with gzip.open(bundled_trace_path(), "rb") as trace:
        records = [json.loads(line) for line in trace]
    width = len(str(max(h for r in records for h in r["hash_ids"])))
    lines = [(r["timestamp"], f'"input_length": {r["input_length"]}, "output_length": {r["output_length"]}, "hash_ids": ['
              + ", ".join(f"{{c}}{h:0{width}d}" for h in r["hash_ids"]) + "]}\n") for r in records]
    return lines, records[-1]["timestamp"] + 1


def trace_lines(requests: int) -> Iterator[str]:
    """``requests`` lines: copy c (from 1) of the bundled trace, ids prefixed by c, timestamps shifted by c spans."""
    lines, span = templates()
    for copy in range(1, requests // len(lines) + 2):
        count = min(len(lines), requests - (copy - 1) * len(lines))
        prefix = str(copy)
        for timestamp, text in lines[:count]:
            yield f'{{"timestamp": {timestamp + (copy - 1) * span}, ' + text.replace("{c}", prefix)


def write_trace(path: Path, requests: int) -> None:
    """Stream the trace to ``path`` in batches (gzip level 1: the run, not the file size, matters)."""
    batch: list[str] = []
    with gzip.open(path, "wb", compresslevel=1) as out:
        for line in trace_lines(requests):
            batch.append(line)
            if len(batch) == 65536:
                out.write("".join(batch).encode())
                batch.clear()
        out.write("".join(batch).encode())


def kvspec_command() -> list[str]:
    script = Path(sys.executable).with_name("kvspec")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kvspec.conformance.cli"]


def measure(trace: Path, per_request: bool, output: Path) -> dict[str, object]:
    """One `kvspec replay` in a fresh process: its peak RSS and times, and what it wrote."""
    command = [*kvspec_command(), "replay", str(trace), "--output", str(output), *(["--per-request"] if per_request else [])]
    started = time.perf_counter()
    process = subprocess.Popen(command, env={**os.environ, "KVSPEC_CONTRACTS": "0"}, stderr=subprocess.PIPE)
    stderr = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)  # this child's own peak, not the largest child's so far (RUSAGE_CHILDREN)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {stderr.decode()}")
    with output.open("rb") as result:
        head = result.read(4096).decode()
    requests = int(head.split('"requests": ')[1].split(",")[0])
    size = output.stat().st_size
    output.unlink()
    return {"per_request": per_request, "requests": requests, "peak_rss_kib": usage.ru_maxrss, "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime, "output_bytes": size}


def table(rows: list[dict[str, object]]) -> str:
    lines = ["| requests | peak RSS (MiB) | time (s) | peak RSS, --per-request (MiB) | time, --per-request (s) | --per-request output (MB) |",
             "|---:|---:|---:|---:|---:|---:|"]
    for plain, each in zip(rows[::2], rows[1::2], strict=True):
        lines.append(f"| {plain['requests']:,} | {plain['peak_rss_kib'] / 1024:.1f} | {plain['wall_s']:.1f} | {each['peak_rss_kib'] / 1024:.1f} "
                     f"| {each['wall_s']:.1f} | {each['output_bytes'] / 1e6:,.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"trace lengths in requests, comma-separated (default {DEFAULT_SIZES})")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results" / "memory.json")
    parser.add_argument("--generate", nargs=2, help=argparse.SUPPRESS)  # requests path: write one trace, in this process
    args = parser.parse_args()
    if args.generate:
        write_trace(Path(args.generate[1]), int(args.generate[0]))
        return 0
    rows: list[dict[str, object]] = []
    generated: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="kvspec-bench-memory-") as folder:
        for requests in (int(size) for size in args.sizes.split(",")):
            trace = Path(folder) / f"trace-{requests}.jsonl.gz"
            started = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--generate", str(requests), str(trace)], check=True)
            generated[requests] = time.perf_counter() - started
            print(f"{requests:>11,} requests: trace written in {generated[requests]:.1f} s", file=sys.stderr)
            for per_request in (False, True):
                rows.append(measure(trace, per_request, Path(folder) / "result.json"))
                print(f"{'':>11}  {'--per-request' if per_request else 'plain':<13} {rows[-1]['peak_rss_kib'] / 1024:7.1f} MiB "  # type: ignore[operator]
                      f"{rows[-1]['wall_s']:7.1f} s", file=sys.stderr)
            trace.unlink()
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(), "platform": platform.platform()}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    args.output.write_text(json.dumps({"machine": machine, "driver_peak_rss_kib": driver, "trace_seconds": generated, "rows": rows}, indent=2) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
