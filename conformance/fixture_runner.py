"""Golden fixtures (spec/fixtures.md section 3): `kvspec fixtures verify`, the runner that needs
no Hypothesis: every case through an adapter, with known failures."""

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kvspec.adapters import Implementation
from kvspec.adapters.benefit import BenefitAdapter
from kvspec.adapters.interface import Adapter, AdapterConfig, AdapterFailure, ConfigRefused
from kvspec.adapters.wire import answer_benefit, received
from kvspec.reference import KvspecError

from .fixtures import CASE, FORMAT, Json, Manifest


@dataclass(frozen=True)
class CaseResult:
    """One case's verdict: pass, fail, skip, known-failure or unexpected-pass, and why."""

    id: str
    title: str
    verdict: str
    detail: str = ""


def read_manifest(directory: Path) -> list[Json]:
    """FIX-1, FIX-2: the manifest's entries, or a KvspecError naming what is wrong. A single case
    file (a certification report's counterexample) is a corpus of one."""
    if directory.is_file():
        try:
            data = directory.read_bytes()
            case = json.loads(data)
        except (OSError, ValueError) as error:
            raise KvspecError(f"{directory}: cannot read the case: {error}") from None
        if not isinstance(case, dict):
            raise KvspecError(f"{directory}: not a {FORMAT} case")
        return [{"id": case.get("id", ""), "kind": case.get("kind", ""), "path": directory.name, "title": case.get("title", ""),
                 "clauses": case.get("clauses", []), "sha256": hashlib.sha256(data).hexdigest()}]
    path = directory / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise KvspecError(f"{path}: cannot read the manifest: {error.strerror}") from None
    except ValueError as error:
        raise KvspecError(f"{path}: not JSON: {error}") from None
    try:
        return [entry.model_dump() for entry in Manifest.model_validate(manifest).cases]
    except ValidationError as error:
        first = error.errors()[0]
        clause = "FIX-1" if first["loc"][:1] in ((), ("format",)) or first["loc"][2:3] == ("path",) else "FIX-2"
        given = f", not {first['input']!r}" if isinstance(first["input"], str) else ""
        raise KvspecError(f"{path}: {clause}: not a {FORMAT} manifest: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}{given}") from None


def read_case(directory: Path, entry: Json) -> Json:
    """FIX-2, FIX-12: the case, once its bytes match the manifest's sha256."""
    path = directory if directory.is_file() else directory / entry["path"]
    try:
        data = path.read_bytes()
    except OSError as error:
        raise KvspecError(f"{path}: cannot read the case: {error.strerror}") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise KvspecError(f"{path}: FIX-2: its sha256 is not the manifest's (the corpus was edited by hand, or is damaged)")
    try:
        CASE.validate_json(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise KvspecError(f"{path}: not a {FORMAT} case: {field}: {first['msg']}") from None
    return json.loads(data)


class Mismatch(AssertionError):
    """A case's check that did not hold: where, and expected against actual."""


def expect_equal(where: str, expected: object, actual: object) -> None:
    if expected != actual:
        raise Mismatch(f"{where}: expected {expected!r}, got {actual!r}")


def check_replay(adapter: Adapter, case: Json) -> None:
    """What a consumer must check, step 2 and 3 (FIX-6)."""
    config = case["config"]
    try:
        adapter.configure(AdapterConfig(config["policy"], config["capacity"], config["block_size"], config["small_ratio"], config["max_freq"]))
        accepted = True
    except ConfigRefused:
        accepted = False
    expect_equal("the configuration", "refused" if case["refused"] else "accepted", "accepted" if accepted else "refused")
    if not accepted:
        return
    hits = prompt = resident = 0
    for number, step in enumerate(case["requests"], start=1):
        hit = adapter.hit_tokens(step["hash_ids"], step["input_length"])
        expect_equal(f"request {number}: hit_tokens", step["expect"]["hit_tokens"], hit)
        adapter.access(step["hash_ids"])
        resident = adapter.resident_count()
        expect_equal(f"request {number}: resident_count", step["expect"]["resident_count"], resident)
        if "snapshot" in step["expect"] and adapter.level == "state":
            snapshot = adapter.snapshot()
            actual = {"small": [list(e) for e in snapshot.small], "main": [list(e) for e in snapshot.main], "ghost": list(snapshot.ghost)}
            expect_equal(f"request {number}: snapshot", step["expect"]["snapshot"], actual)
        hits, prompt = hits + hit, prompt + step["input_length"]
    expect_equal("totals", case["totals"], {"total_hit_tokens": hits, "total_prompt_tokens": prompt, "final_cache_blocks": resident})


def check_benefit(adapter: BenefitAdapter, case: Json) -> None:
    """What a consumer must check, steps 2 and 4 (FIX-7)."""
    reply = answer_benefit(adapter, received({"cmd": "configure_benefit", "config": case["config"]}))
    expect_equal("the configuration", "refused" if case["refused"] else "accepted", "refused" if "refused" in reply else "accepted")
    for number, step in enumerate(case["operations"], start=1):
        where = f"operation {number} ({step['request']['cmd']})"
        expect_equal(where, signed_zeros(step["expect"]), same_doubles(answer_benefit(adapter, received(step["request"]))))
        if "state" in step and adapter.level == "state":
            expect_equal(f"{where}: the state after it", signed_zeros(step["state"]),
                         same_doubles(answer_benefit(adapter, received({"cmd": "benefit_state"}))))


def same_doubles(reply: Json) -> Json:
    """The reply as its JSON reads back, so that 1.0 and 1 compare as the doubles they are, and
    -0.0 apart from 0.0."""
    return signed_zeros(json.loads(json.dumps(reply, allow_nan=False)))


def signed_zeros(value: Any) -> Any:
    """``value`` with each -0.0 written "-0.0": doubles compare exactly, the sign of a zero included (FIX-7)."""
    if isinstance(value, float) and value == 0.0 and math.copysign(1.0, value) < 0.0:
        return "-0.0"
    if isinstance(value, dict):
        return {key: signed_zeros(item) for key, item in value.items()}
    if isinstance(value, list):
        return [signed_zeros(item) for item in value]
    return value


def verify(directory: Path, implementation: "Implementation | Callable[[], Adapter | BenefitAdapter]", known: dict[str, str],
           progress: Callable[[int, int], None] = lambda done, total: None) -> list[CaseResult]:
    """FIX-11, FIX-12: every case of the corpus through ``implementation`` (or the in-process
    adapters a callable builds), a fresh one after each failure. A failure to start or to stop is
    a result of its own, for the case id ``implementation``."""
    entries = read_manifest(directory)
    unknown = sorted(set(known) - {entry["id"] for entry in entries})
    if unknown:
        raise KvspecError(f"FIX-11: the known failures name cases the corpus does not have: {', '.join(unknown)}")
    if not isinstance(implementation, Implementation):
        implementation = Implementation.in_process(implementation)
    results = []
    for done, entry in enumerate(entries):
        progress(done, len(entries))
        case = read_case(directory, entry)
        if case["kind"] not in ("replay", "benefit"):  # FIX-12: no adapter operation reads a trace or runs a comparison
            results.append(CaseResult(case["id"], case["title"], "skip", f"a {case['kind']} case: for a trace reader or a comparison"))
            continue
        try:
            adapter = implementation.current()  # FIX-12: a fresh implementation after a failure
        except AdapterFailure as broken:
            return [*results, CaseResult("implementation", "its start", "fail", f"{broken.clause}: {broken}")]
        policy = case["config"]["policy"] if case["kind"] == "replay" else "benefit"
        if policy not in adapter.policies:
            results.append(CaseResult(case["id"], case["title"], "skip", f"the implementation does not list {policy}"))
            continue
        try:
            check_replay(adapter, case) if case["kind"] == "replay" else check_benefit(adapter, case)  # type: ignore[arg-type]
            failure = ""
        except Mismatch as mismatch:
            failure = str(mismatch)
        except AdapterFailure as broken:
            failure = f"{broken.clause}: {broken}"
        results.append(verdict_of(case, failure, known))
    try:
        implementation.close()
    except AdapterFailure as broken:
        results.append(CaseResult("implementation", "its stop", "fail", f"{broken.clause}: {broken}"))
    return results


def verdict_of(case: Json, failure: str, known: dict[str, str]) -> CaseResult:
    """FIX-11."""
    if case["id"] in known:
        if failure:
            return CaseResult(case["id"], case["title"], "known-failure", failure)
        return CaseResult(case["id"], case["title"], "unexpected-pass", f"listed as a known failure ({known[case['id']]}), but it passes")
    return CaseResult(case["id"], case["title"], "fail" if failure else "pass", failure)


