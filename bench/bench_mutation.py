"""The mutation score of the suite (issue 10, section 2): cosmic-ray mutates the independent
implementations (CanonicalS3FIFO in conformance/galleries/canonical_s3fifo.py, CanonicalBenefit in
conformance/galleries/benefit_mutants.py, with the helpers each uses; never the gallery's subclasses,
which the canonical adapter never runs) one mutation at a time, and for each mutant this script,
as cosmic-ray's test command, asks two judges whether it still passes:

- certify: `kvspec certify --profile quick --seed 0` on each policy of the module, the first
  policy that does not conform ending the judgement (shrinking off: it changes the shrunk
  counterexample, never whether there is one);
- fixtures: `kvspec fixtures verify` on the bundled corpus, with the implementation at the
  results level (a consumer without state access).

Each judge has its own deadline (a mutant may loop forever): past it the judge counts the mutant
as killed by a hang, which is what a deadline makes of it. The reference's runtime contracts are
off (KVSPEC_CONTRACTS=0), as for the gallery's mutants in tests/support.py.

docs/mutation-score.md is then written from cosmic-ray's sessions: each module's score for each
judge, the mutants shown equivalent in docs/mutation-equivalents.json left out of it, and every
surviving mutant with its location and diff.

    .venv/bin/python bench/bench_mutation.py                 # run cosmic-ray, then write the score
    .venv/bin/python bench/bench_mutation.py --report-only   # rewrite the score from the last run
"""

import argparse
import ast
import importlib
import json
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JUDGES = ("certify", "fixtures")
KILLED_BY_ANY = 1  # the judge's exit status for cosmic-ray: a mutant some judge killed


@dataclass(frozen=True)
class Module:
    """A module to mutate: only the top-level definitions the canonical adapter runs."""

    path: str
    factory: str
    policies: tuple[str, ...]
    canonical: tuple[str, ...]


MODULES = {
    "mutants": Module("conformance/galleries/canonical_s3fifo.py", "kvspec.conformance.galleries.mutants:canonical", ("s3fifo", "lru", "fifo"),
                      ("INT64_MAX", "is_int", "CanonicalS3FIFO")),
    "benefit_mutants": Module("conformance/galleries/benefit_mutants.py", "kvspec.conformance.galleries.benefit_mutants:canonical", ("benefit",),
                              ("valid", "net", "Item", "CanonicalBenefit", "canonical")),
}


# -- the judges: cosmic-ray's test command, run once for each mutant ------------------------------


class Hang(BaseException):
    """A judge's deadline passed. Not an Exception, so that Hypothesis does not take it for the
    test's failure and replay the example (which would hang again)."""


def canonical_factory(module: Module, level: str) -> Callable[[], object]:
    """The module's canonical implementation as an adapter at ``level``: the state level it
    declares, or the results level a consumer without state access has."""
    module_name, _, name = module.factory.partition(":")
    factory = getattr(importlib.import_module(module_name), name)

    def make() -> object:
        adapter = factory()
        adapter.level = level
        return adapter

    return make


def certify_verdict(module: Module) -> str:
    """'' when every policy conforms; else the first policy that does not, and why."""
    from hypothesis import Phase

    from kvspec.conformance.certification import certify

    certify.PHASES = (Phase.generate,)
    make = canonical_factory(module, "state")
    for policy in module.policies:
        adapter = make()
        cli_identity(adapter)
        outcome = certify.certify_policy(adapter, policy, "quick", 0)  # type: ignore[arg-type]
        if not outcome.conforms:
            return f"{policy}: {first_line(outcome.findings[0].message)}"
    return ""


def cli_identity(adapter: object) -> str:
    """The line `kvspec certify` prints first, from the adapter's identity (the report has it too):
    a mutant that breaks the identity fails the command there, before certify_policy runs."""
    identity = adapter.identity  # type: ignore[attr-defined]
    return f"{identity.name} {identity.version} ({identity.language}), level {adapter.level}"  # type: ignore[attr-defined]


def fixtures_verdict(module: Module) -> str:
    """'' when every case passes at the results level; else the first failing case and why."""
    from kvspec.conformance.fixtures.corpus import bundled_corpus
    from kvspec.conformance.fixtures.runner import verify

    for result in verify(bundled_corpus(), canonical_factory(module, "results"), {}):  # type: ignore[arg-type]
        if result.verdict not in ("pass", "skip"):
            return f"{result.id}: {first_line(result.detail)}"
    return ""


def first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "(no message)"


def judged(verdict: Callable[[Module], str], module: Module, deadline: float) -> dict[str, str]:
    """One judge's verdict on the mutant: survived, or killed by a failure, a crash or a hang."""

    def overdue(signum: int, frame: object) -> None:
        raise Hang

    signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        why = verdict(module)
        return {"verdict": "killed", "by": "failure", "why": why} if why else {"verdict": "survived"}
    except Hang:
        return {"verdict": "killed", "by": "hang", "why": f"no verdict within {deadline:g} s"}
    except Exception as error:  # the mutant crashed the run: certify and verify do not pass it either
        return {"verdict": "killed", "by": "crash", "why": f"{type(error).__name__}: {first_line(str(error))}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def judge(name: str, deadline: float) -> int:
    """Print both judges' verdicts as one JSON line (cosmic-ray keeps it); exit 1 if either killed."""
    os.environ["KVSPEC_CONTRACTS"] = "0"  # read once, at the reference's import
    gigabytes = 2**30
    resource.setrlimit(resource.RLIMIT_AS, (2 * gigabytes, 2 * gigabytes))  # a mutant that grows without end
    module = MODULES[name]
    verdicts = {"fixtures": judged(fixtures_verdict, module, deadline), "certify": judged(certify_verdict, module, deadline)}
    print(json.dumps(verdicts), flush=True)
    return KILLED_BY_ANY if any(v["verdict"] == "killed" for v in verdicts.values()) else 0


# -- running cosmic-ray ---------------------------------------------------------------------------


def canonical_lines(module: Module) -> list[str]:
    """The line ranges of the module's canonical definitions, for cosmic-ray's line filter."""
    tree = ast.parse((ROOT / module.path).read_text(encoding="utf-8"))
    ranges = []
    for node in tree.body:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)] if isinstance(node, ast.Assign) else [getattr(node, "name", "")]
        if any(name in module.canonical for name in names):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            ranges.append(f"{first}-{node.end_lineno}")
    return ranges


def config_text(name: str, module: Module, deadline: float) -> str:
    command = shlex.join([sys.executable, str(Path(__file__).resolve()), "judge", name, "--deadline", str(deadline)])
    lines = ", ".join(json.dumps(r) for r in canonical_lines(module))
    # cosmic-ray's own timeout is the backstop for a hang the judges' alarm cannot interrupt
    return (f'[cosmic-ray]\nmodule-path = "{module.path}"\ntimeout = {2 * deadline + 60}\nexcluded-modules = []\n'
            f"test-command = {json.dumps(command)}\n\n[cosmic-ray.distributor]\nname = \"local\"\n\n"
            f'[cosmic-ray.filters.line-filter.lines]\n"{module.path}" = [{lines}]\n')


def tool(name: str) -> str:
    """A cosmic-ray command installed beside this interpreter."""
    return str(Path(sys.executable).parent / name)


def run_cosmic_ray(name: str, module: Module, work: Path, deadline: float) -> float:
    """init, the line and pragma filters, exec: the seconds exec took."""
    config, session = work / f"{name}.toml", work / f"{name}.sqlite"
    config.write_text(config_text(name, module, deadline), encoding="utf-8")
    session.unlink(missing_ok=True)
    source = ROOT / module.path
    original = source.read_bytes()
    for stale in (ROOT / "build").rglob(f"__pycache__/{source.stem}.*.pyc"):  # cosmic-ray writes no bytecode; none may be stale
        stale.unlink()
    for stale in (source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"):
        stale.unlink()
    try:
        subprocess.run([tool("cosmic-ray"), "init", str(config), str(session)], cwd=ROOT, check=True)
        subprocess.run([tool("cr-filter-lines"), "--config", str(config), str(session)], cwd=ROOT, check=True)
        subprocess.run([tool("cr-filter-pragma"), str(session)], cwd=ROOT, check=True)
        started = time.monotonic()
        subprocess.run([tool("cosmic-ray"), "exec", str(config), str(session)], cwd=ROOT, check=True)
        return time.monotonic() - started
    finally:
        if source.read_bytes() != original:  # cosmic-ray restores the source; an interrupted run might not
            source.write_bytes(original)


# -- the score ------------------------------------------------------------------------------------


Key = tuple[str, str, str, str, str, int]


@dataclass(frozen=True)
class Mutant:
    file: str
    line: int
    function: str
    operator: str
    occurrence: int
    original: str
    mutated: str
    diff: str
    verdicts: dict[str, dict[str, str]]
    twin: int = 0  # how many mutants before this one, in line order, have the same key otherwise

    def key(self) -> Key:
        """Stable across unrelated edits: no line number, no occurrence."""
        return (self.file, self.function, self.operator, self.original, self.mutated, self.twin)


def changed_lines(diff: str, sign: str) -> str:
    changed = (line[1:].strip() for line in diff.splitlines() if line.startswith(sign) and not line.startswith(sign * 3))
    return " / ".join(line for line in changed if line)


def mutants_of(session: Path) -> list[Mutant]:
    """The session's mutants, line by line, each told apart from its twins (the same change in the
    same function, e.g. a decorator removed from two classes)."""
    mutants: list[Mutant] = []
    for mutant in sorted(session_mutants(session), key=lambda m: (m.line, m.operator, m.occurrence)):
        twin = sum(m.key() == mutant.key() for m in mutants)
        mutants.append(replace(mutant, twin=twin) if twin else mutant)
    return mutants


def session_mutants(session: Path) -> Iterator[Mutant]:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            mutation = item.mutations[0]
            verdicts = judge_output(result.output or "", result.worker_outcome, result.test_outcome)
            yield Mutant(str(mutation.module_path), mutation.start_pos[0], mutation.definition_name or "", mutation.operator_name,
                         mutation.occurrence, changed_lines(result.diff or "", "-"), changed_lines(result.diff or "", "+"),
                         result.diff or "", verdicts)


def judge_output(output: str, worker_outcome: object, test_outcome: object) -> dict[str, dict[str, str]]:
    """The judges' JSON line; a run cut short by cosmic-ray's own timeout is a hang for both."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    if output.strip() == "timeout":
        return {j: {"verdict": "killed", "by": "hang", "why": "cosmic-ray's timeout"} for j in JUDGES}
    return {j: {"verdict": "error", "by": str(worker_outcome), "why": f"{test_outcome}: {first_line(output)}"} for j in JUDGES}


Equivalents = dict[Key, dict[str, object]]


def load_equivalents(path: Path) -> Equivalents:
    if not path.exists():
        return {}
    entries = json.loads(path.read_text(encoding="utf-8"))["equivalents"]
    return {(e["file"], e["function"], e["operator"], e["line"], e["mutated"], e.get("twin", 0)): e for e in entries}


def equivalent_for(mutant: Mutant, equivalents: Equivalents, judge_name: str) -> str:
    """The reason the mutant is equivalent for this judge, or ''."""
    entry = equivalents.get(mutant.key())
    return str(entry["reason"]) if entry and judge_name in entry["for"] else ""  # type: ignore[operator]


def score_table(modules: dict[str, list[Mutant]], equivalents: Equivalents) -> list[str]:
    rows = ["| module | judge | mutants | equivalent | killed (failure / crash / hang) | surviving, not equivalent | score |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for name, mutants in modules.items():
        for judge_name in JUDGES:
            counted = [m for m in mutants if not equivalent_for(m, equivalents, judge_name)]
            killed = [m for m in counted if m.verdicts[judge_name]["verdict"] == "killed"]
            by = {how: sum(m.verdicts[judge_name]["by"] == how for m in killed) for how in ("failure", "crash", "hang")}
            errors = sum(m.verdicts[judge_name]["verdict"] == "error" for m in counted)
            score = f"{100 * len(killed) / len(counted):.1f} %" if counted else "n/a"
            survived = len(counted) - len(killed) - errors
            rows.append(f"| {MODULES[name].path} | {judge_name} | {len(mutants)} | {len(mutants) - len(counted)} | "
                        f"{len(killed)} ({by['failure']} / {by['crash']} / {by['hang']}) | {survived}"
                        f"{f' (+{errors} not run)' if errors else ''} | {len(killed)}/{len(counted)} = {score} |")
    return rows


def survivors_section(modules: dict[str, list[Mutant]], equivalents: Equivalents) -> list[str]:
    """Per module, a table of the surviving mutants not shown equivalent, then one of the equivalent ones."""
    lines: list[str] = []
    for name, mutants in modules.items():
        survivors = sorted((m for m in mutants if any(m.verdicts[j]["verdict"] != "killed" for j in JUDGES)), key=lambda m: (m.line, m.operator, m.occurrence))
        open_ones = [m for m in survivors if any(judge_cell(m, j, equivalents) == "**survives**" for j in JUDGES)]
        explained = [m for m in survivors if m not in open_ones]
        lines += [f"### {MODULES[name].path}: {len(open_ones)} surviving, not shown equivalent", ""]
        lines += mutant_table(open_ones, equivalents, with_reason=False) if open_ones else ["None.", ""]
        lines += [f"### {MODULES[name].path}: {len(explained)} surviving, equivalent", ""]
        lines += mutant_table(explained, equivalents, with_reason=True) if explained else ["None.", ""]
    return lines


def judge_cell(mutant: Mutant, judge_name: str, equivalents: Equivalents) -> str:
    verdict = mutant.verdicts[judge_name]
    if verdict["verdict"] == "killed":
        return f"killed ({verdict['by']})"
    if equivalent_for(mutant, equivalents, judge_name):
        return "equivalent"
    return "**survives**" if verdict["verdict"] == "survived" else f"not run: {verdict['why']}"


def mutant_table(mutants: list[Mutant], equivalents: Equivalents, with_reason: bool) -> list[str]:
    rows = ["| line | function | operator #occurrence | line before → after | certify | fixtures |" + (" why equivalent |" if with_reason else ""),
            "|---:|---|---|---|---|---|" + ("---|" if with_reason else "")]
    for m in mutants:
        entry = equivalents.get(m.key())
        reason = f" {cell(str(entry['reason']))} |" if with_reason and entry else (" |" if with_reason else "")
        rows.append(f"| {m.line} | {m.function or '(module)'} | {m.operator.removeprefix('core/')} #{m.occurrence} | "
                    f"`{cell(m.original)}` → {f'`{cell(m.mutated)}`' if m.mutated else '(removed)'} | {judge_cell(m, 'certify', equivalents)} | "
                    f"{judge_cell(m, 'fixtures', equivalents)} |{reason}")
    return [*rows, ""]


def cell(text: str) -> str:
    """Text for a Markdown table cell: a pipe would end the cell."""
    return text.replace("|", "\\|")


def write_score(work: Path, output: Path, equivalents_path: Path, seconds: dict[str, float]) -> None:
    equivalents = load_equivalents(equivalents_path)
    modules = {name: list(mutants_of(work / f"{name}.sqlite")) for name in MODULES if (work / f"{name}.sqlite").exists()}
    known = {m.key() for ms in modules.values() for m in ms}
    stale = [e for key, e in equivalents.items() if key not in known]
    timing = "".join(f" {MODULES[n].path}: {s / 60:.0f} min ({len(modules[n])} mutants, {s / max(len(modules[n]), 1):.1f} s each)." for n, s in seconds.items())
    finished = max((work / f"{name}.sqlite").stat().st_mtime for name in modules) if modules else 0.0
    text = [
        "# Mutation score",
        "",
        "How much of what can go wrong in an implementation the suite catches, measured rather than guessed (issue 10, section 2).",
        "[cosmic-ray](https://cosmic-ray.readthedocs.io) 8.7 applies every one of its core mutation operators, one mutation at a time,",
        "to the independent implementations the conformance suite certifies against the reference: `CanonicalS3FIFO` (S3FIFO, LRU,",
        "FIFO) with the helpers it uses in conformance/galleries/canonical_s3fifo.py, and `CanonicalBenefit` with its helpers in",
        "conformance/galleries/benefit_mutants.py (never the gallery's subclasses, which the canonical adapter does not run). Two judges",
        "look at each mutant:",
        "",
        "- **certify**: `kvspec certify --profile quick --seed 0`, policy by policy (s3fifo, lru, fifo; benefit), at the state",
        "  level; the mutant is killed when some policy does not conform.",
        "- **fixtures**: `kvspec fixtures verify` on the bundled corpus with the same implementation at the results level (a",
        "  consumer without state access); the mutant is killed when some case fails.",
        "",
        "A mutant is killed by a *failure* (a verdict of does not conform, a failing case), a *crash* (the run raised: a",
        "traceback is no pass either) or a *hang* (no verdict within the judge's deadline). A mutant is *equivalent* when no input",
        "the adapter protocol can carry tells it from the spec (the file's `about` says which inputs those are); each one is listed",
        "with its reason in [mutation-equivalents.json](mutation-equivalents.json) and left out of that judge's score. A mutant",
        "that differs only in the state (the queues, the benefit policy's accounting) is equivalent for the results-level fixtures",
        "only.",
        "",
        "Regenerate with `.venv/bin/python bench/bench_mutation.py` (bench/README.md).",
        "",
        "## Scores",
        "",
        *score_table(modules, equivalents),
        "",
        f"Run time of cosmic-ray's exec:{timing} Last run finished {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(finished))}, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} cores." if seconds else "",
        "",
        "## Surviving mutants",
        "",
        "Each mutant that some judge does not kill: where (the line, the function, cosmic-ray's operator and occurrence), the",
        "change, and each judge's verdict.",
        "",
        *survivors_section(modules, equivalents),
    ]
    if stale:
        text += ["## Equivalents no mutant matches", "", *(f"- {e['file']} `{e['function']}` {e['operator']}: `{e['line']}` → `{e['mutated']}`" for e in stale), ""]
    output.write_text("\n".join(text).rstrip() + "\n", encoding="utf-8")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "judge":
        parser = argparse.ArgumentParser(prog="bench_mutation.py judge")
        parser.add_argument("module", choices=MODULES)
        parser.add_argument("--deadline", type=float, default=10.0)
        args = parser.parse_args(sys.argv[2:])
        return judge(args.module, args.deadline)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", default=",".join(MODULES), help="which modules to mutate (default: both)")
    parser.add_argument("--deadline", type=float, default=10.0, help="seconds each judge has for one mutant (default: 10)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "bench" / "results" / "mutation", help="cosmic-ray's configurations and sessions")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "mutation-score.md")
    parser.add_argument("--equivalents", type=Path, default=ROOT / "docs" / "mutation-equivalents.json")
    parser.add_argument("--report-only", action="store_true", help="write the score from the sessions of the last run")
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    timings = args.work_dir / "seconds.json"
    seconds = json.loads(timings.read_text()) if timings.exists() else {}
    if not args.report_only:
        for name in args.modules.split(","):
            seconds[name] = run_cosmic_ray(name, MODULES[name], args.work_dir, args.deadline)
            timings.write_text(json.dumps(seconds), encoding="utf-8")
    write_score(args.work_dir, args.output, args.equivalents, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
