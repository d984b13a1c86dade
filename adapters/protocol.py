"""The adapter protocol's messages (spec/adapter-protocol.md), one pydantic model each.

Both sides use these models: kvspec.adapters.process validates every reply of an implementation
under test against the model of the reply it expects (PROTO-16), and kvspec.adapters.serve
validates every request it reads. The JSON Schemas in spec/schemas/adapter/ are generated from
them (PROTO-16):

    python -m kvspec.adapters.protocol --write spec/schemas/adapter
"""

import argparse
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.reference.validation import INT64_MAX, INT64_MIN

PROTOCOL_VERSION = 1  # PROTO-5

# PROTO-3: every integer is a JSON integer in 64 bits; hash ids are signed, counts are not.
HashId = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
# Configuration values travel in the full signed range: the suite sends the values the clauses
# refuse (capacity 0, max_freq -1) to see them refused (PROTO-8), so the wire must carry them.
ConfigInt = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Seq = Count  # PROTO-2
Blocks = Annotated[list[HashId], Field(min_length=1)]
Entries = list[tuple[HashId, Count]]


class Message(BaseModel):
    """Every message: strict JSON types, no field the schema does not name (PROTO-16)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


# Requests (kvspec -> implementation) -----------------------------------------------------------


class StartRequest(Message):
    """PROTO-5: the first request, naming the protocol version kvspec speaks."""

    cmd: Literal["start"]
    seq: Seq
    protocol: Count


class WireConfig(Message):
    """PROTO-7: one cache to build (REPLAY-CONF-1 to REPLAY-CONF-3, S3-CONF-1, S3-CONF-6)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    policy: Literal["s3fifo", "lru", "fifo"]
    capacity: ConfigInt
    block_size: ConfigInt
    small_ratio: float
    max_freq: ConfigInt


class ConfigureRequest(Message):
    """PROTO-7, PROTO-8: build an empty cache, replacing any earlier one."""

    cmd: Literal["configure"]
    seq: Seq
    config: WireConfig


class HitTokensRequest(Message):
    """PROTO-9: one request's hit tokens; the cache must not change."""

    cmd: Literal["hit_tokens"]
    seq: Seq
    hash_ids: Blocks
    input_length: Annotated[int, Field(ge=1, le=INT64_MAX)]


class AccessRequest(Message):
    """PROTO-10: access every block, in order."""

    cmd: Literal["access"]
    seq: Seq
    hash_ids: Blocks


class ResidentCountRequest(Message):
    """PROTO-11."""

    cmd: Literal["resident_count"]
    seq: Seq


class SnapshotRequest(Message):
    """PROTO-12: only asked of a "state"-level implementation."""

    cmd: Literal["snapshot"]
    seq: Seq


class StopRequest(Message):
    """PROTO-13: no reply; the process exits with status 0."""

    cmd: Literal["stop"]
    seq: Seq


Request = Annotated[
    StartRequest | ConfigureRequest | HitTokensRequest | AccessRequest | ResidentCountRequest | SnapshotRequest | StopRequest,
    Field(discriminator="cmd"),
]
REQUEST: TypeAdapter[Any] = TypeAdapter(Request)


# Replies (implementation -> kvspec) ------------------------------------------------------------


class Implementation(Message):
    """PROTO-5: who is under test, for the report."""

    name: str
    language: str
    version: str


class StartReply(Message):
    """PROTO-5, PROTO-6: the protocol version, identity, level and policies."""

    seq: Seq
    protocol: Count
    implementation: Implementation
    level: Literal["results", "state"]
    policies: Annotated[list[Literal["s3fifo", "lru", "fifo"]], Field(min_length=1)]


class ConfiguredReply(Message):
    """PROTO-7: an empty cache now exists for this config."""

    seq: Seq
    ok: Literal[True]


class RefusedReply(Message):
    """PROTO-8: the config is refused, with the reason (naming the clause)."""

    seq: Seq
    ok: Literal[False]
    refused: str


ConfigureReply = ConfiguredReply | RefusedReply
CONFIGURE_REPLY: TypeAdapter[Any] = TypeAdapter(ConfigureReply)


class HitTokensReply(Message):
    """PROTO-9."""

    seq: Seq
    hit_tokens: Count


class AccessReply(Message):
    """PROTO-10."""

    seq: Seq
    ok: Literal[True]


class ResidentCountReply(Message):
    """PROTO-11."""

    seq: Seq
    resident_count: Count


class SnapshotReply(Message):
    """PROTO-12: the queues, head first."""

    seq: Seq
    small: Entries
    main: Entries
    ghost: list[HashId]


class ErrorReply(Message):
    """PROTO-14: the implementation failed internally."""

    seq: Seq
    error: str


# One schema file per message (PROTO-16) --------------------------------------------------------

SCHEMAS: dict[str, TypeAdapter[Any]] = {
    "start-request": TypeAdapter(StartRequest),
    "start-reply": TypeAdapter(StartReply),
    "configure-request": TypeAdapter(ConfigureRequest),
    "configure-reply": CONFIGURE_REPLY,
    "hit_tokens-request": TypeAdapter(HitTokensRequest),
    "hit_tokens-reply": TypeAdapter(HitTokensReply),
    "access-request": TypeAdapter(AccessRequest),
    "access-reply": TypeAdapter(AccessReply),
    "resident_count-request": TypeAdapter(ResidentCountRequest),
    "resident_count-reply": TypeAdapter(ResidentCountReply),
    "snapshot-request": TypeAdapter(SnapshotRequest),
    "snapshot-reply": TypeAdapter(SnapshotReply),
    "stop-request": TypeAdapter(StopRequest),
    "error-reply": TypeAdapter(ErrorReply),
}


def schema_texts() -> dict[str, str]:
    """PROTO-16: file name -> JSON Schema text (sorted keys, two-space indent, trailing newline)."""
    texts: dict[str, str] = {}
    for name, adapter in SCHEMAS.items():
        schema = adapter.json_schema()
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema.setdefault("title", name)
        texts[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return texts


def write_schemas(folder: Path) -> list[Path]:
    """Write every schema to ``folder`` and remove stale ones; the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = schema_texts()
    for stale in folder.glob("*.schema.json"):
        if stale.name not in texts:
            stale.unlink()
    written = []
    for name, text in texts.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvspec.adapters.protocol", description="Write the adapter protocol's JSON Schemas.")
    parser.add_argument("--write", metavar="FOLDER", required=True, help="folder to write <message>.schema.json files to")
    args = parser.parse_args(argv)
    for path in write_schemas(Path(args.write)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
