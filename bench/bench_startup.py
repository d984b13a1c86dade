"""Startup (issue 17, point 2): `kvspec --help`, and `kvspec replay` of the bundled conversation trace
end to end against a plain-Python script that replays bench/naive_s3fifo.py's NaiveS3FIFO over the
same trace at the same capacity.

    .venv/bin/python bench/bench_startup.py [--rounds 15] [--output-dir bench/results]

Every command is a fresh process. The commands run in turn, round after round, so that the
machine's load falls on all of them alike; each figure is the best of the rounds, in wall time and
in CPU time (user + system, from the children's rusage). The commands:

- `python -c pass`: the interpreter's own start, the floor under every other row;
- `kvspec --help`;
- the naive script (NAIVE below): read the gzip JSON lines with the json module, replay each
  request through NaiveS3FIFO at `kvspec replay`'s default capacity, print the totals;
- `kvspec replay`, no arguments: contracts off, as by default.

The children run without KVSPEC_CONTRACTS and with their bytecode cached, as an installed kvspec
runs: PYTHONDONTWRITEBYTECODE is dropped from their environment and each command runs once before
the rounds. The naive script and `kvspec replay` must give the same requests, hit tokens, prompt
tokens and resident blocks (exit status 1 and MISMATCH otherwise). Writes startup.md and
startup.json (every run's times, the machine, the commit) to the output folder.
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

from kvspec.reference import ReplayConfig, bundled_trace_path

HERE = Path(__file__).resolve().parent
NAIVE = """
import gzip, json, sys
sys.path.insert(0, sys.argv[1])
from naive_s3fifo import NaiveS3FIFO
cache = NaiveS3FIFO(int(sys.argv[3]))
requests = hit_tokens = prompt_tokens = 0
with gzip.open(sys.argv[2], "rb") as lines:
    for line in lines:
        request = json.loads(line)
        hit_tokens += cache.request(request["hash_ids"], request["input_length"])
        prompt_tokens += request["input_length"]
        requests += 1
print(requests, hit_tokens, prompt_tokens, cache.resident_count())
"""
TARGETS = {"help_wall_s": 0.15, "replay_vs_naive": 1.2}  # issue 17: `kvspec --help` under 0.15 s; `kvspec replay` within 1.2 times the naive script


def kvspec() -> list[str]:
    """The `kvspec` a user runs: the console script beside this interpreter."""
    script = Path(sys.executable).with_name("kvspec")
    return [str(script)] if script.exists() else [sys.executable, "-c", "import sys; from kvspec.conformance import main; sys.exit(main())"]


def commands() -> dict[str, list[str]]:
    capacity = ReplayConfig().capacity
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "kvspec --help": [*kvspec(), "--help"],
        "naive script": [sys.executable, "-c", NAIVE, str(HERE), str(bundled_trace_path()), str(capacity)],
        "kvspec replay": [*kvspec(), "replay"],
    }


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run, and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def same_totals(naive: str, replayed: str) -> bool:
    result = json.loads(replayed)
    totals = [result[f] for f in ("requests", "total_hit_tokens", "total_prompt_tokens", "final_cache_blocks")]
    return naive.split() == [str(t) for t in totals] and result["cache_capacity_blocks"] == ReplayConfig().capacity


def commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE)
    return done.stdout.strip() or None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every command; each figure is the best (default 15)")
    parser.add_argument("--output-dir", type=Path, default=HERE / "results")
    args = parser.parse_args()
    env = {name: value for name, value in os.environ.items() if name not in ("PYTHONDONTWRITEBYTECODE", "KVSPEC_CONTRACTS")}
    named = commands()
    outputs = {name: run(command, env)[2] for name, command in named.items()}  # writes the bytecode; and the totals to check
    if not same_totals(outputs["naive script"], outputs["kvspec replay"]):
        print(f"MISMATCH: the naive script printed {outputs['naive script'].strip()}, kvspec replay {outputs['kvspec replay']}", file=sys.stderr)
        return 1
    times: dict[str, dict[str, list[float]]] = {name: {"wall_s": [], "cpu_s": []} for name in named}
    load = os.getloadavg()
    for _ in range(args.rounds):
        for name, command in named.items():
            wall, cpu, _ = run(command, env)
            times[name]["wall_s"].append(wall)
            times[name]["cpu_s"].append(cpu)
    best = {name: {kind: min(values) for kind, values in runs.items()} for name, runs in times.items()}
    ratios = {f"replay_vs_naive_{kind[:-2]}": best["kvspec replay"][kind] / best["naive script"][kind] for kind in ("wall_s", "cpu_s")}
    command = f"{os.path.relpath(sys.executable)} bench/bench_startup.py --rounds {args.rounds}"
    machine = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(), "loadavg_at_start": load}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "startup.json").write_text(json.dumps({"command": command, "commit": commit(), "machine": machine, "targets": TARGETS,
                                                              "best": best, "ratios": ratios, "runs": times}, indent=2) + "\n")
    lines = [f"`{command}`: every command a fresh process, interleaved, best of {args.rounds} rounds; Python {machine['python']}, "
             f"{machine['cpus']} CPUs, load average {load[0]:.2f} at the start.", "",
             "| command | best wall (s) | best CPU (s) |", "|---|---:|---:|"]
    lines += [f"| `{name}` | {b['wall_s']:.3f} | {b['cpu_s']:.3f} |" for name, b in best.items()]
    help_wall = best["kvspec --help"]["wall_s"]
    lines += ["", f"- `kvspec --help`: {help_wall:.3f} s wall (target under {TARGETS['help_wall_s']} s: {'met' if help_wall < TARGETS['help_wall_s'] else 'NOT met'}).",
              f"- `kvspec replay` against the naive script: {ratios['replay_vs_naive_wall']:.2f}x wall, {ratios['replay_vs_naive_cpu']:.2f}x CPU "
              f"(target {TARGETS['replay_vs_naive']}x: {'met' if max(ratios.values()) <= TARGETS['replay_vs_naive'] else 'NOT met'}); "
              "the same totals."]
    (args.output_dir / "startup.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
