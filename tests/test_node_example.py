"""The JavaScript example (examples/s3fifo-node) against the reference, over the JSON-lines
adapter protocol, version 1, that server.js speaks on stdin/stdout.

The driver below is written here on purpose: it depends on nothing but the protocol text, not on
kvspec.adapters. Every read from the server has a timeout, so a server that hangs or dies fails a
test instead of stalling the suite.

What is compared, after every request of every trace: the hit tokens (REPLAY-HIT-1), the resident
count (S3-FINAL-1, LRU-CAP-1, FIFO-CAP-1) and the snapshot of the queues, head first, against
kvspec.reference.replay.replay_request and the reference's own queues. Config refusals are compared
with the clause the reference's ConfigError names.

Cost. The reference runs here with every contract installed (KVSPEC_CONTRACTS=all), which is
O(cache) a block access; the Mooncake part is cut to the first 500 requests of the conversation
trace at capacities 64 and 1024, a few seconds a configuration.
"""

from __future__ import annotations

import itertools
import json
import math
import queue
import random
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvspec.reference import FIFO, LRU, S3FIFO, ConfigError, ReplayConfig, TraceFile, bundled_trace_path, make_policy
from kvspec.reference.replay import replay_request

NODE = shutil.which("node")
SERVER = Path(__file__).resolve().parent.parent / "examples" / "s3fifo-node" / "server.js"
BLOCK_SIZE = 512
READ_TIMEOUT = 20.0  # seconds for one reply line; generous, a reply takes well under a millisecond
INT64_MAX = 2**63 - 1

pytestmark = pytest.mark.skipif(NODE is None, reason="`node` (Node.js) is not on PATH; the JavaScript example cannot run")


class ServerDied(AssertionError):
    pass


class NodeServer:
    """One `node server.js` process. Requests are written as they come; replies are read in
    order, one line each, with a timeout; the server is killed when one does not come."""

    def __init__(self) -> None:
        assert NODE is not None
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [NODE, str(SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.seq = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)  # EOF

    def stderr(self) -> str:
        if self._stderr.closed:
            return "(closed)"
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def send(self, cmd: str, **fields: Any) -> None:
        assert self.proc.stdin is not None
        request = {"cmd": cmd, "seq": self.seq, **fields}
        self.seq += 1
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=READ_TIMEOUT)
        except queue.Empty:
            err = self.stderr()
            self.kill()
            raise ServerDied(f"no reply within {READ_TIMEOUT} s (server killed); stderr: {err}") from None
        if line is None:
            err = self.stderr()
            self.kill()
            raise ServerDied(f"server closed stdout (exit {self.proc.returncode}); stderr: {err}")
        return json.loads(line)

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        seq = self.seq
        self.send(cmd, **fields)
        answer = self.reply()
        assert answer.get("seq") == seq, f"reply to seq {seq} came back as {answer}"
        assert "error" not in answer, f"{cmd} failed: {answer['error']}"
        return answer

    def stop(self) -> int:
        self.send("stop")
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=READ_TIMEOUT)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=READ_TIMEOUT)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        self._reader.join(timeout=READ_TIMEOUT)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def started() -> NodeServer:
    srv = NodeServer()
    hello = srv.request("start", protocol=1)
    assert hello["protocol"] == 1 and hello["level"] == "state"
    assert sorted(hello["policies"]) == ["fifo", "lru", "s3fifo"]
    return srv


@pytest.fixture(scope="module")
def servers() -> Iterator[list[NodeServer]]:
    """The module's servers: one, unless a test leaves it dead or hung (then it is killed and
    the next test starts another), so that one failure does not time out every test after it."""
    live: list[NodeServer] = []
    try:
        yield live
        if live and live[-1].proc.poll() is None:
            assert live[-1].stop() == 0
    finally:
        for srv in live:
            srv.kill()


@pytest.fixture
def server(servers: list[NodeServer]) -> NodeServer:
    """A live server; every test starts with its own configure."""
    if not servers or servers[-1].proc.poll() is not None:
        servers.append(started())
    return servers[-1]


def config(policy: str, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> dict[str, Any]:
    return {"policy": policy, "capacity": capacity, "block_size": BLOCK_SIZE, "small_ratio": small_ratio, "max_freq": max_freq}


def reference_snapshot(policy: object) -> dict[str, list[Any]]:
    """The reference's queues in the protocol's snapshot shape, head first."""
    if isinstance(policy, S3FIFO):
        return {
            "small": [[h, f] for h, f in policy.small.items()],
            "main": [[h, f] for h, f in policy.main.items()],
            "ghost": list(policy.ghost),
        }
    if isinstance(policy, LRU):
        return {"small": [], "main": [[h, 0] for h in policy.recency], "ghost": []}
    assert isinstance(policy, FIFO)
    return {"small": [], "main": [[h, 0] for h in policy.arrival], "ghost": []}


def node_snapshot(server: NodeServer) -> dict[str, list[Any]]:
    answer = server.request("snapshot")
    return {"small": answer["small"], "main": answer["main"], "ghost": answer["ghost"]}


def compare_replay(server: NodeServer, cfg: dict[str, Any], requests: list[tuple[list[int], int]]) -> int:
    """Replay ``requests`` (hash_ids, input_length) on both sides, comparing after every one;
    the total hit tokens."""
    policy = make_policy(ReplayConfig(**cfg))
    assert server.request("configure", config=cfg) == {"seq": server.seq - 1, "ok": True}
    total = 0
    for i, (hash_ids, input_length) in enumerate(requests):
        # The four requests go out together and the reference works while the server does.
        first = server.seq
        server.send("hit_tokens", hash_ids=hash_ids, input_length=input_length)
        server.send("access", hash_ids=hash_ids)
        server.send("resident_count")
        server.send("snapshot")
        want_hit = replay_request(policy, hash_ids, input_length, cfg["block_size"])
        want_snapshot = reference_snapshot(policy)
        got_hit, accessed, count, snap = (server.reply() for _ in range(4))
        for offset, answer in enumerate((got_hit, accessed, count, snap)):
            assert answer.get("seq") == first + offset and "error" not in answer, answer
        where = f"{cfg} request {i} {hash_ids}"
        assert got_hit["hit_tokens"] == want_hit, f"REPLAY-HIT-1: hit tokens differ at {where}"
        assert accessed["ok"] is True
        assert count["resident_count"] == policy.resident_count(), f"resident count differs at {where}"
        assert {k: snap[k] for k in ("small", "main", "ghost")} == want_snapshot, f"snapshot differs at {where}"
        total += want_hit
    return total


def blocks(hash_ids: list[int], last: int = BLOCK_SIZE) -> tuple[list[int], int]:
    """A request whose last block holds ``last`` tokens (REPLAY-TRACE-3)."""
    return hash_ids, (len(hash_ids) - 1) * BLOCK_SIZE + last


# ---------------------------------------------------------------------------------------------
# Hand-made traces
# ---------------------------------------------------------------------------------------------


def test_S3_QUEUE_3_ghost_is_not_resident_by_hand(server: NodeServer) -> None:
    """Capacity 10 at 0.1: small_cap 1, main_cap 9. S=[1:0]; then 2 pushes 1 to G; a prefix
    that reaches the ghost 1 hits 0 (S3-QUEUE-3); accessing 1 brings it to M with freq 0
    (S3-ACCESS-3); then [1, 2] is a full prefix, clamped to input_length (REPLAY-HIT-1)."""
    server.request("configure", config=config("s3fifo", 10))
    server.request("access", hash_ids=[1])
    server.request("access", hash_ids=[2])
    assert node_snapshot(server) == {"small": [[2, 0]], "main": [], "ghost": [1]}
    assert server.request("hit_tokens", hash_ids=[1, 2], input_length=700)["hit_tokens"] == 0
    server.request("access", hash_ids=[1])
    assert node_snapshot(server) == {"small": [[2, 0]], "main": [[1, 0]], "ghost": []}
    assert server.request("hit_tokens", hash_ids=[1, 2], input_length=700)["hit_tokens"] == 700
    assert server.request("hit_tokens", hash_ids=[1, 2, 3], input_length=1100)["hit_tokens"] == 1024
    assert server.request("hit_tokens", hash_ids=[3, 1, 2], input_length=1100)["hit_tokens"] == 0  # REPLAY-PREFIX-2
    assert server.request("resident_count")["resident_count"] == 2


def test_REPLAY_PREFIX_3_hit_tokens_changes_nothing(server: NodeServer) -> None:
    """A hit_tokens request must not change the cache, under any policy."""
    rng = random.Random(3)
    for policy in ("s3fifo", "lru", "fifo"):
        server.request("configure", config=config(policy, 12, small_ratio=0.25))
        for _ in range(40):
            ids = [rng.randrange(30) for _ in range(rng.randint(1, 6))]
            before = node_snapshot(server)
            server.request("hit_tokens", hash_ids=ids, input_length=len(ids) * BLOCK_SIZE)
            assert node_snapshot(server) == before
            server.request("access", hash_ids=ids)


HAND_TRACES: dict[str, list[tuple[list[int], int]]] = {
    # S3-ADMIT-S-2 promotion with freq kept, S3-ADMIT-M-2 second chance, S3-ACCESS-3 ghost hits,
    # repeats inside one request (REPLAY-TRACE-4) and partial last blocks (REPLAY-HIT-1).
    "promote-and-second-chance": [
        blocks([1, 1, 2]), blocks([1, 2, 3], 7), blocks([4, 5]), blocks([1, 2, 6, 7]), blocks([8, 9, 10], 511),
        blocks([1, 2, 3, 4]), blocks([11, 12, 13, 14, 15]), blocks([1, 5, 9]), blocks([2, 2, 2, 2]),
        blocks([16, 17, 1, 2]), blocks([3, 4, 5, 6, 7, 8]), blocks([1, 2, 3]), blocks([18]), blocks([1]),
    ],
    # Hash ids a double cannot tell apart (2**53 and 2**53 + 1), and both ends of int64.
    "wide-hash-ids": [
        blocks([2**53, 2**53 + 1, -(2**63), INT64_MAX]), blocks([2**53 + 1, 2**53]), blocks([INT64_MAX, INT64_MAX - 1, 0]),
        blocks([-(2**63), -(2**63) + 1, -1]), blocks([2**53, 2**53 + 1, -(2**63), INT64_MAX], 1), blocks([2**53 + 2, 2**53 + 3]),
        blocks([INT64_MAX - 1, 2**53 + 1]), blocks([2**53, 2**53 + 1, -(2**63), INT64_MAX]),
    ],
}


def random_trace(seed: int, n: int, alphabet: int) -> list[tuple[list[int], int]]:
    """Conversation-like requests: a shared prefix of one of a few sessions, then new blocks."""
    rng = random.Random(seed)
    sessions: list[list[int]] = [[] for _ in range(5)]
    out = []
    for _ in range(n):
        s = sessions[rng.randrange(len(sessions))]
        s.extend(rng.randrange(alphabet) for _ in range(rng.randint(0, 3)))
        ids = s[: rng.randint(0, len(s))] + [rng.randrange(alphabet) for _ in range(rng.randint(1, 4))]
        out.append(blocks(ids, rng.randint(1, BLOCK_SIZE)))
    return out


@pytest.mark.parametrize("name", sorted(HAND_TRACES))
@pytest.mark.parametrize(
    "cfg",
    [
        config("s3fifo", 10),
        config("s3fifo", 6, small_ratio=0.5, max_freq=1),
        config("s3fifo", 8, small_ratio=0.25, max_freq=0),
        config("lru", 5),
        config("fifo", 5),
    ],
    ids=str,
)
def test_hand_traces_match_reference(server: NodeServer, name: str, cfg: dict[str, Any]) -> None:
    compare_replay(server, cfg, HAND_TRACES[name])


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(
    "cfg",
    [
        config("s3fifo", 16, small_ratio=0.25),
        config("s3fifo", 15),
        config("s3fifo", 25, max_freq=7),
        config("s3fifo", 9, small_ratio=0.3, max_freq=1),
        config("lru", 16),
        config("fifo", 16),
    ],
    ids=str,
)
def test_random_traces_match_reference(server: NodeServer, seed: int, cfg: dict[str, Any]) -> None:
    compare_replay(server, cfg, random_trace(seed, 80, 50))


# ---------------------------------------------------------------------------------------------
# The bundled Mooncake conversation trace, first 500 requests
# ---------------------------------------------------------------------------------------------


@cache
def mooncake_prefix() -> list[tuple[list[int], int]]:
    records = itertools.islice(TraceFile(bundled_trace_path()).records(), 500)
    return [(list(r.hash_ids), r.input_length) for _, r in records]


@pytest.mark.untyped
@pytest.mark.parametrize("capacity", [64, 1024])
@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_mooncake_conversation_prefix_matches_reference(server: NodeServer, policy: str, capacity: int) -> None:
    requests = mooncake_prefix()
    assert len(requests) == 500
    total = compare_replay(server, config(policy, capacity), requests)
    assert total > 0  # the trace reuses prefixes; a replay that never hits compared nothing useful


# ---------------------------------------------------------------------------------------------
# Configuration: S3-CONF-2 (banker's rounding), S3-CONF-5 and the other refusals
# ---------------------------------------------------------------------------------------------


def small_queue_length(server: NodeServer, capacity: int, small_ratio: float) -> int:
    """small_cap, seen from outside: after capacity + 1 distinct new blocks, all with freq 0, S is
    full (S3-ADMIT-S-1) and everything older went to G."""
    assert server.request("configure", config=config("s3fifo", capacity, small_ratio))["ok"] is True
    server.request("access", hash_ids=list(range(1, capacity + 2)))
    return len(node_snapshot(server)["small"])


def test_S3_CONF_5_capacity_5_refused_6_accepted(server: NodeServer) -> None:
    """round(5 * 0.1) = round(0.5) = 0: refused; round(6 * 0.1) = round(0.6000000000000001) = 1."""
    refused = server.request("configure", config=config("s3fifo", 5))
    assert refused["ok"] is False and "S3-CONF-5" in refused["refused"]
    assert server.request("configure", config=config("s3fifo", 6))["ok"] is True
    assert small_queue_length(server, 6, 0.1) == 1


def test_S3_CONF_2_banker_rounding_on_ties(server: NodeServer) -> None:
    """15 * 0.1 = 1.5 -> 2 and 25 * 0.1 = 2.5 -> 2 (ties to even, not up as Math.round does);
    35 * 0.1 = 3.5000000000000004 -> 4; 65 * 0.1 = 6.5 -> 6."""
    assert small_queue_length(server, 15, 0.1) == 2
    assert small_queue_length(server, 25, 0.1) == 2
    assert small_queue_length(server, 35, 0.1) == 4
    assert small_queue_length(server, 65, 0.1) == 6
    # Shown by a trace as well: at capacity 25, S holds 2, so [1, 2, 3] leaves 1 in the ghost.
    server.request("configure", config=config("s3fifo", 25))
    server.request("access", hash_ids=[1, 2, 3])
    assert node_snapshot(server) == {"small": [[2, 0], [3, 0]], "main": [], "ghost": [1]}


@pytest.mark.parametrize("small_ratio", [0.1, 0.25, 0.5, 0.3, 0.05, 0.7, 0.9, 1 / 3])
def test_S3_CONF_2_small_cap_matches_python_round(server: NodeServer, small_ratio: float) -> None:
    """Every capacity from 1 to 80: refused exactly when the reference refuses (S3-CONF-5), and
    otherwise the same small_cap as Python's round(capacity * small_ratio)."""
    for capacity in range(1, 81):
        try:
            want = make_policy(ReplayConfig(policy="s3fifo", capacity=capacity, block_size=BLOCK_SIZE, small_ratio=small_ratio))
        except ConfigError as error:
            assert error.clause == "S3-CONF-5"
            got = server.request("configure", config=config("s3fifo", capacity, small_ratio))
            assert got["ok"] is False and got["refused"].startswith("S3-CONF-5"), (capacity, small_ratio, got)
            continue
        assert isinstance(want, S3FIFO)
        assert small_queue_length(server, capacity, small_ratio) == want.caps.small_cap == round(capacity * small_ratio)


REFUSALS: list[dict[str, Any]] = [
    config("s3fifo", 5),
    config("s3fifo", 1),
    config("s3fifo", 100, small_ratio=0.0),
    config("s3fifo", 100, small_ratio=1.0),
    config("s3fifo", 100, small_ratio=-0.1),
    config("s3fifo", 100, small_ratio=1.5),
    config("s3fifo", 100, small_ratio=math.nan),
    config("s3fifo", 100, small_ratio=math.inf),
    config("s3fifo", 100, max_freq=-1),
    config("s3fifo", 100, max_freq=2**63),
    config("s3fifo", 0),
    config("s3fifo", 2**63),
    config("lru", 0),
    config("fifo", -3),
    config("lru", 2**63),
    {**config("fifo", 4), "block_size": 0},
    {**config("s3fifo", 100), "block_size": 2**63},
    {**config("lru", 4), "capacity": True},
    {**config("s3fifo", 4), "policy": "arc"},
]

# Values of the wrong JSON type: ReplayConfig's annotations (which typeguard enforces in this
# suite) keep them from the reference, so the clause its checks would name is written down.
WRONG_TYPES: list[tuple[dict[str, Any], str]] = [
    ({**config("lru", 4), "capacity": 4.0}, "REPLAY-CONF-1"),
    ({**config("fifo", 4), "capacity": "4"}, "REPLAY-CONF-1"),
    ({**config("lru", 4), "block_size": 512.0}, "REPLAY-CONF-2"),
    ({**config("s3fifo", 100), "max_freq": 3.0}, "S3-CONF-6"),
    ({**config("s3fifo", 100), "small_ratio": "0.1"}, "S3-CONF-1"),
    ({**config("s3fifo", 100), "small_ratio": None}, "S3-CONF-1"),
]


@pytest.mark.parametrize("cfg", REFUSALS, ids=str)
def test_config_refusals_name_the_reference_clause(server: NodeServer, cfg: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as error:
        make_policy(ReplayConfig(**cfg))
    got = server.request("configure", config=cfg)
    assert got["ok"] is False and got["refused"].startswith(error.value.clause + ":"), (cfg, got)


@pytest.mark.parametrize(("cfg", "clause"), WRONG_TYPES, ids=str)
def test_config_refusals_of_wrong_types(server: NodeServer, cfg: dict[str, Any], clause: str) -> None:
    got = server.request("configure", config=cfg)
    assert got["ok"] is False and got["refused"].startswith(clause + ":"), (cfg, got)


@pytest.mark.parametrize(
    "cfg",
    [config("s3fifo", 6), config("s3fifo", INT64_MAX), config("s3fifo", 100, max_freq=0), config("s3fifo", 100, max_freq=INT64_MAX),
     config("s3fifo", 3, small_ratio=0.5), config("lru", 1), config("fifo", INT64_MAX), {**config("lru", 3), "small_ratio": 7.0}],
    ids=str,
)
def test_configs_the_reference_accepts_are_accepted(server: NodeServer, cfg: dict[str, Any]) -> None:
    make_policy(ReplayConfig(**cfg))
    assert server.request("configure", config=cfg)["ok"] is True


def test_protocol_errors_are_replies_not_crashes(server: NodeServer) -> None:
    """A bad request gets an error reply with its seq; the server goes on."""
    server.request("configure", config=config("lru", 4))
    seq = server.seq
    server.send("access", hash_ids=[2**63])
    assert server.reply() == {"seq": seq, "error": "PROTO-3: hash_ids[0] must be an integer in [-2**63, 2**63 - 1], not 9223372036854775808"}
    server.send("no_such_cmd")
    assert "error" in server.reply()
    assert server.request("resident_count")["resident_count"] == 0  # the bad access changed nothing


def test_stop_exits_zero() -> None:
    """stop gets no reply, and the process exits with status 0."""
    srv = started()
    try:
        assert srv.stop() == 0
    finally:
        srv.kill()
