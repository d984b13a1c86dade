"""The lifecycle gallery (conformance/galleries/lifecycle_mutants.py): each engine's bug, as a
subclass of the canonical pool, is failed by the lifecycle cases of the corpus at both levels
(FIX-18's state level, and FIX-16's results alone), and the first case that fails it declares the
clause the mutant says it breaks (in its clauses or its title); the canonical pool fails none."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.fixtures.lifecycle_cases import GALLERY
from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, first_failure
from kvspec.conformance.fixtures.runner import verify
from kvspec.conformance.galleries.lifecycle_mutants import FACTORIES, MUTANTS, canonical

KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]
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


def test_FIX_18_kvspec_fixtures_verify_replays_the_lifecycle_cases_on_each_gallery_pool_as_an_in_process_adapter() -> None:
    """PROTO-29, PROTO-35: each pool of the gallery behind the Adapter interface (its lifecycle the pool's,
    its replay the reference's) is what `kvspec fixtures verify --adapter
    python:kvspec.conformance.galleries.lifecycle_mutants:<factory>` runs: the canonical one passes every
    case of the block policies, and each mutant, whose replay is the canonical one's, fails the case of
    its report, verified alone (as `kvspec fixtures verify spec/fixtures/lifecycle/<id>.json` verifies it)."""
    canonical_results = verify(CORPUS, canonical, {}, policies=("lru", "fifo", "s3fifo"))
    assert [r.id for r in canonical_results if r.verdict != "pass"] == []
    assert sum(r.id.startswith("lifecycle-") for r in canonical_results) == len(lifecycle_corpus())
    for name, factory in FACTORIES.items():
        [report_case] = [case["id"] for case in lifecycle_corpus() if case["provenance"] == MUTANTS[name].report]
        assert [r.verdict for r in verify(CORPUS, factory, {}, only=report_case)] == ["fail"], name


def test_FIX_18_kvspec_fixtures_verify_names_a_gallery_mutant_s_failing_case() -> None:
    run = subprocess.run([*KVSPEC, "fixtures", "verify", "--adapter", "python:kvspec.conformance.galleries.lifecycle_mutants:retry_counted_twice",
                          "--policy", "lru"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 3, run.stderr
    [report_case] = [case["id"] for case in lifecycle_corpus() if case["provenance"] == MUTANTS["retry-counted-twice"].report]
    assert "DOES NOT CONFORM" in run.stdout and f"FAIL {report_case}" in run.stdout and "hit_tokens" in run.stdout
