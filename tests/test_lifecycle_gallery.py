"""The lifecycle gallery (conformance/galleries/lifecycle_mutants.py): each engine's bug, as a
subclass of the canonical pool, is failed by the lifecycle cases of the corpus at both levels
(FIX-18's state level, and FIX-16's results alone), and the first case that fails it declares the
clause the mutant says it breaks (in its clauses or its title); the canonical pool fails none."""

import json
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.fixtures.lifecycle_cases import GALLERY
from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, first_failure
from kvspec.conformance.galleries.lifecycle_mutants import MUTANTS

CORPUS = Path(__file__).resolve().parent.parent / "spec" / "fixtures"


def lifecycle_corpus() -> list[dict[str, Any]]:
    """The corpus's lifecycle cases, in its manifest's order (by path, FIX-2)."""
    return [json.loads(path.read_text()) for path in sorted(CORPUS.glob("lifecycle/*.json"))]


def first_failing(pool_class: type[CanonicalPool], states: bool) -> tuple[dict[str, Any], str] | None:
    for case in lifecycle_corpus():
        failure = first_failure(pool_class, case, states)
        if failure is not None:
            return case, failure
    return None


@pytest.mark.parametrize("states", [True, False], ids=["state", "results"])
def test_FIX_18_the_canonical_pool_fails_no_lifecycle_case(states: bool) -> None:
    assert first_failing(CanonicalPool, states) is None


@pytest.mark.parametrize("states", [True, False], ids=["state", "results"])
@pytest.mark.parametrize("name", MUTANTS)
def test_FIX_18_each_lifecycle_mutant_fails_a_case_that_declares_the_clause_it_breaks(name: str, states: bool) -> None:
    """LIFE-LOOKUP-1, LIFE-ALLOC-2, LIFE-PREEMPT-1, LIFE-POOL-2, LIFE-HIT-1 and LIFE-EVICT-1, each by
    the mutant that breaks it."""
    mutant = MUTANTS[name]
    found = first_failing(mutant, states)
    assert found is not None, f"{name}: no lifecycle case fails it"
    case, failure = found
    assert mutant.breaks in case["clauses"] or mutant.breaks in case["title"], (case["id"], failure)


@pytest.mark.parametrize("states", [True, False], ids=["state", "results"])
@pytest.mark.parametrize("name", MUTANTS)
def test_FIX_18_each_lifecycle_mutant_fails_the_case_of_its_report_whose_title_names_its_clause(name: str, states: bool) -> None:
    """The gallery case whose provenance is the mutant's report (the scenario in which the engine's
    bug gives another result or state) fails it, and its title names the clause. (The clauses a
    case declares, FIX-4, are those its replay by the reference traced, nearly every lifecycle
    clause in every case: the title is the sharper check.)"""
    mutant = MUTANTS[name]
    [case] = [case for case in lifecycle_corpus() if case["provenance"] == mutant.report]
    assert mutant.breaks in case["title"]
    assert first_failure(mutant, case, states) is not None


def test_FIX_18_each_lifecycle_mutant_names_an_engine_report_of_the_gallery_and_a_clause() -> None:
    """Each mutant's report is the provenance of a gallery case (the reports of serving-reports.md the
    corpus already cites), its name its own, and its clause a lifecycle clause."""
    provenances = {provenance for _, _, provenance, _, _ in GALLERY}
    assert len(MUTANTS) == 7 and all(mutant.name == name for name, mutant in MUTANTS.items())
    assert [name for name, mutant in MUTANTS.items() if mutant.report not in provenances] == []
    assert all(mutant.breaks.startswith("LIFE-") and mutant.mistake for mutant in MUTANTS.values())
    assert CanonicalPool.breaks == CanonicalPool.report == ""
