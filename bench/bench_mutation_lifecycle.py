"""The mutation score of the lifecycle cases (issue 32 section 3): cosmic-ray 8.7 mutates the
canonical lifecycle pool (Flight and CanonicalPool in conformance/galleries/canonical_lifecycle.py;
never the replay helpers below them, nor the gallery's subclasses), one mutation at a time, and
the judge replays every lifecycle case of the corpus (spec/fixtures/lifecycle) on the mutated pool
at the state level and at the results level (FIX-18, FIX-16), with a replay of its own, not the
module's. A mutant is killed at a level by a failure (a result or state not the case's), a crash
(the pool raised) or a hang (no verdict within 20 s).

The run is made in a copy of the committed tree (git archive HEAD), so that cosmic-ray's edits
never touch the worktree; the judge imports kvspec from that copy.

    .venv/bin/python bench/bench_mutation_lifecycle.py run      # copy, cosmic-ray init, filters, exec, then the report
    .venv/bin/python bench/bench_mutation_lifecycle.py report   # the report of the last run

docs/mutation-score-lifecycle.md gives the figures of the last run and why each surviving mutant
is equivalent for the cases.
"""

import argparse
import ast
import json
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = Path("/tmp/kvspec-mutation-lifecycle")  # the copy: WORK/tree, imported as kvspec from WORK/root
MODULE = "conformance/galleries/canonical_lifecycle.py"
CANONICAL = ("Flight", "CanonicalPool")


class Hang(BaseException):
    """The judge's deadline passed."""


def verdict(states: bool) -> str:
    """The corpus's lifecycle cases on the mutated pool: failure, crash, hang or survived. (The
    module's replay helpers, below the line filter's ranges, are never mutated.)"""
    from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, config_of, performed

    def alarm(*_: object) -> None:
        raise Hang()

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    try:
        for path in sorted((WORK / "tree" / "spec" / "fixtures" / "lifecycle").glob("*.json")):
            case = json.loads(path.read_text())
            pool = CanonicalPool.empty(config_of(case))
            for step in case["operations"]:
                if performed(pool, step) != step["expect"] or (states and pool.state() != step["state"]):
                    return "failure"
        return "survived"
    except Hang:
        return "hang"
    except Exception:
        return "crash"
    finally:
        signal.alarm(0)


def judge() -> int:
    """cosmic-ray's test command: both levels' verdicts as one JSON line; 1 when either killed."""
    sys.path.insert(0, str(WORK / "root"))
    sys.dont_write_bytecode = True
    verdicts = {"state": verdict(True), "results": verdict(False)}
    print(json.dumps(verdicts))
    return 0 if set(verdicts.values()) == {"survived"} else 1


def run() -> None:
    """A fresh copy of HEAD, cosmic-ray's init, line and pragma filters, and exec."""
    subprocess.run(["rm", "-rf", str(WORK)], check=True)
    (WORK / "tree").mkdir(parents=True)
    (WORK / "root").mkdir()
    (WORK / "root" / "kvspec").symlink_to(WORK / "tree")
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(WORK / "tree")], input=archive, check=True)
    tree = ast.parse((WORK / "tree" / MODULE).read_text())
    lines = [f'"{min([n.lineno, *(d.lineno for d in n.decorator_list)])}-{n.end_lineno}"'
             for n in tree.body if isinstance(n, ast.ClassDef) and n.name in CANONICAL]
    config, session = WORK / "lifecycle.toml", WORK / "lifecycle.sqlite"
    command = json.dumps(f"{sys.executable} {Path(__file__).resolve()} judge")
    config.write_text(f'[cosmic-ray]\nmodule-path = "{MODULE}"\ntimeout = 60\nexcluded-modules = []\ntest-command = {command}\n\n'
                      f'[cosmic-ray.distributor]\nname = "local"\n\n[cosmic-ray.filters.line-filter.lines]\n"{MODULE}" = [{", ".join(lines)}]\n')
    tool = Path(sys.executable).parent
    cwd = WORK / "tree"
    subprocess.run([tool / "cosmic-ray", "init", config, session], cwd=cwd, check=True)
    subprocess.run([tool / "cr-filter-lines", "--config", config, session], cwd=cwd, check=True)
    subprocess.run([tool / "cr-filter-pragma", session], cwd=cwd, check=True)
    subprocess.run([tool / "cosmic-ray", "exec", config, session], cwd=cwd, check=True)


def report() -> None:
    """Each level's score, and every mutant that some level does not kill, by line."""
    db = sqlite3.connect(WORK / "lifecycle.sqlite")
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
    for (line, name, operator, occurrence, diff, *_), o in zip(rows, outcomes):
        if "survived" in o.values():
            change = " → ".join(d[1:].strip() for d in diff.splitlines() if d[:1] in "+-" and d[:3] not in ("+++", "---"))
            print(f"{line} {name} {operator.split('/')[-1]} #{occurrence}: {change} [state {o['state']}, results {o['results']}]")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "report", "judge"])
    command = parser.parse_args().command
    if command == "judge":
        sys.exit(judge())
    if command == "run":
        run()
    report()
