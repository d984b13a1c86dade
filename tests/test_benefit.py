"""spec/benefit.md sections 1 to 15: the benefit policy, clause by clause.

Expected values are worked out by hand from the clause's words in the comments beside them.
Sizes are small integers so that the doubles involved are exact unless a test is about rounding.
"""

import math
from dataclasses import replace
from fractions import Fraction

import pytest

from kvspec.reference import ConfigError, KvspecError
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CostSample, selection
from kvspec.reference.benefit.config import net_benefit
from kvspec.reference.benefit.ledger import fractional_bytes, register, release, shares_add_up
from kvspec.reference.benefit.policy import Ghost, fingerprint
from kvspec.reference.benefit.score import Entry, reuse_probability, score
from kvspec.reference.benefit.selection import in_grace, probation_charge

from support import violation

NAN, INF = float("nan"), float("inf")
COST = CostSample(100.0, 30.0)  # net benefit 70
NO_PIN: frozenset[int] = frozenset()


def policy(**config: object) -> BenefitPolicy:
    return BenefitPolicy(BenefitConfig(**config))  # type: ignore[arg-type]


def admit(p: BenefitPolicy, key: int, exclusive: int = 10, shared: list[tuple[int, int]] | None = None, cost: CostSample = COST) -> str:
    return p.consider_admission(key, exclusive, shared or [], cost).kind


# --- 1. Configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "clause"),
    [
        ("probation_byte_budget", -1, "BEN-CONF-1"),
        ("probation_byte_budget", 2**63, "BEN-CONF-1"),
        ("persistence_hit_threshold", 0, "BEN-CONF-2"),
        ("persistence_hit_threshold", 2**32, "BEN-CONF-2"),  # findings F-18: a 32-bit count
        ("min_reuse_probability", 1.5, "BEN-CONF-3"),
        ("min_reuse_probability", float("nan"), "BEN-CONF-3"),
        ("min_reuse_probability", 0, "BEN-CONF-3"),
        ("decay_factor", 0.0, "BEN-CONF-4"),
        ("decay_factor", 1.0, "BEN-CONF-4"),
        ("decay_factor", float("inf"), "BEN-CONF-4"),
        ("grace_observations", -1, "BEN-CONF-5"),
        ("ghost_capacity", True, "BEN-CONF-6"),
        ("ghost_max_age_observations", 1.0, "BEN-CONF-7"),
    ],
)
def test_BEN_CONF_8_an_invalid_configuration_is_refused_naming_its_clause(field: str, value: object, clause: str) -> None:
    with pytest.raises(ConfigError, match=clause):
        policy(**{field: value})


def test_BEN_CONF_2_the_threshold_reaches_the_largest_32_bit_count() -> None:
    p = policy(persistence_hit_threshold=2**32 - 1)
    admit(p, 1)
    assert p.record_hit(1, COST) is None and p.entries[1].state == "probation"


def test_BEN_CONF_1_to_7_defaults() -> None:
    assert BenefitConfig() == BenefitConfig(268_435_456, 2, 0.01, 0.9, 32, 4096, 1024)


def test_BEN_CONF_1_a_budget_of_0_is_valid_and_admits_nothing_to_probation_for_free() -> None:
    p = policy(probation_byte_budget=0)
    decision = p.consider_admission(1, 10, [], COST)
    assert decision.kind == "admit-probation" and decision.cap is not None
    assert decision.cap.status == "satisfied" and decision.cap.victims == (1,)


# --- 2. Inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda p: p.consider_admission(-1, 10, [], COST), "key"),
        (lambda p: p.consider_admission(2**64, 10, [], COST), "key"),
        (lambda p: p.consider_admission(1, 2**63, [], COST), "exclusive_bytes"),
        (lambda p: p.consider_admission(1, 10, [(True, 4)], COST), "segment id"),
        (lambda p: p.consider_admission(1, 10, [(7, -4)], COST), "segment size"),
        (lambda p: p.choose_victims(-1), "bytes_to_free"),
        (lambda p: p.record_miss(2**64), "key"),
    ],
)
def test_BEN_KEY_1_a_bad_argument_is_refused_by_name_and_changes_nothing(call: object, argument: str) -> None:
    p = policy()
    admit(p, 5)
    before = fingerprint(p)
    with pytest.raises(KvspecError, match=f"BEN-KEY-1: {argument} must be"):
        call(p)  # type: ignore[operator]
    assert fingerprint(p) == before


@pytest.mark.parametrize("cost", [CostSample(float("nan"), 1.0), CostSample(1.0, float("inf")), CostSample(-1.0, 0.0), CostSample(5, 1.0)])
def test_BEN_COST_1_an_invalid_sample_is_rejected(cost: CostSample) -> None:
    p = policy()
    assert p.consider_admission(1, 10, [], cost) == ("reject", "invalid-cost-sample", None)


def test_BEN_COST_2_net_benefit_is_never_negative_nor_a_negative_zero() -> None:
    assert net_benefit(CostSample(10.0, 4.0)) == 6.0
    assert net_benefit(CostSample(4.0, 10.0)) == 0.0
    for cost in (CostSample(-0.0, 0.0), CostSample(0.0, 0.0), CostSample(4.0, 10.0)):  # findings F-19
        assert math.copysign(1.0, net_benefit(cost)) == 1.0, cost


def test_BEN_KEY_2_the_bytes_held_reach_2_53_and_no_further() -> None:
    """Findings F-17: exclusive bytes and new segments count, a segment the ledger holds does not."""
    p = policy(grace_observations=0)
    admit(p, 1, exclusive=2**52)
    admit(p, 2, exclusive=2**52 - 8, shared=[(7, 4), (7, 4), (8, 4)])  # rejected (a duplicate), and counted by id once
    admit(p, 3, exclusive=2**52 - 8, shared=[(7, 4), (8, 4)])
    admit(p, 4, exclusive=0, shared=[(7, 4)])  # the ledger holds 7: nothing added, at 2**53 exactly
    before = fingerprint(p)
    for call in (lambda: p.consider_admission(5, 1, [], COST), lambda: p.consider_admission(5, 0, [(9, 1)], COST),
                 lambda: p.consider_admission(1, 1, [], CostSample(NAN, 0.0))):  # a caller error before BEN-ADMIT-1's checks
        with pytest.raises(KvspecError, match="BEN-KEY-2: exclusive_bytes and shared would take the bytes held from 9007199254740992"):
            call()
    assert fingerprint(p) == before
    victims = p.choose_victims(2**63 - 1)
    assert victims.freed == 2**53 and p.select_probation_cap_victims(frozenset({1, 3, 4})) == ("deferred", (), 2**53 - 2**28)
    p.remove(3)  # its exclusive bytes and segment 8, its alone, leave; segment 7 stays with key 4
    assert p.held == 2**52 + 4 and p.consider_admission(5, 2**52 - 4, [], COST).kind == "admit-probation"


# --- 3, 4. Entries and the score ---------------------------------------------------------------


def test_BEN_ENTRY_1_an_admitted_entry_carries_its_fields() -> None:
    p = policy()
    admit(p, 4, exclusive=12, shared=[(9, 6)])
    assert p.entries[4] == Entry("probation", 0, 0, 0.0, 0.0, COST, 12, [9], 1)


@pytest.mark.parametrize(("rw", "ow", "expected"), [(1.0, 4.0, 0.25), (3.0, 2.0, 1.0), (-1.0, 2.0, 0.0), (1.0, 0.0, 0.0), (1.0, -1.0, 0.0)])
def test_BEN_ENTRY_2_reuse_probability_is_clamped_and_0_without_observations(rw: float, ow: float, expected: float) -> None:
    assert reuse_probability(Entry("probation", 0, 0, rw, ow, COST, 1)) == expected


def test_BEN_SCORE_2_a_fresh_entry_scores_with_the_minimum_reuse_probability() -> None:
    p = policy()
    admit(p, 1, exclusive=1000)
    # rw = ow = 0: reuse_probability 0, floored to 0.01; 0.01 * 70 / 1000
    assert score(p.ledger, 1, p.entries[1], 0.01) == 0.01 * 70.0 / 1000.0


def test_BEN_SCORE_3_bytes_include_the_fractional_shares_and_no_bytes_means_no_score() -> None:
    p = policy()
    admit(p, 1, exclusive=100, shared=[(7, 100)])
    admit(p, 2, exclusive=0, shared=[(7, 100)])
    admit(p, 3, exclusive=0)
    # key 1: 100 + 100/2 = 150 bytes
    assert score(p.ledger, 1, p.entries[1], 0.01) == 0.01 * 70.0 / 150.0
    assert score(p.ledger, 3, p.entries[3], 0.01) is None


def test_BEN_SCORE_4_an_overflowing_score_is_no_score() -> None:
    p = policy()
    huge = CostSample(1.7e308, 0.0)
    admit(p, 1, exclusive=0, shared=[(7, 1)], cost=huge)
    admit(p, 2, exclusive=0, shared=[(7, 1)], cost=huge)
    p.record_hit(1, huge)  # rw = ow = 1: reuse 1
    # 1.0 * 1.7e308 / 0.5 overflows to infinity
    assert score(p.ledger, 1, p.entries[1], 0.01) is None
    assert p.choose_victims(1).keys == (2,)  # 1 has a hit and no score: never a candidate


@pytest.mark.parametrize("invalid", [CostSample(NAN, 0.0), CostSample(1.0, INF), CostSample(-1.0, 0.0)])
def test_BEN_SCORE_1_an_entry_whose_last_sample_is_invalid_has_no_score(invalid: CostSample) -> None:
    """No operation stores an invalid sample (BEN-ADMIT-1, BEN-HIT-3): the score's definition alone."""
    p = policy()
    admit(p, 1)
    assert score(p.ledger, 1, replace(p.entries[1], last_cost=invalid), 0.01) is None


@pytest.mark.parametrize("invalid", [CostSample(NAN, 0.0), CostSample(1.0, INF), CostSample(-1.0, 0.0), CostSample(0.0, -INF)])
def test_BEN_HIT_3_a_hit_with_an_invalid_sample_changes_nothing(invalid: CostSample) -> None:
    """Findings F-16, the issue's smallest case: threshold 1, an entry of 0 bytes, a hit with
    (NaN, 1): no promotion, and the state (clock included) exactly as before."""
    p = policy(persistence_hit_threshold=1, grace_observations=0)
    p.consider_admission(1, 0, [], COST)
    before = fingerprint(p)
    assert p.record_hit(1, invalid) is None and p.record_hit(2, invalid) is None  # resident or not
    assert fingerprint(p) == before and p.entries[1].state == "probation" and p.clock == 1
    assert p.choose_victims(10**6).keys == (1,)  # still a no-hit probationer, the first victim


def test_BEN_SCORE_5_the_latest_sample_counts_not_an_average() -> None:
    p = policy()
    admit(p, 1, exclusive=10)
    p.record_hit(1, CostSample(20.0, 10.0))
    # hits 1: rw = ow = 1, reuse 1; the latest net benefit is 10
    assert score(p.ledger, 1, p.entries[1], 0.01) == 1.0 * 10.0 / 10.0


# --- 5. The ledger ----------------------------------------------------------------------------


def test_BEN_LEDGER_1_the_first_registration_fixes_the_size_and_a_repeat_changes_nothing() -> None:
    ledger = {}
    register(ledger, 1, [(7, 8)])
    register(ledger, 1, [(7, 8)])
    register(ledger, 2, [(7, 8)])
    assert ledger[7].size == 8 and list(ledger[7].refs) == [1, 2]


def test_BEN_LEDGER_1_a_conflicting_size_is_rejected_before_it_reaches_the_ledger() -> None:
    p = policy()
    admit(p, 1, shared=[(7, 8)])
    assert p.consider_admission(2, 10, [(7, 9)], COST).reason == "segment-size-conflict"
    assert p.ledger[7].size == 8


def test_BEN_LEDGER_2_releasing_the_last_reference_drops_the_segment() -> None:
    ledger = {}
    register(ledger, 1, [(7, 8)])
    register(ledger, 2, [(7, 8)])
    release(ledger, 1, [7])
    assert list(ledger[7].refs) == [2]
    release(ledger, 2, [7])
    assert ledger == {}


def test_BEN_LEDGER_3_a_key_is_charged_size_over_reference_count_for_each_segment() -> None:
    ledger = {}
    for key in (1, 2, 3):
        register(ledger, key, [(10, 90)])
    register(ledger, 1, [(11, 8)])
    assert fractional_bytes(ledger, 1, [10, 11]) == 90 / 3 + 8.0  # 38.0
    assert fractional_bytes(ledger, 4, [10]) == 0.0  # not a reference of segment 10


def test_BEN_LEDGER_4_the_shares_of_a_segment_add_up_to_its_size() -> None:
    ledger = {}
    for key in range(1, 8):
        register(ledger, key, [(10, 1000)])
    total = sum(fractional_bytes(ledger, key, [10]) for key in range(1, 8))
    assert abs(total - 1000) < 1e-9 and shares_add_up(ledger)
    ledger[10].refs.clear()  # a segment kept with no reference left (BEN-LEDGER-2 broken) is charged to no one
    assert not shares_add_up(ledger)


def test_BEN_LEDGER_5_BEN_ARITH_3_one_ceiling_after_the_sum() -> None:
    p = policy(probation_byte_budget=10**9)
    for key in range(1, 10):
        admit(p, key, exclusive=0, shared=[(7, 4)])
    # nine shares of 4/9 sum to 4.000000000000001; one ceiling charges 5 (a ceiling per entry would charge 9)
    assert sum([4 / 9] * 9) == 4.000000000000001
    assert probation_charge(p.entries, p.ledger) == 5


def test_BEN_ENTRY_3_BEN_ARITH_2_the_charge_sums_in_ascending_key_order() -> None:
    p = policy(probation_byte_budget=2**62)
    # inserted in descending key order; in key order 2**52 + 0.5 rounds to 2**52 (ties to even), twice
    admit(p, 3, exclusive=0, shared=[(7, 1)])
    admit(p, 2, exclusive=0, shared=[(7, 1)])
    admit(p, 1, exclusive=2**52)
    assert probation_charge(p.entries, p.ledger) == 2**52  # in insertion order, 0.5 + 0.5 + 2**52 = 2**52 + 1


def test_BEN_ARITH_1_scores_are_doubles_in_the_order_written_not_exact_values() -> None:
    p = policy()
    cost = CostSample(0.3, 0.1)
    admit(p, 1, exclusive=3, cost=cost)
    exact = Fraction(1, 100) * (Fraction(0.3) - Fraction(0.1)) / 3
    value = score(p.ledger, 1, p.entries[1], 0.01)
    assert value == 0.01 * (0.3 - 0.1) / 3.0 and Fraction(value) != exact


# --- 6. The clock ------------------------------------------------------------------------------


def test_BEN_CLOCK_1_BEN_CLOCK_2_it_starts_at_0_and_an_admission_advances_it_by_1() -> None:
    p = policy()
    assert p.clock == 0
    admit(p, 1)
    admit(p, 2)
    assert p.clock == 2


def test_BEN_CLOCK_3_hits_with_valid_samples_and_all_misses_advance_it_resident_or_not() -> None:
    p = policy()
    p.record_hit(99, COST)
    assert p.clock == 1
    p.record_hit(99, CostSample(float("nan"), 1.0))
    assert p.clock == 1
    p.record_miss(99)
    assert p.clock == 2


def test_BEN_CLOCK_4_remove_pressure_and_selection_leave_it() -> None:
    p = policy(probation_byte_budget=5)
    admit(p, 1)
    p.observe_pressure(0.5)
    p.choose_victims(10)
    p.select_probation_cap_victims()
    p.remove(1)
    assert p.clock == 1


# --- 7. Admission ------------------------------------------------------------------------------


def test_BEN_ADMIT_1_the_checks_run_in_order() -> None:
    p = policy()
    admit(p, 1, shared=[(7, 4)])
    nan = CostSample(float("nan"), 0.0)
    assert p.consider_admission(1, 10, [(8, 1), (8, 1)], nan).reason == "invalid-cost-sample"
    assert p.consider_admission(1, 10, [(8, 1), (8, 1)], COST).reason == "already-resident-key"
    assert p.consider_admission(2, 10, [(7, 5), (7, 5)], COST).reason == "duplicate-segment-reference"
    assert p.consider_admission(2, 10, [(7, 5)], COST).reason == "segment-size-conflict"


def test_BEN_ADMIT_2_a_rejected_offer_changes_nothing_not_even_the_clock_or_the_ghosts() -> None:
    p = policy(ghost_max_age_observations=1)
    admit(p, 1)
    p.remove(1)  # a ghost at clock 1
    admit(p, 2)
    before = fingerprint(p)
    assert p.consider_admission(1, 10, [], CostSample(5.0, 5.0)) == ("reject", "no-net-benefit", None)
    assert fingerprint(p) == before and 1 in p.ghosts  # the implementation would have advanced to 3 and expired it


def test_BEN_ADMIT_3_an_admission_advances_the_clock_then_expires_old_ghosts() -> None:
    p = policy(ghost_max_age_observations=1)
    admit(p, 1)
    p.remove(1)  # ghost at 1
    admit(p, 2)  # clock 2: keeps ghosts at >= 1
    assert 1 in p.ghosts
    admit(p, 3)  # clock 3: keeps >= 2
    assert 1 not in p.ghosts


def test_BEN_ADMIT_4_the_reason_of_an_admission() -> None:
    p = policy()
    assert p.consider_admission(1, 0, [], COST).reason == "zero-exclusive-bytes"
    assert p.consider_admission(2, 0, [(7, 4)], COST).reason == "probation-new-entry"
    assert p.consider_admission(3, 5, [], COST).reason == "probation-new-entry"


def test_BEN_ADMIT_5_BEN_ADMIT_6_a_ghost_is_taken_over_and_the_re_offer_counts_as_a_reuse() -> None:
    p = policy()
    admit(p, 1)
    p.record_hit(1, COST)  # hits 1, rw = ow = 1
    p.remove(1)
    assert p.ghosts[1] == Ghost(1, 1.0, 1.0, 2)
    decision = p.consider_admission(1, 10, [], COST)
    # hits 2 >= threshold 2: admitted at once; rw = ow = 1 * 0.9 + 1
    assert decision.kind == "admit-persist" and decision.reason == "probation-new-entry"
    entry = p.entries[1]
    assert (entry.state, entry.hits, entry.rw, entry.ow) == ("admitted", 2, 1.9, 1.9) and 1 not in p.ghosts


def test_BEN_ADMIT_5_without_a_ghost_an_entry_starts_from_nothing() -> None:
    p = policy()
    assert admit(p, 1) == "admit-probation"
    assert (p.entries[1].hits, p.entries[1].rw, p.entries[1].ow) == (0, 0.0, 0.0)


def test_BEN_ADMIT_7_the_segments_are_registered_and_the_entry_stamped() -> None:
    p = policy()
    admit(p, 1)
    admit(p, 2, shared=[(7, 4), (8, 2)])
    assert list(p.ledger) == [7, 8] and p.entries[2].last_observation == 2 and p.entries[2].misses == 0


def test_BEN_ADMIT_8_an_admission_carries_the_cap_victims_selected_not_removed() -> None:
    p = policy(probation_byte_budget=15)
    admit(p, 1)
    decision = p.consider_admission(2, 10, [], COST)
    assert decision.cap is not None and decision.cap.victims == (1,)
    assert 1 in p.entries


def test_BEN_ADMIT_9_reasons_are_opaque_tokens_from_a_fixed_set() -> None:
    p = policy(persistence_hit_threshold=1)
    reasons = {
        p.consider_admission(1, 0, [], COST).reason,
        p.consider_admission(2, 5, [], COST).reason,
        p.consider_admission(3, 5, [], CostSample(1.0, 2.0)).reason,
        p.consider_admission(2, 5, [], COST).reason,
        p.consider_admission(4, 5, [], CostSample(-1.0, 0.0)).reason,
        p.consider_admission(4, 5, [(1, 1), (1, 1)], COST).reason,
        p.consider_admission(5, 5, [(1, 1)], COST).reason,
        p.consider_admission(6, 5, [(1, 2)], COST).reason,
    }
    assert reasons == {"zero-exclusive-bytes", "probation-new-entry", "no-net-benefit", "already-resident-key", "invalid-cost-sample",
                       "duplicate-segment-reference", "segment-size-conflict"}


# --- 8. Hits, misses, promotion --------------------------------------------------------------------


def test_BEN_HIT_1_BEN_HIT_2_a_second_hit_promotes_a_probationer() -> None:
    p = policy()
    admit(p, 1)
    later = CostSample(40.0, 10.0)
    assert p.record_hit(1, later) is None
    entry = p.entries[1]
    assert (entry.hits, entry.rw, entry.ow, entry.last_observation, entry.last_cost) == (1, 1.0, 1.0, 2, later)
    assert p.record_hit(1, COST) == ("promote", "probation-second-hit", None)
    assert (entry.state, entry.rw, entry.ow) == ("admitted", 1.9, 1.9)
    assert p.record_hit(1, COST) is None  # already admitted


def test_BEN_HIT_1_a_hit_on_a_key_that_is_not_resident_changes_only_the_clock() -> None:
    p = policy()
    admit(p, 1)
    before = fingerprint(p)
    p.record_hit(2, COST)
    assert fingerprint(p)[1:] == before[1:] and p.clock == 2


def test_BEN_MISS_1_a_miss_lowers_the_reuse_probability_and_refreshes_nothing() -> None:
    p = policy()
    admit(p, 1)
    p.record_hit(1, COST)  # rw = ow = 1 at clock 2
    p.record_miss(1)
    entry = p.entries[1]
    assert (entry.misses, entry.rw, entry.ow, entry.last_observation) == (1, 1.0, 1.9, 2)
    assert reuse_probability(entry) == 1.0 / 1.9


# --- 9. Grace --------------------------------------------------------------------------------------


def test_BEN_GRACE_1_an_entry_is_in_grace_for_grace_observations_ticks() -> None:
    entry = Entry("probation", 0, 0, 0.0, 0.0, COST, 1, [], 10)
    assert in_grace(entry, 41, 32) and not in_grace(entry, 42, 32)
    assert in_grace(entry, 5, 32)  # a clock behind the entry floors the difference at 0


def test_BEN_GRACE_2_victims_in_grace_are_taken_only_in_the_second_pass() -> None:
    p = policy(grace_observations=2, probation_byte_budget=10**6)
    admit(p, 1)  # clock 1
    admit(p, 2)  # clock 2
    admit(p, 3)  # clock 3: 1 is out of grace (3 - 1 = 2), 2 and 3 are in
    assert p.choose_victims(10).keys == (1,)
    assert p.choose_victims(20).keys == (1, 2)  # 2 only in the second pass, oldest first


def test_BEN_GRACE_2_the_probation_cap_ignores_grace() -> None:
    p = policy(grace_observations=1000, probation_byte_budget=15)
    admit(p, 1)
    assert p.consider_admission(2, 10, [], COST).cap == ("satisfied", (1,), 0)


# --- 10. Decay ---------------------------------------------------------------------------------


def hit_entry(p: BenefitPolicy) -> Entry:
    admit(p, 1)
    p.record_hit(1, COST)
    p.record_miss(1)  # rw 1, ow 1.9
    return p.entries[1]


@pytest.mark.parametrize(("pressure", "rw", "ow"), [(float("inf"), 0.0, 1.9), (2.0, 0.0, 1.9), (float("-inf"), 0.9, 1.9 * 0.9), (-3.0, 0.9, 1.9 * 0.9)])
def test_BEN_DECAY_1_infinities_and_out_of_range_pressures_are_clamped(pressure: float, rw: float, ow: float) -> None:
    p = policy()
    entry = hit_entry(p)
    p.observe_pressure(pressure)
    assert (entry.rw, entry.ow) == (rw, ow)


def test_BEN_DECAY_1_nan_is_ignored() -> None:
    p = policy()
    hit_entry(p)
    before = fingerprint(p)
    p.observe_pressure(float("nan"))
    assert fingerprint(p) == before


def test_BEN_DECAY_2_entries_and_ghosts_decay_and_p_0_keeps_the_ratio() -> None:
    p = policy()
    entry = hit_entry(p)
    admit(p, 2)
    p.record_hit(2, COST)
    p.remove(2)
    p.observe_pressure(0.5)
    # rw *= f * (1 - p); ow *= f + (1 - f) * p, with f = 0.9 and p = 0.5
    keep, observe = 0.9 * (1.0 - 0.5), 0.9 + (1.0 - 0.9) * 0.5
    assert (entry.rw, entry.ow) == (1.0 * keep, 1.9 * observe)
    assert (p.ghosts[2].rw, p.ghosts[2].ow) == (1.0 * keep, 1.0 * observe)
    ratio = entry.rw / entry.ow
    p.observe_pressure(0.0)
    assert abs(entry.rw / entry.ow - ratio) < 1e-15


def test_BEN_DECAY_3_pressure_expires_old_ghosts_and_nothing_else_decays_with_time() -> None:
    p = policy(ghost_max_age_observations=2)
    admit(p, 1)
    p.remove(1)  # ghost at 1
    for _ in range(3):
        p.record_miss(9)  # clock 4: ghosts older than 2 stay until something expires them
    assert 1 in p.ghosts
    p.observe_pressure(0.0)
    assert 1 not in p.ghosts


# --- 11. Ghosts --------------------------------------------------------------------------------


def test_BEN_GHOST_1_remove_records_the_reuse_statistics() -> None:
    p = policy()
    entry = hit_entry(p)
    p.record_miss(5)
    p.remove(1)
    assert p.ghosts[1] == Ghost(entry.hits, entry.rw, entry.ow, 4)


def test_BEN_GHOST_2_BEN_GHOST_3_a_full_ghost_set_drops_the_oldest_then_the_smallest_key() -> None:
    p = policy(ghost_capacity=2)
    for key in (5, 4, 3):
        admit(p, key)
    p.remove(5)
    p.remove(4)  # ghosts 5 and 4, both at clock 3
    p.remove(3)  # full: drop (3, 4) before (3, 5)
    assert sorted(p.ghosts) == [3, 5] and len(p.ghosts) <= 2


def test_BEN_GHOST_2_capacity_0_keeps_no_ghost() -> None:
    p = policy(ghost_capacity=0)
    admit(p, 1)
    p.remove(1)
    assert p.ghosts == {}


def test_BEN_GHOST_4_expiry_keeps_ghosts_no_older_than_the_max_age() -> None:
    p = policy(ghost_max_age_observations=0)
    admit(p, 1)
    p.remove(1)  # ghost at 1, clock 1
    p.observe_pressure(0.0)
    assert 1 in p.ghosts  # 1 >= max(1 - 0, 0)
    p.record_miss(9)
    p.observe_pressure(0.0)
    assert 1 not in p.ghosts


# --- 12. The probation cap ----------------------------------------------------------------------


def test_BEN_CAP_1_within_budget_is_satisfied_with_no_victims() -> None:
    p = policy(probation_byte_budget=20)
    admit(p, 1)
    assert p.consider_admission(2, 10, [], COST).cap == ("satisfied", (), 0)


def test_BEN_CAP_2_no_hit_probationers_go_first_oldest_first_pinned_never() -> None:
    p = policy(probation_byte_budget=25)
    for key in (1, 2, 3, 4):
        admit(p, key)
    p.record_hit(1, COST)  # 1 has a hit: after every no-hit probationer
    repair = p.select_probation_cap_victims(frozenset({2}))
    # charge 40 over 25: 3 (the oldest unpinned without hits) leaves 30, then 4 leaves 20
    assert repair == ("satisfied", (3, 4), 0)


def test_BEN_CAP_3_a_leaving_co_reference_raises_the_others_shares() -> None:
    p = policy(probation_byte_budget=7)
    admit(p, 1, exclusive=0, shared=[(7, 12)])
    admit(p, 2, exclusive=0, shared=[(7, 12)])
    admit(p, 3, exclusive=0, shared=[(7, 12)])
    # charge 12 > 7; without 1 the segment is still referenced by 2 and 3: 6 + 6 = 12; without 2 as well, 12
    assert p.select_probation_cap_victims() == ("satisfied", (1, 2, 3), 0)
    repair = p.select_probation_cap_victims(frozenset({3}))
    assert repair == ("deferred", (1, 2), 12 - 7)  # 3 alone now carries all 12 bytes


def test_BEN_CAP_4_deferred_with_the_exact_shortfall_and_pins_still_count() -> None:
    p = policy(probation_byte_budget=15)
    admit(p, 1)
    admit(p, 2)
    repair = p.select_probation_cap_victims(frozenset({1, 2}))
    assert repair == ("deferred", (), 20 - 15)


def test_BEN_CAP_5_no_victim_twice_and_admitted_entries_never_count() -> None:
    p = policy(probation_byte_budget=10, persistence_hit_threshold=1)
    admit(p, 1)
    p.record_hit(1, COST)  # admitted: no longer charged
    admit(p, 2)
    assert p.select_probation_cap_victims() == ("satisfied", (), 0)


# --- 13. Victim selection ------------------------------------------------------------------------


def test_BEN_VICTIM_1_nothing_to_free_means_no_victims() -> None:
    p = policy(grace_observations=0)
    admit(p, 1)
    assert p.choose_victims(0) == ((), 0)


def test_BEN_VICTIM_2_zero_scores_tie_whatever_the_sign_of_the_sample_and_keys_decide() -> None:
    """Findings F-19: a sample (-0.0, 0.0) is valid and gives +0.0, not a -0.0 that IEEE-754
    totalOrder would rank first."""
    p = policy(grace_observations=0, persistence_hit_threshold=1)
    admit(p, 2)
    admit(p, 1)
    p.record_hit(2, CostSample(-0.0, 0.0))
    p.record_hit(1, CostSample(0.0, 0.0))
    scores = [score(p.ledger, key, p.entries[key], 0.01) for key in (1, 2)]
    assert scores == [0.0, 0.0] and all(math.copysign(1.0, s) == 1.0 for s in scores)  # type: ignore[arg-type]
    assert p.choose_victims(10**6).keys == (1, 2)


def test_BEN_VICTIM_2_no_hit_probationers_first_then_by_score_then_key() -> None:
    p = policy(grace_observations=0, persistence_hit_threshold=1)
    admit(p, 1, exclusive=10)
    p.record_hit(1, CostSample(20.0, 10.0))  # admitted, score 1 * 10 / 10 = 1.0
    admit(p, 2, exclusive=10)
    p.record_hit(2, CostSample(30.0, 10.0))  # admitted, score 2.0
    admit(p, 4, exclusive=10)
    p.record_hit(4, CostSample(20.0, 10.0))  # admitted, score 1.0: after 1 by key
    admit(p, 3, exclusive=10)  # probation, no hits: first
    assert p.choose_victims(40).keys == (3, 1, 4, 2)


def test_BEN_VICTIM_3_each_pass_stops_once_enough_is_freed() -> None:
    p = policy(grace_observations=0)
    for key in (1, 2, 3):
        admit(p, key)
    assert p.choose_victims(15).keys == (1, 2)
    assert p.choose_victims(10).keys == (1,)


def test_BEN_VICTIM_4_freed_counts_whole_segments_only_once_every_reference_is_a_victim() -> None:
    p = policy(grace_observations=0)
    admit(p, 1, exclusive=1, shared=[(7, 100)])
    admit(p, 2, exclusive=1, shared=[(7, 100)])
    admit(p, 3, exclusive=1)
    # 1 alone frees 1 byte (2 still references the segment); with 2 the whole segment goes.
    # Counting fractional shares instead, 1 alone would have "freed" 1 + 50 and stopped there.
    assert p.choose_victims(2) == ((1, 2), 1 + 1 + 100)
    assert p.choose_victims(103) == ((1, 2, 3), 103)


def test_BEN_VICTIM_5_pinned_entries_are_never_chosen_and_the_result_may_fall_short() -> None:
    p = policy(grace_observations=0)
    admit(p, 1)
    admit(p, 2)
    assert p.choose_victims(100, frozenset({1})) == ((2,), 10)


# --- 14. Removal ----------------------------------------------------------------------------------


def test_BEN_REMOVE_1_removing_an_admitted_co_reference_can_push_probation_over_budget() -> None:
    p = policy(probation_byte_budget=60, persistence_hit_threshold=1)
    admit(p, 1, exclusive=0, shared=[(7, 100)])
    p.record_hit(1, COST)  # admitted
    admit(p, 2, exclusive=0, shared=[(7, 100)])  # probation, charged 50
    removed = p.remove(1)
    assert removed is not None
    entry, repair = removed
    assert entry.state == "admitted" and 1 not in p.entries and 1 in p.ghosts
    assert list(p.ledger[7].refs) == [2]
    assert repair == ("satisfied", (2,), 0)  # 2 alone carries 100 > 60
    assert p.remove(1) is None


# --- The contracts fire when a rule is broken ------------------------------------------------------


def test_a_rejection_that_advances_the_clock_breaks_the_BEN_ADMIT_2_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    p = policy()

    def reject_like_the_implementation(self: BenefitPolicy, key: int, shared: object, cost: object) -> str:
        self.clock += 1
        return "invalid-cost-sample"

    monkeypatch.setattr(BenefitPolicy, "structural_reject", reject_like_the_implementation)
    with violation("BEN-ADMIT-2"):
        p.consider_admission(1, 10, [], COST)


def test_a_pinned_victim_breaks_the_BEN_VICTIM_5_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    p = policy(grace_observations=0)
    admit(p, 1)
    admit(p, 2)
    monkeypatch.setattr(selection, "victim_order", lambda entries, ledger, config, pinned, ranked: [1, 2])
    with violation("BEN-VICTIM-5: a pinned entry is never a victim"):
        p.choose_victims(20, frozenset({1}))


def test_a_pinned_or_repeated_cap_victim_breaks_the_BEN_CAP_5_contracts(monkeypatch: pytest.MonkeyPatch) -> None:
    p = policy(probation_byte_budget=5)
    admit(p, 1)
    admit(p, 2)
    monkeypatch.setattr(selection, "cap_candidates", lambda entries, pinned: [1])
    with violation("BEN-CAP-5: a pinned entry is never a cap victim"):
        p.select_probation_cap_victims(frozenset({1}))
    monkeypatch.setattr(selection, "cap_candidates", lambda entries, pinned: [1, 1, 2])
    with violation("BEN-CAP-5: no victim twice"):
        p.select_probation_cap_victims()


def test_a_negative_share_breaks_the_BEN_LEDGER_3_contract() -> None:
    ledger = {}
    register(ledger, 1, [(7, -4)])  # the size check of BEN-KEY-1 is bypassed here
    with violation("BEN-LEDGER-3"):
        fractional_bytes(ledger, 1, [7])


def test_an_infinite_weight_breaks_the_finite_weights_contract() -> None:
    p = policy()
    admit(p, 1)
    p.entries[1].rw = float("inf")
    with violation("BEN-HIT-1: weights stay finite"):
        p.record_hit(1, COST)
