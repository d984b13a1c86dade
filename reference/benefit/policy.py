"""spec/benefit.md sections 6 to 11 and 14: the clock, admission, hits and misses, grace,
pressure decay, ghosts and removal, on one BenefitPolicy."""

import math
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, no_type_check

from ..contracts import ensure, snapshot
from ..errors import KvspecError
from .config import HELD_BYTES_MAX, BenefitConfig, CostSample, check_bytes, check_config, check_id, is_valid, net_benefit
from .ledger import Ledger, new_bytes, register, release, shares_add_up
from .score import Entry
from .selection import CapRepair, Victims, choose_victims, probation_charge, select_probation_cap_victims

DecisionKind = Literal["admit-probation", "admit-persist", "reject", "promote"]


class Decision(NamedTuple):
    """What consider_admission or record_hit decided, with one opaque reason token (BEN-ADMIT-9)
    and, when an offer is admitted, the probation-cap repair it calls for (BEN-ADMIT-8)."""

    kind: DecisionKind
    reason: str
    cap: CapRepair | None = None


class Ghost(NamedTuple):
    """BEN-GHOST-1: the reuse statistics of a removed entry."""

    hits: int
    rw: float
    ow: float
    last_observation: int


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def fingerprint(policy: "BenefitPolicy") -> tuple[object, ...]:
    """Everything a rejected offer must leave as it was (BEN-ADMIT-2)."""
    entries = tuple((key, repr(entry)) for key, entry in sorted(policy.entries.items()))
    ledger = tuple((key, segment.size, tuple(segment.refs)) for key, segment in sorted(policy.ledger.items()))
    return policy.clock, entries, tuple(sorted(policy.ghosts.items())), ledger


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def weights_are_finite(policy: "BenefitPolicy") -> bool:
    """No NaN or infinity is ever a weight (BEN-ARITH-1)."""
    weights = [w for e in policy.entries.values() for w in (e.rw, e.ow)] + [w for g in policy.ghosts.values() for w in (g.rw, g.ow)]
    return all(math.isfinite(w) for w in weights)


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def bytes_held(policy: "BenefitPolicy") -> int:
    """BEN-KEY-2: every entry's exclusive bytes and every segment in the ledger, once."""
    return sum(entry.exclusive_bytes for entry in policy.entries.values()) + sum(segment.size for segment in policy.ledger.values())


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def state_holds(policy: "BenefitPolicy") -> bool:
    """BEN-LEDGER-4, BEN-GHOST-3, BEN-KEY-2 and finite weights, over the whole state."""
    return (shares_add_up(policy.ledger) and len(policy.ghosts) <= policy.config.ghost_capacity and weights_are_finite(policy)
            and policy.held == bytes_held(policy) <= HELD_BYTES_MAX)


@dataclass(slots=True, eq=False)
class BenefitPolicy:
    """The policy's whole state: the configuration, the clock, the entries, the ghosts and the ledger."""

    config: BenefitConfig = field(default_factory=BenefitConfig)
    clock: int = 0  # BEN-CLOCK-1: from 0, by 1 at a time
    entries: dict[int, Entry] = field(default_factory=dict)
    ghosts: dict[int, Ghost] = field(default_factory=dict)
    ledger: Ledger = field(default_factory=dict)
    held: int = 0  # BEN-KEY-2: bytes_held, kept as offers and removals change it

    def __post_init__(self) -> None:
        check_config(self.config)  # BEN-CONF-8

    @snapshot(lambda self: fingerprint(self), "state", per_access_state=True)
    @ensure(lambda self, OLD, result: result.kind != "reject" or fingerprint(self) == OLD.state,
            "BEN-ADMIT-2: a rejected offer changes nothing", per_access_state=True)
    @ensure(lambda self, result: state_holds(self), "BEN-LEDGER-4, BEN-GHOST-3: the state after an offer", per_access_state=True)
    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int] = frozenset()) -> Decision:
        """BEN-ADMIT-1 to BEN-ADMIT-9."""
        check_id(key, "key")
        check_bytes(exclusive_bytes, "exclusive_bytes")
        for segment_id, size in shared:
            check_id(segment_id, "segment id")
            check_bytes(size, "segment size")
        added = exclusive_bytes + new_bytes(self.ledger, shared)  # BEN-KEY-2
        if self.held + added > HELD_BYTES_MAX:
            raise KvspecError(f"BEN-KEY-2: exclusive_bytes and shared would take the bytes held from {self.held} to {self.held + added}, "
                              f"above 2**53")
        rejected = self.structural_reject(key, shared, cost)
        if rejected is not None:
            return Decision("reject", rejected)  # BEN-ADMIT-1
        if net_benefit(cost) <= 0.0:
            return Decision("reject", "no-net-benefit")  # BEN-ADMIT-2: before the clock (findings F-15)
        self.clock += 1  # BEN-ADMIT-3, BEN-CLOCK-2
        self.expire_ghosts()
        reason = "zero-exclusive-bytes" if exclusive_bytes == 0 and not shared else "probation-new-entry"  # BEN-ADMIT-4
        f = self.config.decay_factor
        hits, rw, ow = 0, 0.0, 0.0
        ghost = self.ghosts.pop(key, None)
        if ghost is not None:  # BEN-ADMIT-5: the re-offer counts as a reuse
            hits, rw, ow = ghost.hits + 1, ghost.rw * f + 1.0, ghost.ow * f + 1.0
        persist = hits >= self.config.persistence_hit_threshold  # BEN-ADMIT-6
        register(self.ledger, key, shared)  # BEN-ADMIT-7
        self.held += added
        self.entries[key] = Entry("admitted" if persist else "probation", hits, 0, rw, ow, cost, exclusive_bytes,
                                  [segment_id for segment_id, _ in shared], self.clock)
        return Decision("admit-persist" if persist else "admit-probation", reason, self.select_probation_cap_victims(pinned))

    def structural_reject(self, key: int, shared: list[tuple[int, int]], cost: CostSample) -> str | None:
        """BEN-ADMIT-1: the first check that fails, in order, or None."""
        if not is_valid(cost):
            return "invalid-cost-sample"
        if key in self.entries:
            return "already-resident-key"
        ids = [segment_id for segment_id, _ in shared]
        if len(set(ids)) != len(ids):
            return "duplicate-segment-reference"
        if any(segment_id in self.ledger and self.ledger[segment_id].size != size for segment_id, size in shared):
            return "segment-size-conflict"
        return None

    @snapshot(lambda self: fingerprint(self), "state", per_access_state=True)
    @ensure(lambda self, cost, OLD, result: is_valid(cost) or (result is None and fingerprint(self) == OLD.state),
            "BEN-HIT-3: a hit with an invalid sample changes nothing", per_access_state=True)
    @ensure(lambda self, result: weights_are_finite(self), "BEN-HIT-1: weights stay finite", per_access_state=True)
    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        """BEN-HIT-1, BEN-HIT-2, BEN-CLOCK-3."""
        check_id(key, "key")
        if not is_valid(cost):
            return None  # BEN-HIT-3: before the clock, the hits and the weights (findings F-16)
        self.clock += 1  # BEN-CLOCK-3: resident or not
        entry = self.entries.get(key)
        if entry is None:
            return None
        f = self.config.decay_factor
        entry.hits += 1
        entry.last_observation = self.clock
        entry.last_cost = cost  # BEN-SCORE-5
        entry.rw = entry.rw * f + 1.0
        entry.ow = entry.ow * f + 1.0
        if entry.state == "probation" and entry.hits >= self.config.persistence_hit_threshold:
            entry.state = "admitted"
            return Decision("promote", "probation-second-hit")  # BEN-HIT-2
        return None

    def record_miss(self, key: int) -> None:
        """BEN-MISS-1, BEN-CLOCK-3."""
        check_id(key, "key")
        self.clock += 1
        entry = self.entries.get(key)
        if entry is not None:
            entry.misses += 1
            entry.ow = entry.ow * self.config.decay_factor + 1.0  # rw unchanged; last_observation not refreshed

    @ensure(lambda self, result: weights_are_finite(self), "BEN-DECAY-2: weights stay finite", per_access_state=True)
    def observe_pressure(self, pressure: float) -> None:
        """BEN-DECAY-1 to BEN-DECAY-3."""
        if type(pressure) not in (int, float):
            raise KvspecError(f"BEN-DECAY-1: pressure must be a number, not {pressure!r}")
        p = float(pressure)
        if math.isnan(p):
            return  # BEN-DECAY-1: ignored
        p = min(max(p, 0.0), 1.0)  # +inf counts as 1, -inf as 0
        f = self.config.decay_factor
        keep, observe = f * (1.0 - p), f + (1.0 - f) * p
        for key in sorted(self.entries):  # BEN-DECAY-2
            entry = self.entries[key]
            entry.rw *= keep
            entry.ow *= observe
        for key in sorted(self.ghosts):
            ghost = self.ghosts[key]
            self.ghosts[key] = ghost._replace(rw=ghost.rw * keep, ow=ghost.ow * observe)
        self.expire_ghosts()  # BEN-DECAY-3

    def expire_ghosts(self) -> None:
        """BEN-GHOST-4: keep the ghosts observed at or after max(clock - max age, 0)."""
        oldest = max(self.clock - self.config.ghost_max_age_observations, 0)
        for key in [key for key, ghost in self.ghosts.items() if ghost.last_observation < oldest]:
            del self.ghosts[key]

    def record_ghost(self, key: int, entry: Entry) -> None:
        """BEN-GHOST-1 to BEN-GHOST-3."""
        capacity = self.config.ghost_capacity
        if capacity == 0:
            return
        while len(self.ghosts) >= capacity:  # BEN-GHOST-2: the oldest (last_observation, key) goes
            del self.ghosts[min(self.ghosts, key=lambda k: (self.ghosts[k].last_observation, k))]
        self.ghosts[key] = Ghost(entry.hits, entry.rw, entry.ow, self.clock)

    def select_probation_cap_victims(self, pinned: frozenset[int] = frozenset()) -> CapRepair:
        """BEN-CAP-1 to BEN-CAP-5 (selection only)."""
        return select_probation_cap_victims(self.entries, self.ledger, self.config, pinned)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int] = frozenset()) -> Victims:
        """BEN-VICTIM-1 to BEN-VICTIM-5 (selection only)."""
        check_bytes(bytes_to_free, "bytes_to_free")
        return choose_victims(self.entries, self.ledger, self.config, self.clock, bytes_to_free, pinned)

    @snapshot(lambda self: self.clock, "clock")
    @ensure(lambda self, OLD, result: self.clock == OLD.clock, "BEN-CLOCK-4: remove does not advance the clock")
    def remove(self, key: int, pinned: frozenset[int] = frozenset()) -> tuple[Entry, CapRepair] | None:
        """BEN-REMOVE-1: the removed entry and a fresh probation-cap repair, or None."""
        check_id(key, "key")
        entry = self.entries.pop(key, None)
        if entry is None:
            return None
        self.record_ghost(key, entry)
        self.held -= entry.exclusive_bytes + release(self.ledger, key, entry.segments)
        return entry, self.select_probation_cap_victims(pinned)

    def probation_charge(self) -> int:
        """BEN-LEDGER-5 for the state as it is."""
        return probation_charge(self.entries, self.ledger)

    def used_bytes(self) -> int:
        """BEN-CMP-2: the entries' exclusive bytes."""
        return sum(entry.exclusive_bytes for entry in self.entries.values())
