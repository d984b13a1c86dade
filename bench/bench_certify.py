"""How fast the certification suite runs, and how fast it catches each mutant of the gallery.

    python bench/bench_certify.py [--seeds 0,1,2] [--repeats 3] [--output docs/mutant-gallery.md]
    python bench/bench_certify.py --only adapters   # the adapter table alone, on stdout: about a minute
    python bench/bench_certify.py --only in-flight  # the engines' gallery in flight and the machines' speeds: a few minutes
    python bench/bench_certify.py --only handmade   # the hand-made mistakes in flight, on each policy at each level

Writes a Markdown page: for each mutant (seed 000's common mistakes, conformance/galleries/mutants.py),
the clause spec/s3fifo.md section 8 maps its mistake to, the clause the suite's diagnosis leads
with, the time to catch it and the shrunk trace's length, for each seed of the quick profile; and
the same for the benefit-policy gallery (conformance/galleries/benefit_mutants.py) and, in flight, for the
engines' gallery (conformance/galleries/lifecycle_mutants.py) at both levels, with the two machines' speeds; and the examples per
CPU-second the quick profile reaches through each adapter kind, with the reference served over the
protocol as a share of the reference in-process. Contracts are off (KVSPEC_CONTRACTS=0), as for any
certification run; set the variable before Python starts.
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
from kvspec.conformance.certification.certify import certify_in_flight, certify_policy  # noqa: E402
from kvspec.conformance.certification.findings.divergence import Outcome  # noqa: E402
from kvspec.conformance.galleries import benefit_mutants, lifecycle_mutants  # noqa: E402
from kvspec.conformance.galleries.mutants import FACTORIES, MUTANTS  # noqa: E402
from kvspec.reference import ALL_POLICIES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IN_PROCESS = "reference, in-process (`reference`)"
SERVED = "reference, served (`cmd:python -m kvspec.adapters.serve`)"
ADAPTER_KINDS = {
    IN_PROCESS: "reference",
    SERVED: f"cmd:{sys.executable} -m kvspec.adapters.serve",
    "JavaScript example, served (`cmd:node examples/s3fifo-node/server.js`)": f"cmd:node {ROOT / 'examples/s3fifo-node/server.js'}",
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


def adapter_rows(repeats: int) -> list[str]:
    """Per policy, each adapter kind's examples per CPU-second, the best of ``repeats`` quick
    certifications taken in turns (so that a busy moment of the machine hits every kind alike), and
    the reference served as a share of the reference in-process."""
    implementations = {label: Implementation(spec) for label, spec in ADAPTER_KINDS.items()
                       if not spec.startswith("cmd:node") or shutil.which("node") is not None}
    try:
        policies = {label: implementation.start().policies for label, implementation in implementations.items()}
        best: dict[tuple[str, str], float] = {}
        for _ in range(repeats):
            for policy in ALL_POLICIES:
                for label, implementation in implementations.items():
                    if policy in policies[label]:
                        rate = examples_per_cpu_second(implementation, policy)
                        best[label, policy] = max(rate, best.get((label, policy), 0.0))
    finally:
        for implementation in implementations.values():
            implementation.close()
    rows = []
    for policy in ALL_POLICIES:
        cells = [f"{best[label, policy]:.1f}" if (label, policy) in best else "-" for label in ADAPTER_KINDS]
        rows.append(f"| {policy} | " + " | ".join(cells) + f" | {best[SERVED, policy] / best[IN_PROCESS, policy]:.2f} |")
    return rows


def examples_per_cpu_second(implementation: Implementation, policy: str) -> float:
    """One quick certification at seed 0: the examples the machine ran, over the CPU time that
    kvspec and the implementation's process (if it has one) spent on the whole of it, probes included."""
    process = getattr(implementation.current(), "process", None)
    started = time.process_time() + cpu_seconds(process)
    outcome = certify_policy(implementation, policy, "quick")
    spent = time.process_time() + cpu_seconds(process) - started
    assert outcome.conforms and getattr(implementation.current(), "process", None) is process, f"{implementation.spec} failed on {policy}"
    return outcome.examples / spent


def cpu_seconds(process: subprocess.Popen[bytes] | None) -> float:
    """The CPU time a running process has used (user and system, /proc/PID/stat); 0 for none."""
    if process is None:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="quick-profile seeds, separated by commas (default 0,1,2)")
    parser.add_argument("--repeats", type=int, default=3, help="certifications of each adapter kind and policy, the best kept (default 3)")
    parser.add_argument("--only", choices=SECTIONS, help="one section, written to stdout unless --output is given")
    parser.add_argument("--output", type=Path, help="the page (default docs/mutant-gallery.md; stdout with --only)")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    if args.only is not None:
        lines = SECTIONS[args.only](seeds, args.repeats)
    else:
        lines = [*header(), *(line for section in SECTIONS.values() for line in section(seeds, args.repeats))]
    page = "\n".join(lines)
    if args.output is None and args.only is not None:
        print(page)
        return
    output = args.output or ROOT / "docs" / "mutant-gallery.md"
    output.write_text(page)
    print(f"wrote {output}")


def header() -> list[str]:
    return [
        "# The mutant gallery, caught",
        "",
        "Made by `python bench/bench_certify.py` (do not edit by hand): "
        f"{date.today()}, commit {commit()}, {platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}, "
        "contracts off, the quick profile.",
        "",
    ]


def mutant_section(seeds: list[int], repeats: int) -> list[str]:
    per_seed = " / ".join(f"seed {seed}" for seed in seeds)
    return [
        "Each mutant is one of seed 000's common mistakes (conformance/galleries/mutants.py), certified in-process on S3FIFO. "
        "*Breaks* is the clause spec/s3fifo.md section 8 maps the mistake to; *diagnosis* is what the verdict leads with "
        "(conformance/certification/block/diagnosis.py); the time is the whole run, generation and shrinking, in seconds; the length is the "
        "number of requests in the shrunk counterexample (0: the configuration alone).",
        "",
        f"| mutant | mistake | breaks | diagnosis | seconds to catch ({per_seed}) | shrunk length ({per_seed}) |",
        "|---|---|---|---|---|---|",
        *mutant_rows(seeds),
        "",
    ]


def benefit_section(seeds: list[int], repeats: int) -> list[str]:
    per_seed = " / ".join(f"seed {seed}" for seed in seeds)
    return [
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
    ]


def adapter_section(seeds: list[int], repeats: int) -> list[str]:
    return [
        "## Examples per CPU-second, by adapter kind",
        "",
        "The quick profile (150 examples of up to 25 requests) at seed 0, on implementations that conform at the state level, so every "
        "example runs to its end: the examples the machine ran over the CPU time kvspec and the implementation's process spent on the "
        f"whole certification (its probes too), the best of {repeats} taken in turns (`--repeats`). A served implementation and kvspec "
        "take turns, one waiting while the other works, so on an idle machine these are examples per second of wall time too; CPU time "
        "leaves out the waits for a core another program holds. *Served / in-process* is the reference over the protocol as a share "
        "of the reference in kvspec's process (`python bench/bench_certify.py --only adapters` measures this table alone).",
        "",
        f"| policy | {' | '.join(ADAPTER_KINDS)} | served / in-process |",
        f"|---|{'---:|' * len(ADAPTER_KINDS)}---:|",
        *adapter_rows(repeats),
        "",
    ]


def in_flight_rows(seeds: list[int], policy: str = "lru") -> list[str]:
    """Each mutant of the engines' gallery certified in flight on ``policy``, at both levels."""
    rows = []
    for name, cls in lifecycle_mutants.MUTANTS.items():
        cells = []
        for level in ("state", "results"):
            runs = []
            for seed in seeds:
                started = time.perf_counter()
                outcome = certify_in_flight(lifecycle_mutants.PoolAdapter(cls, level), policy, "quick", seed)  # type: ignore[arg-type]
                assert not outcome.conforms, f"{name} was not caught at the {level} level"
                runs.append((time.perf_counter() - started, outcome))
            diagnosis = sorted({", ".join(f.divergence.clauses[:3]) + (" (consistent)" if f.divergence.consistent_with else "")
                                for _, o in runs for f in o.findings[:1] if f.divergence})
            cells += ["; ".join(diagnosis), " / ".join(f"{elapsed:.1f}" for elapsed, _ in runs),
                      " / ".join(str(min(f.divergence.request for f in o.findings if f.divergence)) for _, o in runs)]
        rows.append(f"| {name} | {' '.join(cls.report.split(' ', 2)[:2])} | {cls.breaks} | " + " | ".join(cells) + " |")
    return rows


def in_flight_section(seeds: list[int], repeats: int) -> list[str]:
    per_seed = " / ".join(f"seed {seed}" for seed in seeds)
    return [
        "## The engines' gallery, in flight",
        "",
        "Each mutant is one of the engines' own reported bugs about blocks in use and hit accounting "
        "(conformance/galleries/lifecycle_mutants.py), certified in flight (the lifecycle machine, "
        "conformance/certification/lifecycle/machine.py) on LRU, at the state level and at the results level. *Diagnosis* is "
        "what the first finding leads with (\"consistent\": the clauses the symptom is only consistent with); the length is "
        "the operations of the shrunk counterexample.",
        "",
        f"| mutant | report | breaks | state: diagnosis | state: seconds ({per_seed}) | state: operations | "
        f"results: diagnosis | results: seconds | results: operations |",
        "|---|---|---|---|---|---|---|---|---|",
        *in_flight_rows(seeds),
        "",
        "The machine's speed on the reference in-process, the quick profile at seed 0: examples per CPU-second of the one-at-a-time "
        f"machine and of the machine of requests in flight, the best of {repeats}.",
        "",
        "| policy | one at a time | in flight | in flight / one at a time |",
        "|---|---:|---:|---:|",
        *speed_rows(repeats),
        "",
    ]


def speed_rows(repeats: int) -> list[str]:
    rows = []
    for policy in ("s3fifo", "lru", "fifo"):
        one, flight = 0.0, 0.0
        for _ in range(repeats):
            started = time.process_time()
            outcome = certify_policy(Implementation("reference"), policy, "quick")
            one = max(one, outcome.examples / (time.process_time() - started))
            started = time.process_time()
            outcome = certify_in_flight(Implementation("reference"), policy, "quick")
            flight = max(flight, outcome.examples / (time.process_time() - started))
        rows.append(f"| {policy} | {one:.1f} | {flight:.1f} | {flight / one:.2f} |")
    return rows


def handmade_section(seeds: list[int], repeats: int) -> list[str]:
    """The hand-made mistakes in flight (tests/handmade/lifecycle_mistakes.py), none of them the gallery's."""
    sys.path.insert(0, str(ROOT / "tests" / "handmade"))
    import lifecycle_mistakes  # tests/handmade: not a package of kvspec's

    rows = []
    for name, cls in lifecycle_mistakes.MISTAKES.items():
        cells = []
        for level in ("state", "results"):
            factory = getattr(lifecycle_mistakes, name.replace("-", "_") + ("_results" if level == "results" else ""))
            for policy in ("s3fifo", "lru", "fifo"):
                started = time.perf_counter()
                outcome = certify_in_flight(Implementation.in_process(factory, name), policy, "quick", seeds[0])
                clauses = [c for f in outcome.findings if f.divergence for c in f.divergence.clauses]
                verdict = "missed" if outcome.conforms else "caught, its clause" if cls.breaks in clauses else f"caught ({clauses[0]})"
                cells.append(f"{verdict} ({time.perf_counter() - started:.1f} s)")
        rows.append(f"| {name} | {cls.breaks} | " + " | ".join(cells) + " |")
    return [
        "## Hand-made mistakes, in flight",
        "",
        "Mistakes a cache author could make in reading spec/lifecycle.md, none of them the engines' gallery's "
        "(tests/handmade/lifecycle_mistakes.py, one-method subclasses of the independent pool tests/handmade/lifecycle_pool.py): "
        f"the machine of requests in flight at the quick profile, seed {seeds[0]}, on each policy at each level. *Caught, its "
        "clause*: a finding names the clause the mistake breaks (named, or among those the symptom is consistent with); *caught "
        "(X)*: the verdict is right, led by another clause; *missed*: it conforms (a mistake of one policy's rules is no mistake "
        "in the others).",
        "",
        "| mistake | breaks | state, s3fifo | state, lru | state, fifo | results, s3fifo | results, lru | results, fifo |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


SECTIONS = {"mutants": mutant_section, "benefit": benefit_section, "adapters": adapter_section, "in-flight": in_flight_section,
            "handmade": handmade_section}


if __name__ == "__main__":
    main()
