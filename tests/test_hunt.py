"""`kvspec hunt` (conformance/hunt.py): CrossHair finds the degenerate small_cap of findings F-1 in
the seed's rules as written, finds the no-min-clamp mistake by diffbehavior, and its
counterexamples become fixtures."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.conformance.fixture_runner import read_manifest
from kvspec.conformance.hunt import HUNTED, arguments, in_domain, no_min_clamp_hit_tokens, spec_hit_tokens
from kvspec.conformance.seed_rules import RULES, as_written, seed_caps_are_valid
from kvspec.reference import s3fifo

ROOT = Path(__file__).resolve().parent.parent


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_hunt_as_written_finds_the_degenerate_small_cap_of_F_1() -> None:
    """S3-CONF-5 switched off: a configuration whose small_cap rounds to 0 makes the drain of S
    (S3-ADMIT-S-1) pop an empty queue."""
    run = kvspec("hunt", "as-written", "--budget", "240")
    assert run.returncode == 3, run.stdout + run.stderr
    found = [line for line in run.stdout.splitlines() if line.startswith("  first_")]
    assert found and all("StopIteration" in line for line in found)
    for line in found:
        args = arguments(line[line.index("(") + 1:line.index(")")])
        assert s3fifo.small_cap_for(args["capacity"], float(args["small_ratio"])) == 0  # the degenerate size, every time


def test_the_copy_of_the_rules_is_the_reference_s_but_for_the_resolution() -> None:
    assert RULES is not s3fifo and RULES.caps_are_valid is seed_caps_are_valid and s3fifo.caps_are_valid is not seed_caps_are_valid
    caps = as_written(5, 0.1).caps
    assert caps.small_cap == 0 and seed_caps_are_valid(caps)  # the seed's rules take it
    assert not s3fifo.caps_are_valid(s3fifo.Caps(caps.small_cap, caps.main_cap, caps.ghost_cap, caps.max_freq))  # S3-CONF-5 refuses it


def test_hunt_diff_finds_the_missing_clamp_of_REPLAY_HIT_1() -> None:
    run = kvspec("hunt", "diff", "--budget", "240")
    assert run.returncode == 3, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if "spec_hit_tokens(" in line)
    args = arguments(line[line.index("(") + 1:line.index(")")])
    assert spec_hit_tokens(**args) != no_min_clamp_hit_tokens(**args)  # type: ignore[arg-type]
    assert in_domain(**args)  # type: ignore[arg-type]
    assert spec_hit_tokens(3, 1, 1) is None and no_min_clamp_hit_tokens(3, 1, 1) is None  # outside the domain both sides agree


def test_every_recorded_counterexample_is_a_fixture() -> None:
    recorded = json.loads(HUNTED.read_text())
    titles = [entry["title"] for entry in read_manifest(ROOT / "spec" / "fixtures") if entry["title"].startswith("hunted: ")]
    assert len(titles) == len(recorded) >= 3
    assert any("first_access(capacity=64, small_ratio=0.0078125)" in title for title in titles)


def test_hunt_diff_takes_any_pair_and_records_only_what_makes_a_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = kvspec("hunt", "diff", "--pair", "kvspec.reference.s3fifo.saturating_increment", "kvspec.reference.s3fifo.saturating_increment",
                 "--budget", "60", "--per-condition", "2")
    assert run.returncode == 0 and "0 counterexamples" in run.stdout  # a function against itself
    refused = kvspec("hunt", "check", "--pair", "a.b", "c.d")
    assert refused.returncode == 1 and "--pair names the two functions of a diff" in refused.stderr
    from kvspec.conformance.hunt import Counterexample, record
    from kvspec.reference import KvspecError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "conformance").mkdir()
    try:
        record([Counterexample("diff", "m.f", {"x": 1}, "differs", "crosshair diffbehavior m.f m.g", 1.0)])
    except KvspecError as error:
        assert "no fixture is made from the arguments of m.f" in str(error)
    else:
        raise AssertionError("recorded a counterexample no fixture can hold")
    assert record([Counterexample("as-written", "first_access", {"capacity": 3, "small_ratio": 0.1}, "StopIteration:", "c", 1.0)]) == 1
    assert json.loads((tmp_path / "conformance" / "hunted.json").read_text())[0]["args"] == {"capacity": 3, "small_ratio": 0.1}
