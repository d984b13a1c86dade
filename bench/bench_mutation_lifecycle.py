"""The mutation score of the lifecycle (issue 32 section 3), with two judges.

cosmic-ray 8.7 mutates an independent pool, one mutation at a time, and a judge gives a verdict at
the state level and at the results level (FIX-18, FIX-16; PROTO-35's two levels):

- ``cases``: the canonical lifecycle pool (Flight and CanonicalPool in
  conformance/galleries/canonical_lifecycle.py; never the replay helpers below them, nor the
  gallery's subclasses) is mutated, and the judge replays every lifecycle case of the corpus
  (spec/fixtures/lifecycle) on it, with a replay of its own, not the module's. A mutant is killed
  by a failure (a result or state not the case's), a crash (the pool raised) or a hang (no verdict
  within 20 s).
- ``machine``: the hand-made pool (HandmadePool in tests/handmade/lifecycle_pool.py, written from
  spec/lifecycle.md's text, not from either of the others) is mutated, and the judge is `kvspec
  certify` in flight (certify_in_flight, the lifecycle machine), quick, seed 0, in-process, on
  S3FIFO, LRU and FIFO, with Hypothesis's shrink phase off (it changes the counterexample, never
  the verdict), stopping at the first policy that does not conform. A mutant is killed by a
  failure (a divergence), a crash (PROTO-29, the pool raised) or a hang (PROTO-15, a call past its
  deadline; or no verdict within 300 s).

The run is made in a copy of the committed tree (git archive HEAD), so that cosmic-ray's edits
never touch the worktree; the judge imports kvspec from that copy. The contracts are off.

    .venv/bin/python bench/bench_mutation_lifecycle.py run [--judge machine]      # copy, cosmic-ray init, filters, exec, then the report
    .venv/bin/python bench/bench_mutation_lifecycle.py report [--judge machine]   # the report of the last run

docs/mutation-score-lifecycle.md gives the figures of the last runs and why each surviving mutant
is equivalent.
"""

import argparse
import ast
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ("s3fifo", "lru", "fifo")


class Hang(BaseException):
    """The judge's deadline passed."""


@dataclass(frozen=True)
class Judge:
    """What a judge mutates (the module, the classes whose lines it may change), its verdict on the
    copy at ``work`` at a level, and its deadline."""

    module: str
    classes: tuple[str, ...]
    check: Callable[[Path, bool], str]
    deadline: int
    work: Path  # the copy: work/tree, imported as kvspec from work/root


def cases_verdict(work: Path, states: bool) -> str:
    """The corpus's lifecycle cases on the mutated pool: failure or survived. (The module's replay
    helpers, below the line filter's ranges, are never mutated.)"""
    from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, config_of, performed

    for path in sorted((work / "tree" / "spec" / "fixtures" / "lifecycle").glob("*.json")):
        case = json.loads(path.read_text())
        pool = CanonicalPool.empty(config_of(case))
        for step in case["operations"]:
            if performed(pool, step) != step["expect"] or (states and pool.state() != step["state"]):
                return "failure"
    return "survived"


def machine_verdict(work: Path, states: bool) -> str:
    """The lifecycle machine on the mutated hand-made pool, policy by policy: failure, crash (PROTO-29),
    hang (PROTO-15) or survived."""
    from hypothesis import Phase

    from kvspec.adapters import Implementation
    from kvspec.conformance.certification import certify

    certify.PHASES = (Phase.generate,)
    factory = "pool" if states else "pool_results"
    for policy in POLICIES:
        outcome = certify.certify_in_flight(Implementation(f"in-process:{work / 'tree' / MACHINE.module}:{factory}"), policy)
        if not outcome.conforms:
            clauses = {clause for finding in outcome.findings if finding.divergence is not None for clause in finding.divergence.clauses}
            return "hang" if "PROTO-15" in clauses else "crash" if "PROTO-29" in clauses else "failure"
    return "survived"


CASES = Judge("conformance/galleries/canonical_lifecycle.py", ("Flight", "CanonicalPool"), cases_verdict, 20,
              Path("/tmp/kvspec-mutation-lifecycle"))
MACHINE = Judge("tests/handmade/lifecycle_pool.py", ("HandmadePool",), machine_verdict, 300, Path("/tmp/kvspec-mutation-lifecycle-machine"))
JUDGES = {"cases": CASES, "machine": MACHINE}


def verdict(judge: Judge, states: bool) -> str:
    """A judge's verdict at a level, its deadline a hang and whatever it raises a crash."""

    def alarm(*_: object) -> None:
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(judge.deadline)
    try:
        return judge.check(judge.work, states)
    except Hang:
        return "hang"
    except Exception:
        return "crash"
    finally:
        signal.alarm(0)


def judge(name: str) -> int:
    """cosmic-ray's test command: both levels' verdicts as one JSON line; 1 when either killed."""
    os.environ["KVSPEC_CONTRACTS"] = "0"
    judge_of = JUDGES[name]
    sys.path.insert(0, str(judge_of.work / "root"))
    sys.dont_write_bytecode = True
    verdicts = {"state": verdict(judge_of, True), "results": verdict(judge_of, False)}
    print(json.dumps(verdicts))
    return 0 if set(verdicts.values()) == {"survived"} else 1


def run(name: str) -> None:
    """A fresh copy of HEAD, cosmic-ray's init, line and pragma filters, and exec."""
    judge_of = JUDGES[name]
    work = judge_of.work
    subprocess.run(["rm", "-rf", str(work)], check=True)
    (work / "tree").mkdir(parents=True)
    (work / "root").mkdir()
    (work / "root" / "kvspec").symlink_to(work / "tree")
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(work / "tree")], input=archive, check=True)
    tree = ast.parse((work / "tree" / judge_of.module).read_text())
    lines = [f'"{min([n.lineno, *(d.lineno for d in n.decorator_list)])}-{n.end_lineno}"'
             for n in tree.body if isinstance(n, ast.ClassDef) and n.name in judge_of.classes]
    config, session = work / "lifecycle.toml", work / "lifecycle.sqlite"
    command = json.dumps(f"{sys.executable} {Path(__file__).resolve()} judge --judge {name}")
    config.write_text(f'[cosmic-ray]\nmodule-path = "{judge_of.module}"\ntimeout = {2 * judge_of.deadline + 60}\nexcluded-modules = []\n'
                      f'test-command = {command}\n\n[cosmic-ray.distributor]\nname = "local"\n\n'
                      f'[cosmic-ray.filters.line-filter.lines]\n"{judge_of.module}" = [{", ".join(lines)}]\n')
    tool = Path(sys.executable).parent
    cwd = work / "tree"
    subprocess.run([tool / "cosmic-ray", "init", config, session], cwd=cwd, check=True)
    subprocess.run([tool / "cr-filter-lines", "--config", config, session], cwd=cwd, check=True)
    subprocess.run([tool / "cr-filter-pragma", session], cwd=cwd, check=True)
    subprocess.run([tool / "cosmic-ray", "exec", config, session], cwd=cwd, check=True)


def report(name: str) -> None:
    """Each level's score, and every mutant that some level does not kill, by line."""
    session = JUDGES[name].work / "lifecycle.sqlite"
    if not session.exists():
        sys.exit(f"{session}: no run of --judge {name} to report (run it first: bench/bench_mutation_lifecycle.py run --judge {name})")
    db = sqlite3.connect(session)
    rows = db.execute("select s.start_pos_row, s.definition_name, s.operator_name, s.occurrence, r.diff, r.output, r.test_outcome "
                      "from work_results r join mutation_specs s on r.job_id = s.job_id where r.worker_outcome != 'SKIPPED' "
                      "order by s.start_pos_row, s.operator_name, s.occurrence").fetchall()
    outcomes = [json.loads(output.strip().splitlines()[-1]) if outcome != "INCOMPETENT" and output and output.strip().startswith("{")
                else {"state": "hang", "results": "hang"} for *_, output, outcome in rows]
    for level in ("state", "results"):
        counts = Counter(o[level] for o in outcomes)
        killed = len(rows) - counts["survived"]
        print(f"{level}: {len(rows)} mutants, {killed} killed ({counts['failure']} failure / {counts['crash']} crash / "
              f"{counts['hang']} hang), {counts['survived']} surviving")
    for (line, name_of, operator, occurrence, diff, *_), o in zip(rows, outcomes):
        if "survived" in o.values():
            change = " → ".join(d[1:].strip() for d in diff.splitlines() if d[:1] in "+-" and d[:3] not in ("+++", "---"))
            print(f"{line} {name_of} {operator.split('/')[-1]} #{occurrence}: {change} [state {o['state']}, results {o['results']}]")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "report", "judge"])
    parser.add_argument("--judge", choices=sorted(JUDGES), default="cases", help="what is mutated and what judges it (default: cases)")
    args = parser.parse_args()
    if args.command == "judge":
        sys.exit(judge(args.judge))
    if args.command == "run":
        run(args.judge)
    report(args.judge)
