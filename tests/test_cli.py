"""`kvspec replay`: the main job, its output, its errors (REPLAY-TRACE-7) and what a terminal sees."""

import argparse
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis.errors import FlakyStrategyDefinition

from kvspec.conformance import cli
from kvspec.conformance.cli import certify as certify_command
from kvspec.conformance.certification import certify as certification_run
from kvspec.conformance.core import interruption
from kvspec.conformance.cli.progress import Progress
from kvspec.reference import ReplayConfig, TraceFile, replay

ROOT = Path(__file__).resolve().parent.parent
REQUEST = {"timestamp": 0, "input_length": 1000, "output_length": 1}


def kvspec(*args: str, contracts: str = "all") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVSPEC_CONTRACTS": contracts}
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, env=env, timeout=300)


def small_trace(path: Path, *hash_lists: list[int]) -> Path:
    path.write_text("".join(json.dumps({**REQUEST, "hash_ids": hashes}) + "\n" for hashes in hash_lists))
    return path


def test_replay_with_no_arguments_replays_the_bundled_conversation_trace() -> None:
    """The main job. The request count and prompt tokens are the Mooncake data README's figures."""
    run = kvspec("replay", contracts="0")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert (result["requests"], result["total_prompt_tokens"]) == (12_031, 144_793_823)
    assert (result["policy"], result["cache_capacity_blocks"], result["block_size"]) == ("s3fifo", 4096, 512)
    assert 0 < result["total_hit_tokens"] < 54_098_411  # below what an unbounded cache hits
    assert "per_request" not in result
    assert run.stderr == ""  # not a terminal: no progress, no summary


def test_per_request_and_output_file(tmp_path: Path) -> None:
    """REPLAY-RESULT-2, REPLAY-RESULT-3 through the CLI; --output writes the same JSON."""
    trace = small_trace(tmp_path / "t.jsonl", [1, 2], [1, 2], [1, 3])
    out = tmp_path / "result.json"
    run = kvspec("replay", str(trace), "--policy", "lru", "--capacity", "8", "--per-request", "--output", str(out))
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    result = json.loads(out.read_text())
    # LRU, 8 blocks: [1, 2] misses; [1, 2] hits both (1000 tokens, clamped); [1, 3] hits 1: 512.
    assert result["per_request"] == [
        {"hit_tokens": 0, "prompt_tokens": 1000},
        {"hit_tokens": 1000, "prompt_tokens": 1000},
        {"hit_tokens": 512, "prompt_tokens": 1000},
    ]
    assert result["total_hit_tokens"] == 1512
    assert sorted(tmp_path.iterdir()) == sorted([trace, out])


def test_REPLAY_TRACE_7_a_bad_line_is_one_error_line_and_no_output_file(tmp_path: Path) -> None:
    """REPLAY-TRACE-7: exit 1, the file, the line, the field and the clause; no traceback; no file."""
    trace = small_trace(tmp_path / "t.jsonl", [1, 2], [1, 2])
    with trace.open("a") as extra:
        extra.write('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1, "x"]}\n')
    out = tmp_path / "result.json"
    run = kvspec("replay", str(trace), "--output", str(out), "--capacity", "10")
    assert run.returncode == 1
    assert run.stderr == f"kvspec: error: {trace}:3: field hash_ids[1]: REPLAY-TRACE-2: Input should be a valid integer\n"
    assert run.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_REPLAY_TRACE_7_an_existing_output_file_is_left_as_it_was(tmp_path: Path) -> None:
    """REPLAY-TRACE-7: a failed replay does not truncate an earlier result."""
    trace = small_trace(tmp_path / "t.jsonl", [1, 2])
    trace.write_text(trace.read_text() + "\n")
    out = tmp_path / "result.json"
    out.write_text("earlier result")
    run = kvspec("replay", str(trace), "--output", str(out), "--capacity", "10")
    assert run.returncode == 1
    assert ":2: field (line): REPLAY-TRACE-1: a blank line is not a request" in run.stderr
    assert out.read_text() == "earlier result"


@pytest.mark.parametrize(
    ("args", "clause"),
    [
        (["--capacity", "0"], "REPLAY-CONF-1"),
        (["--capacity", "5"], "S3-CONF-5"),
        (["--small-ratio", "nan"], "S3-CONF-1"),
        (["--small-ratio", "1"], "S3-CONF-5"),
        (["--max-freq", "-1"], "S3-CONF-6"),
        (["--block-size", "0"], "REPLAY-CONF-2"),
        (["--block-size", "256"], "REPLAY-TRACE-3"),
    ],
)
def test_config_errors_name_their_clause(args: list[str], clause: str) -> None:
    """REPLAY-CONF-1, REPLAY-CONF-2, S3-CONF-1, S3-CONF-5, S3-CONF-6: exit 1, one line, the clause."""
    run = kvspec("replay", *args, contracts="0")
    assert run.returncode == 1
    assert run.stderr.startswith("kvspec: error: ") and clause in run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


@pytest.mark.parametrize(("option", "clause"), [("--capacity", "REPLAY-CONF-1"), ("--small-ratio", "S3-CONF-1"), ("--max-freq", "S3-CONF-6")])
def test_unparseable_numbers_name_their_clause(option: str, clause: str) -> None:
    """A command line argparse refuses is bad input like any other: exit 1, one line, the clause cited."""
    run = kvspec("replay", option, "many")
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and run.stderr.endswith("(kvspec replay --help shows the usage)\n")
    assert f"{clause}: " in run.stderr and "'many'" in run.stderr and "Traceback" not in run.stderr


def test_a_missing_trace_file_is_one_error_line(tmp_path: Path) -> None:
    run = kvspec("replay", str(tmp_path / "absent.jsonl"))
    assert run.returncode == 1
    assert run.stderr == f"kvspec: error: {tmp_path / 'absent.jsonl'}: cannot read the trace: No such file or directory\n"


def test_an_unwritable_output_is_one_error_line(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.jsonl", [1, 2])
    run = kvspec("replay", str(trace), "--capacity", "10", "--output", str(tmp_path / "no" / "such" / "dir.json"))
    assert run.returncode == 1
    assert run.stderr.startswith("kvspec: error: ") and "Traceback" not in run.stderr


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_summary_on_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """LRU, 8 blocks, on [1, 2], [1, 2], [1, 3]: 1,512 of 3,000 tokens (50.40 %), 3 blocks."""
    trace = small_trace(tmp_path / "t.jsonl", [1, 2], [1, 2], [1, 3])
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(["replay", str(trace), "--policy", "lru", "--capacity", "8"]) == 0
    assert terminal.getvalue() == "lru, 8 blocks of 512 tokens: 3 requests, 1,512 of 3,000 prompt tokens hit (50.40%); 3 blocks resident at the end\n"
    assert json.loads(capsys.readouterr().out)["total_hit_tokens"] == 1512


def test_an_exception_raised_in_place_of_an_interruption_still_ends_as_the_interruption(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Hypothesis's engine, unwinding a SIGTERM that arrived inside its own bookkeeping, raised an
    IndexError of its own (data.py's stop_span, popping an empty list): kvspec must still end as
    interrupted, 143 and one line, not with that traceback."""
    def interrupted_then_replaced(args: object) -> int:
        try:
            interruption.interrupted(signal.SIGTERM, None)
        except interruption.Interrupted:
            raise IndexError("pop from empty list") from None
        raise AssertionError("interrupted() returned")
    monkeypatch.setattr(interruption, "RECEIVED", [])
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)  # this test process keeps pytest's handlers
    monkeypatch.setattr(certify_command, "run_certify", interrupted_then_replaced)
    assert cli.main(["certify", "--adapter", "reference"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "kvspec: interrupted\n"


def test_PROTO_30_an_interruption_hypothesis_replaces_with_flakiness_ends_the_certification_at_once(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGINT that cut an example short in a draw: Hypothesis 6.170 could not freeze it and raised
    FlakyStrategyDefinition in the interruption's place (datatree.py:1163, from engine.py:618). It
    was taken for the implementation's nondeterminism (PROTO-7), and the certification of requests
    in flight then ran to its end, a minute and more, before kvspec stopped. No machine runs after it."""
    runs: list[str] = []
    def interrupted_then_flaky(machine: type, settings: object) -> None:
        runs.append(machine.__name__)
        try:
            interruption.interrupted(signal.SIGINT, None)
        except interruption.Interrupted:
            raise FlakyStrategyDefinition("Inconsistent data generation!") from None
    monkeypatch.setattr(interruption, "RECEIVED", [])
    kept = signal.signal
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None if signum in (signal.SIGINT, signal.SIGTERM) else kept(signum, handler))
    monkeypatch.setattr(certification_run, "run_state_machine_as_test", interrupted_then_flaky)
    assert cli.main(["certify", "--adapter", "reference", "--policy", "lru"]) == 128 + signal.SIGINT
    assert capsys.readouterr().err == "kvspec: interrupted\n" and len(runs) == 1, runs


def test_progress_draws_only_on_a_terminal_after_its_delay_and_clears_its_line() -> None:
    terminal = Terminal()
    progress = Progress("replaying t", lambda: 0.25, stream=terminal, delay=0.0)
    progress.update("10 requests")
    progress.close()
    drawn = terminal.getvalue()
    assert drawn.startswith("\rreplaying t:  25.0 % (10 requests, ") and drawn.endswith("\r\x1b[K")
    pipe = io.StringIO()
    quiet = Progress("replaying t", lambda: 0.25, stream=pipe, delay=0.0)
    quiet.update("10 requests")
    quiet.close()
    assert pipe.getvalue() == ""


def test_progress_on_standard_input_draws_no_percentage() -> None:
    """The length of standard input is unknown: its fraction is None, and no percentage is made up."""
    terminal = Terminal()
    Progress("replaying <stdin>", lambda: None, stream=terminal, delay=0.0).update("10 requests")
    assert terminal.getvalue().startswith("\rreplaying <stdin>: (10 requests, ")


def test_a_gzip_trace_and_its_plain_text_give_the_same_result(tmp_path: Path) -> None:
    """REPLAY-TRACE-6 through the CLI."""
    import gzip

    trace = small_trace(tmp_path / "t.jsonl", [1, 2], [1, 2], [1, 3])
    packed = tmp_path / "t.jsonl.gz"
    packed.write_bytes(gzip.compress(trace.read_bytes()))
    assert kvspec("replay", str(trace), "--capacity", "10").stdout == kvspec("replay", str(packed), "--capacity", "10").stdout


def test_REPLAY_RESULT_3_totals_past_2_63_are_refused_at_the_line_that_passes_them(tmp_path: Path) -> None:
    """Each line is valid (one block of 2^63 - 1 tokens); their sum is not a 64-bit count."""
    largest = 2**63 - 1
    trace = tmp_path / "t.jsonl"
    line = json.dumps({"timestamp": 0, "input_length": largest, "output_length": 0, "hash_ids": [1]}) + "\n"
    trace.write_text(line * 2)
    output = tmp_path / "out.json"
    result = kvspec("replay", str(trace), "--block-size", str(largest), "--output", str(output))
    assert result.returncode == 1 and not output.exists()
    assert result.stderr == (f"kvspec: error: {trace}:2: field input_length: REPLAY-RESULT-3: the prompt tokens up to this line sum to "
                             f"{2 * largest}, past 2^63 - 1, the largest total a result holds\n")
    trace.write_text(line)
    assert json.loads(kvspec("replay", str(trace), "--block-size", str(largest)).stdout)["total_prompt_tokens"] == largest


def limited_memory() -> None:
    """1 GiB of address space for a child: a reader that held a whole endless line would fail, not fill the machine."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))


def test_REPLAY_TRACE_8_dev_zero_ends_promptly_with_one_error_line() -> None:
    """REPLAY-TRACE-8: a file without line feeds is refused once the bound is read, in bounded memory."""
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "replay", "/dev/zero"], capture_output=True, text=True, timeout=60,
                         preexec_fn=limited_memory, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "kvspec: error: /dev/zero:1: field (line): REPLAY-TRACE-8: line longer than 16,777,216 bytes\n"


def test_a_folder_given_as_the_trace_is_one_error_line(tmp_path: Path) -> None:
    run = kvspec("replay", str(tmp_path), contracts="0")
    assert (run.returncode, run.stdout, run.stderr) == (1, "", f"kvspec: error: {tmp_path}: is a folder, not a trace file\n")


def test_dash_replays_standard_input_plain_or_gzip(tmp_path: Path) -> None:
    """REPLAY-TRACE-6 on standard input: recognised by content; the same result as from the file."""
    import gzip

    trace = small_trace(tmp_path / "t.jsonl", [1, 2], [1, 2], [1, 3])
    expected = kvspec("replay", str(trace), "--capacity", "10", "--per-request").stdout
    for data in (trace.read_bytes(), gzip.compress(trace.read_bytes())):
        run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "replay", "-", "--capacity", "10", "--per-request"], input=data,
                             capture_output=True, timeout=300)
        assert (run.returncode, run.stdout.decode(), run.stderr) == (0, expected, b"")


def test_sweep_refuses_standard_input_which_it_would_read_once_per_configuration(tmp_path: Path) -> None:
    """A second read of standard input would find it empty and replay nothing: an error instead."""
    trace = small_trace(tmp_path / "t.jsonl", [1, 2])
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "sweep", "-", "--policy", "lru", "--capacity", "8", "--capacity", "16"],
                         input=trace.read_text(), capture_output=True, text=True, timeout=300)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr.startswith("kvspec: error: -: standard input can be read once") and run.stderr.count("\n") == 1


@pytest.mark.parametrize("policy", ["s3fifo", "lru"])
@pytest.mark.parametrize("requests", [0, 1, 3])
def test_REPLAY_RESULT_2_the_streamed_per_request_json_is_pydantics_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, requests: int
) -> None:
    """REPLAY-RESULT-2: --per-request spools its lines and writes the JSON around them; stdout and
    --output hold what model_dump_json(indent=2, exclude_none=True) gives for the whole result."""
    trace = small_trace(tmp_path / "t.jsonl", *[[1, 2], [1, 2], [1, 3]][:requests])
    kept = replay(TraceFile(trace).records(), ReplayConfig(policy=policy, capacity=10), path=str(trace), per_request=True)  # type: ignore[arg-type]
    expected = kept.model_dump_json(indent=2, exclude_none=True) + "\n"
    assert cli.main(["replay", str(trace), "--policy", policy, "--capacity", "10", "--per-request"]) == 0
    assert capsys.readouterr().out == expected
    assert cli.main(["replay", str(trace), "--policy", policy, "--capacity", "10", "--per-request", "--output", str(tmp_path / "out.json")]) == 0
    assert (tmp_path / "out.json").read_text() == expected


def python_peak_mib(trace: Path, *args: str) -> float:
    """The peak of a `kvspec replay`'s Python allocations (tracemalloc, after the imports), contracts off."""
    code = ("import sys, tracemalloc\nfrom kvspec.conformance.cli import main\ntracemalloc.start()\nstatus = main(sys.argv[1:])\n"
            "print(tracemalloc.get_traced_memory()[1] / 2**20, file=sys.stderr)\nsys.exit(status)")
    run = subprocess.run([sys.executable, "-c", code, "replay", str(trace), *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    return float(run.stderr)


def test_REPLAY_RESULT_2_per_request_memory_does_not_grow_with_the_trace(tmp_path: Path) -> None:
    """REPLAY-RESULT-2, REPLAY-RESULT-3: the lines go to a temporary file as they are made, the
    sums checked as they go: 100,000 requests take no more memory than 10,000 (a list of them
    took some 55 MiB more)."""
    line = '{{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [{}]}}\n'
    for count in (10_000, 100_000):
        (tmp_path / f"{count}.jsonl").write_text("".join(line.format(i % 5000) for i in range(count)))
    options = ("--policy", "lru", "--capacity", "64", "--block-size", "1", "--per-request", "--output", str(tmp_path / "out.json"))
    small, large = (python_peak_mib(tmp_path / f"{count}.jsonl", *options) for count in (10_000, 100_000))
    assert large < small + 2, (small, large)
    assert json.loads((tmp_path / "out.json").read_text())["per_request"][-1] == {"hit_tokens": 0, "prompt_tokens": 1}


def test_spec_schemas_writes_exactly_the_checked_in_schemas_and_retires_those_its_manifest_lists(tmp_path: Path) -> None:
    """The maintainers' one schema writer: its folder is spec/schemas/ byte for byte, manifest.json
    included, and a schema an earlier run's manifest lists that is no longer written (of a message
    that no longer exists) is removed, not left behind; a schema no manifest lists is not kvspec's,
    and stays."""
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "retired.schema.json").write_text("{}\n")
    (tmp_path / "adapter" / "users.schema.json").write_text("{}\n")
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "kvspec-schemas/1", "schemas": ["adapter/retired.schema.json"]}))
    assert cli.main(["spec", "schemas", str(tmp_path)]) == 0
    checked_in = ROOT / "spec" / "schemas"
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json"))
    assert written == sorted([*(p.relative_to(checked_in).as_posix() for p in checked_in.rglob("*.json")), "adapter/users.schema.json"])
    assert all((tmp_path / name).read_bytes() == (checked_in / name).read_bytes() for name in written if name != "adapter/users.schema.json"), \
        "regenerate: kvspec spec schemas"


def commands(parser: argparse.ArgumentParser, name: str = "kvspec") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command and subcommand's parser, by its name on the command line."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child, sub in action.choices.items():
                yield from commands(sub, f"{name} {child}")


def test_every_help_ends_with_the_exit_statuses() -> None:
    for name, parser in commands(cli.build_parser()):
        epilog = " ".join(parser.format_help().split()).split("exit status: ")[-1]
        assert epilog.startswith("0 ") and "; 1 bad input or a failure to run" in epilog, name
        assert epilog.endswith("130 or 143 after SIGINT or SIGTERM, with nothing written."), name


def test_one_meaning_per_option() -> None:
    """An option's name means one thing in every command: the same metavar wherever it is given
    (--capacity is BLOCKS everywhere; a byte budget is --capacity-bytes), each value named (a
    metavar or its choices), and lists given by repeating the option, never as one comma-separated value."""
    meanings: dict[str, set[str]] = {}
    for name, parser in commands(cli.build_parser()):
        for action in parser._actions:
            if action.nargs == 0 or isinstance(action, argparse._SubParsersAction):
                continue
            assert action.metavar is not None or action.choices is not None, f"{name} {action.dest}: no metavar names the value"
            for option in action.option_strings or ([action.dest] if action.dest == "trace" else []):
                meanings.setdefault(option, set()).add(str(action.metavar))
            if action.dest in ("capacities", "policies", "capacity_bytes"):  # the options that take a list
                assert isinstance(action, argparse._AppendAction), f"{name} {action.dest}: a list is given by repeating the option"
    assert {option: metavars for option, metavars in meanings.items() if len(metavars) > 1 and "None" not in metavars} == {}
    assert meanings["--capacity"] == {"BLOCKS"} and meanings["--capacity-bytes"] == {"BYTES"}
    assert meanings["trace"] == {"TRACE"} and "--trace" not in meanings and "--capacities" not in meanings
    assert meanings["--report"] == {"FOLDER"} and meanings["--output"] == {"FILE"}


def test_a_bundled_trace_is_named_alike_in_every_command(tmp_path: Path) -> None:
    """TRACE: conversation or synthetic names a bundled trace (3,993 requests in the synthetic one), a file of that name first."""
    assert json.loads(kvspec("replay", "synthetic", contracts="0").stdout)["requests"] == 3993
    small_trace(tmp_path / "synthetic", [1, 2])
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "replay", "synthetic"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"}, timeout=60)
    assert json.loads(run.stdout)["requests"] == 1


def every_parser(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for child in action.choices.values():
            yield from every_parser(child)


def test_every_help_starts_with_what_the_command_does() -> None:
    """Issue 29: `kvspec fixtures verify --help`, `fixtures generate --help` and the spec commands' had no description."""
    parsers = list(every_parser(cli.build_parser()))
    assert len(parsers) == 16  # kvspec, its nine commands, and the three actions each of fixtures and spec
    for parser in parsers:
        assert parser.description, parser.prog
        after_usage = " ".join(parser.format_help().split("\n\n", 1)[1].split())
        assert after_usage.startswith(" ".join(parser.description.split())), parser.prog
