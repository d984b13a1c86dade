"""The Go example (examples/kvcache-go): built once with `go build` (standard library only, no
module download), certified on all four policies, run through every golden fixture, and driven
directly where the protocol's traps lie: doubles written shortest, keys and ids of 64 bits, NaN
and the infinities as strings, lines longer than bufio.Scanner's 64 KiB, stop and end of input.

Without `go` on PATH these tests skip, unless the environment variable KVSPEC_REQUIRE_GO (which
.ci/run sets) or CI is set: then they fail, so that CI never passes without having run them.
"""

import json
import math
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "kvcache-go"
CORPUS = ROOT / "spec" / "fixtures"
GO = shutil.which("go")
REQUIRED = bool(os.environ.get("KVSPEC_REQUIRE_GO") or os.environ.get("CI"))
TIMEOUT = 20  # seconds for one reply; one takes well under a millisecond

pytestmark = pytest.mark.skipif(GO is None and not REQUIRED, reason="`go` is not on PATH (Debian: apt-get install golang-go)")


@pytest.fixture(scope="session")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example built once a session. GOPROXY=off and GOFLAGS=-mod=readonly: a dependency
    added to go.mod would need a download, and fails the build instead."""
    if GO is None:
        pytest.fail("KVSPEC_REQUIRE_GO or CI is set and `go` is not on PATH: install Go (.ci/run does: apt-get install golang-go)")
    out = tmp_path_factory.mktemp("go") / "kvcache-go"
    env = {**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    if not any(env.get(name) for name in ("GOCACHE", "XDG_CACHE_HOME", "HOME")):
        env["GOCACHE"] = str(out.parent / "cache")  # go refuses to build without a cache folder
    build = subprocess.run([GO, "build", "-o", str(out), "."], cwd=SOURCE, env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr
    return out


def test_the_go_example_is_gofmt_clean(binary: Path) -> None:
    assert GO is not None
    gofmt = Path(GO).resolve().parent / "gofmt"
    run = subprocess.run([str(gofmt) if gofmt.exists() else "gofmt", "-l", "."], cwd=SOURCE, capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0 and run.stdout == "", run.stdout + run.stderr


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process with the reference's contracts off, as users run it."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_the_go_example_conforms_on_all_four_policies(binary: Path, tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", f"cmd:{binary}", "--profile", "quick", "--report", str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["implementation"]["language"] == "go" and report["conforms"] and report["faults"] == []
    assert {verdict["policy"]: verdict["conforms"] for verdict in report["policies"]} == {"s3fifo": True, "lru": True, "fifo": True, "benefit": True}


def test_FIX_12_the_go_example_passes_every_replay_and_benefit_case(binary: Path, tmp_path: Path) -> None:
    run = kvspec("fixtures", "verify", str(CORPUS), "--adapter", f"cmd:{binary}", "--output", str(tmp_path / "verdicts.json"))
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = json.loads((tmp_path / "verdicts.json").read_text())
    ran = [v["verdict"] for v in verdicts if v["id"].startswith(("replay-", "benefit-"))]
    assert len(ran) > 300 and set(ran) == {"pass"}  # benefit included: it lists benefit (PROTO-6)
    assert {v["verdict"] for v in verdicts if not v["id"].startswith(("replay-", "benefit-"))} == {"skip"}  # no adapter operation


class Session:
    """One process of the example, driven line by line: each request is written and its reply
    read before the next, as kvspec does, so that a reply left in a buffer fails here too, after
    TIMEOUT seconds (a thread reads stdout, so that no read blocks the test)."""

    def __init__(self, binary: Path) -> None:
        self.process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.seq = 0
        assert self.ask("start", protocol=1)["level"] == "state"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send_line(self, line: bytes) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()
        try:
            return self.lines.get(timeout=TIMEOUT).decode()
        except queue.Empty:
            raise AssertionError(f"no reply within {TIMEOUT} s to {line[:100]!r}") from None

    def ask(self, cmd: str, **fields: Any) -> Any:
        self.last = self.send_line(json.dumps({"cmd": cmd, "seq": self.seq, **fields}).encode())
        reply = json.loads(self.last)
        assert reply["seq"] == self.seq, self.last
        self.seq += 1
        return reply

    def stop(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"cmd": "stop", "seq": self.seq}).encode() + b"\n")
        self.process.stdin.flush()
        return self.process.wait(timeout=2)  # PROTO-13: within 2 seconds, stdin still open

    def end(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=TIMEOUT)


@pytest.fixture
def session(binary: Path) -> Iterator[Session]:
    s = Session(binary)
    try:
        yield s
    finally:
        s.end()


def benefit_config(**knobs: Any) -> dict[str, Any]:
    return {"probation_byte_budget": 2**40, "persistence_hit_threshold": 2, "min_reuse_probability": 1.0, "decay_factor": 0.5,
            "grace_observations": 0, "ghost_capacity": 8, "ghost_max_age_observations": 100, **knobs}


DOUBLES = [1.0, 0.1, 2.5, 1e16, 1e15, 123456789012345680.0, 1e-4, 1e-5, 1.5e-7, 5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, 9007199254740993.0, 0.30000000000000004, 1 / 3]


def test_PROTO_19_doubles_come_back_exactly_in_the_shortest_text(session: Session) -> None:
    """With min_reuse_probability 1, one exclusive byte and no restore cost, an entry's score is
    reuse x net_benefit / bytes = 1 x cold / 1 = cold (BEN-SCORE-4): the double sent comes back.
    The example writes the text Python's repr writes (1e+16, 1e-05, 1.0)."""
    assert session.ask("configure_benefit", config=benefit_config())["ok"] is True
    for key, cold in enumerate(DOUBLES):
        cost = {"cold_prefill_cost": cold, "restore_cost": 0.0}
        assert session.ask("consider_admission", key=key, exclusive_bytes=1, shared=[], cost=cost, pinned=[])["decision"]["kind"] == "admit-probation"
    # The text halfway between 2 and the next double reads as 2 (ties to even), however long.
    midpoint = "2.000000000000000222044604925031308084726333618164062500"
    line = f'{{"cmd":"consider_admission","seq":{session.seq},"key":{len(DOUBLES)},"exclusive_bytes":1,"shared":[],' \
           f'"cost":{{"cold_prefill_cost":{midpoint},"restore_cost":0}},"pinned":[]}}'
    assert json.loads(session.send_line(line.encode()))["decision"]["kind"] == "admit-probation"
    session.seq += 1
    state = session.ask("benefit_state")
    written = [entry["score"] for entry in json.loads(session.last, parse_float=str)["entries"]]
    assert [entry["score"] for entry in state["entries"]] == [*DOUBLES, 2.0] and float(midpoint) == 2.0
    assert written == [repr(x) for x in [*DOUBLES, 2.0]]


def test_PROTO_19_keys_of_64_bits_and_non_finite_doubles_as_strings(session: Session) -> None:
    """Keys at both ends of [0, 2^64 - 1] and beside 2^53 (equal as doubles) are kept apart, and
    come back as victims, those without hits oldest first (BEN-VICTIM-2); "Infinity" and "NaN" are read
    as doubles: an infinite cold cost is an invalid sample (BEN-COST-1), NaN pressure is ignored
    (BEN-DECAY-1), and a NaN decay factor is refused (BEN-CONF-4)."""
    refused = session.ask("configure_benefit", config=benefit_config(decay_factor="NaN"))
    assert refused["ok"] is False and refused["refused"].startswith("BEN-CONF-4")
    assert session.ask("configure_benefit", config=benefit_config())["ok"] is True
    keys = [2**64 - 1, 2**53 + 1, 2**53, 2**63, 0]
    cost = {"cold_prefill_cost": 2.0, "restore_cost": 1.0}
    satisfied = {"status": "satisfied", "victims": [], "shortfall": 0}  # [], never null (PROTO-16)
    for key in keys:
        decision = session.ask("consider_admission", key=key, exclusive_bytes=1, shared=[], cost=cost, pinned=[])["decision"]
        assert decision == {"kind": "admit-probation", "reason": "probation-new-entry", "cap": satisfied}
    assert session.ask("record_hit", key=2**64 - 1, cost=cost)["decision"] is None  # rw = ow = 1: weights NaN would change
    infinite = session.ask("consider_admission", key=7, exclusive_bytes=1, shared=[], cost={**cost, "cold_prefill_cost": "Infinity"}, pinned=[])
    assert infinite["decision"] == {"kind": "reject", "reason": "invalid-cost-sample", "cap": None}
    before = session.ask("benefit_state")
    session.ask("observe_pressure", pressure="NaN")
    assert {**session.ask("benefit_state"), "seq": 0} == {**before, "seq": 0}
    assert session.ask("choose_victims", bytes_to_free=0, pinned=[]) == {"seq": session.seq - 1, "keys": [], "freed": 0}  # BEN-VICTIM-1
    assert session.ask("choose_victims", bytes_to_free=2**63 - 1, pinned=[2**53])["keys"] == [2**53 + 1, 2**63, 0, 2**64 - 1]  # no hits first
    session.ask("observe_pressure", pressure="Infinity")  # counts as 1: every rw becomes 0
    assert {entry["rw"] for entry in session.ask("benefit_state")["entries"]} == {0.0}


def test_REPLAY_TRACE_2_hash_ids_of_64_bits_and_S3_CONF_2_ties_to_even(session: Session) -> None:
    """Capacity 25 at small_ratio 0.1: round(2.5) = 2, so a third new block sends the first to the
    ghost. Ids equal as doubles (2^53, 2^53 + 1) or at the ends of int64 stay apart."""
    config = {"policy": "s3fifo", "capacity": 25, "block_size": 2**62, "small_ratio": 0.1, "max_freq": 3}
    assert session.ask("configure", config=config)["ok"] is True
    ids = [2**53, 2**53 + 1, -(2**63)]
    session.ask("access", hash_ids=ids)
    assert session.ask("snapshot") == {"seq": session.seq - 1, "small": [[2**53 + 1, 0], [-(2**63), 0]], "main": [], "ghost": [2**53]}
    # REPLAY-HIT-1: two hits of 2^62 tokens pass 2^63 - 1; the clamp to input_length still holds.
    assert session.ask("hit_tokens", hash_ids=ids[1:], input_length=2**63 - 1)["hit_tokens"] == 2**63 - 1
    refused = session.ask("configure", config={**config, "capacity": 5})
    assert refused["ok"] is False and refused["refused"].startswith("S3-CONF-5")  # round(0.5) = 0


def test_PROTO_1_a_request_longer_than_64_KiB_is_read_whole(session: Session) -> None:
    """bufio.Scanner stops at 64 KiB a line by default; 20,000 ids of 19 digits are some 400 KB."""
    assert session.ask("configure", config={"policy": "fifo", "capacity": 10**6, "block_size": 1, "small_ratio": 0.1, "max_freq": 3})["ok"]
    session.ask("access", hash_ids=[2**62 + i for i in range(20_000)])
    assert session.ask("resident_count")["resident_count"] == 20_000


def test_PROTO_14_a_bad_request_gets_an_error_reply_and_the_process_goes_on(session: Session) -> None:
    """An id past int64, a number written as a string, an unknown command: an error reply each,
    with the request's seq, and nothing changed; a line that is not JSON gets one too."""
    assert session.ask("configure", config={"policy": "lru", "capacity": 4, "block_size": 1, "small_ratio": 0.1, "max_freq": 3})["ok"]
    for cmd, fields in [("access", {"hash_ids": [2**63]}), ("access", {"hash_ids": ["1"]}), ("hit_tokens", {"hash_ids": [1], "input_length": 1.0}),
                        ("no_such_cmd", {})]:
        assert "error" in session.ask(cmd, **fields)
    assert session.ask("resident_count")["resident_count"] == 0
    not_json = json.loads(session.send_line(b"not json"))
    assert not_json["seq"] == session.seq and "error" in not_json  # the seq it would have had
    session.seq += 1
    assert session.ask("resident_count")["resident_count"] == 0


def test_PROTO_13_stop_and_the_end_of_input_exit_with_status_0(binary: Path) -> None:
    stopped = Session(binary)
    try:
        assert stopped.stop() == 0
    finally:
        stopped.end()
    ended = subprocess.run([str(binary)], input=b'{"cmd":"start","seq":0,"protocol":1}\n', capture_output=True, timeout=TIMEOUT)
    assert ended.returncode == 0 and json.loads(ended.stdout)["protocol"] == 1 and ended.stdout.count(b"\n") == 1


def test_REPLAY_CONF_1_the_configuration_travels_in_the_full_signed_range(session: Session) -> None:
    """PROTO-8: knobs at the ends of int64 are refused or accepted as the clauses say."""
    base = {"policy": "s3fifo", "capacity": 100, "block_size": 512, "small_ratio": 0.1, "max_freq": 3}
    for knobs, clause in [({"capacity": -(2**63)}, "REPLAY-CONF-1"), ({"block_size": 0}, "REPLAY-CONF-2"), ({"max_freq": -1}, "S3-CONF-6"),
                          ({"small_ratio": 1.5}, "S3-CONF-1"), ({"capacity": 4.0}, "REPLAY-CONF-1"), ({"policy": "benefit"}, "REPLAY-CONF-3")]:
        reply = session.ask("configure", config={**base, **knobs})
        assert reply["ok"] is False and reply["refused"].startswith(clause + ":"), (knobs, reply)
    for knobs in [{"capacity": 2**63 - 1}, {"max_freq": 2**63 - 1}, {"max_freq": 0}, {"policy": "lru", "small_ratio": math.pi}]:
        assert session.ask("configure", config={**base, **knobs})["ok"] is True, knobs
