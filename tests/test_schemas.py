"""The JSON Schemas of spec/schemas/, read by a real validator (jsonschema): each names itself by
its $id and describes every field, saying what JSON Schema cannot (PROTO-16); every case of the
corpus and its manifest (FIX-1, FIX-2, FIX-7), every message of a certification of all four
policies and its report match their schemas; and the schemas refuse what the protocol refuses."""

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from kvspec.adapters.protocol import SCHEMAS as MODELS
from kvspec.conformance import cli
from kvspec.conformance.certification.certify import PROFILES

from support import SCHEMAS, schema_errors, schema_registry, schema_validator

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS_URI = "https://kvspec.dev/schemas/"  # the $id of spec/schemas/<path> is this + <path>, as PROTO-16 and spec/fixtures.md say
PATHS = sorted(path.relative_to(SCHEMAS).as_posix() for path in SCHEMAS.rglob("*.schema.json"))

# The reply schema of each request, as spec/adapter-protocol.md names it (PROTO-5 to PROTO-28).
REPLY_TO = {
    "start": "start-reply", "configure": "configure-reply", "hit_tokens": "hit_tokens-reply", "access": "access-reply",
    "resident_count": "resident_count-reply", "snapshot": "snapshot-reply", "configure_benefit": "configure-reply",
    "consider_admission": "decision-reply", "record_hit": "decision-reply", "record_miss": "access-reply",
    "observe_pressure": "access-reply",
    "choose_victims": "victims-reply", "select_probation_cap_victims": "cap_repair-reply", "remove": "cap_repair-reply",
    "benefit_state": "benefit_state-reply",
    "arrive": "access-reply", "lookup": "lookup-reply", "allocate": "made-reply", "compute": "access-reply", "decode": "made-reply",
    "finish": "finish-reply", "preempt": "access-reply", "lifecycle_state": "lifecycle_state-reply",
}
# PROTO-35 to PROTO-44: the lifecycle's own messages, which a certification of requests in flight sends, and fixtures verify
LIFECYCLE = {f"{cmd}-request" for cmd in ("arrive", "lookup", "allocate", "compute", "decode", "finish", "preempt", "lifecycle_state")} | {
    "lookup-reply", "made-reply", "finish-reply", "lifecycle_state-reply"}


def subschemas(node: Any, described: str = "") -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object under ``node``, with the nearest description on its way down (its own, or
    that of the property or union it is part of)."""
    if isinstance(node, dict):
        described = node.get("description", described)
        yield node, described
        for key, child in node.items():
            if key not in ("enum", "const", "required"):
                yield from subschemas(child, described if key in ("anyOf", "items", "prefixItems") else "")
    elif isinstance(node, list):
        for child in node:
            yield from subschemas(child, described)


@pytest.mark.parametrize("path", PATHS)
def test_PROTO_16_every_schema_names_itself_by_its_id_and_describes_every_field(path: str) -> None:
    schema = schema_validator(path).schema
    Draft202012Validator.check_schema(schema)
    assert schema["$id"] == SCHEMAS_URI + path and schema["description"]
    resolver = schema_registry().resolver(base_uri=schema["$id"])
    for node, described in subschemas(schema):
        if "$ref" in node:
            assert resolver.lookup(node["$ref"]).contents["type"] == "object"
        assert [name for name, field in node.get("properties", {}).items() if not field.get("description")] == [], path
        if path.startswith(("adapter/", "fixture-")):  # what JSON Schema cannot say about a protocol number (PROTO-3, PROTO-19)
            if node.get("type") == "integer":
                assert "(3.0, 1e3)" in described and "2^53" in described, (path, node)
            if "NaN" in node.get("enum", ()):
                assert "(PROTO-19)" in described and "(1e400)" in described, (path, node)


def test_PROTO_16_the_specs_name_the_schemas_by_their_id() -> None:
    for document in ("adapter-protocol.md", "fixtures.md"):
        assert SCHEMAS_URI in (ROOT / "spec" / document).read_text(encoding="utf-8"), document


def test_FIX_1_FIX_2_FIX_7_every_fixture_and_the_manifest_match_their_schemas() -> None:
    """A benefit case's operations are protocol messages without their seq (FIX-7), and so are a
    lifecycle case's (FIX-18, PROTO-37 to PROTO-44: `op` the cmd, `{}` the reply `{"ok": true}`): with
    one, each matches its request's and its reply's schema, and a state the lifecycle_state reply's."""
    corpus = ROOT / "spec" / "fixtures"
    problems = schema_errors("fixture-manifest.schema.json", json.loads((corpus / "manifest.json").read_bytes()))
    kinds = set()
    for path in sorted(corpus.glob("*/*.json")):
        case = json.loads(path.read_bytes())
        kinds.add(case["kind"])
        problems += schema_errors("fixture-case.schema.json", case)
        for step in case["operations"] if case["kind"] == "benefit" else ():
            cmd = step["request"]["cmd"]
            problems += schema_errors(f"adapter/{cmd}-request.schema.json", {**step["request"], "seq": 0})
            problems += schema_errors(f"adapter/{REPLY_TO[cmd]}.schema.json", {**step["expect"], "seq": 0})
            if step.get("state") is not None:
                problems += schema_errors("adapter/benefit_state-reply.schema.json", {**step["state"], "seq": 0})
        for step in case["operations"] if case["kind"] == "lifecycle" else ():
            request = {"cmd": step["op"], "seq": 0, **{name: value for name, value in step.items() if name not in ("op", "expect", "state")}}
            problems += schema_errors(f"adapter/{step['op']}-request.schema.json", request)
            problems += schema_errors(f"adapter/{REPLY_TO[step['op']]}.schema.json", {**(step["expect"] or {"ok": True}), "seq": 0})
            if "state" in step:
                problems += schema_errors("adapter/lifecycle_state-reply.schema.json", {**step["state"], "seq": 0})
    assert problems == []
    assert kinds == {"replay", "benefit", "trace", "comparison", "prefix", "lifecycle"}


def exchanges_recorded(folder: Path) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each request of every recorded process with its reply (none for stop), in order (PROTO-1)."""
    exchanges: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for requests_file in sorted(folder.glob("requests.*")):
        requests = [json.loads(line) for line in requests_file.read_text(encoding="utf-8").splitlines()]
        replies = iter([json.loads(line) for line in (folder / requests_file.name.replace("requests", "replies")).read_text().splitlines()])
        exchanges += [(request, None if request["cmd"] == "stop" else next(replies)) for request in requests]
        assert next(replies, None) is None
    return exchanges


def message_errors(exchanges: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[str]:
    problems = []
    for request, reply in exchanges:
        problems += schema_errors(f"adapter/{request['cmd']}-request.schema.json", request)
        if reply is not None:
            problems += schema_errors(f"adapter/{REPLY_TO[request['cmd']]}.schema.json", reply)
    return problems


def test_PROTO_16_every_message_of_a_certification_and_its_report_match_their_schemas(tmp_path: Path, monkeypatch: Any) -> None:
    """The reference served over the protocol, certified on every policy (a short run: what the
    quick profile runs, with fewer and shorter examples), every line of its stdin and stdout kept."""
    monkeypatch.setitem(PROFILES, "quick", settings(max_examples=10, stateful_step_count=8))
    served = f"KVSPEC_CONTRACTS=0 {shlex.quote(sys.executable)} -m kvspec.adapters.serve"
    folder = shlex.quote(str(tmp_path))
    recorded = f"tee {folder}/requests.$$ | {served} | tee {folder}/replies.$$"
    assert cli.main(["certify", "--adapter", f"cmd:sh -c {shlex.quote(recorded)}", "--report", str(tmp_path / "report")]) == 0
    exchanges = exchanges_recorded(tmp_path)
    assert message_errors(exchanges) == []
    exercised = {f"{request['cmd']}-request" for request, _ in exchanges} | {REPLY_TO[request["cmd"]] for request, _ in exchanges
                                                                          if request["cmd"] != "stop"}
    assert exercised == set(MODELS) - {"error-reply"}  # a run that errs nowhere; the refusals below check error-reply
    report = json.loads((tmp_path / "report" / "report.json").read_bytes())
    assert [(verdict["policy"], verdict["in_flight"]) for verdict in report["policies"]] == [
        ("s3fifo", False), ("s3fifo", True), ("lru", False), ("lru", True), ("fifo", False), ("fifo", True), ("benefit", False)]
    assert schema_errors("certification-report.schema.json", report) == []
    # The check can fail: one reply out of range, one report field of the wrong type.
    request, reply = next((request, reply) for request, reply in exchanges if request["cmd"] == "hit_tokens")
    assert len(message_errors([(request, {**reply, "hit_tokens": -1})])) == 1
    assert len(schema_errors("certification-report.schema.json", {**report, "seed": "0"})) == 1


def test_PROTO_16_PROTO_35_every_lifecycle_message_of_a_fixtures_verify_matches_its_schema(tmp_path: Path) -> None:
    """The reference harness through `kvspec fixtures verify` on the corpus's lifecycle cases of LRU and
    FIFO, every line of its stdin and stdout kept: the start reply offers the lifecycle, and every
    lifecycle request and reply matches its schema, each of them sent."""
    served = f"KVSPEC_CONTRACTS=0 {shlex.quote(sys.executable)} -m kvspec.adapters.serve"
    folder = shlex.quote(str(tmp_path))
    recorded = f"tee {folder}/requests.$$ | {served} | tee {folder}/replies.$$"
    assert cli.main(["fixtures", "verify", "--adapter", f"cmd:sh -c {shlex.quote(recorded)}", "--policy", "lru", "--policy", "fifo"]) == 0
    exchanges = exchanges_recorded(tmp_path)
    assert message_errors(exchanges) == []
    assert exchanges[0][1] is not None and exchanges[0][1]["lifecycle"] is True
    exercised = {f"{request['cmd']}-request" for request, _ in exchanges} | {REPLY_TO[request["cmd"]] for request, _ in exchanges
                                                                          if request["cmd"] != "stop"}
    assert LIFECYCLE <= exercised
    request, reply = next((request, reply) for request, reply in exchanges if request["cmd"] == "finish")
    assert len(message_errors([(request, {key: value for key, value in reply.items() if key != "recomputed_tokens"})])) == 1


@pytest.mark.parametrize(("schema", "message"), [
    ("hit_tokens-request", {"cmd": "hit_tokens", "seq": 2, "hash_ids": [2**63], "input_length": 1}),  # PROTO-3: signed 64 bits
    ("consider_admission-request", {"cmd": "consider_admission", "seq": 3, "key": 2**64, "exclusive_bytes": 1, "shared": [],
                                    "cost": {"cold_prefill_cost": 2.0, "restore_cost": 1.0}, "pinned": []}),  # BEN-KEY-1
    ("observe_pressure-request", {"cmd": "observe_pressure", "seq": 4, "pressure": "nan"}),  # PROTO-19: "NaN", spelled so
    ("snapshot-reply", {"seq": 5, "small": [], "main": [[1, 0]], "ghost": [], "freqs": []}),  # PROTO-16: no other field
    ("access-reply", {"seq": 6, "ok": 1}),  # PROTO-16: no 1 for true
    ("decision-reply", {"decision": None}),  # PROTO-2: every reply carries its seq
    ("start-reply", {"seq": 0, "protocol": 1, "implementation": {"name": "x", "language": "go", "version": "1"}, "level": "state",
                     "policies": []}),  # PROTO-6: at least one policy
    ("error-reply", {"seq": 7, "error": None}),  # PROTO-14: a message
    ("made-reply", {"seq": 8, "made": 1}),  # PROTO-39: a JSON boolean
    ("arrive-request", {"cmd": "arrive", "seq": 9, "id": -1, "hash_ids": [1], "input_length": 1}),  # PROTO-35: an id is a count
    ("compute-request", {"cmd": "compute", "seq": 10, "id": 1, "upto": 0}),  # PROTO-40: upto past the blocks computed
    ("lifecycle_state-reply", {"seq": 11, "small": [], "main": [], "ghost": [], "refs": [[1, 0]], "pending": [], "held": 0}),  # PROTO-44
    ("start-reply", {"seq": 0, "protocol": 1, "implementation": {"name": "x", "language": "go", "version": "1"}, "level": "state",
                     "policies": ["lru"], "lifecycle": 1}),  # PROTO-35: a JSON boolean
])
def test_PROTO_16_the_schemas_refuse_what_the_models_refuse(schema: str, message: dict[str, Any]) -> None:
    assert schema_errors(f"adapter/{schema}.schema.json", message) != []
    with pytest.raises(ValidationError):
        MODELS[schema].validate_json(json.dumps(message))


@pytest.mark.parametrize(("schema", "text", "field", "rule"), [
    ("hit_tokens-reply", '{"seq": 1, "hit_tokens": 10.0}', "hit_tokens", "never written with a fraction or an exponent (3.0, 1e3)"),
    ("observe_pressure-request", '{"cmd": "observe_pressure", "seq": 1, "pressure": 1e400}', "pressure",
     "a number that overflows a double (1e400) is a wrong shape"),
])
def test_PROTO_3_PROTO_19_what_a_schema_admits_and_the_protocol_refuses_its_description_says(schema: str, text: str, field: str,
                                                                                            rule: str) -> None:
    assert schema_errors(f"adapter/{schema}.schema.json", json.loads(text)) == []  # JSON Schema cannot tell
    with pytest.raises(ValidationError):
        MODELS[schema].validate_json(text)
    assert rule in schema_validator(f"adapter/{schema}.schema.json").schema["properties"][field]["description"]
