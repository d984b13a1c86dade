"""The adapter protocol's messages (spec/adapter-protocol.md), one pydantic model each.

Both sides use these models: kvspec.adapters.process validates every reply of an implementation
under test against the model of the reply it expects (PROTO-16), and kvspec.adapters.serve
validates every request it reads. The JSON Schemas in spec/schemas/adapter/ are generated from
them (PROTO-16) by the maintainers' `kvspec spec schemas`: every field's description says what
the field is in the spec's words, and the rules of the protocol that JSON Schema cannot state.
"""

import json
import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticCustomError

from kvspec.reference.validation import INT64_MAX, INT64_MIN

PROTOCOL_VERSION = 1  # PROTO-5

# What JSON Schema cannot state, stated in the descriptions: its integer type admits 3.0 and 1e3,
# and a validator that reads numbers as doubles cannot tell 64-bit integers above 2^53 apart.
INTEGER = ("A JSON integer, never written with a fraction or an exponent (3.0, 1e3), which JSON Schema's integer type would admit; read "
           "and written exactly, since above 2^53 a double does not hold every integer, and the suite sends such integers (PROTO-3).")
COUNT = f"A count, in [0, 2^63 − 1]. {INTEGER}"
DOUBLE = ('A double (PROTO-19): a JSON number, or the string "NaN", "Infinity" or "-Infinity" for the values JSON has no number for; '
          "a number that overflows a double (1e400) is a wrong shape. Written so that it reads back as the same double, −0.0 included "
          "(the shortest such text, or 17 significant digits): the suite compares doubles exactly (BEN-ARITH-1).")

# PROTO-3: every integer is a JSON integer in 64 bits; hash ids are signed, counts are not.
HashId = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX, description=f"A hash id, a signed 64-bit integer (PROTO-3). {INTEGER}")]
Count = Annotated[int, Field(ge=0, le=INT64_MAX, description=COUNT)]
# Configuration values travel in the full signed range: the suite sends the values the clauses
# refuse (capacity 0, max_freq -1) to see them refused (PROTO-8), so the wire must carry them.
CONFIG_INT = f"Any signed 64-bit integer travels, the values a clause refuses too (PROTO-8). {INTEGER}"
ConfigInt = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX, description=CONFIG_INT)]
Seq = Annotated[int, Field(ge=0, le=INT64_MAX, description="PROTO-2: 0 for the first request, growing by 1 with each request; a reply "
                           f"carries the seq of the request it answers. {COUNT}")]
Blocks = Annotated[list[HashId], Field(min_length=1)]
Freq = Annotated[int, Field(ge=0, le=INT64_MAX, description=f"A freq, in [0, max_freq] (S3-FREQ-1); 0 for LRU and FIFO (PROTO-12). "
                                                         f"{INTEGER}")]
Entries = list[tuple[HashId, Freq]]
Policy = Literal["s3fifo", "lru", "fifo", "benefit"]  # PROTO-6
# PROTO-19: the benefit policy's keys and segment ids are unsigned (BEN-KEY-1); a double is a
# JSON number, or one of three strings for the values JSON has no number for.
KEY = f"A key or segment id, an unsigned 64-bit integer in [0, 2^64 − 1] (BEN-KEY-1, PROTO-19). {INTEGER}"
Key = Annotated[int, Field(ge=0, le=2**64 - 1, description=KEY)]
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
Double = Annotated[Annotated[float, Field(allow_inf_nan=False)] | Literal["NaN", "Infinity", "-Infinity"], Field(description=DOUBLE)]
Pinned = Annotated[list[Key], Field(description="PROTO-19: the pinned set, as a list of keys in ascending order, each once.")]
CMD = "PROTO-2: the request's name."


def exactly_a_boolean(value: object) -> object:
    """PROTO-16: a boolean literal refuses the numbers Python holds equal to it (1, 0, 1.0)."""
    if not isinstance(value, bool):
        raise PydanticCustomError("bool_type", "Input should be a valid boolean")
    return value


Yes = Annotated[Literal[True], BeforeValidator(exactly_a_boolean)]
No = Annotated[Literal[False], BeforeValidator(exactly_a_boolean)]


class Message(BaseModel):
    """Every message: strict JSON types, no field the schema does not name (PROTO-16), one line of
    UTF-8 JSON (PROTO-1)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


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


class WireBenefitConfig(Message):
    """PROTO-20: the seven knobs of BEN-CONF-1 to BEN-CONF-7, in the full signed range (PROTO-8)."""

    probation_byte_budget: ConfigInt = Field(description=f"BEN-CONF-1: valid in [0, 2^63 − 1]. {CONFIG_INT}")
    persistence_hit_threshold: ConfigInt = Field(description=f"BEN-CONF-2: valid in [1, 2^32 − 1]. {CONFIG_INT}")
    min_reuse_probability: Double = Field(description=f"BEN-CONF-3: valid as a finite double in [0, 1]; any double travels (PROTO-20). "
                                                      f"{DOUBLE}")
    decay_factor: Double = Field(description=f"BEN-CONF-4: valid as a finite double f, 0 < f < 1; any double travels (PROTO-20). {DOUBLE}")
    grace_observations: ConfigInt = Field(description=f"BEN-CONF-5: valid in [0, 2^63 − 1]. {CONFIG_INT}")
    ghost_capacity: ConfigInt = Field(description=f"BEN-CONF-6: valid in [0, 2^63 − 1]; 0 keeps no ghosts. {CONFIG_INT}")
    ghost_max_age_observations: ConfigInt = Field(description=f"BEN-CONF-7: valid in [0, 2^63 − 1]. {CONFIG_INT}")


class ConfigureBenefitRequest(Message):
    """PROTO-20: an empty benefit policy, replacing any earlier cache or policy."""

    cmd: Literal["configure_benefit"] = Field(description=CMD)
    seq: Seq
    config: WireBenefitConfig = Field(description="PROTO-20: the policy to build; all seven knobs are always sent.")


class WireCost(Message):
    """PROTO-21: one cost sample (BEN-COST-1); invalid samples travel too (PROTO-19)."""

    cold_prefill_cost: Double = Field(description=f"BEN-COST-1: the cost of a cold prefill, in the caller's units; the sample is valid "
                                      f"when both costs are finite and ≥ 0. {DOUBLE}")
    restore_cost: Double = Field(description=f"BEN-COST-1: the cost of a restore, in the caller's units. {DOUBLE}")


class ConsiderAdmissionRequest(Message):
    """PROTO-21: consider_admission (BEN-ADMIT-1 to BEN-ADMIT-9)."""

    cmd: Literal["consider_admission"] = Field(description=CMD)
    seq: Seq
    key: Key = Field(description=f"BEN-ADMIT-1: the offer's key. {KEY}")
    exclusive_bytes: Count = Field(description=f"BEN-KEY-1: the bytes the offer holds alone, a byte count. {COUNT}")
    shared: list[tuple[Key, Count]] = Field(description="PROTO-21: the offer's shared segments as [segment id, size] pairs, as the caller "
                                            "gave them, repeated ids and conflicting sizes included (BEN-ADMIT-1).")
    cost: WireCost = Field(description="BEN-COST-1: the offer's cost sample.")
    pinned: Pinned


class RecordHitRequest(Message):
    """PROTO-22: record_hit (BEN-HIT-1, BEN-HIT-2)."""

    cmd: Literal["record_hit"] = Field(description=CMD)
    seq: Seq
    key: Key = Field(description=f"BEN-HIT-1: the key hit, resident or not. {KEY}")
    cost: WireCost = Field(description="BEN-HIT-1: the hit's cost sample; one that is not valid changes nothing (BEN-HIT-3).")


class RecordMissRequest(Message):
    """PROTO-23: record_miss (BEN-MISS-1)."""

    cmd: Literal["record_miss"] = Field(description=CMD)
    seq: Seq
    key: Key = Field(description=f"BEN-MISS-1: the key missed, resident or not. {KEY}")


class ObservePressureRequest(Message):
    """PROTO-24: observe_pressure (BEN-DECAY-1 to BEN-DECAY-3); NaN and the infinities travel too."""

    cmd: Literal["observe_pressure"] = Field(description=CMD)
    seq: Seq
    pressure: Double = Field(description=f"BEN-DECAY-1: the pressure p, any double, NaN and the infinities included (PROTO-24). {DOUBLE}")


class ChooseVictimsRequest(Message):
    """PROTO-25: choose_victims (BEN-VICTIM-1 to BEN-VICTIM-5); selection only."""

    cmd: Literal["choose_victims"] = Field(description=CMD)
    seq: Seq
    bytes_to_free: Count = Field(description=f"BEN-VICTIM-3: the bytes to free, a byte count (BEN-KEY-1); 0 gives no victims "
                                             f"(BEN-VICTIM-1). {COUNT}")
    pinned: Pinned


class SelectProbationCapVictimsRequest(Message):
    """PROTO-26: select_probation_cap_victims (BEN-CAP-1 to BEN-CAP-5); selection only."""

    cmd: Literal["select_probation_cap_victims"] = Field(description=CMD)
    seq: Seq
    pinned: Pinned


class RemoveRequest(Message):
    """PROTO-27: remove (BEN-REMOVE-1)."""

    cmd: Literal["remove"] = Field(description=CMD)
    seq: Seq
    key: Key = Field(description=f"BEN-REMOVE-1: the key to remove, resident or not. {KEY}")
    pinned: Pinned


class BenefitStateRequest(Message):
    """PROTO-28: only asked of a "state"-level implementation."""

    cmd: Literal["benefit_state"] = Field(description=CMD)
    seq: Seq


class StopRequest(Message):
    """PROTO-13: no reply; the process exits with status 0."""

    cmd: Literal["stop"] = Field(description=CMD)
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
    """PROTO-10, and PROTO-23 and PROTO-24 for record_miss and observe_pressure."""

    seq: Seq
    ok: Yes = Field(description="PROTO-10, PROTO-23, PROTO-24: done.")


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


class WireCapRepair(Message):
    """PROTO-21, PROTO-26, PROTO-27: a probation-cap repair (BEN-CAP-4), victims in order."""

    status: Literal["satisfied", "deferred"] = Field(description="BEN-CAP-4: satisfied when the probation charge ends within the budget, "
                                                     "deferred otherwise.")
    victims: list[Key] = Field(description="BEN-CAP-4, BEN-CAP-5: the victims in the order selected, none pinned, none twice; selected, "
                               "not removed (BEN-ADMIT-8).")
    shortfall: Count = Field(description=f"BEN-CAP-4: charge − budget (> 0) when deferred, 0 when satisfied. {COUNT}")


class WireDecision(Message):
    """PROTO-21, PROTO-22: a decision, its opaque reason token (BEN-ADMIT-9) and its cap repair."""

    kind: Literal["admit-probation", "admit-persist", "reject", "promote"] = Field(description="BEN-ADMIT-1 to BEN-ADMIT-7, BEN-HIT-2: "
                                                                                   "the decision.")
    reason: str = Field(description="BEN-ADMIT-9: an opaque token from the fixed set named in spec/benefit.md section 7 and BEN-HIT-2.")
    cap: WireCapRepair | None = Field(description="BEN-ADMIT-8: the probation-cap repair of an admitted offer; null for a rejection and "
                                      "a promotion (PROTO-21, PROTO-22).")


class DecisionReply(Message):
    """PROTO-21, PROTO-22: ``decision`` is null where record_hit decides nothing."""

    seq: Seq
    decision: WireDecision | None = Field(description="PROTO-21: never null in reply to consider_admission; PROTO-22: null where "
                                          "record_hit decides nothing (BEN-HIT-1, BEN-HIT-3).")


class VictimsReply(Message):
    """PROTO-25: the victims in the order chosen, and the bytes they would release."""

    seq: Seq
    keys: list[Key] = Field(description="BEN-VICTIM-2, BEN-VICTIM-3: the victims in the order chosen; selected, not removed (PROTO-25).")
    freed: Count = Field(description=f"BEN-VICTIM-4: the bytes the victims would release. {COUNT}")


class CapRepairReply(Message):
    """PROTO-26, PROTO-27: ``cap`` is null where remove finds no such key."""

    seq: Seq
    cap: WireCapRepair | None = Field(description="PROTO-26: never null in reply to select_probation_cap_victims; PROTO-27: the fresh "
                                      "cap repair after a removal, null where remove finds no such key (BEN-REMOVE-1).")


class WireEntry(Message):
    """PROTO-28: one entry (BEN-ENTRY-1) with its score, null where it has none (BEN-SCORE-1 to BEN-SCORE-4)."""

    key: Key = Field(description=f"BEN-ENTRY-1: the entry's key. {KEY}")
    state: Literal["probation", "admitted"] = Field(description="BEN-ENTRY-1: the entry's state.")
    hits: Count = Field(description=f"BEN-ENTRY-1: the entry's hits. {COUNT}")
    misses: Count = Field(description=f"BEN-ENTRY-1: the entry's misses. {COUNT}")
    rw: Double = Field(description=f"BEN-ENTRY-1: the reuse weight. {DOUBLE}")
    ow: Double = Field(description=f"BEN-ENTRY-1: the observation weight. {DOUBLE}")
    last_observation: Count = Field(description=f"BEN-ENTRY-1: a clock value. {COUNT}")
    score: Double | None = Field(description=f"BEN-SCORE-1 to BEN-SCORE-4: the entry's score, null where it has none. {DOUBLE}")


class WireGhost(Message):
    """PROTO-28: one ghost (BEN-GHOST-1)."""

    key: Key = Field(description=f"BEN-GHOST-1: the removed entry's key. {KEY}")
    hits: Count = Field(description=f"BEN-GHOST-1: its hits. {COUNT}")
    rw: Double = Field(description=f"BEN-GHOST-1: its reuse weight, decayed since (BEN-DECAY-2). {DOUBLE}")
    ow: Double = Field(description=f"BEN-GHOST-1: its observation weight, decayed since (BEN-DECAY-2). {DOUBLE}")
    last_observation: Count = Field(description=f"BEN-GHOST-1: the clock at removal. {COUNT}")


class BenefitStateReply(Message):
    """PROTO-28: the clock, entries and ghosts in ascending key order, and the probation charge."""

    seq: Seq
    clock: Count = Field(description=f"BEN-CLOCK-1: the clock. {COUNT}")
    entries: list[WireEntry] = Field(description="PROTO-28: the entries, in ascending key order.")
    ghosts: list[WireGhost] = Field(description="PROTO-28: the ghosts, in ascending key order.")
    probation_charge: Count = Field(description=f"BEN-LEDGER-5: the probation charge. {COUNT}")


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
