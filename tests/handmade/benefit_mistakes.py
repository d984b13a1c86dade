"""Hand-made wrong benefit policies (tests/test_diagnosis.py), each with one known mistake. The
first is the behaviour of the implementation behind seed 003 that findings F-15 sets aside, written
here on its own and certified at the results level, where the clock it moves cannot be seen
(``python:tests/handmade/benefit_mistakes.py:clock_on_rejection``); the others break a rule of the
benefit state, certified at the state level."""

from dataclasses import dataclass, field

from kvspec.adapters.interface import Level
from kvspec.conformance.galleries.benefit_mutants import CanonicalBenefit, Item
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision


@dataclass
class ClockOnRejection(CanonicalBenefit):
    """Advances the clock and expires old ghosts before it checks the net benefit, so that an
    offer rejected with no-net-benefit still moves the clock: breaks BEN-ADMIT-2."""

    name = "clock-on-rejection"
    level: Level = "results"

    def reject_without_benefit(self, cost: CostSample) -> Decision | None:
        self.clock += 1
        self.expire()
        if max(cost[0] - cost[1], 0.0) <= 0.0:
            return Decision("reject", "no-net-benefit")
        self.clock -= 1  # consider_admission advances it again once it admits
        return None


def clock_on_rejection() -> ClockOnRejection:
    return ClockOnRejection()


@dataclass
class GhostsPastCapacity(CanonicalBenefit):
    """Records a ghost without dropping the oldest when ghost_capacity ghosts exist: breaks
    BEN-GHOST-2, and its ghosts outnumber ghost_capacity (BEN-GHOST-3)."""

    name = "ghosts-past-capacity"

    def remember(self, key: int, item: Item) -> None:
        if self.config.ghost_capacity:
            self.ghosts[key] = (item.hits, item.rw, item.ow, self.clock)


@dataclass
class MissCountsTwice(CanonicalBenefit):
    """Advances the clock twice on record_miss: its clock jumps by 2 (BEN-CLOCK-1, BEN-CLOCK-3)."""

    name = "miss-counts-twice"

    def record_miss(self, key: int) -> None:
        self.clock += 1
        super().record_miss(key)


@dataclass
class DuplicateSegmentsAdmitted(CanonicalBenefit):
    """Never checks for a segment named twice in one offer: admits it (breaks BEN-ADMIT-1)."""

    name = "duplicate-segments-admitted"

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        return super().consider_admission(key, exclusive_bytes, list(dict(shared).items()), cost, pinned)


@dataclass
class NoZeroByteReason(CanonicalBenefit):
    """Gives every admission the reason probation-new-entry, an offer of no bytes included (breaks BEN-ADMIT-4)."""

    name = "no-zero-byte-reason"

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        decision = super().consider_admission(key, exclusive_bytes, shared, cost, pinned)
        return decision._replace(reason="probation-new-entry") if decision.reason == "zero-exclusive-bytes" else decision


@dataclass
class ScoresCachedPerEntry(CanonicalBenefit):
    """Scores an entry when it is offered, hit or missed, and every entry under pressure, and keeps
    that score: an offer or a removal that changes a shared segment's reference count leaves the
    other entries' fractional bytes, and so their scores, as they were (breaks BEN-LEDGER-3)."""

    name = "scores-cached-per-entry"
    cached: dict[int, float | None] = field(default_factory=dict)

    def configure_benefit(self, config: BenefitConfig) -> None:
        super().configure_benefit(config)
        self.cached = {}

    def score(self, key: int) -> float | None:
        return self.cached[key]

    def rescore(self, *keys: int) -> None:
        for key in keys:
            if key in self.items:
                self.cached[key] = CanonicalBenefit.score(self, key)

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        decision = super().consider_admission(key, exclusive_bytes, shared, cost, pinned)
        self.rescore(key)
        return decision

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        decision = super().record_hit(key, cost)
        self.rescore(key)
        return decision

    def record_miss(self, key: int) -> None:
        super().record_miss(key)
        self.rescore(key)

    def observe_pressure(self, pressure: float) -> None:
        super().observe_pressure(pressure)
        self.rescore(*self.items)

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        self.cached.pop(key, None)
        return super().remove(key, pinned)


def scores_cached_per_entry() -> ScoresCachedPerEntry:
    return ScoresCachedPerEntry()
