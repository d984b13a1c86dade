"""The spec-level mutant gallery (conformance/galleries/spec_mutants.py) plants a mistake in every rule
of spec/s3fifo.md, lru.md, fifo.md, benefit.md and lifecycle.md that the hunt explores (conformance/hunt/targets.py
keeps the others, each with its reason); each mutant changes one function of a copy of the
reference; `kvspec hunt check` finds the cheap ones here (the score of all of them is
docs/hunt-score.md, bench/bench_hunt.py); a --function or --clause hunts that rule and its callers."""

import inspect
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import FunctionType

import pytest

from kvspec.conformance.core.citations import CLAUSE_LINE, REFERENCE, citations
from kvspec.conformance.galleries import spec_mutants
from kvspec.conformance.galleries.spec_mutants import MUTANTS, SpecMutant
from kvspec.conformance.hunt import targets
from kvspec.conformance.hunt.targets import NOT_EXPLORED, PARTLY_EXPLORED, by_clause, by_function, scope_targets

ROOT = Path(__file__).resolve().parent.parent
SPEC_FILES = ("s3fifo.md", "lru.md", "fifo.md", "benefit.md", "lifecycle.md")
REFERENCE_FILES = ("s3fifo.py", "lru.py", "fifo.py", "benefit/*.py", "in_use.py", "lifecycle.py")


def rules() -> set[str]:
    """Each numbered clause of the five spec files that a function of the reference cites."""
    clauses = {clause for name in SPEC_FILES for clause in CLAUSE_LINE.findall((ROOT / "spec" / name).read_text(encoding="utf-8"))}
    cited: set[str] = set()
    for pattern in REFERENCE_FILES:
        for path in REFERENCE.glob(pattern):
            lines, docstrings = citations(str(path))
            cited.update(*lines.values(), *docstrings.values())
    return clauses & cited


def test_every_rule_has_a_mutant_or_says_why_the_hunt_cannot_explore_it() -> None:
    planted = {mutant.breaks for mutant in MUTANTS}
    assert rules() - planted - set(NOT_EXPLORED) == set()
    assert planted & set(NOT_EXPLORED) == set() and set(PARTLY_EXPLORED) <= planted  # the part it can explore has its mutant
    # those five: rules no line cites (LIFE-INV-2: only lookup's contract)
    assert set(NOT_EXPLORED) <= rules() | {"BEN-ENTRY-1", "BEN-CLOCK-4", "BEN-LRU-1", "BEN-TRACE-1", "LIFE-INV-2"}


def test_the_issues_eight_planted_bugs_are_in_the_gallery() -> None:
    names = {mutant.name for mutant in MUTANTS}
    assert {"small-cap-by-floor", "ghost-cap-is-small-cap", "freq-unsaturated", "m-drain-without-decrement",
            "m-drain-without-second-chance", "ghost-hit-to-small", "resident-count-with-ghost", "ghost-is-resident"} <= names


def described(contracts: list[object]) -> list[str]:
    """The descriptions of a function's contracts, in the order icontract checks them (preconditions come in groups)."""
    return [c.description for item in contracts for c in (item if isinstance(item, list) else [item])]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: mutant.name)
def test_a_mutant_changes_one_function_of_a_copy_of_the_reference(mutant: SpecMutant) -> None:
    """The copy's other functions are the reference's own source, line for line; the mutated one is
    the gallery's, under the reference's contracts; the reference itself is untouched."""
    copy = getattr(spec_mutants, mutant.attribute)
    reference = sys.modules[mutant.module]
    *path, name = mutant.replaces.split(".")
    holder, original = copy, reference
    for part in path:
        holder, original = getattr(holder, part), getattr(original, part)
    replaced = inspect.unwrap(getattr(holder, name))
    assert replaced.__code__ is mutant.rule.__code__ and replaced.__globals__ is vars(copy)
    assert inspect.unwrap(getattr(original, name)).__code__ is not mutant.rule.__code__
    for kind in ("__postconditions__", "__preconditions__"):
        contracts = getattr(getattr(original, name), kind, [])
        assert described(getattr(getattr(holder, name), kind, [])) == described(contracts), kind
    for key, value in vars(reference).items():
        if isinstance(value, FunctionType) and value.__module__ == reference.__name__ and key != name:
            ours, theirs = inspect.unwrap(vars(copy)[key]), inspect.unwrap(value)
            where = (ours.__code__.co_filename, ours.__code__.co_firstlineno)
            assert where == (theirs.__code__.co_filename, theirs.__code__.co_firstlineno), key
            assert inspect.getsource(ours) == inspect.getsource(theirs), key


def test_a_function_is_hunted_with_its_callers_and_a_clause_with_the_functions_that_state_it() -> None:
    s3fifo = "kvspec.reference.s3fifo"
    assert [t.name for t in by_function(f"{s3fifo}.admit_to_small")] == [f"{s3fifo}.admit_to_small", f"{s3fifo}.access"]
    assert [(t.name, t.caller) for t in by_clause("S3-ADMIT-S-2")] == [(f"{s3fifo}.admit_to_small", False), (f"{s3fifo}.access", True)]
    assert [t.name for t in by_clause("LRU-EVICT-1")] == ["kvspec.reference.lru.access"]
    assert [t.name for t in by_function(f"{s3fifo}.insert_to_ghost")] == [f"{s3fifo}.insert_to_ghost", f"{s3fifo}.admit_to_small",
                                                                          f"{s3fifo}.admit_to_main"]  # its callers, not theirs
    with pytest.raises(targets.SelectionError, match="BEN-SCORE-4: the hunt does not explore it: its rule is arithmetic on doubles"):
        by_clause("BEN-SCORE-4")
    in_use = "kvspec.reference.in_use"
    assert [t.name for t in by_function(f"{in_use}.free_queue_slot")] == [f"{in_use}.free_queue_slot", f"{in_use}.InUseLRU.access",
                                                                        f"{in_use}.InUseFIFO.access"]  # a method's access is a caller
    named = {t.name for t in scope_targets(targets.SCOPE)}
    assert f"{s3fifo}.S3FIFO.resident_count" in named and f"{s3fifo}.S3FIFO.access" not in named  # S3FIFO.access is access: once


def hunt(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "hunt", "check", *args], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    return run, time.perf_counter() - started


CHEAP = ["ghost-is-resident", "resident-count-with-ghost", "ghost-hit-to-small", "new-block-to-main", "lru-hit-not-requeued",
         "fifo-hit-requeued", "later-size-wins", "referenced-head-evicted", "lru-hit-not-requeued-in-use"]


@pytest.mark.parametrize("name", CHEAP)
def test_the_hunt_finds_a_cheap_mutant_of_the_gallery(name: str) -> None:
    """Each about 3 s: the rule has no caller, or CrossHair breaks it at once; with a --function, the budget is 30 s."""
    mutant = next(m for m in MUTANTS if m.name == name)
    run, _ = hunt("--function", mutant.target)
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.startswith(f"kvspec hunt check --function {mutant.target} --budget 30 (")
    found = run.stdout.splitlines()[1]
    assert found.startswith(f"  {mutant.replaces.rsplit('.', 1)[-1]}(") and ": breaks " in found, run.stdout


def test_the_hunt_of_a_rule_and_its_callers_keeps_within_its_budget() -> None:
    """S3-ADMIT-S-2's hunt (admit_to_small, then access), the search and the concrete runs, within an 8 s budget (about 9 s)."""
    run, seconds = hunt("--clause", "S3-ADMIT-S-2", "--budget", "8")
    assert run.returncode == 0, run.stdout + run.stderr
    header = re.fullmatch(r"kvspec hunt check --clause S3-ADMIT-S-2 --budget 8 \(2 functions, \d+ conditions\): "
                          r"0 counterexamples in ([\d.]+) s", run.stdout.splitlines()[0])
    assert header and float(header[1]) <= 8, run.stdout
    assert seconds < 8 + 2  # and kvspec's own start
