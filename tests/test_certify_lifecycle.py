"""Certifying requests in flight (issue 32 section 2; spec/lifecycle.md sections 1 to 5; PROTO-35):
the lifecycle machine passes the reference and the independent pools, and catches each mutant of the
engines' gallery (conformance/galleries/lifecycle_mutants.py) at both levels with the clause it breaks:
named on the implementation's own pool at the state level, among those the symptom is consistent
with at the results level."""

import json
from pathlib import Path

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance import cli
from kvspec.conformance.certification.certify import certify_in_flight
from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool
from kvspec.conformance.galleries.lifecycle_mutants import MUTANTS, PoolAdapter

MUTANT = "python:kvspec.conformance.galleries.lifecycle_mutants:retry_counted_twice"


@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_LIFE_INV_1_LIFE_INV_2_the_reference_and_the_independent_pool_conform_in_flight(policy: str) -> None:
    for name, factory in (("reference", ReferenceAdapter), ("canonical", lambda: PoolAdapter(CanonicalPool))):
        outcome = certify_in_flight(Implementation.in_process(factory, name), policy)
        assert outcome.conforms, outcome.message
        assert outcome.in_flight and outcome.accepted > 50


@pytest.mark.parametrize("level", ["state", "results"])
@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_of_the_engines_gallery_does_not_conform_with_the_clause_it_breaks(name: str, level: str) -> None:
    """LIFE-LOOKUP-1, LIFE-ALLOC-2, LIFE-PREEMPT-1, LIFE-POOL-2, LIFE-HIT-1, LIFE-EVICT-1: the clause the
    mutant's report breaks is named at the state level, and among the clauses at the results level."""
    mutant = MUTANTS[name]
    outcome = certify_in_flight(Implementation.in_process(lambda: PoolAdapter(mutant, level), name), "lru")  # type: ignore[arg-type]
    assert not outcome.conforms
    divergences = [f.divergence for f in outcome.findings if f.divergence is not None and f.divergence.lifecycle is not None]
    if level == "state":
        assert any(mutant.breaks in d.clauses and mutant.breaks not in d.consistent_with for d in divergences), outcome.message
    else:
        assert any(mutant.breaks in d.clauses for d in divergences), outcome.message


def test_PROTO_35_a_counterexample_in_flight_is_a_lifecycle_case_that_fixtures_verify_reproduces(tmp_path: Path,
                                                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The report saves the shrunk operations as a lifecycle case (FIX-18), and its command fails the
    mutant on that case, where the correct pool passes it."""
    assert cli.main(["certify", "--adapter", MUTANT, "--policy", "lru", "--report", str(tmp_path)]) == 3
    report = json.loads((tmp_path / "report.json").read_text())
    in_flight = next(verdict for verdict in report["policies"] if verdict["in_flight"])
    failure = in_flight["failures"][0]
    assert failure["clauses"][0] == "LIFE-HIT-1" and failure["trace_file"] == "lru-in-flight-counterexample-1.json"
    case = json.loads((tmp_path / failure["trace_file"]).read_text())
    assert case["kind"] == "lifecycle" and case["operations"][-1]["op"] == "finish"
    assert failure["replay_command"] == f"kvspec fixtures verify {tmp_path / failure['trace_file']} --adapter {MUTANT}"
    capsys.readouterr()
    assert cli.main(["fixtures", "verify", str(tmp_path / failure["trace_file"]), "--adapter", MUTANT]) == 3
    assert "hit_tokens" in capsys.readouterr().out
    correct = MUTANT.replace("retry_counted_twice", "canonical")
    assert cli.main(["fixtures", "verify", str(tmp_path / failure["trace_file"]), "--adapter", correct]) == 0
