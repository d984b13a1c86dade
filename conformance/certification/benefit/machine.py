"""The benefit-policy certification machine: every operation of spec/benefit.md goes to the
implementation and to the reference, and their decisions, reasons, victims (in order), cap
repairs and, at the state level, clocks, scores, weights, ghosts and probation charges must
agree after each one.

Keys and segments come from small pools, so that hits, removals, ghost take-overs, shared
segments and size conflicts happen within a few steps; each example numbers its pool across
BEN-KEY-1's [0, 2**64 - 1] (core/workloads.py KEY_NUMBERINGS: small keys first, then keys equal in a
narrower integer or as doubles, both bounds). Costs include invalid samples and samples without
net benefit; pressures include NaN and the infinities; configurations go around every edge, and
now and then a knob takes a value from the whole domain, 2**63 - 1 and the values BEN-CONF-8
refuses (NaN and the infinities included: they travel as PROTO-19's strings) among them; a
configuration both refuse is followed by another at once, so that an example tries many and
still runs operations. Some rules reach what single steps rarely do: ghosts churned through
small tables over a segment of 0 bytes, sizes conflicting both ways. Where the machine finds
nothing, fixed probes follow it (probes.py): every configuration that differs from the
default in one whole-domain knob, and counts of 257 (just above the ints CPython keeps one object
for), hundreds of operations checked by their results and the state once.
"""

import json
import sys
from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from kvspec.adapters import Implementation
from kvspec.adapters.benefit import BenefitAdapter, state_of
from kvspec.adapters.protocol import to_double
from kvspec.adapters.wire import reply_json, state_json
from kvspec.conformance.certification.benefit.diagnosis import (
    by_variants,
    cap_clauses,
    hit_clauses,
    negative_zero_score,
    offer_clauses,
    state_clauses,
    victim_clauses,
)
from kvspec.conformance.certification.benefit.strategies import (
    ABOVE_SMALL_INTS,
    COSTS,
    EVERY_BYTE,
    FIXED_COSTS,
    INF,
    KEYS,
    MACHINE_SEGMENT_SIZES,
    NAN,
    PINNED,
    SEGMENTS,
    WITHOUT_NET_BENEFIT,
    configs,
    shared_segments,
    wide_knobs,
    wire_int,
)
from kvspec.conformance.certification.block.diagnosis import Diagnosis, consistent
from kvspec.conformance.certification.block.lockstep import offered_to_both
from kvspec.conformance.certification.block.machine import started
from kvspec.conformance.certification.findings.configurations import ConfigurationFindings
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.certification.findings.faults import Located, Location, Unshrinkable
from kvspec.conformance.core.benefit_requests import hit, offer, victims
from kvspec.conformance.core.workloads import KEY_NUMBERINGS, Numbering
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CostSample
from kvspec.reference.validation import INT64_MAX

CONFIGURED = precondition(lambda self: self.reference is not None)  # an operation needs an accepted configuration


class BenefitMachine(RuleBasedStateMachine):
    """Subclassed by ``benefit_machine_for`` with the implementation under test."""

    implementation: Implementation
    fresh_each_example: bool = False  # a new implementation for every example, not only after a failure
    examples: int = 0
    rate: float = 0.0  # the examples it ran a second (certify.run)
    accepted: int = 0  # how many configurations both accepted, and so checked the behaviour on
    first_failure: Divergence | None = None
    configurations: ConfigurationFindings

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.reference: BenefitPolicy | None = None
        self.step = 0

    def diverge(self, clauses: list[str], detail: str, expected: object, actual: object, consistent_with: tuple[str, ...] = ()) -> Divergence:
        return Divergence(clauses, f"operation {self.step}: {detail}", request=self.step, expected=expected, actual=actual, config=None, trace=[],
                          benefit={"config": self.config_wire, "operations": list(self.operations)}, consistent_with=consistent_with)

    @initialize(config=configs())
    def configure(self, config: BenefitConfig) -> None:
        """BEN-CONF-8: both accept the configuration, or both refuse it."""
        self.adapter: BenefitAdapter = Located(started(self.implementation, self.fresh_each_example), self.where)  # type: ignore[assignment]
        self.offer_configuration(config)

    def offer_configuration(self, config: BenefitConfig) -> None:
        """Both accept the configuration, or both refuse it; a configuration finding is kept, and
        another configuration follows (configurations.py)."""
        self.reference = None
        if not self.configurations.offered(config):
            return  # one it failed at: not waited out again
        try:
            self.reference = self.configured(config)
        except (Divergence, Unshrinkable) as stop:
            if not self.configurations.kept(stop, config, self.disagreement):
                raise
            self.adapter = Located(started(self.implementation, False), self.where)  # type: ignore[assignment]
            return
        if self.reference is not None:
            type(self).accepted += 1

    def configured(self, config: BenefitConfig) -> BenefitPolicy | None:
        """The configuration offered to both: the reference's policy, or None if both refused it."""
        self.config_wire = {knob: to_double(v) if isinstance(v, float) else v for knob, v in vars(config).items()}
        self.operations: list[dict[str, object]] = []  # as protocol requests, for the report's counterexample
        self.step = 0  # operations are numbered from the configuration they follow
        self.agreed_clock = 0  # and the clock starts again (BEN-CLOCK-1)
        reference, refused_by, accepted = offered_to_both(lambda: BenefitPolicy(config), lambda: self.adapter.configure_benefit(config))
        if (refused_by is None) != accepted:
            clause = refused_by or "BEN-CONF-8"
            raise self.diverge([clause, "BEN-CONF-8"], f"the configuration {json.dumps(self.config_wire)}: expected {'refused' if refused_by else 'accepted'}",
                               "refused" if refused_by else "accepted", "accepted" if accepted else "refused")
        return reference

    def disagreement(self, config: BenefitConfig) -> Divergence | None:
        """What offering ``config`` to both raises, or None (to simplify a configuration finding)."""
        self.adapter = Located(started(self.implementation, False), self.where)  # type: ignore[assignment]
        try:
            self.configured(config)
        except Divergence as divergence:
            return divergence
        return None

    @precondition(lambda self: self.reference is None)  # while refused, nothing but this step is enabled
    @rule(config=configs())
    def configure_after_refusal(self, config: BenefitConfig) -> None:
        """Both refused the configuration: another replaces it (PROTO-20), so that an example tries
        many configurations, the whole-domain ones among them, and still runs operations."""
        self.offer_configuration(config)

    @initialize(numbering=st.sampled_from(KEY_NUMBERINGS))
    def number_keys(self, numbering: Numbering) -> None:
        """BEN-KEY-1: how this example numbers its keys and segment ids (plain ones first, for shrinking)."""
        self.numbering = numbering

    def where(self) -> Location:
        """Where a fault happened: the configuration, or the operation being sent (the operations end with it)."""
        label = f"operation {self.step}" if self.step else f"the configuration {json.dumps(self.config_wire)}"
        return Location(label, self.step, benefit={"config": self.config_wire, "operations": list(self.operations)})

    def teardown(self) -> None:
        """Keep the run's first failure: an implementation that fails otherwise on a replay leaves
        Hypothesis nothing else to report (PROTO-7)."""
        failure = sys.exc_info()[1]
        if isinstance(failure, Divergence) and type(self).first_failure is None:
            type(self).first_failure = failure

    agreed_clock = 0  # the clock of the last state both agreed on (BEN-CLOCK-1 starts it at 0)
    state_checked = True  # off while a long run of operations is checked by its results alone

    def agree(self, clauses: Callable[[], list[str] | Diagnosis], expected: object, actual: object) -> None:
        """The results of the operation just sent, then (state level) the whole state, must agree;
        ``clauses`` diagnoses a difference in the results, and runs only when there is one. The
        message shows the request and the replies as the protocol carries them (PROTO-21 to
        PROTO-28): what the implementer's own code received and should have answered."""
        state_level = self.adapter.level == "state"
        request = self.operations[-1]
        sent = json.dumps(request)
        if expected != actual:
            found = clauses()
            diagnosis = found if isinstance(found, Diagnosis) else consistent(*found)
            diagnosis = by_variants(diagnosis, self.config_wire, self.operations, actual, state_level)
            cmd = str(request["cmd"])
            raise self.diverge(diagnosis.clauses, f"{sent}: expected {json.dumps(reply_json(cmd, expected))}, got "
                               f"{json.dumps(reply_json(cmd, actual))}{diagnosis.evidence}", expected, actual, diagnosis.consistent_with)
        if state_level and self.state_checked:
            self.agree_on_state(sent, actual)

    def agree_on_state(self, operation: str, actual: object) -> None:
        assert self.reference is not None
        want, got = state_of(self.reference), self.adapter.benefit_state()
        if want != got or negative_zero_score(got):
            diagnosis = state_clauses(self.operations[-1], actual, self.agreed_clock, self.reference, want, got)
            diagnosis = by_variants(diagnosis, self.config_wire, self.operations, got, True, of_state=True)
            raise self.diverge(diagnosis.clauses, f"after {operation}: expected the state {json.dumps(state_json(want))}, got "
                               f"{json.dumps(state_json(got))}{diagnosis.evidence}", want, got, diagnosis.consistent_with)
        self.agreed_clock = want.clock

    def results_only(self, run: Callable[[], object], operation: str) -> None:
        """``run``'s operations checked by their results, the state once after the last: hundreds of
        them stay cheap."""
        self.state_checked = False
        try:
            actual = run()
        finally:
            self.state_checked = True
        if self.adapter.level == "state":
            self.agree_on_state(operation, actual)

    @CONFIGURED
    @rule(key=KEYS, exclusive=st.sampled_from([0, 1, 3, 8, 10, 16]), shared=shared_segments(), cost=COSTS, pinned=PINNED)
    def offer(self, key: int, exclusive: int, shared: list[tuple[int, int]], cost: CostSample, pinned: frozenset[int]) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append(offer(key, exclusive, shared, *cost, tuple(sorted(pinned))))
        expected = self.reference.consider_admission(key, exclusive, shared, cost, pinned)
        actual = self.adapter.consider_admission(key, exclusive, list(shared), cost, pinned)
        self.agree(lambda: offer_clauses(expected, actual), expected, actual)

    @CONFIGURED
    @rule(keys=st.lists(KEYS, min_size=2, max_size=2, unique=True), exclusive=st.sampled_from([1, 8, 10]), cost=COSTS)
    def twins(self, keys: list[int], exclusive: int, cost: CostSample) -> None:
        """Two entries offered and hit alike, the larger key first: their scores tie (BEN-VICTIM-2)."""
        for key in sorted(keys, reverse=True):
            self.offer(key, exclusive, [], cost, frozenset())
        for key in sorted(keys, reverse=True):
            self.hit(key, cost)
        self.victims(EVERY_BYTE, frozenset())

    @CONFIGURED
    @rule(keys=st.lists(KEYS, min_size=3, max_size=3, unique=True), exclusive=st.sampled_from([1, 8]),
          rejected=st.sampled_from(WITHOUT_NET_BENEFIT))
    def rejection_then_victims(self, keys: list[int], exclusive: int, rejected: CostSample) -> None:
        """Offers without net benefit must not move the clock (BEN-ADMIT-2, findings F-15); had
        they, it would show at the results level twice over. Two admissions, one rejection fewer
        than the grace window is long (one at least), then victims for both: the older entry, and
        only it, would have left grace, and the victims would come in another order. Then the
        older entry hit, removed and offered again (its ghost taken over: ghosts are kept), removed
        again, as many rejections as its ghost may age, offered again and hit: the ghost is still
        there, and the hits it carries decide a decision or a promotion; it would have expired
        (BEN-GHOST-4). A ghost never kept (BEN-GHOST-1) shows at the first re-offer instead."""
        assert self.reference is not None
        first, second, refused = keys
        self.offer(first, exclusive, [], FIXED_COSTS[0], frozenset())
        self.offer(second, exclusive, [], FIXED_COSTS[3], frozenset())
        self.reject(refused, exclusive, rejected, self.reference.config.grace_observations - 1)
        self.victims(2 * exclusive, frozenset())
        age = self.reference.config.ghost_max_age_observations
        if not 0 < age <= 64:
            return  # a ghost that expires at once, or that 64 rejections would not age out, shows nothing
        self.hit(first, FIXED_COSTS[0])
        self.remove(first, frozenset())
        self.offer(first, exclusive, [], FIXED_COSTS[0], frozenset())
        self.remove(first, frozenset())
        self.reject(refused, exclusive, rejected, age)
        self.offer(first, exclusive, [], FIXED_COSTS[0], frozenset())
        self.hit(first, FIXED_COSTS[0])

    def reject(self, key: int, exclusive: int, rejected: CostSample, times: int) -> None:
        """``times`` offers without net benefit (one at least, 64 at most)."""
        for _ in range(min(max(times, 1), 64)):
            self.offer(key, exclusive, [], rejected, frozenset())

    @CONFIGURED
    @rule(keys=st.lists(KEYS, min_size=2, max_size=3, unique=True), segment=SEGMENTS, exclusive=st.sampled_from([0, 1, 3]), cost=COSTS)
    def shared_prefix(self, keys: list[int], segment: tuple[int, int], exclusive: int, cost: CostSample) -> None:
        """Entries that share one segment, as requests share a prompt prefix (BEN-LEDGER-3, BEN-VICTIM-4),
        then an outsider (slot 0, no pool key) that offers it a byte smaller: a conflict (BEN-ADMIT-1)."""
        for key in keys:
            self.offer(key, exclusive, [(segment[0], wire_int(segment[1]))], cost, frozenset())
        self.offer(self.numbering(0), exclusive, [(segment[0], abs(segment[1] - 1))], cost, frozenset())

    @CONFIGURED
    @rule(keys=st.lists(KEYS, min_size=2, max_size=3, unique=True))
    def ghost_churn(self, keys: list[int]) -> None:
        """Entries that share a segment of 0 bytes offered, the first hit, all removed, then the first
        offered again: their ghosts fill small tables, the smallest (last_observation, key) dropped
        first whatever its weights (BEN-GHOST-2), the re-offer takes its ghost over (BEN-ADMIT-5), and the empty segment goes
        with its last reference, not its first (BEN-LEDGER-2, in the cap's scratch ledger too)."""
        empty = (self.numbering(5), wire_int(MACHINE_SEGMENT_SIZES[5]))
        for key in keys:
            self.offer(key, 8, [empty], FIXED_COSTS[0], frozenset())
        self.hit(keys[0], FIXED_COSTS[0])
        for key in keys:
            self.remove(key, frozenset())
        self.offer(keys[0], 8, [], FIXED_COSTS[0], frozenset())

    def fill_ghosts(self) -> None:
        """One ghost more than a table of 257 holds (BEN-GHOST-2, BEN-GHOST-3), then the oldest key
        offered again: its ghost is gone."""
        fresh = [self.numbering(len(MACHINE_SEGMENT_SIZES) + n) for n in range(1, ABOVE_SMALL_INTS + 2)]

        def run() -> None:
            for key in fresh:
                self.offer(key, 1, [], FIXED_COSTS[0], frozenset())
                self.remove(key, frozenset())
            self.offer(fresh[0], 1, [], FIXED_COSTS[0], frozenset())

        self.results_only(run, f"{2 * len(fresh) + 1} offers and removals")

    def hit_to_threshold(self, key: int) -> None:
        """An entry hit 257 times, as often as the threshold asks: it is promoted (BEN-HIT-2)."""
        self.offer(key, 8, [], FIXED_COSTS[0], frozenset())
        self.results_only(lambda: [self.hit(key, FIXED_COSTS[0]) for _ in range(ABOVE_SMALL_INTS)], f"{ABOVE_SMALL_INTS} hits of {key}")

    def ghosts_past_their_age(self) -> None:
        """A ghost remembered at each of the first observations, then offers until the clock is well
        past ghost_max_age_observations: each expires exactly when BEN-GHOST-4 says."""
        keys = [self.numbering(slot) for slot in range(1, 6)]
        for key in keys:
            self.offer(key, 1, [], FIXED_COSTS[0], frozenset())
            self.remove(key, frozenset())
        for key in keys:
            self.offer(key, 1, [], FIXED_COSTS[0], frozenset())

    def offer_many_segments(self) -> None:
        """An offer of 257 segments of 1 byte (BEN-ADMIT-1 counts their ids), then its removal."""
        shared = [(self.numbering(len(MACHINE_SEGMENT_SIZES) + n), wire_int(1)) for n in range(1, ABOVE_SMALL_INTS + 1)]
        self.offer(self.numbering(1), 1, shared, FIXED_COSTS[0], frozenset())
        self.remove(self.numbering(1), frozenset())

    def zero_scores(self) -> None:
        """Two entries hit with samples of no net benefit, (-0.0, 0.0) on the larger key: both score
        +0.0 and tie, and the key decides (BEN-COST-2, BEN-VICTIM-2, findings F-19). Under a floor
        of -0.0, an entry never observed (reuse probability 0) scores +0.0 too (BEN-SCORE-2)."""
        self.offer(self.numbering(3), 8, [], FIXED_COSTS[0], frozenset())
        self.offer(self.numbering(2), 8, [], FIXED_COSTS[0], frozenset())
        self.offer(self.numbering(1), 8, [], FIXED_COSTS[0], frozenset())
        self.hit(self.numbering(2), CostSample(-0.0, 0.0))
        self.hit(self.numbering(1), CostSample(0.0, 0.0))
        self.victims(EVERY_BYTE, frozenset())

    def nothing_offered_and_ghosts_decayed(self) -> None:
        """An offer of no bytes and no segment (BEN-ADMIT-4's zero-exclusive-bytes), then a ghost
        that pressure decays (BEN-DECAY-2 runs over the ghosts too) before its key is offered
        again and takes it over (BEN-ADMIT-5): its weights carry the decay."""
        nothing, returning = self.numbering(1), self.numbering(2)
        self.offer(nothing, 0, [], FIXED_COSTS[0], frozenset())
        self.offer(returning, 8, [], FIXED_COSTS[0], frozenset())
        self.hit(returning, FIXED_COSTS[0])
        self.remove(returning, frozenset())
        self.pressure(0.5)
        self.offer(returning, 8, [], FIXED_COSTS[0], frozenset())

    def bytes_at_the_bound(self) -> None:
        """Exclusive bytes and segments held at exactly 2**53 (BEN-KEY-2, findings F-17): the freed
        bytes, the probation charge and the shortfall reach it."""
        first, second, third = (self.numbering(slot) for slot in (1, 2, 3))
        self.offer(first, 2**52, [], FIXED_COSTS[0], frozenset())
        self.offer(second, 2**52 - 8, [(self.numbering(4), 4), (self.numbering(5), 4)], FIXED_COSTS[0], frozenset())
        self.offer(third, 0, [(self.numbering(4), 4)], FIXED_COSTS[3], frozenset())
        self.cap(frozenset({first, second, third}))
        self.victims(INT64_MAX, frozenset())

    @CONFIGURED
    @rule(key=KEYS, cost=COSTS)
    def hit(self, key: int, cost: CostSample) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append(hit(key, *cost))
        expected, actual = self.reference.record_hit(key, cost), self.adapter.record_hit(key, cost)
        self.agree(lambda: hit_clauses(cost), expected, actual)

    @CONFIGURED
    @rule(key=KEYS)
    def miss(self, key: int) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append({"cmd": "record_miss", "key": key})
        self.reference.record_miss(key)
        self.adapter.record_miss(key)
        self.agree(lambda: ["BEN-MISS-1"], None, None)

    @CONFIGURED
    @rule(pressure=st.sampled_from([0.0, 0.5, 1.0, NAN, INF, -INF, 2.0]) | st.floats(0.0, 1.0))
    def pressure(self, pressure: float) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append({"cmd": "observe_pressure", "pressure": to_double(pressure)})
        self.reference.observe_pressure(pressure)
        self.adapter.observe_pressure(pressure)
        self.agree(lambda: ["BEN-DECAY-1", "BEN-DECAY-2", "BEN-DECAY-3"], None, None)

    @CONFIGURED
    @rule(bytes_to_free=st.sampled_from([1, 2, 5, 10, 20]) | st.integers(0, 60), pinned=PINNED)
    def victims(self, bytes_to_free: int, pinned: frozenset[int]) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append(victims(bytes_to_free, tuple(sorted(pinned))))
        expected = self.reference.choose_victims(bytes_to_free, pinned)
        actual = self.adapter.choose_victims(bytes_to_free, pinned)
        reference = self.reference
        self.agree(lambda: victim_clauses(reference, expected, actual, pinned), expected, actual)

    @CONFIGURED
    @rule(pinned=PINNED)
    def cap(self, pinned: frozenset[int]) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append({"cmd": "select_probation_cap_victims", "pinned": sorted(pinned)})
        expected = self.reference.select_probation_cap_victims(pinned)
        actual = self.adapter.select_probation_cap_victims(pinned)
        self.agree(lambda: cap_clauses(actual, pinned), expected, actual)

    @CONFIGURED
    @rule(key=KEYS, pinned=PINNED)
    def remove(self, key: int, pinned: frozenset[int]) -> None:
        if self.reference is None:
            return
        self.step += 1
        self.operations.append({"cmd": "remove", "key": key, "pinned": sorted(pinned)})
        removed = self.reference.remove(key, pinned)
        expected = None if removed is None else removed[1]
        actual = self.adapter.remove(key, pinned)
        self.agree(lambda: ["BEN-REMOVE-1", "BEN-CAP-4"], expected, actual)


def benefit_machine_for(implementation: Implementation, fresh_each_example: bool = False) -> type[BenefitMachine]:
    return type("CertifyBenefit", (BenefitMachine,), {"implementation": implementation, "fresh_each_example": fresh_each_example,
                                                      "configurations": ConfigurationFindings(wide_knobs, BenefitConfig())})
