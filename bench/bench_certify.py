"""How fast the certification suite runs, and how fast it catches each mutant of the gallery.

    python bench/bench_certify.py [--seeds 0,1,2] [--output docs/mutant-gallery.md]

Writes a Markdown page: for each mutant (seed 000's common mistakes, conformance/galleries/mutants.py),
the clause spec/s3fifo.md section 8 maps its mistake to, the clause the suite's diagnosis leads
with, the time to catch it and the shrunk trace's length, for each seed of the quick profile; and
the same for the benefit-policy gallery (conformance/galleries/benefit_mutants.py); and the examples per
second the quick profile reaches through each adapter kind. Contracts are off
(KVSPEC_CONTRACTS=0), as for any certification run; set the variable before Python starts.
"""

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

if os.environ.get("KVSPEC_CONTRACTS") != "0":  # read once, at import: re-run with contracts off
    os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "KVSPEC_CONTRACTS": "0"})

from kvspec.adapters import Implementation  # noqa: E402
from kvspec.conformance.certification.certify import Outcome, certify_policy  # noqa: E402
from kvspec.conformance.galleries import benefit_mutants  # noqa: E402
from kvspec.conformance.galleries.mutants import FACTORIES, MUTANTS  # noqa: E402
from kvspec.reference import ALL_POLICIES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ADAPTER_KINDS = {
    "reference, in-process (`reference`)": "reference",
    "reference, subprocess (`cmd:python -m kvspec.adapters.serve`)": f"cmd:{sys.executable} -m kvspec.adapters.serve",
    "JavaScript example, subprocess (`cmd:node examples/s3fifo-node/server.js`)": f"cmd:node {ROOT / 'examples/s3fifo-node/server.js'}",
}


def catch(name: str, seed: int) -> tuple[float, Outcome]:
    started = time.perf_counter()
    outcome = certify_policy(FACTORIES[name](), "s3fifo", "quick", seed)
    return time.perf_counter() - started, outcome


def mutant_rows(seeds: list[int]) -> list[str]:
    rows = []
    for name, cls in MUTANTS.items():
        runs = [catch(name, seed) for seed in seeds]
        for elapsed, outcome in runs:
            assert not outcome.conforms, f"{name} was not caught"
        firsts = [outcome.findings[0] for _, outcome in runs]
        diagnosis = sorted({", ".join(f.divergence.clauses[:2]) if f.divergence else "protocol" for f in firsts})
        times = " / ".join(f"{elapsed:.1f}" for elapsed, _ in runs)
        lengths = " / ".join(str(f.divergence.request if f.divergence else "-") for f in firsts)
        rows.append(f"| {name} | {cls.mistake} | {cls.breaks} | {'; '.join(diagnosis)} | {times} | {lengths} |")
    return rows


def benefit_rows(seeds: list[int]) -> list[str]:
    rows = []
    for name, cls in benefit_mutants.MUTANTS.items():
        runs = []
        for seed in seeds:
            started = time.perf_counter()
            outcome = certify_policy(cls(), "benefit", "quick", seed)
            assert not outcome.conforms, f"{name} was not caught"
            runs.append((time.perf_counter() - started, outcome))
        leading = sorted({", ".join(f.divergence.clauses[:1]) for _, o in runs for f in o.findings if f.divergence})
        times = " / ".join(f"{elapsed:.1f}" for elapsed, _ in runs)
        lengths = " / ".join(str(min(f.divergence.request for f in o.findings if f.divergence)) for _, o in runs)
        rows.append(f"| {name} | {cls.breaks} | {'; '.join(leading)} | {times} | {lengths} |")
    return rows


def adapter_rows() -> list[str]:
    rows = []
    for label, spec in ADAPTER_KINDS.items():
        if spec.startswith("cmd:node") and shutil.which("node") is None:
            continue
        implementation = Implementation(spec)
        adapter = implementation.start()
        try:
            policies = [p for p in ALL_POLICIES if p in adapter.policies]
            rates = {policy: certify_policy(implementation, policy, "quick").examples_per_second for policy in policies}
        finally:
            implementation.close()
        cells = [f"{rates[p]:.1f}" if p in rates else "-" for p in ("s3fifo", "lru", "fifo", "benefit")]
        rows.append(f"| {label} | {adapter.level} | " + " | ".join(cells) + " |")
    return rows


def commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="quick-profile seeds, separated by commas (default 0,1,2)")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "mutant-gallery.md")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    per_seed = " / ".join(f"seed {seed}" for seed in seeds)
    lines = [
        "# The mutant gallery, caught",
        "",
        "Made by `python bench/bench_certify.py` (do not edit by hand): "
        f"{date.today()}, commit {commit()}, {platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}, "
        "contracts off, the quick profile.",
        "",
        "Each mutant is one of seed 000's common mistakes (conformance/galleries/mutants.py), certified in-process on S3FIFO. "
        "*Breaks* is the clause spec/s3fifo.md section 8 maps the mistake to; *diagnosis* is what the verdict leads with "
        "(conformance/certification/diagnosis.py); the time is the whole run, generation and shrinking, in seconds; the length is the "
        "number of requests in the shrunk counterexample (0: the configuration alone).",
        "",
        f"| mutant | mistake | breaks | diagnosis | seconds to catch ({per_seed}) | shrunk length ({per_seed}) |",
        "|---|---|---|---|---|---|",
        *mutant_rows(seeds),
        "",
        "## The benefit-policy gallery",
        "",
        "Each mutant changes conformance/galleries/benefit_mutants.py's independent implementation in one place. *Diagnoses* lists "
        "the leading clause of each failing check the run found; the length is the number of operations in the shortest "
        "shrunk counterexample.",
        "",
        f"| mutant | breaks | diagnoses | seconds to catch ({per_seed}) | shrunk length ({per_seed}) |",
        "|---|---|---|---|---|",
        *benefit_rows(seeds),
        "",
        "## Examples per second, by adapter kind",
        "",
        "The quick profile (150 examples of up to 25 requests) at seed 0, on an implementation that conforms, so every "
        "example runs to its end.",
        "",
        "| adapter | level | s3fifo | lru | fifo | benefit |",
        "|---|---|---:|---:|---:|---:|",
        *adapter_rows(),
        "",
    ]
    args.output.write_text("\n".join(lines))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
