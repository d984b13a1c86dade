"""An independent benefit-policy implementation and its mutant gallery (spec/benefit.md).

CanonicalBenefit is written from spec/benefit.md without the reference: it imports only the
result shapes. Each mutant changes it in exactly one place, to break one rule the way an
implementer plausibly would; the benefit certification machine must tell every one apart from
the spec (tests/test_benefit_certify.py). Use them as adapters:
``--adapter python:kvspec.conformance.galleries.benefit_mutants:fractional_release``.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kvspec.adapters.benefit import BenefitState, EntryView
from kvspec.adapters.interface import ConfigRefused, Identity, Level
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims


def valid(cost: CostSample) -> bool:
    return all(type(v) is float and math.isfinite(v) and v >= 0.0 for v in cost)


def net(cost: CostSample) -> float:
    difference = cost[0] - cost[1]
    return difference if difference > 0.0 else 0.0


@dataclass
class Item:
    state: str
    hits: int
    misses: int
    rw: float
    ow: float
    cost: CostSample
    exclusive: int
    segments: list[int]
    seen: int


@dataclass
class CanonicalBenefit:
    """A plain benefit policy behind the BenefitAdapter interface, at the state level."""

    name = "canonical"
    breaks = ""  # a mutant's: the clause it breaks
    level: Level = "state"
    policies = ("benefit",)
    config: BenefitConfig = field(default_factory=BenefitConfig)
    clock: int = 0
    items: dict[int, Item] = field(default_factory=dict)
    ghosts: dict[int, tuple[int, float, float, int]] = field(default_factory=dict)
    segments: dict[int, tuple[int, list[int]]] = field(default_factory=dict)  # id -> (size, keys)

    @property
    def identity(self) -> Identity:
        return Identity(name=f"kvspec-benefit-mutants:{self.name}", language="python", version="1")

    def configure_benefit(self, config: BenefitConfig) -> None:
        ints = (config.probation_byte_budget, config.grace_observations, config.ghost_capacity, config.ghost_max_age_observations)
        if (any(type(v) is not int or v < 0 for v in ints) or type(config.persistence_hit_threshold) is not int
                or not 1 <= config.persistence_hit_threshold < 2**32 or type(config.min_reuse_probability) is not float
                or not 0.0 <= config.min_reuse_probability <= 1.0 or type(config.decay_factor) is not float
                or not 0.0 < config.decay_factor < 1.0):
            raise ConfigRefused("invalid configuration")
        self.config, self.clock, self.items, self.ghosts, self.segments = config, 0, {}, {}, {}

    # --- accounting ---
    def share(self, key: int, segments: dict[int, tuple[int, list[int]]] | None = None) -> float:
        table = self.segments if segments is None else segments
        total = 0.0
        for s in self.items[key].segments:
            if s in table and key in table[s][1]:
                total += table[s][0] / len(table[s][1])
        return total

    def entry_charge(self, key: int, segments: dict[int, tuple[int, list[int]]] | None = None) -> float:
        return float(self.items[key].exclusive) + self.share(key, segments)

    def charge(self, leaving: Sequence[int] = (), segments: dict[int, tuple[int, list[int]]] | None = None) -> int:
        total = 0.0
        for key in sorted(self.items):
            if self.items[key].state == "probation" and key not in leaving:
                total += self.entry_charge(key, segments)
        return math.ceil(total)

    def score(self, key: int) -> float | None:
        item = self.items[key]
        if not valid(item.cost):
            return None
        probability = min(max(item.rw / item.ow, 0.0), 1.0) if item.ow > 0.0 else 0.0
        size = self.entry_charge(key)
        if size <= 0.0:
            return None
        value = max(probability, self.config.min_reuse_probability) * net(item.cost) / size
        return value if math.isfinite(value) else None

    # --- the operations ---
    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        if not valid(cost):
            return Decision("reject", "invalid-cost-sample")
        if key in self.items:
            return Decision("reject", "already-resident-key")
        ids = [s for s, _ in shared]
        if len(set(ids)) != len(ids):
            return Decision("reject", "duplicate-segment-reference")
        if any(s in self.segments and self.segments[s][0] != size for s, size in shared):
            return Decision("reject", "segment-size-conflict")
        rejected = self.reject_without_benefit(cost)
        if rejected is not None:
            return rejected
        self.clock += 1
        self.expire()
        f = self.config.decay_factor
        hits, rw, ow = 0, 0.0, 0.0
        if key in self.ghosts:
            ghost_hits, ghost_rw, ghost_ow, _ = self.ghosts.pop(key)
            hits, rw, ow = ghost_hits + 1, ghost_rw * f + 1.0, ghost_ow * f + 1.0
        persist = hits >= self.config.persistence_hit_threshold
        for s, size in shared:
            self.segments.setdefault(s, (size, []))[1].append(key)
        self.items[key] = Item("admitted" if persist else "probation", hits, 0, rw, ow, cost, exclusive_bytes, ids, self.clock)
        reason = "zero-exclusive-bytes" if exclusive_bytes == 0 and not shared else "probation-new-entry"
        return Decision("admit-persist" if persist else "admit-probation", reason, self.select_probation_cap_victims(pinned))

    def reject_without_benefit(self, cost: CostSample) -> Decision | None:
        return Decision("reject", "no-net-benefit") if net(cost) <= 0.0 else None

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        if not self.hit_counts(cost):
            return None
        if valid(cost):
            self.clock += 1
        item = self.items.get(key)
        if item is None:
            return None
        f = self.config.decay_factor
        item.hits, item.seen, item.cost, item.rw, item.ow = item.hits + 1, self.clock, cost, item.rw * f + 1.0, item.ow * f + 1.0
        if item.state == "probation" and item.hits >= self.config.persistence_hit_threshold:
            item.state = "admitted"
            return Decision("promote", "probation-second-hit")
        return None

    def hit_counts(self, cost: CostSample) -> bool:
        return valid(cost)

    def record_miss(self, key: int) -> None:
        self.clock += 1
        item = self.items.get(key)
        if item is not None:
            item.misses += 1
            item.ow = item.ow * self.config.decay_factor + 1.0

    def observe_pressure(self, pressure: float) -> None:
        if math.isnan(pressure):
            return
        p = min(max(pressure, 0.0), 1.0)
        f = self.config.decay_factor
        keep, observe = f * (1.0 - p), f + (1.0 - f) * p
        for key in sorted(self.items):
            self.items[key].rw *= keep
            self.items[key].ow *= observe
        for key in sorted(self.ghosts):
            hits, rw, ow, seen = self.ghosts[key]
            self.ghosts[key] = (hits, rw * keep, ow * observe, seen)
        self.expire()

    def expire(self) -> None:
        oldest = max(self.clock - self.config.ghost_max_age_observations, 0)
        self.ghosts = {k: g for k, g in self.ghosts.items() if g[3] >= oldest}

    def by_age(self, keys: list[int]) -> list[int]:
        return sorted(keys, key=lambda k: (self.items[k].seen, k))

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        budget = self.config.probation_byte_budget
        if self.charge() <= budget:
            return CapRepair("satisfied")
        probation = [k for k, i in self.items.items() if i.state == "probation" and k not in pinned]
        candidates = self.by_age([k for k in probation if self.items[k].hits == 0]) + self.by_age([k for k in probation if self.items[k].hits > 0])
        scratch = {s: (size, list(keys)) for s, (size, keys) in self.segments.items()}
        victims: list[int] = []
        charge = self.charge()
        for key in candidates:
            for s in self.items[key].segments:
                scratch[s][1].remove(key)
                if not scratch[s][1]:
                    del scratch[s]
            victims.append(key)
            charge = self.charge(victims, scratch)
            if charge <= budget:
                return CapRepair("satisfied", tuple(victims))
        return CapRepair("deferred", tuple(victims), charge - budget)

    def order(self, pinned: frozenset[int]) -> list[int]:
        free = [k for k in self.items if k not in pinned]
        first = self.by_age([k for k in free if self.items[k].state == "probation" and self.items[k].hits == 0])
        scored = [(value, k) for k in free if (value := self.score(k)) is not None]
        return first + [k for _, k in self.rank(scored) if k not in first]

    def rank(self, scored: list[tuple[float, int]]) -> list[tuple[float, int]]:
        return sorted(scored)

    def freed(self, chosen: list[int]) -> int:
        whole = {s for k in chosen for s in self.items[k].segments if set(self.segments[s][1]) <= set(chosen)}
        return sum(self.items[k].exclusive for k in chosen) + sum(self.segments[s][0] for s in whole)

    def passes(self) -> tuple[bool, ...]:
        return (True, False)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        if bytes_to_free == 0:
            return Victims((), 0)
        order = self.order(pinned)
        chosen: list[int] = []
        freed = 0
        for honour_grace in self.passes():
            for key in order:
                if freed >= bytes_to_free:
                    return Victims(tuple(chosen), freed)
                in_grace = max(self.clock - self.items[key].seen, 0) < self.config.grace_observations
                if key in chosen or (honour_grace and in_grace):
                    continue
                chosen.append(key)
                freed = self.freed(chosen)
        return Victims(tuple(chosen), freed)

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        item = self.items.pop(key, None)
        if item is None:
            return None
        self.remember(key, item)
        for s in item.segments:
            self.segments[s][1].remove(key)
            if not self.segments[s][1]:
                del self.segments[s]
        return self.select_probation_cap_victims(pinned)

    def remember(self, key: int, item: Item) -> None:
        if self.config.ghost_capacity == 0:
            return
        while len(self.ghosts) >= self.config.ghost_capacity:
            del self.ghosts[min(self.ghosts, key=lambda k: (self.ghosts[k][3], k))]
        self.ghosts[key] = (item.hits, item.rw, item.ow, self.clock)

    def benefit_state(self) -> BenefitState:
        entries = tuple(EntryView(k, i.state, i.hits, i.misses, i.rw, i.ow, i.seen, self.score(k)) for k, i in sorted(self.items.items()))
        ghosts = tuple((k, *g) for k, g in sorted(self.ghosts.items()))
        return BenefitState(self.clock, entries, ghosts, self.charge())

    def close(self) -> None:
        self.configure_benefit(self.config)


# ---------------------------------------------------------------------------------------------
# The mutants: one change each.
# ---------------------------------------------------------------------------------------------


class PerEntryRounding(CanonicalBenefit):
    """Rounds each entry's charge up before summing: breaks BEN-LEDGER-5 (one ceiling, BEN-ARITH-3)."""

    name = "per-entry-rounding"
    breaks = "BEN-LEDGER-5"

    def charge(self, leaving: Sequence[int] = (), segments: dict[int, tuple[int, list[int]]] | None = None) -> int:
        return sum(math.ceil(self.entry_charge(k, segments)) for k in sorted(self.items)
                   if self.items[k].state == "probation" and k not in leaving)


class FractionalRelease(CanonicalBenefit):
    """Counts the victims' fractional shares as freed, not the segments actually released: breaks BEN-VICTIM-4."""

    name = "fractional-release"
    breaks = "BEN-VICTIM-4"

    def freed(self, chosen: list[int]) -> int:
        return math.floor(sum(self.entry_charge(k) for k in chosen))


class GraceNeverWaived(CanonicalBenefit):
    """Never takes an entry in grace: breaks BEN-VICTIM-3."""

    name = "grace-never-waived"
    breaks = "BEN-VICTIM-3"

    def passes(self) -> tuple[bool, ...]:
        return (True,)


class PinnedEvictable(CanonicalBenefit):
    """Ignores the pins when choosing victims: breaks BEN-VICTIM-5."""

    name = "pinned-evictable"
    breaks = "BEN-VICTIM-5"

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        return super().choose_victims(bytes_to_free, frozenset())


class GhostsLost(CanonicalBenefit):
    """Forgets an entry's reuse statistics when it is removed: breaks BEN-GHOST-1."""

    name = "ghosts-lost"
    breaks = "BEN-GHOST-1"

    def remember(self, key: int, item: Item) -> None:
        return None


class RejectAdvancesClock(CanonicalBenefit):
    """Advances the clock and expires ghosts before the net-benefit check, as the implementation
    behind seed 003 does (spec/findings.md F-15): breaks BEN-ADMIT-2."""

    name = "reject-advances-clock"
    breaks = "BEN-ADMIT-2"

    def reject_without_benefit(self, cost: CostSample) -> Decision | None:
        if net(cost) > 0.0:
            return None
        self.clock += 1
        self.expire()
        return Decision("reject", "no-net-benefit")


class InvalidHitCounted(CanonicalBenefit):
    """Counts a hit whose cost sample is invalid (the hits, the weights, the sample kept; only the
    clock stands still), as BEN-HIT-1 read before findings F-16 was resolved: breaks BEN-HIT-3."""

    name = "invalid-hit-counted"
    breaks = "BEN-HIT-3"

    def hit_counts(self, cost: CostSample) -> bool:
        return True


class NoKeyTiebreak(CanonicalBenefit):
    """Orders scored victims by score alone, ties in the order entries arrived: breaks BEN-VICTIM-2."""

    name = "no-key-tiebreak"
    breaks = "BEN-VICTIM-2"

    def rank(self, scored: list[tuple[float, int]]) -> list[tuple[float, int]]:
        return sorted(scored, key=lambda pair: pair[0])


MUTANTS: dict[str, type[CanonicalBenefit]] = {
    cls.name: cls for cls in (PerEntryRounding, FractionalRelease, GraceNeverWaived, PinnedEvictable, GhostsLost, RejectAdvancesClock,
                              InvalidHitCounted, NoKeyTiebreak)
}


def canonical() -> CanonicalBenefit:
    return CanonicalBenefit()


def per_entry_rounding() -> CanonicalBenefit:
    return PerEntryRounding()


def fractional_release() -> CanonicalBenefit:
    return FractionalRelease()


def grace_never_waived() -> CanonicalBenefit:
    return GraceNeverWaived()


def pinned_evictable() -> CanonicalBenefit:
    return PinnedEvictable()


def ghosts_lost() -> CanonicalBenefit:
    return GhostsLost()


def reject_advances_clock() -> CanonicalBenefit:
    return RejectAdvancesClock()


def invalid_hit_counted() -> CanonicalBenefit:
    return InvalidHitCounted()


def no_key_tiebreak() -> CanonicalBenefit:
    return NoKeyTiebreak()
