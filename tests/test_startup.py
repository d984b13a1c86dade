"""Startup (issue 17): printing help and `kvspec replay` load only what they need, and the paths that
spare them pydantic read and write exactly what pydantic reads and writes. Never timed: the times
are bench/bench_startup.py's."""

import json
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvspec.conformance import cli
from kvspec.conformance.cli.spool import json_text
from kvspec.reference import POLICIES, ReplayConfig, ReplayResult, TraceError, TraceFile, TraceRecord, replay
from kvspec.reference.dialects import VARIATIONS, dialect_for
from kvspec.reference.replay import Replayed
from kvspec.reference.trace import FIELDS, Request, parse_line, plain_request, read_request
from kvspec.reference.validation import INT64_MAX, INT64_MIN

HEAVY = ("pydantic", "hypothesis", "matplotlib", "icontract", "kvspec.adapters", "kvspec.conformance.certification",
         "kvspec.conformance.measurement")
EVERY_HELP = """
import json, sys
from kvspec.conformance.cli import build_parser, main
parsers = [build_parser()]
while parsers:
    parser = parsers.pop()
    parser.format_help()
    parsers += [sub for action in parser._actions if action.choices and hasattr(action, "add_parser") for sub in action.choices.values()]
try:
    main(["--help"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
REPLAY = "import json, sys\nfrom kvspec.conformance.cli import main\nmain(['replay', sys.argv[1]])\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"
SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def loaded(code: str, *args: str) -> set[str]:
    """The modules a fresh interpreter has loaded once it has run ``code``, contracts off (the default)."""
    env = {name: value for name, value in os.environ.items() if name != "KVSPEC_CONTRACTS"}
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stderr.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in HEAVY))


def test_the_parser_and_every_help_load_nothing_a_command_runs() -> None:
    """Building the parser and printing every command's help load no pydantic, Hypothesis,
    matplotlib, icontract (with the contracts off), adapters, certification or measurement."""
    assert heavy(loaded(EVERY_HELP)) == []


def test_kvspec_replay_loads_only_the_replay(tmp_path: Path) -> None:
    """`kvspec replay` reads its trace, replays it and writes its JSON without any of them either."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [1, 2]}\n')
    assert heavy(loaded(REPLAY, str(trace))) == []


def test_replayed_has_replay_results_fields_in_its_order() -> None:
    """Replayed is ReplayResult's fields, None wherever ReplayResult allows it, and only there."""
    model = ReplayResult.model_fields
    assert [f.name for f in fields(Replayed)] == list(model)
    assert {f.name for f in fields(Replayed) if "None" in str(f.type)} == {name for name, f in model.items() if type(None) in get_args(f.annotation)}


def replayed_values() -> st.SearchStrategy[Replayed]:
    count = st.integers(0, INT64_MAX)
    ratio = st.one_of(st.floats(0, 1), st.sampled_from([0.1, 1e-05, 2.5e-07, 0.00012, 1.0]))
    return st.builds(Replayed, policy=st.sampled_from(POLICIES), block_size=st.integers(1, INT64_MAX), small_ratio=st.none() | ratio,
                     max_freq=st.none() | count, requests=count, total_hit_tokens=count, total_prompt_tokens=count, final_cache_blocks=count,
                     cache_capacity_blocks=st.integers(INT64_MIN, INT64_MAX),
                     dialect=st.none() | st.lists(st.sampled_from(list(VARIATIONS)), min_size=1, unique=True), per_request=st.none() | st.just([]))


@SOME
@given(replayed_values())
def test_a_replays_json_is_its_replay_results_byte_for_byte(result: Replayed) -> None:
    """REPLAY-RESULT-1: the JSON `kvspec replay` writes without pydantic is pydantic's."""
    assert json_text(result) == ReplayResult(**vars(result)).model_dump_json(indent=2, exclude_none=True)


@pytest.mark.parametrize(("args", "config"), [
    ([], ReplayConfig()),
    (["--policy", "lru", "--capacity", "3"], ReplayConfig(policy="lru", capacity=3)),
    (["--small-ratio", "0.00005", "--capacity", "200000"], ReplayConfig(capacity=200_000, small_ratio=0.00005)),  # pydantic writes 0.00005
    (["--dialect", "vllm"], ReplayConfig(policy="lru", dialect=dialect_for("lru", "vllm"))),
    (["--variation", "ghost-ignored,promote-at-2", "--max-freq", "2"], ReplayConfig(max_freq=2, dialect=frozenset({"ghost-ignored", "promote-at-2"}))),
])
def test_kvspec_replay_writes_what_pydantic_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], config: ReplayConfig) -> None:
    """REPLAY-TRACE-7: stdout and --output hold ReplayResult's model_dump_json(indent=2, exclude_none=True)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": ids}) + "\n"
                             for ids in ([1, 2], [1, 2], [1, 3], [4, 5])))
    expected = replay(TraceFile(trace).records(), config, path=str(trace)).model_dump_json(indent=2, exclude_none=True) + "\n"
    assert cli.main(["replay", str(trace), *args]) == 0
    assert capsys.readouterr().out == expected
    assert cli.main(["replay", str(trace), *args, "--output", str(tmp_path / "out.json")]) == 0
    assert (tmp_path / "out.json").read_text() == expected


def test_a_request_has_trace_records_fields() -> None:
    assert Request._fields == tuple(TraceRecord.model_fields) and FIELDS == set(TraceRecord.model_fields)


ODD = [True, False, None, 3.0, 1.5, "1", [], [1], {}, {"a": 1}, INT64_MAX, INT64_MAX + 1, INT64_MIN, INT64_MIN - 1, -1, 0, 1]  # at or past a bound, or no integer
IN_BOUNDS = {"timestamp": st.integers(0, INT64_MAX), "input_length": st.integers(1, 2**20), "output_length": st.integers(0, 2**20),
             "hash_ids": st.lists(st.integers(INT64_MIN, INT64_MAX), min_size=1, max_size=5)}
GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}


def read_alike(line: bytes) -> None:
    """REPLAY-TRACE-1, REPLAY-TRACE-2: a line the plain reading takes is one pydantic takes, with
    the same values; read_request (`kvspec replay`) reads every line as parse_line does, or refuses
    it with parse_line's error."""
    plain = plain_request(line)
    try:
        record = parse_line("t.jsonl", 7, line)
    except TraceError as error:
        assert plain is None, line
        with pytest.raises(TraceError) as caught:
            read_request("t.jsonl", 7, line)
        assert str(caught.value) == str(error)
        return
    assert plain is None or plain == Request(**record.model_dump()), line
    assert read_request("t.jsonl", 7, line) == Request(**record.model_dump())


def test_REPLAY_TRACE_2_every_bound_and_kind_is_read_alike() -> None:
    """Each field, and a hash id, at each of its bounds, past it, and of each kind that is no integer."""
    for value in ODD:
        for name in sorted(FIELDS):
            read_alike(json.dumps({**GOOD, name: value}).encode() + b"\n")
        read_alike(json.dumps({**GOOD, "hash_ids": [1, value, 2]}).encode() + b"\n")


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """A trace line of a TraceRecord's four fields in their bounds, sometimes with a key missing,
    extra or repeated, written with JSON's freedoms (spacing, an escaped key, whitespace around and
    what is not); or bytes."""
    record = {name: draw(values) for name, values in IN_BOUNDS.items()}
    odd = draw(st.sampled_from(["nothing", "missing", "extra", "repeated", "bytes"]))
    if odd == "bytes":
        return draw(st.binary(max_size=40))
    if odd == "missing":
        del record[draw(st.sampled_from(sorted(FIELDS)))]
    if odd == "extra":
        record[draw(st.sampled_from(["model", "", "hash_id"]))] = 1
    text = json.dumps(record, separators=draw(st.sampled_from([(", ", ": "), (",", ":"), (" ,", " : ")])))
    if odd == "repeated":
        text = text[:-1] + ', "timestamp": 1}'
    if draw(st.booleans()):
        text = text.replace('"timestamp"', '"\\u0074imestamp"')
    return (draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["\n", "", " \n", "\r\n", "\x0b\n", "{}"]))).encode()


@SOME
@given(lines())
def test_REPLAY_TRACE_1_every_line_is_read_alike(line: bytes) -> None:
    read_alike(line)


def test_the_plain_reading_takes_a_mooncake_line() -> None:
    """Not a path that is never taken: the bundled trace's lines are read without pydantic."""
    line = b'{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, -2, 9223372036854775807]}\n'
    assert plain_request(line) == Request(0, 6758, 500, [0, 1, -2, INT64_MAX])
