"""`kvspec certify`: the reference conforms through both adapter kinds, the JavaScript example
conforms, and the quick profile catches every mutant of the gallery (seed 000's common mistakes)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.conformance.certify import certify_policy
from kvspec.conformance.mutants import FACTORIES, MUTANTS, canonical
from kvspec.reference import POLICIES

ROOT = Path(__file__).resolve().parent.parent
NODE_EXAMPLE = ROOT / "examples" / "s3fifo-node" / "server.js"


@pytest.mark.parametrize("policy", POLICIES)
def test_the_reference_conforms_in_process(policy: str) -> None:
    outcome = certify_policy(load_adapter("reference"), policy)
    assert outcome.conforms, outcome.message


def test_the_reference_conforms_through_the_subprocess_protocol() -> None:
    adapter = load_adapter(f"cmd:{sys.executable} -m kvspec.adapters.serve")
    try:
        outcome = certify_policy(adapter, "s3fifo")
    finally:
        adapter.close()
    assert outcome.conforms, outcome.message


def test_the_independent_canonical_implementation_conforms() -> None:
    """conformance/mutants.py's canonical S3FIFO, the base every mutant changes in one place."""
    outcome = certify_policy(canonical(), "s3fifo")
    assert outcome.conforms, outcome.message


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("policy", POLICIES)
def test_the_javascript_example_conforms(policy: str) -> None:
    adapter = load_adapter(f"cmd:node {NODE_EXAMPLE}")
    try:
        outcome = certify_policy(adapter, policy)
    finally:
        adapter.close()
    assert outcome.conforms, outcome.message


def clauses_named(breaks: str) -> set[str]:
    """A clause id, or a range such as "S3-ACCESS-1 to S3-ACCESS-4", as the set of its ids."""
    first, _, last = breaks.partition(" to ")
    stem, low = first.rsplit("-", 1)
    high = last.rsplit("-", 1)[1] if last else low
    return {f"{stem}-{number}" for number in range(int(low), int(high) + 1)}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_the_quick_profile_catches_every_mutant_and_diagnoses_the_clause_it_breaks(name: str) -> None:
    """conformance/diagnosis.py: the verdict leads with the clause spec/s3fifo.md section 8 maps
    the mutant's mistake to."""
    outcome = certify_policy(FACTORIES[name](), "s3fifo", "quick")
    assert not outcome.conforms and outcome.divergence is not None, outcome.message
    assert outcome.divergence.clauses[0] in clauses_named(MUTANTS[name].breaks), outcome.message
    assert outcome.message.startswith(outcome.divergence.clauses[0])


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600, env={**os.environ})


def test_the_cli_exits_0_for_a_conforming_implementation() -> None:
    run = kvspec("certify", "--adapter", "reference", "--policy", "lru")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lru: conforms" in run.stdout


def test_the_cli_exits_3_and_names_the_clause_for_a_mutant() -> None:
    run = kvspec("certify", "--adapter", "python:kvspec.conformance.mutants:no_min_clamp", "--policy", "s3fifo", "--seed", "7")
    assert run.returncode == 3
    assert "s3fifo: DOES NOT CONFORM" in run.stdout and "REPLAY-HIT-1" in run.stdout


def test_the_same_seed_gives_the_same_verdict() -> None:
    first = certify_policy(FACTORIES["no-min-clamp"](), "s3fifo", "quick", 11)
    second = certify_policy(FACTORIES["no-min-clamp"](), "s3fifo", "quick", 11)
    assert (first.conforms, first.message) == (second.conforms, second.message)
