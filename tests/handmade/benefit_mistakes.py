"""A hand-made wrong benefit policy (tests/test_diagnosis.py): the behaviour of the implementation
behind seed 003 that findings F-15 sets aside, written here on its own and certified at the
results level, where the clock it moves cannot be seen. ``python:tests/handmade/benefit_mistakes.py:clock_on_rejection``."""

from dataclasses import dataclass

from kvspec.adapters.interface import Level
from kvspec.conformance.benefit_mutants import CanonicalBenefit
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
