"""Every command `kvspec certify` prints reproduces the finding it sits under: run as printed, it
exits 3 with the same clauses at the same request (or operation). The replay commands carry the
dialect the finding was made against (DIALECT-7) and the deadlines the implementation was held
to (PROTO-15), and are the same on the console, in report.md and in report.json."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.certification.verdict.report import Failure, Report
from kvspec.conformance.certification.verdict.reproduction import Reproduction
from kvspec.conformance.galleries.benefit_mutants import MUTANTS as BENEFIT_MUTANTS
from kvspec.conformance.galleries.mutants import MUTANTS

HERE = Path(__file__).resolve().parent
HANDMADE = HERE / "handmade" / "configuration_mistakes.py"
GALLERY = "in-process:kvspec.conformance.galleries.mutants"
# Each S3FIFO mutant against a named dialect or a set of variation points, in turn.
AGAINST = (("--dialect", "libcachesim"), ("--variation", "ghost-cap-0.9,promote-at-2"))


def kvspec(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, the reference's contracts off (certify_report's reason, tests/support.py)."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], input=stdin, capture_output=True, text=True,
                          timeout=600, cwd=cwd, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def certified(tmp_path: Path, *args: str) -> tuple[str, Report]:
    run = kvspec("certify", *args, "--report", str(tmp_path / "report"))
    assert run.returncode == 3, run.stdout + run.stderr
    return run.stdout, Report.model_validate_json((tmp_path / "report" / "report.json").read_text())


def printed_everywhere(stdout: str, tmp_path: Path, report: Report) -> list[Failure]:
    """The failures that come with a command, each command the same on the console, in report.md and in report.json."""
    markdown = (tmp_path / "report" / "report.md").read_text()
    with_command = [f for verdict in report.policies for f in verdict.failures if f.replay_command is not None]
    for failure in with_command:
        assert failure.replay_command is not None
        assert any(line.strip().endswith(failure.replay_command) for line in stdout.splitlines()), failure.replay_command
        assert f"- replay it: `{failure.replay_command}`" in markdown
    return with_command


def reproduces(failure: Failure, cwd: Path) -> None:
    """The command, run as printed: exit 3, the same clauses at the same request."""
    assert failure.replay_command is not None
    words = shlex.split(failure.replay_command)
    assert words[0] == "kvspec"
    run = kvspec(*words[1:], cwd=cwd)
    assert run.returncode == 3, f"{failure.replay_command}\n{run.stdout}{run.stderr}"
    if words[1] == "replay":
        assert f"(request {failure.request}): {', '.join(failure.clauses)}:" in run.stderr, (failure.message, run.stderr)
    else:  # fixtures verify: the benefit operations' case, whose title names the finding's first clause
        assert f"operation {failure.request}" in run.stdout and failure.clauses[0] in run.stdout, (failure.message, run.stdout)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_every_replay_command_of_a_certification_against_a_dialect_reproduces_its_finding(name: str, tmp_path: Path) -> None:
    option, dialect = AGAINST[sorted(MUTANTS).index(name) % len(AGAINST)]
    stdout, report = certified(tmp_path, "--adapter", f"{GALLERY}:{name.replace('-', '_')}", "--policy", "s3fifo", option, dialect)
    failures = printed_everywhere(stdout, tmp_path, report)
    assert failures, stdout
    for failure in failures:
        assert "--variation" in shlex.split(failure.replay_command or ""), failure.replay_command
        reproduces(failure, tmp_path)


def test_the_replay_command_of_an_lru_against_variation_points_reproduces_its_finding(tmp_path: Path) -> None:
    """Issue 28's case: the reference's LRU against path-ids and lru-evict-leaves; pasted whole,
    the here-document the console prints (no --report) gives the same finding."""
    run = kvspec("certify", "--adapter", "reference", "--policy", "lru", "--variation", "path-ids,lru-evict-leaves")
    assert run.returncode == 3, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("kvspec replay - "))
    command, requests = lines[start].removesuffix(" <<'EOF'"), lines[start + 1:lines.index("EOF", start)]
    assert "--variation path-ids,lru-evict-leaves" in command
    finding = lines[start - 3].strip()  # the finding, the counterexample's heading, a blank line
    replayed = kvspec(*shlex.split(command)[1:], stdin="\n".join(requests) + "\n")
    assert replayed.returncode == 3, replayed.stderr
    assert f"(request {len(requests)}): {finding.split(': ')[0]}:" in replayed.stderr, (finding, replayed.stderr)


def test_the_replay_command_of_a_fault_at_capacity_0_keeps_the_dialect_that_accepts_it(tmp_path: Path) -> None:
    """An LRU that accepts capacity 0, as capacity-0-empty does, then fails on every insert: the
    command replays it at capacity 0 in that dialect (canonically, REPLAY-CONF-1 refuses it)."""
    stdout, report = certified(tmp_path, "--adapter", f"in-process:{HANDMADE}:accepts_capacity_0", "--policy", "lru", "--variation",
                               "capacity-0-empty")
    (failure,) = printed_everywhere(stdout, tmp_path, report)
    assert failure.clauses == ["PROTO-29"] and failure.config is not None and failure.config["capacity"] == 0, failure.message
    reproduces(failure, tmp_path)


def test_the_command_under_a_hang_keeps_the_deadline_and_says_the_requests_are_not_shrunk(tmp_path: Path) -> None:
    """PROTO-30: a fault that took a deadline to show is reported as it ran; its command keeps
    --reply-timeout, and gives the same PROTO-15 at the same request."""
    stdout, report = certified(tmp_path, "--adapter", f"cmd:{sys.executable} {HERE / 'fakes' / 'hang_on_hit_tokens.py'}", "--policy",
                               "lru", "--reply-timeout", "0.5")
    (failure,) = printed_everywhere(stdout, tmp_path, report)
    assert "--reply-timeout 0.5" in (failure.replay_command or "")
    assert "the shrunk counterexample" not in stdout and "the counterexample as it ran (not shrunk" in stdout, stdout
    reproduces(failure, tmp_path)


@pytest.mark.parametrize("name", sorted(BENEFIT_MUTANTS)[:3])
def test_the_verify_command_of_a_benefit_finding_reproduces_it(name: str, tmp_path: Path) -> None:
    stdout, report = certified(tmp_path, "--adapter", f"in-process:kvspec.conformance.galleries.benefit_mutants:{name.replace('-', '_')}",
                               "--policy", "benefit")
    failures = printed_everywhere(stdout, tmp_path, report)
    assert failures and all(json.loads((tmp_path / "report" / f.trace_file).read_text())["kind"] == "benefit" for f in failures if f.trace_file)
    for failure in failures:
        reproduces(failure, tmp_path)


def test_the_replay_commands_of_a_campaign_s_reports_keep_their_dialect_and_deadlines(tmp_path: Path) -> None:
    """A campaign's certification against a dialect, with a deadline of its own: its report's
    commands are as certify's, and reproduce their findings."""
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(f'[[implementations]]\nname = "no-min-clamp"\nadapter = "{GALLERY}:no_min_clamp"\npolicies = ["s3fifo"]\n'
                        'dialects = ["libcachesim"]\nreply_timeout = 7.5\n', encoding="utf-8")
    run = kvspec("campaign", str(campaign), "--report", str(tmp_path / "campaign"))
    assert run.returncode == 3, run.stdout + run.stderr
    report = Report.model_validate_json((tmp_path / "campaign" / "no-min-clamp" / "libcachesim" / "seed-0" / "report.json").read_text())
    failures = [f for verdict in report.policies for f in verdict.failures if f.replay_command is not None]
    assert failures
    for failure in failures:
        words = shlex.split(failure.replay_command or "")
        assert words[words.index("--reply-timeout") + 1] == "7.5" and "--variation" in words
        reproduces(failure, tmp_path)


def test_a_replay_command_takes_every_knob_the_certification_gave_even_a_negative_ratio_in_exponent_form(tmp_path: Path) -> None:
    """An LRU that reads small_ratio (REPLAY-CONF-3 says it ignores it): the command must carry the
    ratio it was certified with, -1.7976931348623157e+308 too, which argparse would take for an
    option were it not joined to its own (--small-ratio=...)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 6, "output_length": 0, "hash_ids": [1, 2, 3, 4, 5, 6]}) + "\n")
    config = AdapterConfig("lru", 6, 1, -sys.float_info.max, 3)
    command = Reproduction(f"in-process:{HANDMADE}:reads_the_ratio").replay_command(config, trace)
    assert "--small-ratio=-1.7976931348623157e+308" in command
    run = kvspec(*shlex.split(command)[1:], cwd=tmp_path)
    assert run.returncode == 3 and "(request 1): " in run.stderr, run.stderr
