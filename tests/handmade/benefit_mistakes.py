"""Hand-made wrong benefit policies (tests/test_diagnosis.py), each with one known mistake. The
first is the behaviour of the implementation behind seed 003 that findings F-15 sets aside, written
here on its own and certified at the results level, where the clock it moves cannot be seen
(``python:tests/handmade/benefit_mistakes.py:clock_on_rejection``); the others break an invariant
of the benefit state, certified at the state level."""

from dataclasses import dataclass

from kvspec.adapters.interface import Level
from kvspec.conformance.galleries.benefit_mutants import CanonicalBenefit, Item
from kvspec.reference.benefit import CostSample, Decision


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
