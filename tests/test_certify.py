"""`kvspec certify`: the reference conforms through both adapter kinds, the JavaScript example
conforms, and the quick profile catches every mutant of the gallery (seed 000's common mistakes)."""

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import AdapterConfig, ConfigRefused
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.core.workloads import Pins
from kvspec.conformance.galleries.mutants import FACTORIES, MUTANTS, canonical
from kvspec.reference import POLICIES

from support import Recording, certify_report

ROOT = Path(__file__).resolve().parent.parent
NODE_EXAMPLE = ROOT / "examples" / "s3fifo-node" / "server.js"


# typed on S3FIFO: the machine's and the reference's calls of LRU and FIFO are typed in other tests
@pytest.mark.parametrize("policy", [policy if policy == "s3fifo" else pytest.param(policy, marks=pytest.mark.untyped) for policy in POLICIES])
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


@pytest.mark.untyped
def test_the_independent_canonical_implementation_conforms() -> None:
    """conformance/galleries/mutants.py's canonical S3FIFO, the base every mutant changes in one place."""
    outcome = certify_policy(canonical(), "s3fifo")
    assert outcome.conforms, outcome.message


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.untyped
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
def test_the_quick_profile_catches_every_mutant_and_diagnoses_the_clause_it_breaks(name: str, tmp_path: Path) -> None:
    """conformance/certification/block/diagnosis.py: the verdict leads with the clause spec/s3fifo.md section 8 maps
    the mutant's mistake to."""
    status, report = certify_report(f"in-process:kvspec.conformance.galleries.mutants:{name.replace('-', '_')}", "s3fifo", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and not verdict.conforms, "the mutant conforms"
    first = verdict.failures[0]
    assert first.clauses[0] in clauses_named(MUTANTS[name].breaks), first.message
    assert first.message.startswith(first.clauses[0])


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600, env={**os.environ})


def test_the_cli_exits_0_for_a_conforming_implementation() -> None:
    run = kvspec("certify", "--adapter", "reference", "--policy", "lru")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lru: conforms" in run.stdout


def test_the_cli_exits_3_and_names_the_clause_for_a_mutant() -> None:
    run = kvspec("certify", "--adapter", "in-process:kvspec.conformance.galleries.mutants:no_min_clamp", "--policy", "s3fifo", "--seed", "7")
    assert run.returncode == 3
    assert "s3fifo: DOES NOT CONFORM" in run.stdout and "REPLAY-HIT-1" in run.stdout


def test_the_same_seed_gives_the_same_verdict(tmp_path: Path) -> None:
    adapter = "in-process:kvspec.conformance.galleries.mutants:no_min_clamp"
    first = certify_report(adapter, "s3fifo", tmp_path / "first")[1].policies[0].failures
    second = certify_report(adapter, "s3fifo", tmp_path / "second")[1].policies[0].failures
    assert first and [(f.message, f.steps) for f in first] == [(f.message, f.steps) for f in second]


def examples_sent(seed: int) -> tuple[list[AdapterConfig], list[list[int]]]:
    adapter = Recording()
    certify_policy(adapter, "s3fifo", "quick", seed)
    return adapter.configs, adapter.requests


@pytest.mark.untyped
def test_the_same_seed_draws_the_same_examples_whatever_local_modules_are_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis draws some values from the literals of modules outside site-packages (an
    editable kvspec, an in-process adapter's module); a certification must not."""
    before = examples_sent(0)
    literals = [*range(-300, 300), 2**31, 2**32 + 1, 2**53 + 1, 2**63 - 2, *(k / 100 for k in range(101))]
    (tmp_path / "kvspec_literals.py").write_text(f"LITERALS = {literals!r}\n")
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.setitem(sys.modules, "kvspec_literals", importlib.import_module("kvspec_literals"))
    assert examples_sent(0) == before
    assert examples_sent(1) != before  # what is compared is the examples, which another seed changes


def trace_file(path: Path, *requests: list[int]) -> Path:
    """One-token blocks: input_length is the block count."""
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": len(ids), "output_length": 0, "hash_ids": ids}) + "\n" for ids in requests))
    return path


def test_replay_through_an_adapter_agrees_with_the_reference_and_prints_the_same_result(tmp_path: Path) -> None:
    trace = trace_file(tmp_path / "t.jsonl", [1, 2], [1, 2, 3], [4], [1, 2, 5], [6, 7, 8], [1])
    config = ["--capacity", "4", "--block-size", "1", "--small-ratio", "0.25", "--per-request"]
    alone = kvspec("replay", str(trace), *config)
    through = kvspec("replay", str(trace), *config, "--adapter", f"cmd:{sys.executable} -m kvspec.adapters.serve")
    assert alone.returncode == through.returncode == 0, through.stderr
    assert through.stdout == alone.stdout and json.loads(alone.stdout)["total_hit_tokens"] > 0


def test_replay_through_an_adapter_stops_at_the_first_divergence_with_line_and_clause(tmp_path: Path) -> None:
    """The shrunk counterexample of freq-only-on-prefix-hits: request 4 misses block 1 (in G),
    and block 3 is resident past the hit window; its freq must still be incremented."""
    trace = trace_file(tmp_path / "t.jsonl", [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [5])
    output = tmp_path / "result.json"
    run = kvspec("replay", str(trace), "--capacity", "2", "--block-size", "1", "--small-ratio", "0.5", "--max-freq", "1",
                 "--adapter", "in-process:kvspec.conformance.galleries.mutants:freq_only_on_prefix_hits", "--output", str(output))
    assert run.returncode == 3 and run.stdout == ""
    assert f"at line 4 of {trace} (request 4): REPLAY-ACCESS-1: " in run.stderr and "Traceback" not in run.stderr
    assert not output.exists()


def test_replay_through_an_adapter_that_refuses_a_valid_configuration() -> None:
    run = kvspec("replay", "--capacity", "6", "--adapter", "in-process:kvspec.conformance.galleries.mutants:int_small_cap")
    assert run.returncode == 3
    assert "at the configuration: S3-CONF-2, S3-CONF-5: " in run.stderr


@pytest.mark.untyped
def test_pinned_knobs_restrict_the_configurations_certified() -> None:
    """An implementation without a max_freq knob refuses every other max_freq: it fails unpinned
    (a valid configuration refused) and conforms with --max-freq 3."""
    unpinned = certify_policy(OnlyMaxFreq3(), "s3fifo")
    assert not unpinned.conforms and "is valid, and the implementation refused it" in unpinned.message
    assert certify_policy(OnlyMaxFreq3(), "s3fifo", pins=Pins(max_freq=3)).conforms


class OnlyMaxFreq3(ReferenceAdapter):
    def configure(self, config: AdapterConfig) -> None:
        if config.max_freq != 3:
            raise ConfigRefused("no max_freq knob: always 3")
        super().configure(config)


def test_a_pin_the_spec_refuses_is_an_error() -> None:
    run = kvspec("certify", "--adapter", "reference", "--small-ratio", "1.5")
    assert run.returncode == 1 and run.stderr.startswith("kvspec: error: S3-CONF-1: ")
