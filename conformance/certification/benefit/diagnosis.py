"""Which clause a benefit-policy divergence points at (spec/benefit.md): the diagnosis a report
leads with, on the evidence rules of conformance/certification/block/diagnosis.py.

At the state level the implementation's own state is checked against the invariants first
(BEN-CLOCK-1, BEN-GHOST-3, BEN-SCORE-4, BEN-ENTRY-1); a state that differs is then read for the
clause the operation's rule breaks on it (a rejected offer that moved the clock is BEN-ADMIT-2, a
removal that left no ghost BEN-GHOST-1). A result that differs is read against the state before
the operation, which at the state level the two shared. At the results level that state is not
visible: a result that shows its own break (a pinned victim) is named, and otherwise the
operations are replayed through variants of the spec with one rule broken (benefit_variants.py:
the reference with one step replaced), and the diagnosis is consistent with every variant that
gives every answer the implementation gave.
"""

import math
from dataclasses import replace
from typing import Any

from kvspec.adapters import BENEFIT_METHODS
from kvspec.adapters.benefit import BenefitState
from kvspec.adapters.interface import Identity, Level
from kvspec.adapters.protocol import from_double
from kvspec.adapters.reference import ReferenceBenefitAdapter
from kvspec.adapters.wire import answer_benefit, received
from kvspec.conformance.certification.benefit.variants import VARIANTS
from kvspec.conformance.certification.block.diagnosis import Diagnosis, consistent, named
from kvspec.conformance.core.benefit_requests import Json
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CapRepair, CostSample, Decision, Victims
from kvspec.reference.benefit.config import is_valid
from kvspec.reference.benefit.ledger import Segment
from kvspec.reference.benefit.score import score
from kvspec.reference.benefit.selection import physical_release

COST_SIDES = ("cold_prefill_cost", "restore_cost")


REJECTED_BY = {"invalid-cost-sample": "BEN-ADMIT-1", "already-resident-key": "BEN-ADMIT-1", "duplicate-segment-reference": "BEN-ADMIT-1",
               "segment-size-conflict": "BEN-ADMIT-1", "no-net-benefit": "BEN-ADMIT-2"}


def offer_clauses(expected: Decision, actual: Decision) -> Diagnosis:
    """The same decision and reason with another cap repair points at the cap; a rejection where
    the spec admits, or the reverse, at the check that rejects; an admission of the right kind
    with another reason at BEN-ADMIT-4, of another kind with the right reason at BEN-ADMIT-6."""
    if expected[:2] == actual[:2]:
        return consistent("BEN-CAP-1", "BEN-CAP-2", "BEN-CAP-3", "BEN-CAP-4", "BEN-LEDGER-5")
    rejected = [decision.reason for decision in (expected, actual) if decision.kind == "reject" and decision.reason in REJECTED_BY]
    if rejected and (expected.kind == "reject") != (actual.kind == "reject"):
        side = "the spec rejects it" if expected.kind == "reject" else "it was rejected"
        return named(REJECTED_BY[rejected[0]], evidence=f"; {side} as {rejected[0]}")
    if len(rejected) == 2:
        return consistent(*dict.fromkeys(REJECTED_BY[reason] for reason in rejected), evidence=f"; rejected as {actual.reason}, "
                          f"where the spec's checks give {expected.reason}")
    if expected.kind == actual.kind != "reject":
        return named("BEN-ADMIT-4", evidence=f"; admitted as {actual.reason}, where the offer gives {expected.reason}")
    if expected.kind != "reject" and actual.kind != "reject" and expected.reason == actual.reason:
        return named("BEN-ADMIT-6", evidence=f"; admitted with {actual.kind}, where the hits give {expected.kind}")
    return consistent("BEN-ADMIT-1", "BEN-ADMIT-2", "BEN-ADMIT-4", "BEN-ADMIT-5", "BEN-ADMIT-6")


def hit_clauses(cost: CostSample) -> Diagnosis:
    """A hit's decision that differs: with an invalid sample any decision breaks BEN-HIT-3 by itself."""
    if not is_valid(cost):
        return named("BEN-HIT-3", evidence="; a hit with an invalid cost sample changes nothing and decides nothing")
    return consistent("BEN-HIT-2", "BEN-HIT-1")


def cap_clauses(actual: CapRepair, pinned: frozenset[int]) -> Diagnosis:
    if set(actual.victims) & pinned or len(set(actual.victims)) != len(actual.victims):
        return named("BEN-CAP-5", evidence="; a pinned or repeated cap victim")
    return consistent("BEN-CAP-2", "BEN-CAP-3", "BEN-CAP-4", "BEN-LEDGER-5", "BEN-ARITH-3")


def victim_clauses(reference: BenefitPolicy, expected: Victims, actual: Victims, pinned: frozenset[int]) -> Diagnosis:
    """A victim list that differs, read against the state before the operation (``reference``'s)."""
    keys, want_keys = actual.keys, expected.keys
    if set(keys) & pinned or len(set(keys)) != len(keys):
        return named("BEN-VICTIM-5", evidence="; a pinned or repeated victim")
    if set(keys) <= set(reference.entries) and actual.freed != physical_release(reference.entries, reference.ledger, keys):
        return named("BEN-VICTIM-4", evidence="; not the bytes these victims release")
    if sorted(keys) == sorted(want_keys):
        return named("BEN-VICTIM-2", evidence="; the same victims in another order")
    if set(want_keys) < set(keys) or set(keys) < set(want_keys):
        return consistent("BEN-VICTIM-3", "BEN-VICTIM-4", "BEN-GRACE-2", evidence="; it stopped too early or too late")
    return consistent("BEN-VICTIM-2", "BEN-VICTIM-3", "BEN-GRACE-1")


def negative_zero_score(state: BenefitState) -> bool:
    """BEN-SCORE-4: no score is -0.0, which equals +0.0 as a number and so is looked for apart."""
    return any(type(e.score) is float and e.score == 0.0 and math.copysign(1.0, e.score) < 0.0 for e in state.entries)


def invariant_clauses(config: BenefitConfig, clock_before: int, state: BenefitState) -> Diagnosis | None:
    """The invariants of the benefit state, on the implementation's own; None when all hold."""
    broken = []
    if type(state.clock) is not int or not clock_before <= state.clock <= clock_before + 1:
        broken.append(("BEN-CLOCK-1", f"the clock went from {clock_before} to {state.clock!r}"))
    if len(state.ghosts) > config.ghost_capacity:
        broken.append(("BEN-GHOST-3", f"{len(state.ghosts)} ghosts, above ghost_capacity {config.ghost_capacity}"))
    if any(e.score is not None and not (type(e.score) is float and math.isfinite(e.score)) for e in state.entries) or negative_zero_score(state):
        broken.append(("BEN-SCORE-4", "a score that is not a finite double other than -0.0"))
    if any(e.state not in ("probation", "admitted") for e in state.entries):
        broken.append(("BEN-ENTRY-1", "an entry neither probation nor admitted"))
    if not broken:
        return None
    return named(*(clause for clause, _ in broken), evidence="; " + "; ".join(why for _, why in broken))


def state_clauses(operation: Json, result: object, clock_before: int, reference: BenefitPolicy, expected: BenefitState,
                  actual: BenefitState) -> Diagnosis:
    """A state that differs after ``operation`` (as a protocol request), which returned ``result``;
    ``reference`` is the spec's policy after it, whose state is ``expected``."""
    config = reference.config
    broken = invariant_clauses(config, clock_before, actual)
    if broken is not None:
        return broken
    command, key = operation["cmd"], operation.get("key")
    if command == "record_hit" and not is_valid(CostSample(*(from_double(operation["cost"][side]) for side in COST_SIDES))):
        return named("BEN-HIT-3", evidence="; a hit with an invalid cost sample changed the state")
    if expected.clock != actual.clock:
        moved = f"; the clock went from {clock_before} to {actual.clock}, the spec's to {expected.clock}"
        if command == "consider_admission":
            if isinstance(result, Decision) and result.kind == "reject":
                return named("BEN-ADMIT-2", "BEN-CLOCK-2", evidence=moved + " on a rejected offer")
            return named("BEN-CLOCK-2", evidence=moved + " on an admitted offer")
        return named("BEN-CLOCK-3" if command in ("record_hit", "record_miss") else "BEN-CLOCK-4", evidence=moved)
    if expected.ghosts != actual.ghosts:
        return ghost_clauses(command, key, expected, actual)
    if expected.probation_charge != actual.probation_charge:
        return consistent("BEN-LEDGER-5", "BEN-ARITH-3", "BEN-LEDGER-3")
    rescored = co_referenced_scores(operation, reference, expected, actual)
    if rescored is not None:
        return rescored
    by_operation = {"record_hit": ("BEN-HIT-1",), "record_miss": ("BEN-MISS-1",), "observe_pressure": ("BEN-DECAY-2", "BEN-DECAY-1"),
                    "consider_admission": ("BEN-ADMIT-5", "BEN-ADMIT-6", "BEN-ADMIT-7"),
                    "remove": ("BEN-REMOVE-1", "BEN-LEDGER-2", "BEN-LEDGER-3")}
    return consistent(*by_operation.get(command, ("BEN-SCORE-4", "BEN-HIT-1", "BEN-MISS-1", "BEN-DECAY-2", "BEN-ADMIT-5")))


def co_referenced_scores(operation: Json, reference: BenefitPolicy, expected: BenefitState, actual: BenefitState) -> Diagnosis | None:
    """Entries other than the offered one that differ in their score alone, each sharing a segment
    with the offer: an admission changes no other entry but the reference counts of the segments it
    shares (BEN-LEDGER-1), and so their fractional bytes (BEN-LEDGER-3). Named when each such score
    is the one its entry had with the counts before the admission; None when the difference is another."""
    want, got = {e.key: e for e in expected.entries}, {e.key: e for e in actual.entries}
    key = operation.get("key")
    differ = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])
    if (operation["cmd"] != "consider_admission" or key not in reference.entries or want.keys() != got.keys() or not differ or key in differ
            or any(replace(got[k], score=want[k].score) != want[k] for k in differ)):
        return None  # a rejected offer changes nothing (BEN-ADMIT-1, BEN-ADMIT-2)
    offered = {segment_id for segment_id, _ in operation["shared"]}
    if any(offered.isdisjoint(reference.entries[k].segments) for k in differ):
        return None
    before = {segment_id: Segment(s.size, {k: True for k in s.refs if k != key}) for segment_id, s in reference.ledger.items()}
    floor = reference.config.min_reuse_probability
    if any(got[k].score != score(before, k, reference.entries[k], floor) for k in differ):
        return consistent("BEN-LEDGER-3", "BEN-SCORE-3", evidence=f"; the scores of {differ} differ, each of which shares a segment with the "
                          f"offer of {key}")
    return named("BEN-LEDGER-3", evidence=f"; the scores of {differ} are the ones before the offer of {key}, which shares segments with them: "
                 "their fractional bytes did not follow the segments' new reference counts")


def ghost_clauses(command: str, key: object, expected: BenefitState, actual: BenefitState) -> Diagnosis:
    want, got = {g[0]: g for g in expected.ghosts}, {g[0]: g for g in actual.ghosts}
    missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
    if command == "remove" and key in missing:
        return named("BEN-GHOST-1", evidence=f"; the removal of {key} left no ghost of it")
    if command == "remove" and extra:
        return named("BEN-GHOST-2", evidence=f"; ghost {min(extra)} should have been dropped to make room")
    if command == "remove" and key in want and want[key] != got.get(key):
        return named("BEN-GHOST-1", evidence=f"; the ghost of {key} is {got.get(key)}, expected {want[key]}")
    if command == "consider_admission" and key in extra:
        return named("BEN-ADMIT-5", evidence=f"; the offer of {key} did not take its ghost over")
    if command in ("consider_admission", "observe_pressure") and (missing or extra):
        return named("BEN-GHOST-4", evidence=f"; the ghosts kept are {sorted(got)}, expected {sorted(want)}")
    if command == "observe_pressure":
        return consistent("BEN-DECAY-2", "BEN-DECAY-1")
    return consistent("BEN-GHOST-1", "BEN-GHOST-2", "BEN-GHOST-4")


# -- the results level ---------------------------------------------------------------------------


class Answered:
    """The implementation at its last operation: every method returns what it answered there."""

    identity = Identity("its last answer", "", "")
    level: Level = "results"
    policies = ("benefit",)

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def answered(self, *args: Any) -> Any:
        return self.answer


for _name in (*BENEFIT_METHODS, "close"):  # methods of its own, as the BenefitAdapter protocol is checked (typeguard)
    setattr(Answered, _name, Answered.answered)


def replies(adapter: Any, config: Json, operations: list[Json], with_state: bool) -> list[Json] | None:
    """Each operation's reply as it travels (with the state after it, ``with_state``); None when
    the configuration is refused."""
    if "refused" in answer_benefit(adapter, received({"cmd": "configure_benefit", "config": config})):
        return None
    answers = []
    for operation in operations:
        answers.append(answer_benefit(adapter, received(operation)))
        if with_state:
            answers.append(answer_benefit(adapter, received({"cmd": "benefit_state"})))
    return answers


def reproducing_variants(config: Json, operations: list[Json], actual: object, state_level: bool, of_state: bool) -> list[str]:
    """The clauses of the variants of the spec that give every answer the implementation gave: the
    spec's (with the state after each operation, at the state level), then ``actual``, its result
    of the last operation or (``of_state``) its state after it."""
    spec = replies(ReferenceBenefitAdapter(), config, operations, state_level)
    assert spec is not None, "the spec accepted this configuration"
    last = answer_benefit(Answered(actual), received({"cmd": "benefit_state"} if of_state else operations[-1]))
    given = spec[:len(spec) - (1 if of_state or not state_level else 2)] + [last]
    return [variant.breaks for variant in VARIANTS
            if (replies(ReferenceBenefitAdapter(policy_factory=variant), config, operations, state_level) or [])[:len(given)] == given]


def by_variants(diagnosis: Diagnosis, config: Json, operations: list[Json], actual: object, state_level: bool, of_state: bool = False) -> Diagnosis:
    """A difference, against the variants of the spec with one rule broken. At the state level,
    one that gives every answer and state the implementation gave is named when nothing else is;
    at the results level, where a result read against the spec's state is only consistent with a
    break, the variants that give every answer say which."""
    if diagnosis.named and (state_level or diagnosis.named[0] in ("BEN-VICTIM-5", "BEN-CAP-5", "BEN-HIT-3")):
        return diagnosis  # shown on the implementation's own state, or in the result itself (a pinned or repeated victim; a decision on an invalid sample)
    variants = list(dict.fromkeys(reproducing_variants(config, operations, actual, state_level, of_state)))
    if state_level:
        if len(variants) == 1:
            return named(*variants, evidence="; the spec with only this rule broken gives every answer and state the implementation gave")
        return diagnosis
    if variants:
        return consistent(*variants, evidence=f"; the spec with {'this rule' if len(variants) == 1 else 'one of these rules'} broken gives "
                          "every answer the implementation gave (its state is not visible at the results level)")
    return consistent(*diagnosis.clauses, evidence=diagnosis.evidence + " (read against the spec's state; the implementation's is not "
                      "visible at the results level)")
