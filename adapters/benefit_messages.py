"""The benefit policy's messages of the adapter protocol (spec/adapter-protocol.md section 5,
PROTO-19 to PROTO-28), one pydantic model each: its requests (configure_benefit to benefit_state)
and the replies only they have; adapters/protocol.py holds the other messages and every schema.
"""

from typing import Literal

from pydantic import Field

from .wire_values import CMD, CONFIG_INT, COUNT, DOUBLE, KEY, ConfigInt, Count, Double, Key, Message, Pinned, Seq

# Requests (kvspec -> implementation) -----------------------------------------------------------


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


# Replies (implementation -> kvspec) ------------------------------------------------------------


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
