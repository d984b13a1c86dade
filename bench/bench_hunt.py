"""The hunt's power, measured as the certifier's is (docs/mutation-score.md): which of the spec-level
mutants of conformance/galleries/spec_mutants.py `kvspec hunt` finds, and in what time.

Each mutant is hunted as a spec author who changed that one rule would hunt it:
`kvspec hunt check --function <the mutant's rule> --budget 30` (the rule, and the rules of its module
that call it), in a process of its own. A mutant is found when the hunt exits 3, with a
counterexample that the mutant's rule, run concretely on it, breaks. The reference is hunted the
same way, rule by rule, to measure what one rule's hunt costs where there is nothing to find, and
whole, with the default budget. docs/hunt-score.md is written from the results, with the rules the
hunt cannot explore and why (conformance/hunt/targets.py NOT_EXPLORED).

    .venv/bin/python bench/bench_hunt.py                      # about 35 minutes on 2 cores
    .venv/bin/python bench/bench_hunt.py --report-only        # rewrite docs/hunt-score.md from the last run
    .venv/bin/python bench/bench_hunt.py --mutants ghost-is-resident,freq-unsaturated
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli", "hunt", "check"]


def gallery() -> list[dict[str, str]]:
    """The mutants (their name, rule, mistake and the function to hunt), and the reference's rules, from a
    process with the contracts installed."""
    script = ("import json\nfrom kvspec.conformance.galleries.spec_mutants import MUTANTS\n"
              "from kvspec.conformance.hunt.targets import SCOPE, NOT_EXPLORED, PARTLY_EXPLORED, scope_targets\n"
              "print(json.dumps({'mutants': [dict(name=m.name, breaks=m.breaks, mistake=m.mistake, target=m.target) for m in MUTANTS],"
              " 'rules': [t.name for t in scope_targets(SCOPE)], 'not_explored': NOT_EXPLORED, 'partly': PARTLY_EXPLORED}))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "KVSPEC_CONTRACTS": "all"})
    return json.loads(run.stdout)


def hunted(function: str, budget: float) -> dict[str, object]:
    """One `kvspec hunt check --function`: its exit status, wall time and what it printed."""
    started = time.perf_counter()
    run = subprocess.run([*KVSPEC, "--function", function, "--budget", f"{budget:g}"], capture_output=True, text=True,
                         timeout=budget * 2 + 60, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    seconds = time.perf_counter() - started
    lines = run.stdout.splitlines()
    return {"status": run.returncode, "seconds": round(seconds, 1), "header": lines[0] if lines else "",
            "found": [line.strip() for line in lines[1:] if line.startswith("  ")][:1] if run.returncode == 3 else [],
            "error": run.stderr.strip().splitlines()[-1] if run.returncode not in (0, 3) and run.stderr.strip() else ""}


def whole(budget: float) -> dict[str, object]:
    started = time.perf_counter()
    run = subprocess.run([*KVSPEC, "--budget", f"{budget:g}"], capture_output=True, text=True, timeout=budget * 2 + 60,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    return {"status": run.returncode, "seconds": round(time.perf_counter() - started, 1), "header": (run.stdout.splitlines() or [""])[0]}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def by_reason(reasons: dict[str, str]) -> dict[str, list[str]]:
    """The clauses that share a reason, in the order the reasons come."""
    grouped: dict[str, list[str]] = {}
    for clause, reason in reasons.items():
        grouped.setdefault(reason, []).append(clause)
    return grouped


def write_score(results: dict[str, object], output: Path) -> None:
    mutants, rules = results["mutants"], results["rules"]
    found = [m for m in mutants if m["status"] == 3]
    seconds = [m["seconds"] for m in found]
    rule_seconds = [r["seconds"] for r in rules]
    lines = [
        "# Hunt score",
        "",
        "How many of the mistakes a spec author could plant in the rules `kvspec hunt` finds (issue 28, section 6), measured as the",
        "certifier's power is in [mutation-score.md](mutation-score.md). The gallery,",
        "[conformance/galleries/spec_mutants.py](../conformance/galleries/spec_mutants.py), plants one mistake in a copy of the",
        "reference for each rule of spec/s3fifo.md, lru.md and fifo.md (some rules twice); each is hunted as the author of that rule",
        f"would hunt it, `kvspec hunt check --function <the rule> --budget {results['budget']:g}` (the rule and the rules of its module",
        "that call it). It is found when the hunt exits 3 with a counterexample that the mutant's rule, run concretely, breaks.",
        "",
        f"Regenerate with `.venv/bin/python bench/bench_hunt.py` (bench/README.md). Last run {results['finished']}, "
        f"Python {results['python']}, {results['cores']} cores, load average {results['load']} at the start.",
        "",
        "## Score",
        "",
        f"**{len(found)} of {len(mutants)} mutants found**, in {min(seconds, default=0):.1f} to {max(seconds, default=0):.1f} s "
        f"(median {sorted(seconds)[len(seconds) // 2] if seconds else 0:.1f} s) each.",
        "",
        "| mutant | rule | mistake | found | seconds | the counterexample, or what the hunt said |",
        "|---|---|---|---|---:|---|",
    ]
    for m in mutants:
        said = m["found"][0] if m["found"] else m["error"] or m["header"].split(": ", 1)[-1]
        lines.append(f"| {m['name']} | {m['breaks']} | {cell(m['mistake'])} | {'yes' if m['status'] == 3 else 'no'} | {m['seconds']} | "
                     f"{cell(said)} |")
    lines += [
        "",
        "## The hunt of one rule, and of all of them, in the reference",
        "",
        f"Each rule of the reference hunted alone, `kvspec hunt check --function <rule> --budget {results['budget']:g}`: "
        f"{min(rule_seconds, default=0):.1f} to {max(rule_seconds, default=0):.1f} s, "
        f"{'each exit 0' if all(r['status'] == 0 for r in rules) else 'not each exit 0 (the table)'}. The whole check with its "
        f"default budget (`kvspec hunt check`, {results['whole']['header'].split(' (', 1)[-1].split(')', 1)[0]}): "
        f"{results['whole']['seconds']} s, exit {results['whole']['status']}.",
        "",
        "| rule | exit | seconds |",
        "|---|---:|---:|",
        *(f"| {r['function']} | {r['status']} | {r['seconds']} |" for r in rules),
        "",
        "## What the hunt cannot explore",
        "",
        "Kept by hand in conformance/hunt/targets.py (NOT_EXPLORED), each with its reason; every other rule of the four spec files",
        "that the reference implements has a mutant above (tests/test_hunt_gallery.py).",
        "",
        *(f"- **{', '.join(clauses)}**: {reason}" for reason, clauses in by_reason(results["not_explored"]).items()),
        "",
        "And the parts of rules that no contract states so that CrossHair explores them (PARTLY_EXPLORED); the rest of each rule has",
        "its mutant:",
        "",
        *(f"- **{', '.join(clauses)}**: {reason}" for reason, clauses in by_reason(results["partly"]).items()),
        "",
    ]
    output.write_text("\n".join(lines), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=30.0, help="--budget of each mutant's and rule's hunt (default 30)")
    parser.add_argument("--mutants", default="", help="only these mutants, by name, comma-separated")
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "hunt.json")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "hunt-score.md")
    parser.add_argument("--report-only", action="store_true", help="write the score from the last run's results")
    args = parser.parse_args()
    if not args.report_only:
        known = gallery()
        chosen = [m for m in known["mutants"] if not args.mutants or m["name"] in args.mutants.split(",")]
        load = os.getloadavg()[0]
        mutants = []
        for mutant in chosen:
            mutants.append({**mutant, **hunted(mutant["target"], args.budget)})
            print(f"{mutant['name']}: exit {mutants[-1]['status']} in {mutants[-1]['seconds']} s", flush=True)
        rules = [{"function": rule, **hunted(rule, args.budget)} for rule in known["rules"]]
        results = {"budget": args.budget, "mutants": mutants, "rules": rules, "whole": whole(300.0), "not_explored": known["not_explored"],
                   "partly": known["partly"],
                   "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "python": platform.python_version(),
                   "cores": os.cpu_count(), "load": f"{load:.1f}"}
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    write_score(json.loads(args.results.read_text(encoding="utf-8")), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
