"""conformance/certification/block/diagnosis.py and benefit_diagnosis.py: the diagnosis names the clause that was broken.

Each test drives a hand-made wrong implementation (tests/handmade/), whose mistake is known and is
not one of the mutant galleries', through the lockstep or through `kvspec certify`, and checks
what the verdict leads with: a broken invariant of the implementation's own state first; a clause
only where its broken rule explains the symptom on that state; "consistent with" where more than
one rule would, or where the state is not visible (the results level); the policy's own clauses.
"""

import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.benefit import ReferenceBenefitAdapter, state_of
from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Snapshot
from kvspec.conformance.certification.benefit import variants as benefit_variants
from kvspec.conformance.certification.benefit.diagnosis import state_clauses
from kvspec.conformance.certification.benefit.machine import benefit_machine_for
from kvspec.conformance.certification.block import variants
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.galleries.benefit_mutants import MUTANTS
from kvspec.conformance.galleries.mutants import MUTANTS as GALLERY
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CostSample

from support import certify_report

HANDMADE = Path(__file__).resolve().parent / "handmade"
sys.path.insert(0, str(HANDMADE))

import benefit_mistakes  # noqa: E402
import replay_mistakes as mistakes  # noqa: E402


def divergence(implementation: CanonicalS3FIFO, config: AdapterConfig, *requests: list[int]) -> Divergence:
    """The first divergence of ``implementation`` on ``requests`` (one-token blocks)."""
    lockstep = Lockstep(implementation, config)
    with pytest.raises(Divergence) as raised:
        lockstep.configure()
        for hash_ids in requests:
            lockstep.request(hash_ids, len(hash_ids) * config.block_size)
    return raised.value


def results(cls: type[CanonicalS3FIFO]) -> CanonicalS3FIFO:
    return mistakes.results_level(cls)()


def s3fifo(capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> AdapterConfig:
    return AdapterConfig("s3fifo", capacity, 1, small_ratio, max_freq)


def shown(found: Divergence) -> list[str]:
    """The clauses the divergence shows broken (not only consistent with)."""
    return [c for c in found.clauses if c not in found.consistent_with]


# -- the message and the report ------------------------------------------------------------------


def test_a_divergence_says_which_clauses_are_shown_broken_and_which_are_only_consistent() -> None:
    both = Divergence(["S3-INV-1", "S3-CONF-2"], "detail", request=1, expected=0, actual=1, config=None, trace=[], consistent_with=("S3-CONF-2",))
    assert str(both) == "S3-INV-1, S3-CONF-2: S3-INV-1 broken, consistent with S3-CONF-2; detail"
    either = Divergence(["S3-CONF-2", "S3-CONF-5"], "detail", request=0, expected=0, actual=1, config=None, trace=[],
                        consistent_with=("S3-CONF-2", "S3-CONF-5"))
    assert str(either) == "S3-CONF-2, S3-CONF-5: consistent with either; detail"
    assert str(Divergence(["REPLAY-HIT-1"], "detail", request=1, expected=0, actual=1, config=None, trace=[])) == "REPLAY-HIT-1: detail"


# -- configurations --------------------------------------------------------------------------------


def test_refusing_max_freq_0_breaks_s3_conf_6() -> None:
    """Findings F-3 makes max_freq 0 valid; the implementation accepts the same cache at max_freq 3."""
    found = divergence(mistakes.RefusesMaxFreq0(), s3fifo(10, 0.1, 0))
    assert (found.clauses, found.consistent_with) == (("S3-CONF-6",), ())


def test_rounding_small_cap_half_up_leads_with_s3_conf_2_where_the_spec_refuses() -> None:
    """round(5 × 0.1) = round(0.5) = 0: refused (S3-CONF-5); half-up gives 1, and the implementation
    accepts. Its small_cap is not visible: consistent with S3-CONF-2 or S3-CONF-5, the rounding first."""
    found = divergence(mistakes.HalfUpSmallCap(), s3fifo(5))
    assert found.clauses == ("S3-CONF-2", "S3-CONF-5") and found.consistent_with == found.clauses


class SmallCapAtLeast1(CanonicalS3FIFO):
    """Gives S at least one entry, whatever the ratio: breaks S3-CONF-2."""

    def small_cap_for(self, capacity: int, small_ratio: float) -> int:
        return max(1, round(capacity * small_ratio))


def test_accepting_small_ratio_0_is_consistent_with_a_missing_check_or_another_small_cap() -> None:
    """10 × 0.0 = 0 under any rounding: S3-CONF-5 first; a small_cap moved off 0 (S3-CONF-2) would
    explain it too, and the implementation's small_cap is not visible."""
    found = divergence(SmallCapAtLeast1(), s3fifo(10, 0.0))
    assert found.clauses == ("S3-CONF-5", "S3-CONF-2") and found.consistent_with == found.clauses


# -- the implementation's own queues against the invariants ---------------------------------------


def test_rounding_small_cap_half_up_shows_as_a_small_queue_above_its_size() -> None:
    """round(25 × 0.1) = round(2.5) = 2; half-up keeps a third entry in S."""
    found = divergence(mistakes.HalfUpSmallCap(), s3fifo(25), [1], [2], [3])
    assert shown(found) == ["S3-INV-1"] and {"S3-CONF-2", "S3-ADMIT-S-1"} <= set(found.consistent_with)


def test_a_small_queue_above_its_size_leads_with_s3_inv_1() -> None:
    found = divergence(mistakes.SmallAboveItsSize(), s3fifo(10), [1, 2])
    assert shown(found) == ["S3-INV-1"] and "S holds 2 entries, above its size 1" in str(found)


def test_a_ghost_above_its_size_leads_with_s3_inv_3() -> None:
    """capacity 4 at 0.25: main_cap = ghost_cap = 3; four fresh blocks through S fill G past 3."""
    found = divergence(mistakes.GhostAboveItsSize(), s3fifo(4, 0.25), [1, 2, 3, 4, 5])
    assert shown(found) == ["S3-INV-3"] and {"S3-GHOST-2", "S3-CONF-4"} <= set(found.consistent_with)


def test_a_ghost_of_nine_tenths_of_the_capacity_is_a_ghost_above_its_size_or_a_ghost_cut_short() -> None:
    """At 0.5 the ghost holds main_cap = 5 of 10 blocks, and 0.9 × 10 = 9 overflows it (S3-INV-3);
    at 0.01 it holds 99 of 100, and 90 forgets too soon (S3-CONF-4, consistent with S3-GHOST-2)."""
    above = divergence(mistakes.GhostNineTenths(), s3fifo(10, 0.5), list(range(1, 12)))
    assert shown(above) == ["S3-INV-3"] and "S3-CONF-4" in above.consistent_with
    short = divergence(mistakes.GhostNineTenths(), s3fifo(100, 0.01), list(range(1, 100)))
    assert short.clauses == ("S3-CONF-4", "S3-GHOST-2") and short.consistent_with == short.clauses


def test_a_hash_in_main_and_in_the_ghost_leads_with_s3_queue_2() -> None:
    """capacity 2 at 0.5: 1 goes S -> G, then its ghost hit admits it to M and leaves it in G."""
    found = divergence(mistakes.GhostHitKeepsGhost(), s3fifo(2, 0.5), [1, 2], [1])
    assert shown(found) == ["S3-QUEUE-2"] and "S3-ACCESS-3" in found.consistent_with


class NoneFreq(CanonicalS3FIFO):
    """Reports a freq of None for every block of S."""

    def snapshot(self) -> Snapshot:
        state = super().snapshot()
        return Snapshot(tuple((h, None) for h, _ in state.small), state.main, state.ghost)  # type: ignore[misc]


def test_a_freq_that_is_not_an_integer_breaks_s3_freq_1_and_does_not_crash_the_diagnosis() -> None:
    found = divergence(NoneFreq(), s3fifo(10), [1])
    assert shown(found) == ["S3-FREQ-1"] and "freq None of 1" in str(found)


# -- the rule the spec applied, read on the implementation's own queues ----------------------------


def test_admitting_new_keys_to_main_until_the_cache_is_full_breaks_s3_access_4() -> None:
    found = divergence(mistakes.NewKeysToMainUntilFull(), s3fifo(10), [1])
    assert (found.clauses, found.consistent_with) == (("S3-ACCESS-4",), ())


def test_a_promotion_threshold_of_2_breaks_s3_admit_s_2() -> None:
    """capacity 2 at 0.5: 1 is hit once (freq 1); the next new block pops it from S, to M by the spec."""
    found = divergence(mistakes.PromotionThreshold2(), s3fifo(2, 0.5), [1], [1], [2])
    assert (found.clauses, found.consistent_with) == (("S3-ADMIT-S-2",), ())


class GhostAtHead(CanonicalS3FIFO):
    """Inserts into G at the head, and forgets from the head: breaks S3-GHOST-3."""

    def insert_to_ghost(self, h: int) -> None:
        super().insert_to_ghost(h)
        self.ghost.move_to_end(h, last=False)


def test_a_ghost_in_another_order_never_leads_with_the_unreachable_s3_ghost_1() -> None:
    """Two blocks through S into G, in the opposite order: S3-GHOST-3 leads, and S3-GHOST-1 (which
    findings F-10 shows unreachable) is not cited."""
    found = divergence(GhostAtHead(), s3fifo(10), [1, 2, 3])
    assert found.clauses[0] == "S3-GHOST-3" and "S3-GHOST-1" not in found.clauses and found.consistent_with == found.clauses


# -- resident counts: never the ghost by coincidence, and each policy's own clause -----------------


@pytest.mark.parametrize(("cls", "config", "requests"), [
    (mistakes.NewKeysToMainUntilFull, s3fifo(10), [[1, 2, 3]]),
    (mistakes.HalfUpSmallCap, s3fifo(25), [[1, 2, 3]]),
    (mistakes.GhostNineTenths, s3fifo(4, 0.5), [[11, 7, 5], [1, 3, 11, 7, 4]]),
    (mistakes.SmallAboveItsSize, s3fifo(10), [[1, 2]]),
])
def test_a_resident_count_off_by_the_ghosts_size_is_not_the_ghost_counted(cls: type[CanonicalS3FIFO], config: AdapterConfig,
                                                                        requests: list[list[int]]) -> None:
    """At the results level each gives a resident count that is the spec's plus the spec's ghost;
    none counts its ghost (its own scan finds as many blocks resident as it counts), so the verdict
    never leads with S3-FINAL-1, and is only consistent with what it lists."""
    found = divergence(results(cls), config, *requests)
    assert "resident blocks" in str(found) and found.clauses[0] != "S3-FINAL-1" and "S3-FINAL-1" not in found.clauses
    assert found.consistent_with == found.clauses


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("level", ["state", "results"])
def test_a_resident_count_off_by_one_breaks_the_policys_own_cap_clause(policy: str, level: str) -> None:
    implementation = mistakes.CountOffByOne() if level == "state" else results(mistakes.CountOffByOne)
    found = divergence(implementation, AdapterConfig(policy, 3, 1), [1])
    assert found.clauses == (f"{policy.upper()}-CAP-1",)
    assert found.consistent_with == (() if level == "state" else found.clauses)  # at the results level its queue is not visible


def test_an_lru_queue_that_holds_a_hash_twice_breaks_replay_queue_1() -> None:
    found = divergence(mistakes.HitAppendsAgain(), AdapterConfig("lru", 3, 1), [1, 2, 1])
    assert found.clauses == ("REPLAY-QUEUE-1",) and "main holds a hash twice" in str(found)


@pytest.mark.untyped
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_an_lru_or_fifo_certification_never_cites_an_s3_clause(policy: str) -> None:
    for implementation in (mistakes.CountOffByOne(), results(mistakes.CountOffByOne), mistakes.HitAppendsAgain(),
                           results(mistakes.HitAppendsAgain)):
        for finding in certify_policy(implementation, policy).findings:
            assert finding.divergence is not None
            assert all(c.startswith(("REPLAY-", f"{policy.upper()}-")) for c in finding.divergence.clauses), finding.message


# -- the results level: read against the implementation's own blocks, not the reference's ----------


def test_a_correct_prefix_scan_on_other_blocks_is_not_a_set_intersection() -> None:
    """The promotion-threshold-2 implementation, seen only through its results: by request 3 it
    holds other blocks than the spec (an eviction difference), and its longest-prefix scan of [5, 7]
    finds 1 block. The set intersection of [5, 7] with the spec's blocks also gives 1, which is how
    the diagnosis once read it (REPLAY-PREFIX-2); its own scan, asked block by block, says it holds
    [2, 5, 6], and 1 is the right answer for those."""
    found = divergence(results(mistakes.PromotionThreshold2), s3fifo(3, 0.5, 1), [5, 7], [7, 6, 5, 2], [5, 7])
    assert "hit tokens" in str(found) and "REPLAY-PREFIX-2" not in found.clauses
    assert found.consistent_with == found.clauses and "its own scan finds [2, 5, 6] resident" in str(found)


# -- the benefit policy ------------------------------------------------------------------------------


def test_a_benefit_clock_that_advances_on_a_rejected_offer_is_found_at_the_results_level(tmp_path: Path) -> None:
    """Findings F-15, certified at the results level: the clock is not visible, and the first result
    that differs is a victim (its grace window ended early). The variant of the spec with BEN-ADMIT-2
    broken gives every answer the implementation gave; the report shows the configuration and
    numbers operations, not requests."""
    status, report = certify_report(f"in-process:{HANDMADE / 'benefit_mistakes.py'}:clock_on_rejection", "benefit", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and report.level == "results"
    first = verdict.failures[0]
    assert first.clauses[0] == "BEN-ADMIT-2" and first.consistent_with == first.clauses, first.message
    assert not {"BEN-VICTIM-2", "BEN-VICTIM-3", "BEN-GRACE-1"} & set(first.clauses)
    assert verdict.clauses["BEN-ADMIT-2"] == "inconclusive"  # consistent with, not shown broken
    assert first.config is not None and set(first.config) == set(vars(BenefitConfig()))
    markdown = (tmp_path / "report.md").read_text()
    assert f"- at: operation {first.request}" in markdown and "- configuration: `None`" not in markdown
    assert "- clauses: consistent with BEN-ADMIT-2" in markdown


def test_the_state_level_names_the_clause_a_rejected_offer_that_moves_the_clock_breaks() -> None:
    implementation = benefit_mistakes.ClockOnRejection()
    implementation.level = "state"
    (finding,) = certify_policy(implementation, "benefit").findings
    assert finding.divergence is not None and finding.divergence.clauses[0] == "BEN-ADMIT-2"
    assert finding.divergence.consistent_with == () and "on a rejected offer" in finding.message


def benefit_divergence(implementation: object, config: BenefitConfig, *operations: tuple[str, tuple[object, ...]]) -> Divergence:
    """The first divergence of ``implementation`` on ``operations``, driven through the benefit machine's rules."""
    machine = benefit_machine_for(Implementation.of(implementation))()  # type: ignore[arg-type]
    machine.configure(config)
    with pytest.raises(Divergence) as raised:
        for rule, arguments in operations:
            getattr(machine, rule)(*arguments)
    return raised.value


COST = CostSample(100.0, 30.0)


def test_more_ghosts_than_ghost_capacity_leads_with_ben_ghost_3() -> None:
    found = benefit_divergence(benefit_mistakes.GhostsPastCapacity(), BenefitConfig(ghost_capacity=1),
                               ("offer", (1, 1, [], COST, frozenset())), ("offer", (2, 1, [], COST, frozenset())),
                               ("remove", (1, frozenset())), ("remove", (2, frozenset())))
    assert found.clauses[0] == "BEN-GHOST-3" and found.consistent_with == () and "2 ghosts, above ghost_capacity 1" in str(found)


def test_a_clock_that_jumps_leads_with_ben_clock_1() -> None:
    found = benefit_divergence(benefit_mistakes.MissCountsTwice(), BenefitConfig(), ("miss", (1,)))
    assert found.clauses[0] == "BEN-CLOCK-1" and found.consistent_with == () and "the clock went from 0 to 2" in str(found)


def test_an_offer_admitted_where_a_check_rejects_it_leads_with_that_check() -> None:
    found = benefit_divergence(benefit_mistakes.DuplicateSegmentsAdmitted(), BenefitConfig(), ("offer", (1, 1, [(7, 4), (7, 4)], COST, frozenset())))
    assert found.clauses == ("BEN-ADMIT-1",) and found.consistent_with == () and "the spec rejects it as duplicate-segment-reference" in str(found)


def test_an_admission_with_another_reason_leads_with_ben_admit_4() -> None:
    found = benefit_divergence(benefit_mistakes.NoZeroByteReason(), BenefitConfig(), ("offer", (1, 0, [], COST, frozenset())))
    assert found.clauses == ("BEN-ADMIT-4",) and "admitted as probation-new-entry, where the offer gives zero-exclusive-bytes" in str(found)


def test_a_co_referenced_score_left_as_it_was_leads_with_ben_ledger_3() -> None:
    """The second offer of segment 7 halves the share entry 1 is charged (BEN-LEDGER-3); an
    implementation that scores an entry only when it is itself offered, hit or missed keeps 1's old
    score. Nothing about entry 2's own offer differs (BEN-ADMIT-5 to BEN-ADMIT-7)."""
    found = benefit_divergence(benefit_mistakes.ScoresCachedPerEntry(), BenefitConfig(),
                               ("offer", (1, 8, [(7, 4)], COST, frozenset())), ("offer", (2, 8, [(7, 4)], COST, frozenset())))
    assert found.clauses == ("BEN-LEDGER-3",) and found.consistent_with == ()
    assert "the scores of [1] are the ones before the offer of 2, which shares segments with them" in str(found)


def test_the_certification_of_scores_cached_per_entry_names_ben_ledger_3(tmp_path: Path) -> None:
    """Found by the quick profile through the adapter, as a user certifies it, and named, not only consistent."""
    status, report = certify_report(f"in-process:{HANDMADE / 'benefit_mistakes.py'}:scores_cached_per_entry", "benefit", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and report.level == "state"
    first = verdict.failures[0]
    assert first.clauses[0] == "BEN-LEDGER-3" and first.consistent_with == [], first.message
    assert verdict.clauses["BEN-LEDGER-3"] == "fail"


def test_a_co_referenced_score_after_a_removal_is_consistent_with_the_removal_and_the_shares() -> None:
    """A removal that releases segment 7 doubles entry 1's share of it; a score of 1 left at its
    value before is read against BEN-REMOVE-1, BEN-LEDGER-2 and BEN-LEDGER-3: the segments the
    removed entry held are gone from the spec's state, so which entries shared them is not shown."""
    reference = BenefitPolicy(BenefitConfig())
    for key in (1, 2):
        reference.consider_admission(key, 8, [(7, 4)], COST)
    stale = state_of(reference)
    reference.remove(2)
    expected = state_of(reference)
    actual = replace(expected, entries=(replace(expected.entries[0], score=stale.entries[0].score),))
    assert expected != actual
    found = state_clauses({"cmd": "remove", "key": 2, "pinned": []}, None, expected.clock, reference, expected, actual)
    assert found.named == () and found.clauses == ["BEN-REMOVE-1", "BEN-LEDGER-2", "BEN-LEDGER-3"]


def test_a_score_that_differs_otherwise_after_an_offer_is_only_consistent_with_the_shares() -> None:
    """A co-referenced score that is neither the spec's nor the one before the offer is no evidence of which."""
    reference = BenefitPolicy(BenefitConfig())
    for key in (1, 2):
        reference.consider_admission(key, 8, [(7, 4)], COST)
    expected = state_of(reference)
    actual = replace(expected, entries=(replace(expected.entries[0], score=1.0), expected.entries[1]))
    found = state_clauses({"cmd": "consider_admission", "key": 2, "shared": [[7, 4]]}, None, expected.clock - 1, reference, expected, actual)
    assert found.named == () and found.clauses == ["BEN-LEDGER-3", "BEN-SCORE-3"]


def test_a_score_that_differs_after_an_offer_of_other_segments_is_not_laid_on_the_shares() -> None:
    """Entry 1 holds segment 7 and the offer of 2 segment 8: 1's score owes nothing to the offer's
    reference counts, and the diagnosis does not say it does."""
    reference = BenefitPolicy(BenefitConfig())
    reference.consider_admission(1, 8, [(7, 4)], COST)
    reference.consider_admission(2, 8, [(8, 4)], COST)
    expected = state_of(reference)
    actual = replace(expected, entries=(replace(expected.entries[0], score=1.0), expected.entries[1]))
    found = state_clauses({"cmd": "consider_admission", "key": 2, "shared": [[8, 4]]}, None, expected.clock - 1, reference, expected, actual)
    assert "BEN-LEDGER-3" not in found.clauses and found.clauses == ["BEN-ADMIT-5", "BEN-ADMIT-6", "BEN-ADMIT-7"]


def test_a_hit_with_an_invalid_sample_that_counts_leads_with_ben_hit_3() -> None:
    """Findings F-16: at the state level the hit's own state shows it, whatever the decision."""
    found = benefit_divergence(MUTANTS["invalid-hit-counted"](), BenefitConfig(), ("offer", (1, 8, [], COST, frozenset())),
                               ("hit", (1, CostSample(float("nan"), 1.0))))
    assert found.clauses == ("BEN-HIT-3",) and "a hit with an invalid cost sample changed the state" in str(found)


def test_a_decision_that_differs_at_the_results_level_is_consistent_with_the_rule_broken() -> None:
    """Findings F-15 at the results level, its shrunk counterexample: a rejection that moved the
    clock shows in a later admission's decision, which the spec with BEN-ADMIT-2 broken gives too.
    (tests/test_benefit_certify.py certifies the mutant untyped; this runs the diagnosis of a
    differing decision under typeguard.)"""
    mutant = MUTANTS["reject-advances-clock"]()
    mutant.level = "results"
    config = BenefitConfig(probation_byte_budget=0, persistence_hit_threshold=1, min_reuse_probability=0.0, decay_factor=0.5,
                           grace_observations=0, ghost_capacity=1, ghost_max_age_observations=2)
    found = benefit_divergence(mutant, config, ("rejection_then_victims", ([1, 2, 3], 1, CostSample(20.0, 20.0))))
    assert found.clauses == found.consistent_with == ("BEN-ADMIT-2",) and 'got {"decision": {"kind": "admit-probation"' in str(found)


# -- end to end ----------------------------------------------------------------------------------


def test_the_report_lists_what_the_evidence_is_only_consistent_with(tmp_path: Path) -> None:
    """report.json keeps the consistent clauses apart, and its clause table fails only what a
    finding shows broken."""
    status, report = certify_report(f"in-process:{HANDMADE / 'replay_mistakes.py'}:small_above_its_size", "s3fifo", tmp_path)
    (verdict,) = report.policies
    first = verdict.failures[0]
    assert status == 3 and first.clauses[0] == "S3-INV-1" and "S3-INV-1" not in first.consistent_with and first.consistent_with
    shown_anywhere = {c for failure in verdict.failures for c in failure.clauses if c not in failure.consistent_with}
    assert verdict.clauses["S3-INV-1"] == "fail"
    assert all(verdict.clauses[c] == "inconclusive" for c in set(first.consistent_with) - shown_anywhere)
    assert f"- clauses: S3-INV-1; consistent with {' or '.join(first.consistent_with)}" in (tmp_path / "report.md").read_text()


# -- the variants: the reference with one rule broken ----------------------------------------------

# Each variant of the diagnosis beside the gallery mutant that makes the same mistake on its own code.
SAME_MISTAKE = {variants.LruInsteadOfS3FIFO: "lru-instead-of-s3fifo", variants.NoMinClamp: "no-min-clamp",
                variants.GhostCountedAsResident: "ghost-counted-as-resident", variants.SetIntersection: "set-intersection",
                variants.FreqOnlyOnPrefixHits: "freq-only-on-prefix-hits", variants.GhostInFinalSize: "ghost-in-final-size",
                variants.NoSecondChance: "plain-fifo-main", variants.FreqResetOnPromotion: "freq-reset-on-promotion",
                variants.IntSmallCap: "int-small-cap"}
VARIANT_CONFIGS = [AdapterConfig("s3fifo", capacity, block, ratio, freq) for capacity, block, ratio, freq in
                   ((10, 1, 0.1, 3), (15, 4, 0.1, 1), (8, 2, 0.5, 2), (20, 3, 0.25, 0), (6, 1, 0.1, 3))]


@pytest.mark.parametrize("variant", SAME_MISTAKE, ids=lambda v: v.__name__)
def test_each_variant_is_the_reference_with_the_one_rule_broken_that_its_mutant_breaks(variant: type[variants.Variant]) -> None:
    """A variant is built from the reference (conformance/certification/block/variants.py) and answers
    as the gallery mutant of the same mistake (a plain FIFO pop on M and a requeue at M's head are
    one behaviour), request by request: the refusals, hit tokens, resident counts and queues."""
    mutant = GALLERY[SAME_MISTAKE[variant]]
    rng = random.Random(30)
    for config in VARIANT_CONFIGS:
        ours, theirs = variant(), mutant()
        refused = []
        for side in (ours, theirs):
            try:
                side.configure(config)
                refused.append(False)
            except ConfigRefused:
                refused.append(True)
        assert refused[0] == refused[1], config
        if refused[0]:
            continue
        for _ in range(200):
            hash_ids = [rng.randrange(24) for _ in range(rng.randrange(1, 6))]
            length = len(hash_ids) * config.block_size - rng.randrange(config.block_size)
            assert ours.hit_tokens(hash_ids, length) == theirs.hit_tokens(hash_ids, length), (config, hash_ids)
            ours.access(hash_ids)
            theirs.access(hash_ids)
            assert (ours.resident_count(), ours.snapshot()) == (theirs.resident_count(), theirs.snapshot()), (config, hash_ids)


# Each benefit variant beside the gallery mutant that makes the same mistake on its own code.
BENEFIT_SAME_MISTAKE = {benefit_variants.PerEntryRounding: "per-entry-rounding", benefit_variants.FractionalRelease: "fractional-release",
                        benefit_variants.GraceNeverWaived: "grace-never-waived", benefit_variants.PinnedEvictable: "pinned-evictable",
                        benefit_variants.GhostsLost: "ghosts-lost", benefit_variants.RejectAdvancesClock: "reject-advances-clock",
                        benefit_variants.InvalidHitCounted: "invalid-hit-counted", benefit_variants.NoKeyTiebreak: "no-key-tiebreak"}
BENEFIT_VARIANT_CONFIGS = [BenefitConfig(), BenefitConfig(probation_byte_budget=20, persistence_hit_threshold=1, grace_observations=3),
                           BenefitConfig(probation_byte_budget=8, grace_observations=1, ghost_capacity=2, ghost_max_age_observations=4,
                                         min_reuse_probability=0.2, decay_factor=0.5)]
SAMPLES = (CostSample(100.0, 30.0), CostSample(40.0, 10.0), CostSample(20.0, 20.0), CostSample(float("nan"), 1.0), CostSample(-1.0, 0.0))


def random_benefit_operation(rng: random.Random) -> tuple[str, tuple[object, ...]]:
    """One BenefitAdapter call on a few keys and segments (each segment at one size), few samples (so that scores tie)."""
    key, pinned, cost = rng.randrange(8), frozenset(rng.sample(range(8), rng.randrange(3))), rng.choice(SAMPLES)
    shared = [(segment, 3 + segment) for segment in rng.sample(range(4), rng.randrange(3))]
    return rng.choice((("consider_admission", (key, rng.randrange(6), shared, cost, pinned)), ("consider_admission", (key, 4, [], cost, pinned)),
                       ("record_hit", (key, cost)), ("record_hit", (key, cost)), ("record_miss", (key,)), ("observe_pressure", (rng.random(),)),
                       ("choose_victims", (rng.randrange(30), pinned)), ("select_probation_cap_victims", (pinned,)), ("remove", (key, pinned))))


@pytest.mark.parametrize("variant", BENEFIT_SAME_MISTAKE, ids=lambda v: v.__name__)
def test_each_benefit_variant_is_the_reference_with_the_one_rule_broken_that_its_mutant_breaks(variant: type[BenefitPolicy]) -> None:
    """A benefit variant is the reference policy with one step replaced (benefit_variants.py) and
    answers as the gallery mutant of the same mistake, operation by operation: every decision,
    repair and victim list, and the state after it; and the random operations meet the mistake."""
    mutant = MUTANTS[BENEFIT_SAME_MISTAKE[variant]]
    assert variant.breaks == mutant.breaks
    rng, broke = random.Random(30), False
    for config in BENEFIT_VARIANT_CONFIGS:
        ours, theirs, spec = ReferenceBenefitAdapter(policy_factory=variant), mutant(), ReferenceBenefitAdapter()
        for side in (ours, theirs, spec):
            side.configure_benefit(config)
        for _ in range(400):
            method, arguments = random_benefit_operation(rng)
            answered = getattr(ours, method)(*arguments), ours.benefit_state()
            assert answered == (getattr(theirs, method)(*arguments), theirs.benefit_state()), (config, method, arguments)
            broke = broke or answered != (getattr(spec, method)(*arguments), spec.benefit_state())
    assert broke
