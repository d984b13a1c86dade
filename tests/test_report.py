"""`kvspec certify --report DIR`: report.json (with its schema), report.md, and a shrunk
counterexample that `kvspec replay` replays."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from kvspec.conformance.certification.verdict.report import Report, schema_texts

from support import schema_errors

ROOT = Path(__file__).resolve().parent.parent


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVSPEC_CONTRACTS": "1"}
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600, env=env)


def test_the_checked_in_schema_is_the_models_schema() -> None:
    checked_in = (ROOT / "spec" / "schemas" / "certification-report.schema.json").read_text(encoding="utf-8")
    assert json.loads(checked_in) == {**Report.model_json_schema(), "$schema": "https://json-schema.org/draft/2020-12/schema",
                                      "$id": "https://kvspec.dev/schemas/certification-report.schema.json"}
    assert checked_in == schema_texts()["certification-report.schema.json"], "regenerate: kvspec spec schemas"


def test_a_mutant_report_names_the_clause_and_saves_a_replayable_counterexample(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "in-process:kvspec.conformance.galleries.mutants:ghost_in_final_size", "--policy", "s3fifo", "--report", str(tmp_path))
    assert run.returncode == 3, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert schema_errors("certification-report.schema.json", json.loads((tmp_path / "report.json").read_bytes())) == []
    (verdict,) = report.policies
    assert not report.conforms and not verdict.conforms and len(verdict.failures) == 1
    assert verdict.clauses["S3-FINAL-1"] == "fail" and verdict.clauses["REPLAY-HIT-1"] == "inconclusive"
    assert (report.seed, report.profile, report.level) == (0, "quick", "state")
    (failure,) = verdict.failures
    assert failure.trace_file == "s3fifo-counterexample-1.jsonl" and failure.replay_command is not None
    counterexample = (tmp_path / failure.trace_file).read_text().splitlines()
    assert len(counterexample) == failure.request
    # The replay command runs the shrunk trace through the mutant in lockstep with the reference:
    # it stops at the same request, with the same diagnosis.
    command = shlex.split(failure.replay_command)
    assert command[:2] == ["kvspec", "replay"] and "--adapter" in command
    replayed = kvspec(*command[1:])
    assert replayed.returncode == 3 and replayed.stdout == "", replayed.stderr
    assert f"at line {failure.request} of" in replayed.stderr and "S3-FINAL-1:" in replayed.stderr
    # Without --adapter, it shows what the spec expects there.
    expected = kvspec(*command[1:command.index("--adapter")], *command[command.index("--adapter") + 2:])
    assert json.loads(expected.stdout)["final_cache_blocks"] == int(failure.expected)
    assert "S3-FINAL-1" in (tmp_path / "report.md").read_text()


def test_pinned_knobs_are_recorded_and_shown(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "reference", "--policy", "s3fifo", "--max-freq", "3", "--small-ratio", "0.25", "--report", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.pins == {"small_ratio": 0.25, "max_freq": 3}
    assert "only configurations with small_ratio = 0.25, max_freq = 3" in (tmp_path / "report.md").read_text()


def test_a_conforming_report_passes_every_clause(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "reference", "--policy", "fifo", "--report", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert report.conforms and report.policies[0].failures == []
    assert set(report.policies[0].clauses.values()) == {"pass"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.md"]


def test_a_failing_certification_prints_its_shrunk_requests_inside_a_command_that_replays_them() -> None:
    """Without --report, the verdict's counterexample is the requests themselves inside `kvspec
    replay -`: pasted whole into a shell, it reproduces the divergence."""
    run = kvspec("certify", "--adapter", "in-process:kvspec.conformance.galleries.mutants:no_min_clamp", "--policy", "s3fifo")
    assert run.returncode == 3, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("kvspec replay - --adapter"))
    pasted = "\n".join(lines[start:lines.index("EOF", start) + 1]) + "\n"
    requests = pasted.splitlines()[1:-1]
    assert requests and all(json.loads(line)["hash_ids"] for line in requests)
    bin_folder = str(Path(sys.executable).parent)  # where the installed `kvspec` is
    replayed = subprocess.run(["bash", "-c", pasted], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PATH": f"{bin_folder}:{os.environ['PATH']}"})
    assert replayed.returncode == 3 and replayed.stdout == "", replayed.stderr
    assert f"at line {len(requests)} of <stdin>" in replayed.stderr and "REPLAY-HIT-1:" in replayed.stderr


def test_a_failing_benefit_certification_prints_its_shrunk_operations_as_protocol_requests(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "in-process:kvspec.conformance.galleries.benefit_mutants:ghosts_lost", "--policy", "benefit",
                 "--report", str(tmp_path))
    assert run.returncode == 3, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    failure = report.policies[0].failures[0]
    assert failure.trace_file is not None and failure.replay_command is not None
    case = json.loads((tmp_path / failure.trace_file).read_text())
    session = [{"cmd": "start", "protocol": 1}, {"cmd": "configure_benefit", "config": case["config"]},
               *(step["request"] for step in case["operations"]), {"cmd": "stop"}]
    lines = run.stdout.splitlines()
    start = lines.index('{"cmd": "start", "seq": 0, "protocol": 1}')
    assert [json.loads(line) for line in lines[start:start + len(session)]] == [{**r, "seq": n} for n, r in enumerate(session)]
    assert lines[start + len(session)] == "" and f"    replay it against the spec's answers: {failure.replay_command}" in lines
    # The verdict shows the request and the state as the protocol carries them, not as kvspec's Python objects.
    sent, shown = failure.message.split(" after ", 1)[1].split(": expected the state ", 1)
    assert json.loads(sent) == case["operations"][-1]["request"]
    assert json.loads(shown.split(", got ", 1)[0]) == case["operations"][-1]["state"]
    # Pasted into the reference server, the session is answered line for line, as the case says the spec answers.
    served = subprocess.run([sys.executable, "-m", "kvspec.adapters.serve"], input="\n".join(lines[start:start + len(session)]) + "\n",
                            capture_output=True, text=True, timeout=60)
    replies = [json.loads(line) for line in served.stdout.splitlines()[2:]]
    assert served.returncode == 0 and [{k: v for k, v in r.items() if k != "seq"} for r in replies] == [s["expect"] for s in case["operations"]]
