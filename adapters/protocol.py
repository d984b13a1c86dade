"""The adapter protocol's messages (spec/adapter-protocol.md), one pydantic model each.

Both sides use these models: kvspec.adapters.process validates every reply of an implementation
under test against the model of the reply it expects (PROTO-16), and kvspec.adapters.serve
validates every request it reads. The JSON Schemas in spec/schemas/adapter/ are generated from
them (PROTO-16) by the maintainers' `kvspec spec schemas`.
"""

import json
import math
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
Policy = Literal["s3fifo", "lru", "fifo", "benefit"]  # PROTO-6
# PROTO-19: the benefit policy's keys and segment ids are unsigned (BEN-KEY-1); a double is a
# JSON number, or one of three strings for the values JSON has no number for.
Key = Annotated[int, Field(ge=0, le=2**64 - 1)]
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
Double = Annotated[float, Field(allow_inf_nan=False)] | Literal["NaN", "Infinity", "-Infinity"]
Pinned = list[Key]


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


class WireBenefitConfig(Message):
    """PROTO-20: the seven knobs of BEN-CONF-1 to BEN-CONF-7, in the full signed range (PROTO-8)."""

    probation_byte_budget: ConfigInt
    persistence_hit_threshold: ConfigInt
    min_reuse_probability: Double
    decay_factor: Double
    grace_observations: ConfigInt
    ghost_capacity: ConfigInt
    ghost_max_age_observations: ConfigInt


class ConfigureBenefitRequest(Message):
    """PROTO-20: an empty benefit policy, replacing any earlier cache or policy."""

    cmd: Literal["configure_benefit"]
    seq: Seq
    config: WireBenefitConfig


class WireCost(Message):
    """PROTO-21: one cost sample (BEN-COST-1); invalid samples travel too (PROTO-19)."""

    cold_prefill_cost: Double
    restore_cost: Double


class ConsiderAdmissionRequest(Message):
    """PROTO-21: consider_admission (BEN-ADMIT-1 to BEN-ADMIT-9)."""

    cmd: Literal["consider_admission"]
    seq: Seq
    key: Key
    exclusive_bytes: Count
    shared: list[tuple[Key, Count]]
    cost: WireCost
    pinned: Pinned


class RecordHitRequest(Message):
    """PROTO-22: record_hit (BEN-HIT-1, BEN-HIT-2)."""

    cmd: Literal["record_hit"]
    seq: Seq
    key: Key
    cost: WireCost


class RecordMissRequest(Message):
    """PROTO-23: record_miss (BEN-MISS-1)."""

    cmd: Literal["record_miss"]
    seq: Seq
    key: Key


class ObservePressureRequest(Message):
    """PROTO-24: observe_pressure (BEN-DECAY-1 to BEN-DECAY-3); NaN and the infinities travel too."""

    cmd: Literal["observe_pressure"]
    seq: Seq
    pressure: Double


class ChooseVictimsRequest(Message):
    """PROTO-25: choose_victims (BEN-VICTIM-1 to BEN-VICTIM-5); selection only."""

    cmd: Literal["choose_victims"]
    seq: Seq
    bytes_to_free: Count
    pinned: Pinned


class SelectProbationCapVictimsRequest(Message):
    """PROTO-26: select_probation_cap_victims (BEN-CAP-1 to BEN-CAP-5); selection only."""

    cmd: Literal["select_probation_cap_victims"]
    seq: Seq
    pinned: Pinned


class RemoveRequest(Message):
    """PROTO-27: remove (BEN-REMOVE-1)."""

    cmd: Literal["remove"]
    seq: Seq
    key: Key
    pinned: Pinned


class BenefitStateRequest(Message):
    """PROTO-28: only asked of a "state"-level implementation."""

    cmd: Literal["benefit_state"]
    seq: Seq


class StopRequest(Message):
    """PROTO-13: no reply; the process exits with status 0."""

    cmd: Literal["stop"]
    seq: Seq


Request = Annotated[
    StartRequest | ConfigureRequest | HitTokensRequest | AccessRequest | ResidentCountRequest | SnapshotRequest | StopRequest
    | ConfigureBenefitRequest | ConsiderAdmissionRequest | RecordHitRequest | RecordMissRequest | ObservePressureRequest
    | ChooseVictimsRequest | SelectProbationCapVictimsRequest | RemoveRequest | BenefitStateRequest,
    Field(discriminator="cmd"),
]
REQUEST: TypeAdapter[Any] = TypeAdapter(Request)
BENEFIT_REQUESTS = (ConfigureBenefitRequest, ConsiderAdmissionRequest, RecordHitRequest, RecordMissRequest, ObservePressureRequest,
                    ChooseVictimsRequest, SelectProbationCapVictimsRequest, RemoveRequest, BenefitStateRequest)


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
    policies: Annotated[list[Policy], Field(min_length=1)]


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


class WireCapRepair(Message):
    """PROTO-21, PROTO-26, PROTO-27: a probation-cap repair (BEN-CAP-4), victims in order."""

    status: Literal["satisfied", "deferred"]
    victims: list[Key]
    shortfall: Count


class WireDecision(Message):
    """PROTO-21, PROTO-22: a decision, its opaque reason token (BEN-ADMIT-9) and its cap repair."""

    kind: Literal["admit-probation", "admit-persist", "reject", "promote"]
    reason: str
    cap: WireCapRepair | None


class DecisionReply(Message):
    """PROTO-21, PROTO-22: ``decision`` is null where record_hit decides nothing."""

    seq: Seq
    decision: WireDecision | None


class VictimsReply(Message):
    """PROTO-25: the victims in the order chosen, and the bytes they would release."""

    seq: Seq
    keys: list[Key]
    freed: Count


class CapRepairReply(Message):
    """PROTO-26, PROTO-27: ``cap`` is null where remove finds no such key."""

    seq: Seq
    cap: WireCapRepair | None


class WireEntry(Message):
    """PROTO-28: one entry (BEN-ENTRY-1) with its score, null where it has none (BEN-SCORE-1 to BEN-SCORE-4)."""

    key: Key
    state: Literal["probation", "admitted"]
    hits: Count
    misses: Count
    rw: Double
    ow: Double
    last_observation: Count
    score: Double | None


class WireGhost(Message):
    """PROTO-28: one ghost (BEN-GHOST-1)."""

    key: Key
    hits: Count
    rw: Double
    ow: Double
    last_observation: Count


class BenefitStateReply(Message):
    """PROTO-28: the clock, entries and ghosts in ascending key order, and the probation charge."""

    seq: Seq
    clock: Count
    entries: list[WireEntry]
    ghosts: list[WireGhost]
    probation_charge: Count


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
    "error-reply": TypeAdapter(ErrorReply),
}


def to_double(value: float) -> float | str:
    """PROTO-19: a double as it travels."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def from_double(value: float | str) -> float:
    """PROTO-19: a double as it arrived."""
    return NON_FINITE[value] if isinstance(value, str) else float(value)


def schema_text(name: str, adapter: TypeAdapter[Any]) -> str:
    """A model's JSON Schema as kvspec checks it in: draft 2020-12, sorted keys, two-space indent, trailing newline."""
    schema = adapter.json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema.setdefault("title", name)
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_texts() -> dict[str, str]:
    """PROTO-16: file name -> JSON Schema text."""
    return {f"{name}.schema.json": schema_text(name, adapter) for name, adapter in SCHEMAS.items()}
