"""The adapter protocol's messages (spec/adapter-protocol.md), one pydantic model each.

Both sides use these models: kvspec.adapters.process validates every reply of an implementation
under test against the model of the reply it expects (PROTO-16), and kvspec.adapters.serve
validates every request it reads. The JSON Schemas in spec/schemas/adapter/ are generated from
them (PROTO-16) by the maintainers' `kvspec spec schemas`: every field's description says what
the field is in the spec's words, and the rules of the protocol that JSON Schema cannot state.
The values the messages carry are in wire_values.py, the benefit policy's messages in
benefit_messages.py, the lifecycle's in lifecycle_messages.py; every message's schema is here.
"""

import json
from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, TypeAdapter

from kvspec.reference.validation import INT64_MAX

from .benefit_messages import (
    BenefitStateReply,
    BenefitStateRequest,
    CapRepairReply,
    ChooseVictimsRequest,
    ConfigureBenefitRequest,
    ConsiderAdmissionRequest,
    DecisionReply,
    ObservePressureRequest,
    RecordHitRequest,
    RecordMissRequest,
    RemoveRequest,
    SelectProbationCapVictimsRequest,
    VictimsReply,
)

from .lifecycle_messages import LIFECYCLE_REQUESTS as LIFECYCLE_REQUESTS  # X as X: read from here by serve.py
from .lifecycle_messages import LIFECYCLE_SCHEMAS

# X as X: a name its importers read from this module, where it was first written
from .benefit_messages import WireBenefitConfig as WireBenefitConfig
from .benefit_messages import WireCapRepair as WireCapRepair
from .benefit_messages import WireCost as WireCost
from .benefit_messages import WireDecision as WireDecision
from .wire_values import CMD, CONFIG_INT, COUNT, INTEGER, Blocks, ConfigInt, Count, Entries, HashId, Message, No, Policy, Seq, Yes
from .wire_values import from_double as from_double
from .wire_values import to_double as to_double

PROTOCOL_VERSION = 1  # PROTO-5

# Requests (kvspec -> implementation) -----------------------------------------------------------


class StartRequest(Message):
    """PROTO-5: the first request, naming the protocol version kvspec speaks."""

    cmd: Literal["start"] = Field(description=CMD)
    seq: Seq
    protocol: Count = Field(description=f"PROTO-5: the protocol version kvspec speaks, 1. {INTEGER}")


class WireConfig(Message):
    """PROTO-7: one cache to build (REPLAY-CONF-1 to REPLAY-CONF-3, S3-CONF-1, S3-CONF-6)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, allow_inf_nan=False)

    policy: Literal["s3fifo", "lru", "fifo"] = Field(description="REPLAY-CONF-3: the policy; a policy ignores the parameters of others.")
    capacity: ConfigInt = Field(description=f"REPLAY-CONF-1: the number of blocks the cache holds, valid in [1, 2^63 − 1]. {CONFIG_INT}")
    block_size: ConfigInt = Field(description=f"REPLAY-CONF-2: the number of tokens in a block, valid in [1, 2^63 − 1]. {CONFIG_INT}")
    small_ratio: float = Field(description="S3-CONF-1: S3FIFO's small queue's share of the capacity, valid as a finite double in [0, 1] "
                               "(S3-CONF-5 refuses more). A JSON number, the one number of a configure request that may have a fraction "
                               "(PROTO-3), written so that it reads back as the same double; any finite value travels, the refused ones "
                               "too (PROTO-8).")
    max_freq: ConfigInt = Field(description=f"S3-CONF-6: the most a freq counts to, valid in [0, 2^63 − 1]. {CONFIG_INT}")


class ConfigureRequest(Message):
    """PROTO-7, PROTO-8: build an empty cache, replacing any earlier one."""

    cmd: Literal["configure"] = Field(description=CMD)
    seq: Seq
    config: WireConfig = Field(description="PROTO-7: the cache to build; all five fields are always sent.")


class HitTokensRequest(Message):
    """PROTO-9: one request's hit tokens; the cache must not change."""

    cmd: Literal["hit_tokens"] = Field(description=CMD)
    seq: Seq
    hash_ids: Blocks = Field(description="PROTO-9: the request's blocks, at least one, in order; an id may occur more than once "
                             "(REPLAY-TRACE-4).")
    input_length: Annotated[int, Field(ge=1, le=INT64_MAX)] = Field(description=f"PROTO-9: the request's input length L ≥ 1, in tokens. "
                                                                    f"{INTEGER}")


class AccessRequest(Message):
    """PROTO-10: access every block, in order."""

    cmd: Literal["access"] = Field(description=CMD)
    seq: Seq
    hash_ids: Blocks = Field(description="PROTO-10: the blocks to access, hit or miss, in order (REPLAY-ACCESS-1); an id may occur more "
                             "than once (REPLAY-TRACE-4).")
    input_length: Annotated[int, Field(ge=1, le=INT64_MAX)] | None = Field(
        default=None, description=f"PROTO-10: the request's input length, sent only in a dialect of the engine replay (spec/dialects.md sections 7 and 8). {INTEGER}")


class ResidentCountRequest(Message):
    """PROTO-11."""

    cmd: Literal["resident_count"] = Field(description=CMD)
    seq: Seq


class SnapshotRequest(Message):
    """PROTO-12: only asked of a "state"-level implementation."""

    cmd: Literal["snapshot"] = Field(description=CMD)
    seq: Seq


class StopRequest(Message):
    """PROTO-13: no reply; the process exits with status 0."""

    cmd: Literal["stop"] = Field(description=CMD)
    seq: Seq


Request = Annotated[
    StartRequest | ConfigureRequest | HitTokensRequest | AccessRequest | ResidentCountRequest | SnapshotRequest | StopRequest
    | ConfigureBenefitRequest | ConsiderAdmissionRequest | RecordHitRequest | RecordMissRequest | ObservePressureRequest
    | ChooseVictimsRequest | SelectProbationCapVictimsRequest | RemoveRequest | BenefitStateRequest
    | Union[LIFECYCLE_REQUESTS],  # noqa: UP007 -- a union of a tuple's types
    Field(discriminator="cmd"),
]
REQUEST: TypeAdapter[Any] = TypeAdapter(Request)
BENEFIT_REQUESTS = (ConfigureBenefitRequest, ConsiderAdmissionRequest, RecordHitRequest, RecordMissRequest, ObservePressureRequest,
                    ChooseVictimsRequest, SelectProbationCapVictimsRequest, RemoveRequest, BenefitStateRequest)


# Replies (implementation -> kvspec) ------------------------------------------------------------


class Implementation(Message):
    """PROTO-5: who is under test, for the report."""

    name: str = Field(description="PROTO-5: the implementation's name.")
    language: str = Field(description="PROTO-5: the language it is written in.")
    version: str = Field(description="PROTO-5: its version.")


class StartReply(Message):
    """PROTO-5, PROTO-6: the protocol version, identity, level and policies."""

    seq: Seq
    protocol: Count = Field(description=f"PROTO-5: MUST be 1, the version spec/adapter-protocol.md specifies; any other version is a "
                            f"failure. {INTEGER}")
    implementation: Implementation = Field(description="PROTO-5: the implementation under test, its name, language and version.")
    level: Literal["results", "state"] = Field(description="PROTO-6: results (hit tokens and resident counts; the benefit policy's "
                                               "results), or state (also the queues, by snapshot; the benefit policy's state, by "
                                               "benefit_state).")
    policies: Annotated[list[Policy], Field(min_length=1)] = Field(description="PROTO-6: the policies the implementation implements, at "
                                                                   "least one; kvspec configures only these.")
    lifecycle: bool = Field(default=False, description="PROTO-35: true when the implementation offers the lifecycle's messages (section "
                            "7) for each of the block policies (s3fifo, lru, fifo) it lists; absent or false, kvspec sends it none. A JSON "
                            "boolean, never 1 or 0 (PROTO-16).")


class ConfiguredReply(Message):
    """PROTO-7: an empty cache now exists for this config."""

    seq: Seq
    ok: Yes = Field(description="PROTO-7, PROTO-20: an empty cache (or benefit policy) now exists for the config; any earlier "
                              "one is gone.")


class RefusedReply(Message):
    """PROTO-8: the config is refused, with the reason (naming the clause)."""

    seq: Seq
    ok: No = Field(description="PROTO-8: the config is refused; any earlier cache is gone all the same (PROTO-7).")
    refused: str = Field(description="PROTO-8: why; it SHOULD name the clause that refuses the config.")


ConfigureReply = ConfiguredReply | RefusedReply
CONFIGURE_REPLY: TypeAdapter[Any] = TypeAdapter(
    Annotated[ConfigureReply, Field(description="PROTO-7, PROTO-8, PROTO-20: the reply to configure and configure_benefit, the config "
                                    "accepted or refused.")]
)


class HitTokensReply(Message):
    """PROTO-9."""

    seq: Seq
    hit_tokens: Count = Field(description="PROTO-9: min(k × block_size, L) for the longest resident prefix of k blocks (REPLAY-HIT-1). "
                              f"{COUNT}")


class AccessReply(Message):
    """PROTO-10, and PROTO-23 and PROTO-24 for record_miss and observe_pressure, PROTO-37, PROTO-40 and PROTO-43 for arrive,
    compute and preempt."""

    seq: Seq
    ok: Yes = Field(description="PROTO-10, PROTO-23, PROTO-24, PROTO-37, PROTO-40, PROTO-43: done.")


class ResidentCountReply(Message):
    """PROTO-11."""

    seq: Seq
    resident_count: Count = Field(description=f"PROTO-11: the blocks resident now (REPLAY-RESULT-4); S3FIFO's ghost is not resident. "
                                              f"{COUNT}")


class SnapshotReply(Message):
    """PROTO-12: the queues, head first."""

    seq: Seq
    small: Entries = Field(description="PROTO-12: S3FIFO's small queue, head first, as [hash id, freq] pairs; empty for LRU and FIFO.")
    main: Entries = Field(description="PROTO-12: S3FIFO's main queue, LRU's recency queue (least recent first) or FIFO's arrival queue, "
                          "head first, as [hash id, freq] pairs.")
    ghost: list[HashId] = Field(description="PROTO-12: S3FIFO's ghost queue, head first, its hashes alone; empty for LRU and FIFO.")


class ErrorReply(Message):
    """PROTO-14: the implementation failed internally."""

    seq: Seq
    error: str = Field(description="PROTO-14: the implementation's message; kvspec reports a failure of the implementation with it.")


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
    "configure_benefit-request": TypeAdapter(ConfigureBenefitRequest),
    "consider_admission-request": TypeAdapter(ConsiderAdmissionRequest),
    "record_hit-request": TypeAdapter(RecordHitRequest),
    "record_miss-request": TypeAdapter(RecordMissRequest),
    "observe_pressure-request": TypeAdapter(ObservePressureRequest),
    "choose_victims-request": TypeAdapter(ChooseVictimsRequest),
    "select_probation_cap_victims-request": TypeAdapter(SelectProbationCapVictimsRequest),
    "remove-request": TypeAdapter(RemoveRequest),
    "benefit_state-request": TypeAdapter(BenefitStateRequest),
    "decision-reply": TypeAdapter(DecisionReply),
    "victims-reply": TypeAdapter(VictimsReply),
    "cap_repair-reply": TypeAdapter(CapRepairReply),
    "benefit_state-reply": TypeAdapter(BenefitStateReply),
    **{name: TypeAdapter(model) for name, model in LIFECYCLE_SCHEMAS.items()},
    "error-reply": TypeAdapter(ErrorReply),
}


# The $id of spec/schemas/<path> (PROTO-16): a URI with a path, so that a relative reference resolves
# against it as it does between the files; it names a schema, and nothing needs to be fetched from it.
SCHEMAS_URI = "https://kvspec.dev/schemas/"


def schema_text(path: str, adapter: TypeAdapter[Any]) -> str:
    """A model's JSON Schema as kvspec checks it in at spec/schemas/``path``: draft 2020-12, its $id
    SCHEMAS_URI + ``path``, sorted keys, two-space indent, trailing newline."""
    schema = adapter.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMAS_URI + path
    schema.setdefault("title", path.rpartition("/")[2].removesuffix(".schema.json"))
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_texts() -> dict[str, str]:
    """PROTO-16: file name under spec/schemas/adapter/ -> JSON Schema text."""
    return {f"{name}.schema.json": schema_text(f"adapter/{name}.schema.json", adapter) for name, adapter in SCHEMAS.items()}
