"""Time and memory of the offline optimum (conformance/measurement/offline_optimum.py) on both
bundled traces: the reading of the trace with its next uses, then Belady's MIN at each capacity.

    python bench/bench_offline_optimum.py [--capacities 256,1024,4096,16384,65536]

Contracts off (KVSPEC_CONTRACTS unset), as the CLI runs. Prints a Markdown table: CPU seconds, and
the growth of the peak RSS over the reading (the block numbers, next uses and request bounds it
keeps); 0 for a trace whose reading fits under an earlier trace's peak.
"""

import argparse
import resource
import time

TRACES = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacities", default="256,1024,4096,16384,65536")
    capacities = [int(c) for c in parser.parse_args().capacities.split(",")]
    from kvspec.conformance.measurement.offline_optimum import offline_optimum, read_accesses
    from kvspec.reference import TraceFile, bundled_trace_path

    print("| trace | block accesses | distinct blocks | read and next uses (CPU s) | RSS growth (MiB) | "
          + " | ".join(f"MIN at {c:,} (CPU s)" for c in capacities) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(capacities))
    for trace in TRACES:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        cpu = time.process_time()
        accesses = read_accesses(TraceFile(bundled_trace_path(trace)).records(), 512)
        read = time.process_time() - cpu
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        times = []
        for capacity in capacities:
            cpu = time.process_time()
            offline_optimum(accesses, capacity, 512)
            times.append(time.process_time() - cpu)
        print(f"| {trace} | {len(accesses.blocks):,} | {accesses.distinct:,} | {read:.2f} | {growth:.0f} | "
              + " | ".join(f"{t:.2f}" for t in times) + " |")


if __name__ == "__main__":
    main()
