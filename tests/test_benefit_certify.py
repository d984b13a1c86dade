"""`kvspec certify --policy benefit`: the reference and an independent implementation conform,
and the quick profile catches every mutant of the benefit gallery, leading with the clause the
mutant breaks (conformance/benefit_mutants.py)."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.conformance.benefit_mutants import MUTANTS, canonical
from kvspec.conformance.certify import certify_policy
from kvspec.conformance.report import Report

from support import certify_report


def test_the_reference_conforms_on_the_benefit_policy() -> None:
    outcome = certify_policy(load_adapter("reference"), "benefit")
    assert outcome.conforms, outcome.message


def test_the_independent_canonical_benefit_policy_conforms() -> None:
    outcome = certify_policy(canonical(), "benefit")
    assert outcome.conforms, outcome.message


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_quick_profile_catches_every_benefit_mutant_and_names_the_clause_it_breaks(name: str, tmp_path: Path) -> None:
    status, report = certify_report(f"python:kvspec.conformance.benefit_mutants:{name.replace('-', '_')}", "benefit", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and not verdict.conforms, "the mutant conforms"
    leading = [failure.clauses[0] for failure in verdict.failures if failure.clauses]
    assert MUTANTS[name].breaks in leading, [failure.message for failure in verdict.failures]


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_benefit_mutant_says_which_clause_it_breaks(name: str) -> None:
    cls = MUTANTS[name]
    assert cls.name == name and cls.__doc__ is not None and f"breaks {cls.breaks}" in cls.__doc__


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "1"})


def test_the_cli_certifies_the_benefit_policy_and_reports_its_own_clauses(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "python:kvspec.conformance.benefit_mutants:ghosts_lost", "--policy", "benefit", "--report", str(tmp_path))
    assert run.returncode == 3 and "benefit: DOES NOT CONFORM" in run.stdout and "BEN-GHOST-1" in run.stdout
    (verdict,) = Report.model_validate_json((tmp_path / "report.json").read_text()).policies
    assert verdict.policy == "benefit" and verdict.clauses["BEN-GHOST-1"] == "fail"
    assert all(clause.startswith("BEN-") for clause in verdict.clauses)
    failure = next(f for f in verdict.failures if f.clauses[0] == "BEN-GHOST-1")
    assert failure.trace_file is not None and (tmp_path / failure.trace_file).is_file()  # the operations, as a fixture case
    assert failure.replay_command is not None and failure.replay_command.startswith("kvspec fixtures verify ")
    replayed = kvspec(*shlex.split(failure.replay_command)[1:])
    assert replayed.returncode == 3 and "FAIL" in replayed.stdout and "ghosts" in replayed.stdout  # it reproduces, through the adapter
    assert kvspec("certify", "--adapter", "reference", "--policy", "benefit").returncode == 0


@pytest.mark.parametrize("name", ["canonical", "no-key-tiebreak"])
def test_certification_through_the_subprocess_protocol_gives_the_in_process_verdict(name: str, tmp_path: Path) -> None:
    """PROTO-17: an in-process adapter served over the protocol (`cmd:python -m kvspec.adapters.serve
    python:...`) is certified exactly as it is in-process: same verdict, same leading clause."""
    factory = f"python:kvspec.conformance.benefit_mutants:{name.replace('-', '_')}"
    verdicts = [certify_report(spec, "benefit", tmp_path / kind)[1].policies[0]
                for kind, spec in (("in-process", factory), ("subprocess", f"cmd:{sys.executable} -m kvspec.adapters.serve {factory}"))]
    assert verdicts[0].conforms == verdicts[1].conforms == (name == "canonical")
    assert [f.clauses[:1] for f in verdicts[0].failures] == [f.clauses[:1] for f in verdicts[1].failures]
    assert [f.message for f in verdicts[0].failures] == [f.message for f in verdicts[1].failures]
