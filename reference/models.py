"""The pydantic models of what a replay reads and writes: a trace's line (TraceRecord, and
parse_line, which reads one or names its first bad field), a request's line of the result
(RequestResult) and the result (ReplayResult). They validate, and write the JSON every consumer
reads; trace.py and replay.py re-export them, loading pydantic only when one is asked for, since
pydantic takes longer to import than the bundled trace takes to replay."""

import json
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .constants import AnyPolicyName, PolicyName
from .errors import TraceError
from .validation import INT64_MAX, INT64_MIN

JSON_POSITION = re.compile(r" at line (\d+) column (\d+)$")
# REPLAY-TRACE-11: how deep a value may lie below the line's object, which pydantic's JSON parser
# decides (jiter, crates/jiter/src/errors.rs, DEFAULT_RECURSION_LIMIT = 200, as pydantic-core 2.50.5
# builds it); tests/test_fixtures_consumer.py holds the reader to it.
MAX_NESTING = 200

HashId = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]


class TraceRecord(BaseModel):
    """REPLAY-TRACE-1, REPLAY-TRACE-2: one request, exactly as a Mooncake line carries it. pydantic checks
    the fields in this order, then the others in the line's (REPLAY-TRACE-10: pydantic-core 2.41.5,
    src/validators/model_fields.rs:184 and :310), each field given twice by its last value (jiter's
    LazyIndexMap, "prefer the later element"); tests/test_fixtures_consumer.py holds it to the spec."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    timestamp: int = Field(ge=0, le=INT64_MAX)
    input_length: int = Field(ge=1, le=INT64_MAX)
    output_length: int = Field(ge=0, le=INT64_MAX)
    hash_ids: list[HashId] = Field(min_length=1)


def field_name(location: tuple[int | str, ...]) -> str:
    """REPLAY-TRACE-9: ('hash_ids', 3) -> 'hash_ids[3]'; the whole line, (line), when pydantic names no field."""
    if not location:
        return "(line)"
    name = str(location[0])
    for part in location[1:]:
        name += f"[{part}]" if isinstance(part, int) else f".{part}"
    return name


def without_position(message: str) -> str:
    """pydantic's `at line 1 column K` as `at column K`: an error names one line, the trace's (the
    JSON's line 2 starts past the line feed, at the end of the trace's line)."""
    position = JSON_POSITION.search(message)
    if position is None:
        return message
    return message[: position.start()] + (f" at column {position[2]}" if position[1] == "1" else " at the end of the line")


def repeated_key(line: bytes) -> str | None:
    """The first key a JSON object line gives twice, escapes decoded (pydantic keeps the last one)."""
    keys = json.loads(line, object_pairs_hook=lambda pairs: [key for key, _ in pairs])
    return next((key for index, key in enumerate(keys) if key in keys[:index]), None)


def non_json_number(line: bytes) -> str | None:
    """The first NaN, Infinity or -Infinity of a line that is JSON but for them, else None: RFC 8259
    has no such number, but pydantic's parser (jiter) and Python's json read them as doubles."""
    found: list[str] = []
    try:
        json.loads(line.decode(), parse_constant=found.append)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


def refuse_non_json_number(path: str, line_number: int, line: bytes) -> None:
    """A line holding NaN or an infinity is not JSON, refused whole before any of its fields. Asked
    only of a line refused otherwise: a line read holds nothing but integers, so no line read pays
    for a second parse. (Its clauses are cited where the rule is applied, not here: the question
    decides nothing for a line without such a number.)"""
    if (number := non_json_number(line)) is not None:
        what = f"{number} is not a JSON number (RFC 8259 section 6)"
        raise TraceError(path, line_number, "(line)", "REPLAY-TRACE-1", what)  # REPLAY-TRACE-9, REPLAY-TRACE-10: the line, before its fields


def parse_line(path: str, line_number: int, line: bytes) -> TraceRecord:
    """REPLAY-TRACE-1, REPLAY-TRACE-2: one line, or a TraceError naming its first bad field."""
    if not line.strip():
        raise TraceError(path, line_number, "(line)", "REPLAY-TRACE-1", "a blank line is not a request")
    try:
        record = TraceRecord.model_validate_json(line)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]  # REPLAY-TRACE-10: the first of TraceRecord's fields, then of the others
        if first["type"] != "json_invalid":
            refuse_non_json_number(path, line_number, line)
        clause = "REPLAY-TRACE-1" if first["type"] in ("json_invalid", "json_type", "model_type", "missing", "extra_forbidden") else "REPLAY-TRACE-2"
        raise TraceError(path, line_number, field_name(tuple(first["loc"])), clause, without_position(first["msg"])) from None
    # REPLAY-TRACE-1: exactly four fields. Every string of a line pydantic accepted is one of the four
    # keys (the values are integers, and no field name holds a quote), so it has 8 quotes unless a
    # key repeats: a count at C speed, and only a line with more quotes is parsed again.
    if line.count(b'"') != 8 and (key := repeated_key(line)) is not None:
        refuse_non_json_number(path, line_number, line)  # the value read last can be an integer, an earlier one NaN
        raise TraceError(path, line_number, key, "REPLAY-TRACE-1", "duplicate key")
    return record


class RequestResult(BaseModel):
    """REPLAY-RESULT-2: one request's line of the result."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    hit_tokens: int = Field(ge=0, le=INT64_MAX)
    prompt_tokens: int = Field(ge=1, le=INT64_MAX)


class ReplayResult(BaseModel):
    """REPLAY-RESULT-1 to REPLAY-RESULT-4: the result, with seed 000's field names."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    policy: PolicyName
    block_size: int = Field(ge=1, le=INT64_MAX)
    small_ratio: float | None
    max_freq: int | None = Field(ge=0, le=INT64_MAX)
    requests: int = Field(ge=0, le=INT64_MAX)
    total_hit_tokens: int = Field(ge=0, le=INT64_MAX)
    total_prompt_tokens: int = Field(ge=0, le=INT64_MAX)
    final_cache_blocks: int = Field(ge=0, le=INT64_MAX)
    cache_capacity_blocks: int = Field(ge=INT64_MIN, le=INT64_MAX)  # below 1 only in a dialect (REPLAY-DIALECT-1, REPLAY-DIALECT-2)
    dialect: list[str] | None = None  # DIALECT-6: the variation points, in spec/dialects.md's order; absent when canonical
    per_request: list[RequestResult] | None


class ServedResult(BaseModel):
    """LIFE-SERVE-7: a served replay's result (reference/serve.py's Served), without its per-request lines."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    policy: AnyPolicyName = Field(description="a block policy, or the benefit policy's prefix cache (LIFE-BEN-1)")
    block_size: int = Field(ge=1, le=INT64_MAX)
    small_ratio: float | None = None
    max_freq: int | None = Field(None, ge=0, le=INT64_MAX)
    cache_capacity_blocks: int = Field(ge=1, le=INT64_MAX)
    service: dict[str, int] = Field(description="LIFE-SERVE-1: max_running, step_tokens, gpus, flops_per_second, memory_bytes_per_second")
    dialect: list[str] | None = None  # DIALECT-6: the variation points, in spec/dialects.md's order; absent when canonical
    requests: int = Field(ge=0, le=INT64_MAX)
    total_hit_tokens: int = Field(ge=0, le=INT64_MAX)
    total_prompt_tokens: int = Field(ge=0, le=INT64_MAX)
    total_recomputed_tokens: int = Field(ge=0, le=INT64_MAX)
    preemptions: int = Field(ge=0, le=INT64_MAX)
    cut_short: int = Field(ge=0, le=INT64_MAX)
    refused: int | None = Field(None, ge=0, le=INT64_MAX, description="LIFE-VLLM-3, LIFE-SGLANG-2: prompts an engine's dialect refuses")
    own_blocks: int | None = Field(None, ge=0, le=INT64_MAX, description="LIFE-VLLM-2, LIFE-SGLANG-2: the requests' own blocks an engine cached "
                                   "(output, and a partial prompt block with it), which no other request names")
    uncomputed_tokens: int = Field(ge=0, le=INT64_MAX, description="LIFE-SERVE-7: prompt tokens lookups found resident but not yet computed")
    kept_in_main: int | None = Field(None, ge=0, le=INT64_MAX, description="S3FIFO: entries in use at freq 0 that S's drain admitted to M (S3-LIFE-1)")
    peak_referenced_blocks: int = Field(ge=0, le=INT64_MAX)
    peak_running: int = Field(ge=0, le=INT64_MAX)
    mean_waiting_ms: float = Field(ge=0)
    max_waiting_ms: float = Field(ge=0)
    steps: int = Field(ge=0, le=INT64_MAX)
    served_ms: float = Field(ge=0)
    final_cache_blocks: int = Field(ge=0, le=INT64_MAX)
