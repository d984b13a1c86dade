"""The adapters (spec/adapter-protocol.md): the reference in-process, the reference harness server
through the subprocess adapter, the wire models and their schemas, the adapter specs, and every
way a deliberately wrong implementation (tests/fakes/) breaks the protocol."""

import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from pydantic import ValidationError

from kvspec.adapters import Implementation, load_adapter, process
from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Snapshot
from kvspec.adapters.process import ProcessAdapter
from kvspec.adapters.protocol import (
    CONFIGURE_REPLY,
    REQUEST,
    BenefitStateReply,
    ConsiderAdmissionRequest,
    DecisionReply,
    HitTokensReply,
    HitTokensRequest,
    ObservePressureRequest,
    RefusedReply,
    SnapshotReply,
    StartReply,
    from_double,
    schema_texts,
    to_double,
)
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.certification.benefit.machine import benefit_machine_for
from kvspec.conformance.core.citations import CLAUSE_LINE
from kvspec.reference import KvspecError
from kvspec.reference.benefit import BenefitConfig, CostSample

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
TEST_FILES = ("test_adapters.py", "test_faults.py", "test_hostile_implementations.py", "test_badge.py", "test_matrix_html.py",
              "test_checked_clauses.py", "test_adapters_lifecycle.py")  # together they name every PROTO clause
SERVE = [sys.executable, "-m", "kvspec.adapters.serve"]


def assert_gone(adapter: ProcessAdapter) -> None:
    """Ended and reaped: no zombie is left for the pid."""
    assert adapter.process.returncode is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(adapter.process.pid, os.WNOHANG)


@pytest.fixture(scope="module")
def served() -> Iterator[ProcessAdapter]:
    """One reference harness server for the module (PROTO-4: started once, configured many times)."""
    adapter = ProcessAdapter(SERVE)
    yield adapter
    adapter.close()


# The spec's own discipline, for the PROTO clauses ------------------------------------------------


def proto_clauses() -> list[str]:
    return CLAUSE_LINE.findall((ROOT / "spec" / "adapter-protocol.md").read_text())


def test_every_PROTO_clause_is_cited_by_the_adapters_and_named_by_a_test() -> None:
    """Like tests/test_spec.py for the other specs: ids in order, each cited by the code that
    implements it (adapters/ the protocol; conformance/ what kvspec makes of a run, such as the
    report's verdict and its badge) and named literally here or in tests/test_faults.py (in a test
    name or a docstring), and no id cited that the spec lacks."""
    clauses = proto_clauses()
    assert clauses == [f"PROTO-{n}" for n in range(1, len(clauses) + 1)]
    sources = sorted((ROOT / "adapters").glob("*.py")) + sorted((ROOT / "conformance").rglob("*.py"))
    code = set(re.findall(r"\bPROTO-\d+\b", "\n".join(p.read_text() for p in sources)))
    tests = set(re.findall(r"\bPROTO-\d+\b", "\n".join(Path(__file__).with_name(name).read_text() for name in TEST_FILES).replace("_", "-")))
    assert sorted(set(clauses) - code) == []
    assert sorted(set(clauses) - tests) == []
    assert sorted((code | tests) - set(clauses)) == []


# The reference, in-process and through the harness server ---------------------------------------


def small_traces(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(12) for _ in range(rng.randrange(1, 6))] for _ in range(40)]


CONFIGS = [
    AdapterConfig("s3fifo", 10),
    AdapterConfig("s3fifo", 8, block_size=16, small_ratio=0.25, max_freq=1),
    AdapterConfig("lru", 5),
    AdapterConfig("fifo", 5, block_size=7),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.policy}-{c.capacity}")
def test_PROTO_17_the_harness_server_answers_as_the_reference_does(served: ProcessAdapter, config: AdapterConfig) -> None:
    """PROTO-9, PROTO-10, PROTO-11 and PROTO-12 through the protocol, request by request,
    against ReferenceAdapter."""
    reference = ReferenceAdapter()
    reference.configure(config)
    served.configure(config)
    for hash_ids in small_traces(config.capacity):
        input_length = len(hash_ids) * config.block_size - 1 if config.block_size > 1 else len(hash_ids)
        assert served.hit_tokens(hash_ids, input_length) == reference.hit_tokens(hash_ids, input_length)
        served.access(hash_ids)
        reference.access(hash_ids)
        assert served.resident_count() == reference.resident_count()
        assert served.snapshot() == reference.snapshot()
    assert reference.resident_count() > 0


def test_PROTO_5_PROTO_6_the_harness_server_introduces_itself(served: ProcessAdapter) -> None:
    assert served.identity == ReferenceAdapter.identity
    assert served.level == "state"
    assert served.policies == ("s3fifo", "lru", "fifo", "benefit")


def test_PROTO_8_a_refused_config_is_refused_alike_and_drops_the_earlier_cache(served: ProcessAdapter) -> None:
    """PROTO-7: any earlier cache is gone, also when the config is refused."""
    reference = ReferenceAdapter()
    for adapter in (reference, served):
        adapter.configure(AdapterConfig("lru", 4))
        adapter.access([1, 2])
        with pytest.raises(ConfigRefused, match="S3-CONF-5") as refused:
            adapter.configure(AdapterConfig("s3fifo", 5))
        with pytest.raises(ConfigRefused, match="REPLAY-CONF-1"):
            adapter.configure(AdapterConfig("fifo", 0))
        assert str(refused.value).startswith("S3-CONF-5: capacity 5")
    with pytest.raises(KvspecError, match="PROTO-7: no cache"):
        reference.resident_count()
    unconfigured = ProcessAdapter(SERVE)
    with pytest.raises(
        AdapterFailure, match="resident_count .seq 1.: the implementation replied with an error: .KvspecError: PROTO-7: no cache"
    ):
        unconfigured.resident_count()
    assert_gone(unconfigured)


def test_PROTO_9_hit_tokens_changes_nothing(served: ProcessAdapter) -> None:
    """PROTO-10 then PROTO-9: the clamp of REPLAY-HIT-1, and the same snapshot before and after."""
    for adapter in (ReferenceAdapter(), served):
        adapter.configure(AdapterConfig("lru", 10, block_size=4))
        adapter.access([5, 6, 7])
        assert adapter.hit_tokens([5, 6, 8], 9) == 8
        assert adapter.hit_tokens([5, 6, 7], 9) == 9  # clamped to input_length
        assert adapter.hit_tokens([9, 5], 5) == 0
        assert adapter.snapshot() == Snapshot(main=((5, 0), (6, 0), (7, 0)))  # 5 and 6 were not requeued
        adapter.configure(AdapterConfig("s3fifo", 10, block_size=4))
        adapter.access([5, 6, 7])
        before = adapter.snapshot()
        assert before == Snapshot(small=((7, 0),), ghost=(5, 6))
        assert adapter.hit_tokens([7], 3) == 3 and adapter.hit_tokens([5, 7], 8) == 0  # the ghost is not resident
        assert adapter.snapshot() == before  # 7's freq was not raised


def test_PROTO_11_the_resident_count_leaves_out_the_ghost() -> None:
    adapter = ReferenceAdapter()
    adapter.configure(AdapterConfig("s3fifo", 10))
    adapter.access([1, 2, 3])
    assert adapter.snapshot().ghost == (1, 2)
    assert adapter.resident_count() == 1


def test_PROTO_12_snapshots_of_lru_and_fifo_use_main_with_freq_0() -> None:
    for policy, expected in (("lru", ((2, 0), (3, 0), (1, 0))), ("fifo", ((1, 0), (2, 0), (3, 0)))):
        adapter = ReferenceAdapter()
        adapter.configure(AdapterConfig(policy, 3))
        adapter.access([1, 2, 3, 1])
        assert adapter.snapshot() == Snapshot(main=expected)


def test_PROTO_13_stop_ends_the_server_with_status_0() -> None:
    adapter = ProcessAdapter(SERVE)
    adapter.configure(AdapterConfig("fifo", 2))
    adapter.close()
    assert adapter.process.returncode == 0
    adapter.close()  # idempotent
    with pytest.raises(AdapterFailure, match="closed"):
        adapter.resident_count()


def test_PROTO_1_PROTO_2_the_server_refuses_requests_out_of_turn() -> None:
    """The harness server's own side of PROTO-2, PROTO-5 and PROTO-16, fed raw lines."""
    lines = [
        {"cmd": "resident_count", "seq": 0},
        {"cmd": "start", "seq": 5, "protocol": 1},
        {"cmd": "start", "seq": 2, "protocol": 1, "extra": 1},
        {"cmd": "start", "seq": 3, "protocol": 1},
        {"cmd": "stop", "seq": 4},
    ]
    done = subprocess.run(
        SERVE, check=False, input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True, timeout=20
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert [sorted(reply) for reply in replies] == [["error", "seq"]] * 3 + [["implementation", "level", "lifecycle", "policies", "protocol", "seq"]]
    assert "PROTO-5" in replies[0]["error"] and "PROTO-2" in replies[1]["error"] and "PROTO-16" in replies[2]["error"]


# The wire models and their schemas -------------------------------------------------------------


def test_PROTO_16_the_checked_in_schemas_are_what_the_models_generate() -> None:
    folder = ROOT / "spec" / "schemas" / "adapter"
    expected = schema_texts()
    assert sorted(p.name for p in folder.glob("*.schema.json")) == sorted(expected)
    for name, text in expected.items():
        assert (folder / name).read_text(encoding="utf-8") == text, "regenerate: kvspec spec schemas"
    assert schema_texts() == expected  # deterministic
    documented = (ROOT / "spec" / "adapter-protocol.md").read_text()
    assert [name for name in expected if f"schemas/adapter/{name})" not in documented] == []


def test_PROTO_16_replies_are_strict() -> None:
    assert HitTokensReply.model_validate_json('{"seq": 1, "hit_tokens": 3}').hit_tokens == 3
    for bad in (
        '{"seq": 1, "hit_tokens": "3"}',
        '{"seq": 1, "hit_tokens": 3.0}',
        '{"seq": 1, "hit_tokens": 3, "x": 0}',
        '{"seq": 1}',
        '{"seq": 1, "hit_tokens": true}',
    ):
        with pytest.raises(ValidationError):
            HitTokensReply.model_validate_json(bad)
    assert isinstance(CONFIGURE_REPLY.validate_json('{"seq": 2, "ok": false, "refused": "S3-CONF-5"}'), RefusedReply)
    with pytest.raises(ValidationError):
        CONFIGURE_REPLY.validate_json('{"seq": 2, "ok": false}')
    with pytest.raises(ValidationError):
        StartReply.model_validate_json(
            '{"seq": 0, "protocol": 1, "implementation": {"name": "a", "language": "b", "version": "c"}, "level": "state", "policies": []}'
        )


def test_PROTO_3_hash_ids_are_signed_64_bit_and_counts_are_not_negative() -> None:
    extremes = [-(2**63), 2**63 - 1]
    assert (
        SnapshotReply.model_validate_json(json.dumps({"seq": 0, "small": [[extremes[0], 0]], "main": [], "ghost": extremes})).ghost
        == extremes
    )
    for bad in ([2**63], [-(2**63) - 1], []):
        with pytest.raises(ValidationError):
            HitTokensRequest.model_validate_json(json.dumps({"cmd": "hit_tokens", "seq": 0, "hash_ids": bad, "input_length": 1}))
    with pytest.raises(ValidationError):
        HitTokensReply.model_validate_json('{"seq": 0, "hit_tokens": -1}')
    with pytest.raises(ValidationError):
        SnapshotReply.model_validate_json('{"seq": 0, "small": [[1, -1]], "main": [], "ghost": []}')


def test_PROTO_3_small_ratio_written_as_an_integer_is_the_same_double() -> None:
    """1, 1.0 and 1e0 are one small_ratio: the reference server accepts each where S3-CONF-5 allows
    small_ratio 1 (capacity 2^53 + 1, findings F-2), and answers each alike."""
    requests = ['{"cmd": "start", "seq": 0, "protocol": 1}']
    for seq, ratio in enumerate(("1", "1.0", "1e0"), start=1):
        requests.append(f'{{"cmd": "configure", "seq": {seq}, "config": {{"policy": "s3fifo", "capacity": {2**53 + 1}, "block_size": 1, '
                        f'"small_ratio": {ratio}, "max_freq": 3}}}}')
    run = subprocess.run([sys.executable, "-m", "kvspec.adapters.serve"], input="\n".join(requests) + "\n", capture_output=True,
                         text=True, timeout=60)
    assert [json.loads(line) for line in run.stdout.splitlines()[1:]] == [{"seq": seq, "ok": True} for seq in (1, 2, 3)], run.stderr


def test_PROTO_2_every_request_needs_its_cmd_and_seq() -> None:
    """The union tag has no default: a request without cmd is refused."""
    assert REQUEST.validate_json('{"cmd": "snapshot", "seq": 4}').seq == 4
    for bad in ('{"seq": 4}', '{"cmd": "snapshot"}', '{"cmd": "flush", "seq": 4}', '{"cmd": "snapshot", "seq": -1}'):
        with pytest.raises(ValidationError):
            REQUEST.validate_json(bad)


def test_PROTO_8_the_config_carries_the_values_the_clauses_refuse() -> None:
    request = REQUEST.validate_json(
        '{"cmd": "configure", "seq": 1, "config": {"policy": "s3fifo", "capacity": 0, "block_size": -1, "small_ratio": 1, "max_freq": -1}}'
    )
    assert request.config.capacity == 0 and request.config.max_freq == -1 and request.config.small_ratio == 1.0


def test_PROTO_8_a_config_json_cannot_carry_is_a_kvspec_error(served: ProcessAdapter) -> None:
    with pytest.raises(KvspecError, match="cannot be sent"):
        served.configure(AdapterConfig("s3fifo", 10, small_ratio=float("nan")))


# Adapter specs --------------------------------------------------------------------------------


def test_PROTO_18_adapter_specs() -> None:
    """reference and in-process: are objects in kvspec's process; python: is the same object served
    in a process of its own (PROTO-17), named by its spec; cmd: is the program's process."""
    assert isinstance(load_adapter("reference"), ReferenceAdapter)
    loaded = load_adapter("in-process:kvspec.adapters.reference:ReferenceAdapter")
    assert isinstance(loaded, ReferenceAdapter)
    served = load_adapter("python:kvspec.adapters.reference:ReferenceAdapter")
    assert isinstance(served, ProcessAdapter) and served.name == "python:kvspec.adapters.reference:ReferenceAdapter"
    assert served.command[1:] == ["-P", "-m", "kvspec.adapters.serve", "python:kvspec.adapters.reference:ReferenceAdapter"]
    for adapter in (loaded, served):
        adapter.configure(AdapterConfig("lru", 2))
        adapter.access([1, 2, 3])
        assert adapter.resident_count() == 2
    served.close()
    assert served.process.returncode == 0
    assert not Implementation("python:kvspec.adapters.reference:ReferenceAdapter").in_process
    assert Implementation("in-process:kvspec.adapters.reference:ReferenceAdapter").in_process and Implementation("reference").in_process
    command = load_adapter(f"cmd:{sys.executable} '{FAKES / 'fakelib.py'}'")
    assert isinstance(command, ProcessAdapter) and command.identity.name == "fake"
    command.close()
    assert command.process.returncode == 0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "is not one of"),
        ("refrence", "is not one of"),
        ("exe:prog", "is not one of"),
        ("cmd:", "names no program"),
        ("cmd:prog 'unclosed", "cannot be split"),
        ("python:kvspec.adapters.reference", "is not python:module:factory"),
        ("python::ReferenceAdapter", "is not python:module:factory"),
        ("python:kvspec.no_such_module:make", "no module named 'kvspec.no_such_module'"),
        ("in-process:kvspec.adapters.reference:NoSuchFactory", "no callable NoSuchFactory"),
        ("in-process:kvspec.adapters.reference", "is not in-process:module:factory"),
        ("in-process:kvspec.no_such_module:make", "no module named 'kvspec.no_such_module'"),
        ("python:kvspec.adapters.no_such_module:make", "no module named 'kvspec.adapters.no_such_module'"),
        ("python:kvspec.adapters.reference.no_such_module:make", "no module named 'kvspec.adapters.reference.no_such_module'"),
        ("cmd:/nonexistent/kvspec-implementation --flag", "program '/nonexistent/kvspec-implementation': no such file, or not executable"),
        ("cmd:kvspec-no-such-program", "not found on PATH"),
        ("'cmd:python3 my.py'", "the quotes are the shell's, not the spec's: --adapter 'cmd:python3 my.py'"),
    ],
)
def test_PROTO_18_a_bad_adapter_spec_is_a_kvspec_error(spec: str, message: str) -> None:
    """Found before anything starts: nothing of a python: module runs in kvspec's process to find it."""
    with pytest.raises(KvspecError, match=re.escape(message)):
        Implementation(spec)


def test_PROTO_18_a_python_module_is_looked_for_not_run_and_served_on_kvspec_s_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving python:package.module:factory runs none of the package in kvspec's process (its
    __init__ would write a file); the process that serves it imports it on kvspec's sys.path."""
    package = tmp_path / "sidefx"
    package.mkdir()
    (package / "__init__.py").write_text("from pathlib import Path\nPath(__file__).with_name('ran').touch()\n")
    (package / "cache.py").write_text("from kvspec.adapters.reference import ReferenceAdapter\n\ndef make():\n    return ReferenceAdapter()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    implementation = Implementation("python:sidefx.cache:make")
    with pytest.raises(KvspecError, match="no module named 'sidefx.nothing'"):
        Implementation("python:sidefx.nothing:make")
    assert not (package / "ran").exists()
    adapter = implementation.start()
    assert adapter.identity.name == "kvspec-reference" and (package / "ran").exists()
    implementation.close()


def test_PROTO_18_a_served_factory_that_does_not_exist_is_bad_input_at_its_start() -> None:
    """Only importing the module, in the process that serves it, finds that it has no such factory:
    that process says so and exits 1, and kvspec reads that as bad input, not as the implementation's failure."""
    implementation = Implementation("python:kvspec.adapters.reference:NoSuchFactory")
    with pytest.raises(KvspecError, match=re.escape("PROTO-18: adapter spec 'python:kvspec.adapters.reference:NoSuchFactory': "
                                                    "kvspec.adapters.reference has no callable NoSuchFactory")):
        implementation.start()


def test_PROTO_18_a_command_quoted_whole_is_split_once_more() -> None:
    """cmd:'program args', the shell's quotes taken literally into the spec, names the program and its arguments."""
    adapter = Implementation(f"cmd:'{sys.executable} {FAKES / 'fakelib.py'}'").start()
    assert isinstance(adapter, ProcessAdapter) and adapter.command == [sys.executable, str(FAKES / "fakelib.py")]
    adapter.close()


def test_PROTO_18_a_factory_that_returns_no_adapter_fails_at_its_start() -> None:
    implementation = Implementation("python:kvspec.adapters.interface:Snapshot")
    with pytest.raises(AdapterFailure, match=re.escape("Snapshot() returned Snapshot(small=(), main=(), ghost=()) (a Snapshot), not an Adapter")):
        implementation.start()


# Deliberately wrong implementations (PROTO-15) ---------------------------------------------------


def drive(adapter: ProcessAdapter) -> None:
    adapter.configure(AdapterConfig("lru", 8))
    adapter.hit_tokens([1, 2], 1000)
    adapter.access([1, 2])
    adapter.resident_count()
    adapter.snapshot()
    adapter.close()


WRONG = [
    (
        "crash_at_start",
        r"start \(seq 0\): the process exited with status 1 before replying; expected the start reply; last stderr: .*RuntimeError: fake crash at start",
    ),
    ("exit_after_configure", r"hit_tokens \(seq 2\): the process exited with status 0 before replying; .*last stderr: fake: leaving early"),
    (
        "hang_on_hit_tokens",
        r"hit_tokens \(seq 2\): no reply to hit_tokens within 2 s \(hung\?\); expected a hit_tokens reply .*last stderr: fake: thinking forever",
    ),
    ("malformed_json", r"hit_tokens \(seq 2\): malformed JSON reply .*'\{\"seq\": 2, \"hit_tokens\":'"),
    ("wrong_seq", r"hit_tokens \(seq 2\): a reply with the wrong seq 3 \(expected seq 2\)"),
    (
        "wrong_shape",
        r"hit_tokens \(seq 2\): a reply of the wrong shape \(hit_tokens: a wrong type: '0' \(a string\) where an integer is due; cached: Extra inputs",
    ),
    ("error_reply", r"access \(seq 3\): the implementation replied with an error: 'fake: out of blocks'; expected an access reply"),
    ("garbage_before_first_reply", r"start \(seq 0\): malformed JSON reply .*'fake: loading the cache...'; expected the start reply"),
    ("wrong_protocol_version", r"start \(seq 0\): it speaks protocol 2, kvspec speaks protocol 1"),
    ("ignore_stop", r"stop \(seq 6\): the process did not exit within 2 s of stop; expected exit status 0"),
    ("two_replies", r"hit_tokens \(seq 2\): a reply with the wrong seq 1 \(expected seq 2\)"),
]


@pytest.mark.parametrize("name, message", WRONG, ids=[name for name, _ in WRONG])
def test_PROTO_15_a_wrong_implementation_is_a_failure_and_is_killed(name: str, message: str) -> None:
    """PROTO-1, PROTO-2, PROTO-5, PROTO-13, PROTO-14, PROTO-16 broken one at a time: one line
    naming the command, the request and what went wrong, fast, and no process left behind."""
    adapter = ProcessAdapter.__new__(ProcessAdapter)  # kept, since a failed start raises from __init__
    began = time.monotonic()
    with pytest.raises(AdapterFailure) as failure:
        adapter.__init__([sys.executable, str(FAKES / f"{name}.py")], reply_timeout=2.0, start_timeout=5.0)  # type: ignore[misc]
        drive(adapter)
    assert time.monotonic() - began < 5
    text = str(failure.value)
    assert "\n" not in text
    assert text.startswith(f"{sys.executable} {FAKES / name}.py: ")
    assert re.search(message, text), text
    assert_gone(adapter)
    with pytest.raises(AdapterFailure, match="already failed|closed"):
        adapter.resident_count()


def test_PROTO_1_a_reply_is_one_line_however_the_process_writes_it() -> None:
    """kvspec reads replies itself, as they come: a reply in pieces is put together, and a process
    that writes a lot to stdout after stop is read to its exit, not held by a full pipe (PROTO-13)."""
    for name in ("split_replies", "chatty_stop"):
        adapter = ProcessAdapter([sys.executable, str(FAKES / f"{name}.py")], reply_timeout=5.0)
        adapter.configure(AdapterConfig("lru", 8))
        adapter.access([1, 2])
        assert adapter.hit_tokens([1, 2, 3], 1000) == 1000
        assert adapter.snapshot() == Snapshot(small=(), main=((1, 0), (2, 0)), ghost=())
        adapter.close()
        assert adapter.process.returncode == 0, name
        assert_gone(adapter)


def test_PROTO_15_any_finite_deadline_is_waited_for() -> None:
    """A deadline past what one wait of the system can take (a C int of milliseconds) is waited out in slices."""
    adapter = ProcessAdapter([sys.executable, str(FAKES / "split_replies.py")], reply_timeout=1e9, start_timeout=1e9)
    adapter.configure(AdapterConfig("lru", 8))
    assert adapter.resident_count() == 0
    adapter.close()


WRITES_BEFORE_READING = [
    ("flood_stdout", r"malformed JSON reply .*fake log"),
    ("flood_no_newline", r"a reply line longer than 4194304 bytes"),
    ("reply_before_request", r"a reply written before the process had read its request"),
]


@pytest.mark.parametrize("name, message", WRITES_BEFORE_READING, ids=[name for name, _ in WRITES_BEFORE_READING])
def test_PROTO_1_a_process_that_writes_before_it_reads_on_is_not_held_by_a_full_pipe(
    name: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While kvspec writes a request larger than a pipe holds, it reads stdout, but one line at most
    (MAX_LINE bytes at most): that line is judged as the reply, a PROTO-1 failure at once, neither a
    wait for the deadline nor stdout held whole in memory; a reply that would do is out of turn."""
    monkeypatch.setattr(process, "MAX_LINE", 1 << 22)  # flood_no_newline writes without end: 4 MiB, read in many chunks
    adapter = ProcessAdapter([sys.executable, str(FAKES / f"{name}.py")], reply_timeout=5.0)
    adapter.configure(AdapterConfig("lru", 8))
    with pytest.raises(AdapterFailure, match=rf"hit_tokens \(seq 2\): {message}") as failure:
        adapter.hit_tokens(list(range(2**40, 2**40 + 20_000)), 1)  # about 280 KB
    assert failure.value.clause == "PROTO-1" and not failure.value.timed_out
    assert len(adapter._unread) < process.CHUNK  # reading stopped at the first line: what is left of the read that ended it
    assert_gone(adapter)


def test_PROTO_1_a_reply_line_longer_than_the_limit_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line is cut at MAX_LINE bytes, never held whole in memory; the cut line is a failure."""
    monkeypatch.setattr(process, "MAX_LINE", 1024)  # long_line's reply is 5000 bytes
    adapter = ProcessAdapter([sys.executable, str(FAKES / "long_line.py")], reply_timeout=5.0)
    adapter.configure(AdapterConfig("lru", 8))
    with pytest.raises(AdapterFailure, match=r"hit_tokens \(seq 2\): a reply line longer than 1024 bytes") as failure:
        adapter.hit_tokens([1], 1)
    assert failure.value.clause == "PROTO-1"
    assert_gone(adapter)


def test_PROTO_18_a_python_adapter_from_a_file_path(tmp_path: Path) -> None:
    source = tmp_path / "my_cache.py"
    source.write_text("from kvspec.adapters.reference import ReferenceAdapter\n\ndef make():\n    return ReferenceAdapter()\n")
    assert type(load_adapter(f"in-process:{source}:make")).__name__ == "ReferenceAdapter"
    served = load_adapter(f"python:{source}:make")
    assert served.identity.name == "kvspec-reference"
    served.close()
    for kind in ("python", "in-process"):
        with pytest.raises(KvspecError, match="PROTO-18: .*no such file"):
            load_adapter(f"{kind}:{tmp_path / 'missing.py'}:make")


# The benefit-policy messages (PROTO-19 to PROTO-28) -----------------------------------------------


def test_PROTO_17_the_harness_server_answers_every_benefit_operation_as_the_reference_does(served: ProcessAdapter) -> None:
    """PROTO-20, PROTO-21, PROTO-22, PROTO-23, PROTO-24, PROTO-25, PROTO-26, PROTO-27 and PROTO-28
    round trip: the benefit certification machine, with its invalid costs, NaN and infinite
    pressures, pins and refused configurations, drives the server and the reference in lockstep
    and compares every decision, victim list, cap repair and state."""
    machine = benefit_machine_for(Implementation.of(served))
    run_state_machine_as_test(machine, settings=settings(max_examples=40, stateful_step_count=20, deadline=None, database=None,
                                                         suppress_health_check=list(HealthCheck)))
    assert machine.examples >= 40


def test_PROTO_20_a_refused_benefit_config_is_refused_alike_and_drops_the_earlier_policy() -> None:
    """The server's error reply ends its process (PROTO-15), so this test has a server of its own."""
    with ProcessAdapter(SERVE) as served_here:
        for adapter in (ReferenceAdapter(), served_here):
            adapter.configure_benefit(BenefitConfig())
            assert adapter.consider_admission(1, 8, [], CostSample(100.0, 30.0), frozenset()).kind == "admit-probation"
            with pytest.raises(ConfigRefused, match="BEN-CONF-4"):
                adapter.configure_benefit(BenefitConfig(decay_factor=1.0))
        with pytest.raises(KvspecError, match="PROTO-20: no benefit policy"):
            ReferenceAdapter().benefit_state()
        with pytest.raises(AdapterFailure, match=r"benefit_state .seq \d+.: the implementation replied with an error: .KvspecError: PROTO-20"):
            served_here.benefit_state()


def test_PROTO_19_doubles_travel_exactly_and_non_finite_ones_as_strings() -> None:
    for value in (0.1, -0.0, 5e-324, float(2**53 + 2), 1.7976931348623157e308, float("inf"), float("-inf")):
        text = json.dumps(to_double(value))
        assert from_double(json.loads(text)) == value and str(from_double(json.loads(text))) == str(value)
    assert json.dumps(to_double(float("nan"))) == '"NaN"' and from_double("NaN") != from_double("NaN")
    request = '{"cmd": "observe_pressure", "seq": 3, "pressure": %s}'
    assert ObservePressureRequest.model_validate_json(request % '"-Infinity"').pressure == "-Infinity"
    assert ObservePressureRequest.model_validate_json(request % "1").pressure == 1.0  # a JSON integer is a double too
    for bad in ("1e400", "NaN", '"nan"', "true", '"0.5"'):
        with pytest.raises(ValidationError):
            ObservePressureRequest.model_validate_json(request % bad)


def test_PROTO_19_keys_are_unsigned_64_bit() -> None:
    offer = {"cmd": "consider_admission", "seq": 1, "key": 2**64 - 1, "exclusive_bytes": 0, "shared": [[0, 4]],
             "cost": {"cold_prefill_cost": 1, "restore_cost": "NaN"}, "pinned": [2**64 - 1]}
    assert ConsiderAdmissionRequest.model_validate_json(json.dumps(offer)).key == 2**64 - 1
    for field, bad in (("key", 2**64), ("key", -1), ("pinned", [-1]), ("shared", [[-1, 4]]), ("exclusive_bytes", -1)):
        with pytest.raises(ValidationError):
            ConsiderAdmissionRequest.model_validate_json(json.dumps({**offer, field: bad}))


def test_PROTO_21_PROTO_22_PROTO_28_the_replies_are_strict() -> None:
    decision = '{"seq": 1, "decision": {"kind": "admit-probation", "reason": "probation-new-entry", "cap": {"status": "satisfied", "victims": [], "shortfall": 0}}}'
    assert DecisionReply.model_validate_json(decision).decision is not None
    assert DecisionReply.model_validate_json('{"seq": 1, "decision": null}').decision is None
    for bad in (decision.replace("admit-probation", "admit"), decision.replace('"shortfall": 0', '"shortfall": -1'),
                decision.replace(', "cap"', ', "extra": 1, "cap"'), '{"seq": 1}'):
        with pytest.raises(ValidationError):
            DecisionReply.model_validate_json(bad)
    state = {"seq": 2, "clock": 1, "entries": [{"key": 1, "state": "probation", "hits": 0, "misses": 0, "rw": 0, "ow": 0.0,
                                                "last_observation": 1, "score": None}], "ghosts": [], "probation_charge": 4}
    assert BenefitStateReply.model_validate_json(json.dumps(state)).entries[0].score is None
    with pytest.raises(ValidationError):
        BenefitStateReply.model_validate_json(json.dumps({**state, "entries": [{**state["entries"][0], "state": "resident"}]}))


def test_PROTO_6_benefit_messages_go_only_to_an_implementation_that_lists_benefit() -> None:
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", f"cmd:{sys.executable} '{FAKES / 'fakelib.py'}'",
                          "--policy", "benefit"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "implements s3fifo, lru, fifo, not benefit" in run.stderr and "Traceback" not in run.stderr


def test_PROTO_17_the_server_serves_any_in_process_adapter() -> None:
    with ProcessAdapter([*SERVE, "python:kvspec.conformance.galleries.benefit_mutants:ghosts_lost"]) as mutant:
        assert mutant.identity.name == "kvspec-benefit-mutants:ghosts-lost" and mutant.policies == ("benefit",)
        mutant.configure_benefit(BenefitConfig(grace_observations=0))
        assert mutant.consider_admission(7, 10, [(1, 4)], CostSample(100.0, 30.0), frozenset()).kind == "admit-probation"
        assert mutant.remove(7, frozenset()) is not None
        assert mutant.benefit_state().ghosts == ()  # its mistake, visible through the protocol
    run = subprocess.run([*SERVE, "cmd:node server.js"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "in-process adapter" in run.stderr


class WithoutPolicies(ReferenceAdapter):
    """The reference under the Adapter interface but for ``policies`` (PROTO-6 names them)."""

    def __getattribute__(self, name: str) -> Any:
        if name == "policies":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_PROTO_18_an_in_process_adapter_names_its_policies_as_a_process_must() -> None:
    implementation = Implementation(f"python:{__file__}:WithoutPolicies")
    with pytest.raises(AdapterFailure, match=r"not an Adapter \(no policies\)"):
        implementation.start()
