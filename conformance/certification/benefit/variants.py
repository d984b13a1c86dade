"""The benefit spec with one rule broken, built from the reference: the variants the benefit
diagnosis replays a divergence through (diagnosis.py), each naming in ``breaks`` the
clause it breaks.

A variant is a BenefitPolicy (reference/benefit/policy.py) with one step replaced, served as the
reference is (ReferenceBenefitAdapter(policy_factory=variant)): an operation run on other
arguments or followed by one more step, or selection run with one of its measures replaced
(reference/benefit/selection.py's ranking, freed bytes and probation charge). Every other step is
the reference's own, contracts included; selection with a measure replaced runs without
selection's contracts, which state the spec's measures.
"""

import inspect
import math

from kvspec.reference.benefit import BenefitPolicy, CapRepair, CostSample, Decision, Victims, selection
from kvspec.reference.benefit.config import check_bytes, is_valid
from kvspec.reference.benefit.ledger import Ledger
from kvspec.reference.benefit.score import Entry, charged_bytes
from kvspec.reference.benefit.selection import by_score_then_key, in_grace, physical_release, probation_charge

# Selection without its contracts: a variant that replaces a measure breaks, by design, the
# contract that states the spec's (BEN-VICTIM-4's freed bytes, BEN-CAP-4's charge after the repair).
choose_victims = inspect.unwrap(selection.choose_victims)
select_probation_cap_victims = inspect.unwrap(selection.select_probation_cap_victims)


class Variant(BenefitPolicy):
    """The reference with selection's measures as the class's, for a subclass to replace one."""

    __slots__ = ()
    breaks = ""
    ranked = staticmethod(by_score_then_key)
    released = staticmethod(physical_release)
    charged = staticmethod(probation_charge)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int] = frozenset()) -> Victims:
        check_bytes(bytes_to_free, "bytes_to_free")
        return choose_victims(self.entries, self.ledger, self.config, self.clock, bytes_to_free, pinned, self.ranked, self.released)

    def select_probation_cap_victims(self, pinned: frozenset[int] = frozenset()) -> CapRepair:
        return select_probation_cap_victims(self.entries, self.ledger, self.config, pinned, self.charged)

    def probation_charge(self) -> int:
        return self.charged(self.entries, self.ledger, frozenset())


def rounded_each(entries: dict[int, Entry], ledger: Ledger, leaving: frozenset[int]) -> int:
    return sum(math.ceil(charged_bytes(ledger, key, entry)) for key, entry in sorted(entries.items())
               if entry.state == "probation" and key not in leaving)


class PerEntryRounding(Variant):
    """Rounds each entry's charge up before summing, not the sum once (BEN-ARITH-3)."""

    __slots__ = ()
    breaks = "BEN-LEDGER-5"
    charged = staticmethod(rounded_each)


def fractional_release(entries: dict[int, Entry], ledger: Ledger, victims: list[int]) -> int:
    return math.floor(sum(charged_bytes(ledger, key, entries[key]) for key in victims))


class FractionalRelease(Variant):
    """Counts the victims' fractional shares as freed, not the segments their removal releases."""

    __slots__ = ()
    breaks = "BEN-VICTIM-4"
    released = staticmethod(fractional_release)


def by_score_alone(scored: list[tuple[float, int]]) -> list[tuple[float, int]]:
    return sorted(scored, key=lambda pair: pair[0])  # a stable sort: ties stay in the order the entries arrived


class NoKeyTiebreak(Variant):
    """Orders scored victims by score alone, ties in the order the entries arrived."""

    __slots__ = ()
    breaks = "BEN-VICTIM-2"
    ranked = staticmethod(by_score_alone)


class GraceNeverWaived(BenefitPolicy):
    """Never takes an entry in grace: the entries in grace are chosen as if pinned."""

    __slots__ = ()
    breaks = "BEN-VICTIM-3"

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int] = frozenset()) -> Victims:
        grace = self.config.grace_observations
        in_grace_now = frozenset(key for key, entry in self.entries.items() if in_grace(entry, self.clock, grace))
        return super().choose_victims(bytes_to_free, pinned | in_grace_now)


class PinnedEvictable(BenefitPolicy):
    """Ignores the pins when choosing victims (not in the cap repair)."""

    __slots__ = ()
    breaks = "BEN-VICTIM-5"

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int] = frozenset()) -> Victims:
        return super().choose_victims(bytes_to_free, frozenset())


class GhostsLost(BenefitPolicy):
    """Forgets an entry's reuse statistics when it is removed: no ghost is recorded."""

    __slots__ = ()
    breaks = "BEN-GHOST-1"

    def record_ghost(self, key: int, entry: Entry) -> None:
        return None


class RejectAdvancesClock(BenefitPolicy):
    """Advances the clock and expires the ghosts on an offer rejected for no net benefit, as the
    implementation behind seed 003 does (spec/findings.md F-15)."""

    __slots__ = ()
    breaks = "BEN-ADMIT-2"

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int] = frozenset()) -> Decision:
        decision = super().consider_admission(key, exclusive_bytes, shared, cost, pinned)
        if decision.reason == "no-net-benefit":
            self.clock += 1
            self.expire_ghosts()
        return decision


VALID_SAMPLE = CostSample(0.0, 0.0)  # any valid one: the hit stores it as the last sample, which the invalid one then replaces


class InvalidHitCounted(BenefitPolicy):
    """Counts a hit whose cost sample is invalid: the hits, the weights and the sample kept, only
    the clock standing still, as BEN-HIT-1 read before findings F-16 was resolved."""

    __slots__ = ()
    breaks = "BEN-HIT-3"

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        if is_valid(cost):
            return super().record_hit(key, cost)
        self.clock -= 1  # the reference's hit advances the clock, which this one leaves where it was
        decision = super().record_hit(key, VALID_SAMPLE)  # counted as the reference counts a valid hit
        if key in self.entries:
            self.entries[key].last_cost = cost
        return decision


VARIANTS: tuple[type[BenefitPolicy], ...] = (PerEntryRounding, FractionalRelease, GraceNeverWaived, PinnedEvictable, GhostsLost,
                                             RejectAdvancesClock, InvalidHitCounted, NoKeyTiebreak)
