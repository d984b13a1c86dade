"""The Node module (examples/kvspec-node): protocol.js's JSON with exact integers and its loop,
and kit.js, the adapter kit in Node, through tests/fakes/node_kit.js (the kit over an LRU kept in
a JavaScript Map). Each test runs `node` for well under a second; without `node` they skip, as
tests/test_node_example.py does. The kit's end-to-end certification is npm lru-cache's
(tests/test_kit_certifications.py).

The expected values are written here from the protocol's text (spec/adapter-protocol.md), never
read from the module."""

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE = shutil.which("node")
ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = ROOT / "examples" / "kvspec-node" / "protocol.js"
FAKE = ROOT / "tests" / "fakes" / "node_kit.js"
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1

pytestmark = pytest.mark.skipif(NODE is None, reason="`node` (Node.js) is not on PATH")

# A script that reads JSON lines with the module and writes, for each, what it read: the text
# toJson gives back, and the type of each number in it (a BigInt or a double).
ROUND_TRIP = f"""
const {{ parseJson, toJson }} = require({json.dumps(str(PROTOCOL))});
const kinds = (v) => typeof v === 'bigint' ? 'integer' : typeof v === 'number' ? 'double' : Array.isArray(v) ? v.map(kinds) : typeof v;
require('node:readline').createInterface({{ input: process.stdin }}).on('line', (line) => {{
  const value = parseJson(line);
  console.log(JSON.stringify({{ back: toJson(value), kinds: kinds(value) }}));
}});
"""


def round_trip(*texts: str) -> list[dict[str, Any]]:
    assert NODE is not None
    run = subprocess.run([NODE, "-e", ROUND_TRIP], input="".join(f"{t}\n" for t in texts), capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def test_PROTO_3_the_node_module_reads_every_integer_exactly_and_writes_its_digits_back() -> None:
    """2^53 + 1 is no double (JSON.parse reads it as 2^53); 2^64 - 1 is the largest key of PROTO-19."""
    texts = [str(2**53 + 1), str(UINT64_MAX), str(INT64_MIN), json.dumps([2**53, 2**53 + 1, INT64_MAX, INT64_MAX - 1], separators=(",", ":"))]
    assert [r["back"] for r in round_trip(*texts)] == texts
    assert [r["kinds"] for r in round_trip(*texts)] == ["integer", "integer", "integer", ["integer"] * 4]


def test_PROTO_3_the_node_module_tells_an_integer_from_a_double_by_its_spelling() -> None:
    """4 is an integer; 4.0 and 4e0 are doubles (PROTO-3: never 3.0 or 1e3 for an integer)."""
    (read,) = round_trip("[4, 4.0, 4e0, -0, 0.1]")
    assert read["kinds"] == ["integer", "double", "double", "integer", "double"]


def exchange(*requests: dict[str, Any] | str, mistake: str = "") -> tuple[list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """``requests`` (a str as the line it is) to tests/fakes/node_kit.js, numbered from seq 0; its replies, in order."""
    assert NODE is not None
    lines = [r if isinstance(r, str) else json.dumps({**r, "seq": seq}) for seq, r in enumerate(requests)]
    run = subprocess.run([NODE, str(FAKE), *([mistake] if mistake else [])], input="".join(f"{line}\n" for line in lines),
                         capture_output=True, text=True, timeout=30)
    return [json.loads(line) for line in run.stdout.splitlines()], run


START = {"cmd": "start", "protocol": 1}


def configure(capacity: int = 4, block_size: int = 16, policy: str = "lru") -> dict[str, Any]:
    return {"cmd": "configure", "config": {"policy": policy, "capacity": capacity, "block_size": block_size, "small_ratio": 0.1, "max_freq": 3}}


def access(*ids: int) -> dict[str, Any]:
    return {"cmd": "access", "hash_ids": list(ids)}


def test_PROTO_3_hash_ids_at_both_bounds_of_int64_and_those_a_double_merges_stay_apart() -> None:
    replies, _ = exchange(START, configure(8), access(2**53, 2**53 + 1, INT64_MIN, INT64_MAX, INT64_MAX - 1), {"cmd": "snapshot"},
                          {"cmd": "resident_count"})
    assert replies[3] == {"seq": 3, "small": [], "main": [[h, 0] for h in (2**53, 2**53 + 1, INT64_MIN, INT64_MAX, INT64_MAX - 1)], "ghost": []}
    assert replies[4] == {"seq": 4, "resident_count": 5}


@pytest.mark.parametrize(("request_", "field", "shown"), [
    (access(1, 2**63), "hash_ids[1]", str(2**63)),
    (access(UINT64_MAX), "hash_ids[0]", str(UINT64_MAX)),
    (access(INT64_MIN - 1), "hash_ids[0]", str(INT64_MIN - 1)),
    ('{"cmd": "access", "seq": 2, "hash_ids": [1.0]}', "hash_ids[0]", "1"),
    ({"cmd": "hit_tokens", "hash_ids": [1], "input_length": 0}, "input_length", "0"),
    ({"cmd": "hit_tokens", "hash_ids": [1], "input_length": -1}, "input_length", "-1"),
    ({"cmd": "hit_tokens", "hash_ids": [1]}, "input_length", "missing"),
], ids=str)
def test_PROTO_3_a_hash_id_outside_int64_or_a_count_below_1_is_an_error_reply_naming_the_field(request_: Any, field: str, shown: str) -> None:
    replies, run = exchange(START, configure(), request_, {"cmd": "resident_count"})
    low, high = ("-2**63", "2**63 - 1") if field.startswith("hash_ids") else ("1", "2**63 - 1")
    assert replies[2] == {"seq": 2, "error": f"PROTO-3: {field} must be an integer in [{low}, {high}], not {shown}"}
    assert replies[3] == {"seq": 3, "resident_count": 0}  # every id is checked before the first is accessed (PROTO-10)
    assert run.returncode == 0


def test_PROTO_1_a_line_that_is_not_a_json_object_is_an_error_reply_and_the_loop_goes_on() -> None:
    unclosed = '{"cmd": "access", "seq": 1, "hash_ids": [1}'
    replies, _ = exchange(START, unclosed, "[1, 2]", {"cmd": "nope"}, configure())
    assert replies[1] == {"seq": None, "error": f"PROTO-1: bad JSON at character {unclosed.index('}')}: expected ',' or ']'"}
    assert replies[2] == {"seq": None, "error": "PROTO-1: a request is a JSON object"}
    assert replies[3] == {"seq": 3, "error": 'PROTO-16: unknown cmd "nope"'}
    assert replies[4] == {"seq": 4, "ok": True}


def test_PROTO_5_the_start_reply_names_the_implementation_and_another_version_is_an_error() -> None:
    replies, _ = exchange(START, {"cmd": "start", "protocol": 2})
    assert replies[0] == {"seq": 0, "protocol": 1, "implementation": {"name": "map-lru", "language": "javascript", "version": "as meant"},
                          "level": "state", "policies": ["lru"]}
    assert replies[1] == {"seq": 1, "error": "PROTO-5: protocol 2 is not supported; this speaks protocol 1"}


def test_PROTO_7_no_request_reaches_a_cache_before_a_configure_is_accepted_or_after_one_is_refused() -> None:
    no_cache = "PROTO-7: no cache is configured (configure first, or the last configure was refused)"
    replies, _ = exchange(START, {"cmd": "resident_count"}, configure(4), access(1, 2), configure(0), {"cmd": "snapshot"})
    assert [replies[1], replies[5]] == [{"seq": 1, "error": no_cache}, {"seq": 5, "error": no_cache}]
    assert replies[4] == {"seq": 4, "ok": False, "refused": "REPLAY-CONF-1: capacity must be an integer in [1, 2**63 - 1], not 0"}


@pytest.mark.parametrize(("config", "refused"), [
    (configure(4, block_size=0), "REPLAY-CONF-2: block_size must be an integer in [1, 2**63 - 1], not 0"),
    (configure(-3), "REPLAY-CONF-1: capacity must be an integer in [1, 2**63 - 1], not -3"),
    (configure(4, policy="fifo"), 'PROTO-6: map-lru implements lru, not "fifo"'),
    (configure(2**32 + 1), "the library refused capacity 4294967297: RangeError: cannot allocate 4294967297 entries"),
], ids=str)
def test_PROTO_8_the_node_kit_refuses_what_the_clauses_refuse_and_what_the_library_refuses(config: dict[str, Any], refused: str) -> None:
    replies, _ = exchange(START, config)
    assert replies[1] == {"seq": 1, "ok": False, "refused": refused}


def test_REPLAY_PREFIX_2_the_node_kit_counts_the_resident_prefix_to_its_first_miss_and_clamps_it() -> None:
    """LRU of 4 blocks of 16 tokens holding 1, 2, 3: [1, 2, 9, 3] hits 2 blocks (32 tokens, 3 after the miss does not
    count); [1, 2, 3] is 48 tokens, clamped to an input of 40 (REPLAY-HIT-1); the scan leaves the order as it was."""
    scan = {"cmd": "hit_tokens", "hash_ids": [1, 2, 9, 3], "input_length": 60}
    replies, _ = exchange(START, configure(4), access(1, 2, 3), scan, {"cmd": "hit_tokens", "hash_ids": [1, 2, 3], "input_length": 40},
                          {"cmd": "snapshot"})
    assert [replies[3]["hit_tokens"], replies[4]["hit_tokens"]] == [32, 40]
    assert replies[5]["main"] == [[1, 0], [2, 0], [3, 0]]


def test_PROTO_14_an_exception_of_the_implementation_is_an_error_reply_and_the_loop_goes_on() -> None:
    replies, run = exchange(START, configure(4), {"cmd": "resident_count"}, mistake="throws")
    assert replies[1]["seq"] == 1 and replies[1]["error"].startswith("internal error: TypeError: MapLru is not a constructor\n")
    assert replies[2]["error"].startswith("PROTO-7: ") and run.returncode == 0


def test_PROTO_6_the_node_kit_without_a_queue_is_at_the_results_level_and_answers_no_snapshot() -> None:
    replies, _ = exchange(START, configure(4), {"cmd": "snapshot"}, mistake="results")
    assert replies[0]["level"] == "results"
    assert replies[2] == {"seq": 2, "error": "PROTO-6: snapshot is asked only at the state level"}


def test_PROTO_13_stop_has_no_reply_and_the_process_exits_0_as_it_does_at_the_end_of_its_input() -> None:
    replies, run = exchange(START, {"cmd": "stop"}, {"cmd": "resident_count"})
    assert len(replies) == 1 and run.returncode == 0 and run.stderr == ""
    replies, run = exchange(START)
    assert len(replies) == 1 and run.returncode == 0
