"""`kvspec certify --report DIR`: report.json (with its schema), report.md, and a shrunk
counterexample that `kvspec replay` replays."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from kvspec.conformance.report import Report

ROOT = Path(__file__).resolve().parent.parent


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVSPEC_CONTRACTS": "1"}
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600, env=env)


def test_the_checked_in_schema_is_the_models_schema() -> None:
    checked_in = json.loads((ROOT / "spec" / "schemas" / "certification-report.schema.json").read_text())
    assert checked_in == json.loads(json.dumps(Report.model_json_schema(), sort_keys=True))


def test_a_mutant_report_names_the_clause_and_saves_a_replayable_counterexample(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "python:kvspec.conformance.mutants:ghost_in_final_size", "--policy", "s3fifo", "--report", str(tmp_path))
    assert run.returncode == 3, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    (verdict,) = report.policies
    assert not report.conforms and not verdict.conforms and verdict.failure is not None
    assert verdict.clauses["S3-FINAL-1"] == "fail" and verdict.clauses["REPLAY-HIT-1"] == "pass"
    assert (report.seed, report.profile, report.level) == (0, "quick", "state")
    failure = verdict.failure
    assert failure.trace_file == "s3fifo-counterexample.jsonl" and failure.replay_command is not None
    counterexample = (tmp_path / failure.trace_file).read_text().splitlines()
    assert len(counterexample) == failure.request
    # The replay command runs the reference on the shrunk trace: what the spec expects there.
    command = shlex.split(failure.replay_command)
    assert command[:2] == ["kvspec", "replay"]
    replayed = kvspec(*command[1:])
    assert replayed.returncode == 0, replayed.stderr
    expected = json.loads(replayed.stdout)
    assert expected["final_cache_blocks"] == int(failure.expected)
    assert "S3-FINAL-1" in (tmp_path / "report.md").read_text()


def test_a_conforming_report_passes_every_clause(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "reference", "--policy", "fifo", "--report", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.conforms and report.policies[0].failure is None
    assert set(report.policies[0].clauses.values()) == {"pass"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]
