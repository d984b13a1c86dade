"""The benefit policy of spec/benefit.md, indexed: the same rules as kvspec.reference.benefit, kept
by structures maintained as the state changes, so that a replay does not pay the reference's
O(entries) selection on every call. The reference stays the definition; kvspec holds this one to
it as it holds any implementation (IndexedBenefitAdapter, tests/test_indexed_benefit.py,
docs/indexed-benefit.md).

IndexedBenefitPolicy is a BenefitPolicy whose bookkeeping differs, nothing else: the same Entry,
Ghost, Decision, CapRepair and Victims, the same checks of the configuration and of the inputs,
the same score(). What it indexes:

- the probation charge (BEN-LEDGER-5): its exact sum and a bound on the rounding of the literal
  one, kept per segment as references come and go (indexed_charge.py, with the proof); the literal
  charge where the bound cannot decide;
- the cap candidates (BEN-CAP-2): each clock tick sets at most one entry's last_observation
  (BEN-ADMIT-7, BEN-HIT-1; a miss sets none), so it is unique among entries and the order by
  (last_observation, key) is the order of the ticks: two insertion-ordered dicts, the probation
  entries without hits and those with, an entry moving to the end when it is hit. The cap walks
  them releasing each candidate's references in a scratch overlay of the segments it touches (indexed_charge.py), not
  a copy of the ledger; the caller's removal of the first victim consumes the walk's result;
- the victim order (BEN-VICTIM-2): the same first dict, then a heap of (score, key) refreshed
  lazily (indexed_scores.py); BEN-VICTIM-4's freed bytes count each segment's chosen references;
- the ghosts (BEN-GHOST-2, BEN-GHOST-4): a heap of (last_observation, key), cleaned lazily;
- the bytes the entries hold (BEN-CMP-2's used).
"""

from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from itertools import chain

from kvspec.adapters.benefit import BenefitState, EntryView, ReferenceBenefitAdapter
from kvspec.adapters.interface import Identity
from kvspec.conformance.measurement.indexed_charge import Released, Shares, charge_bounds, released_charge, share_terms, whole
from kvspec.conformance.measurement.indexed_scores import ScoreOrder
from kvspec.reference import SPEC_VERSION, KvspecError
from kvspec.reference.benefit import BenefitPolicy, CapRepair, CostSample, Decision, Victims
from kvspec.reference.benefit.config import HELD_BYTES_MAX, UINT64_MAX, check_bytes, check_id, is_valid, net_benefit
from kvspec.reference.benefit.ledger import Segment
from kvspec.reference.benefit.policy import Ghost
from kvspec.reference.benefit.score import Entry
from kvspec.reference.benefit.selection import charge_after, in_grace
from kvspec.reference.validation import INT64_MAX


@dataclass(slots=True, eq=False)
class IndexedBenefitPolicy(BenefitPolicy):
    """BenefitPolicy's state (config, clock, entries, ghosts, ledger, held) and its indexes."""

    used: int = 0  # the entries' exclusive bytes
    unproven: dict[int, None] = field(default_factory=dict)  # probation entries without hits, oldest observation first
    proven: dict[int, None] = field(default_factory=dict)  # probation entries with hits, likewise
    shares: dict[int, Shares] = field(default_factory=dict)  # segments some probation entry references
    charge_total: int = 0  # indexed_charge: S, times 2**SCALE
    charge_additions: int = 0  # A
    charge_inexact: int = 0
    literal_charges: int = 0  # how often the bounds could not decide
    scored: ScoreOrder = field(default_factory=ScoreOrder)
    ghost_heap: list[tuple[int, int]] = field(default_factory=list)
    pending: tuple[frozenset[int], CapRepair] | None = None  # the last cap walk, until its first victim is removed

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int] = frozenset()) -> Decision:
        """BEN-ADMIT-1 to BEN-ADMIT-9, as BenefitPolicy.consider_admission, and the indexes."""
        ids, added, rejected = self.offer_checks(key, exclusive_bytes, shared, cost)
        if rejected is not None:
            return Decision("reject", rejected)
        if net_benefit(cost) <= 0.0:
            return Decision("reject", "no-net-benefit")
        self.pending = None
        self.clock += 1
        self.expire_ghosts()
        reason = "zero-exclusive-bytes" if exclusive_bytes == 0 and not shared else "probation-new-entry"
        f = self.config.decay_factor
        hits, rw, ow = 0, 0.0, 0.0
        ghost = self.ghosts.pop(key, None)  # its item in ghost_heap goes stale
        if ghost is not None:
            hits, rw, ow = ghost.hits + 1, ghost.rw * f + 1.0, ghost.ow * f + 1.0
        persist = hits >= self.config.persistence_hit_threshold
        self.entries[key] = Entry("admitted" if persist else "probation", hits, 0, rw, ow, cost, exclusive_bytes, ids, self.clock)
        self.held += added
        self.used += exclusive_bytes
        self.register(key, shared, 0 if persist else 1)
        if not persist:
            (self.proven if hits else self.unproven)[key] = None  # the newest observation: last
            self.charge_total += whole(exclusive_bytes)
            self.charge_additions += 2
        self.scored.stale_keys.add(key)
        return Decision("admit-persist" if persist else "admit-probation", reason, self.select_probation_cap_victims(pinned))

    def offer_checks(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]],
                     cost: CostSample) -> tuple[list[int], int, str | None]:
        """BEN-KEY-1, BEN-KEY-2 (the error first), then BEN-ADMIT-1's rejection if any, as BenefitPolicy's
        check_id, check_bytes, new_bytes and structural_reject find them, in one pass over ``shared``: the
        segment ids (in order, once each), the bytes the offer adds and the rejection."""
        check_id(key, "key")
        check_bytes(exclusive_bytes, "exclusive_bytes")
        added, conflict, first = exclusive_bytes, False, {}
        for segment_id, size in shared:
            if type(segment_id) is not int or type(size) is not int or not 0 <= segment_id <= UINT64_MAX or not 0 <= size <= INT64_MAX:
                check_id(segment_id, "segment id")
                check_bytes(size, "segment size")
            if segment_id in first:
                continue  # a duplicate (rejected below): its first size counts
            first[segment_id] = None
            segment = self.ledger.get(segment_id)
            if segment is None:
                added += size
            elif segment.size != size:
                conflict = True
        if self.held + added > HELD_BYTES_MAX:
            raise KvspecError(f"BEN-KEY-2: exclusive_bytes and shared would take the bytes held from {self.held} to {self.held + added}, "
                              f"above 2**53")
        if not is_valid(cost):
            return [], added, "invalid-cost-sample"
        if key in self.entries:
            return [], added, "already-resident-key"
        if len(first) != len(shared):
            return [], added, "duplicate-segment-reference"
        return list(first), added, "segment-size-conflict" if conflict else None

    def register(self, key: int, shared: list[tuple[int, int]], probation: int) -> None:
        """BEN-LEDGER-1: ``key`` references each segment; the shares of the others fall, and so their
        scores go stale. Each segment's part of the charge anew (the new entry's ``probation`` term included)."""
        ledger, shares = self.ledger, self.shares
        total = inexact = 0
        for segment_id, size in shared:
            segment = ledger.get(segment_id)
            if segment is None:
                ledger[segment_id] = Segment(size, {key: True})
                if probation:
                    share, partial = share_terms(size, 1)
                    shares[segment_id] = (1, share, partial)
                    total += share
                    inexact += partial
                continue
            segment.refs[key] = True
            self.scored.stale_segments.add(segment_id)
            old = shares.get(segment_id)
            if old is not None:
                total -= old[0] * old[1]
                inexact -= old[0] * old[2]
                count = old[0] + probation
            elif probation:
                count = 1
            else:
                continue
            share, partial = share_terms(segment.size, len(segment.refs))
            shares[segment_id] = (count, share, partial)
            total += count * share
            inexact += count * partial
        self.charge_total += total
        self.charge_inexact += inexact
        self.charge_additions += probation * len(shared)

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        """BEN-HIT-1 to BEN-HIT-3, BEN-CLOCK-3; a hit probationer moves to the end of ``proven``."""
        check_id(key, "key")
        if not is_valid(cost):
            return None
        self.clock += 1
        entry = self.entries.get(key)
        if entry is None:
            return None
        self.pending = None
        self.scored.stale_keys.add(key)
        f = self.config.decay_factor
        unproven = entry.hits == 0
        entry.hits += 1
        entry.last_observation = self.clock
        entry.last_cost = cost
        entry.rw = entry.rw * f + 1.0
        entry.ow = entry.ow * f + 1.0
        if entry.state != "probation":
            return None
        del (self.unproven if unproven else self.proven)[key]
        if entry.hits >= self.config.persistence_hit_threshold:
            entry.state = "admitted"
            self.leave_charge(entry)
            return Decision("promote", "probation-second-hit")
        self.proven[key] = None
        return None

    def leave_charge(self, entry: Entry) -> None:
        """A probationer promoted: its terms leave the charge; the references, and so the shares, stay."""
        self.charge_total -= whole(entry.exclusive_bytes)
        self.charge_additions -= 2 + len(entry.segments)
        for segment_id in entry.segments:
            probation, share, inexact = self.shares[segment_id]
            self.charge_total -= share
            self.charge_inexact -= inexact
            if probation == 1:
                del self.shares[segment_id]
            else:
                self.shares[segment_id] = (probation - 1, share, inexact)

    def record_miss(self, key: int) -> None:
        """BEN-MISS-1, BEN-CLOCK-3, as the reference records it; a resident entry's score goes stale."""
        BenefitPolicy.record_miss(self, key)  # not super(): dataclass(slots=True) made this class anew
        if key in self.entries:
            self.scored.stale_keys.add(key)

    def observe_pressure(self, pressure: float) -> None:
        """BEN-DECAY-1 to BEN-DECAY-3. Each weight is updated on its own, so the order of BEN-DECAY-2
        changes no result: the dicts' order serves."""
        if type(pressure) not in (int, float):
            raise KvspecError(f"BEN-DECAY-1: pressure must be a number, not {pressure!r}")
        p = float(pressure)
        if p != p:
            return
        p = min(max(p, 0.0), 1.0)
        f = self.config.decay_factor
        keep, observe = f * (1.0 - p), f + (1.0 - f) * p
        for entry in self.entries.values():
            entry.rw *= keep
            entry.ow *= observe
        for key, ghost in list(self.ghosts.items()):
            self.ghosts[key] = ghost._replace(rw=ghost.rw * keep, ow=ghost.ow * observe)
        self.scored.all_stale = True
        self.expire_ghosts()

    def expire_ghosts(self) -> None:
        """BEN-GHOST-4: the ghosts observed before max(clock - max age, 0) are at the top of ghost_heap."""
        oldest = max(self.clock - self.config.ghost_max_age_observations, 0)
        heap = self.ghost_heap
        while heap and heap[0][0] < oldest:
            self.drop_ghost(*heappop(heap))

    def drop_ghost(self, last_observation: int, key: int) -> bool:
        """Drop the ghost an item of ghost_heap names, unless the item is stale (the ghost taken over, or another since)."""
        ghost = self.ghosts.get(key)
        if ghost is None or ghost.last_observation != last_observation:
            return False
        del self.ghosts[key]
        return True

    def record_ghost(self, key: int, entry: Entry) -> None:
        """BEN-GHOST-1 to BEN-GHOST-3: the smallest (last_observation, key) is the top of ghost_heap."""
        capacity = self.config.ghost_capacity
        if capacity == 0:
            return
        heap = self.ghost_heap
        while len(self.ghosts) >= capacity:
            while not self.drop_ghost(*heappop(heap)):
                pass
        self.ghosts[key] = Ghost(entry.hits, entry.rw, entry.ow, self.clock)
        heappush(heap, (self.clock, key))
        if len(heap) > 2 * len(self.ghosts) + 64:  # stale items of ghosts taken over
            self.ghost_heap = [(ghost.last_observation, k) for k, ghost in self.ghosts.items()]
            heapify(self.ghost_heap)

    def within_budget(self, total: int, additions: int, inexact: int, leaving: list[int]) -> bool:
        """BEN-CAP-1: the charge, once ``leaving`` are gone, at most the budget."""
        budget = self.config.probation_byte_budget
        least, greatest = charge_bounds(total, additions, inexact)
        if greatest <= budget:
            return True
        if least > budget:
            return False
        return self.literal_charge(leaving) <= budget

    def charge(self, total: int, additions: int, inexact: int, leaving: list[int]) -> int:
        """BEN-LEDGER-5 once ``leaving`` are gone."""
        least, greatest = charge_bounds(total, additions, inexact)
        return least if least == greatest else self.literal_charge(leaving)

    def literal_charge(self, leaving: list[int]) -> int:
        """The reference's computation, where the bounds cannot decide."""
        self.literal_charges += 1
        return charge_after(self.entries, self.ledger, tuple(leaving))

    def probation_charge(self) -> int:
        """BEN-LEDGER-5 for the state as it is."""
        return self.charge(self.charge_total, self.charge_additions, self.charge_inexact, [])

    def select_probation_cap_victims(self, pinned: frozenset[int] = frozenset()) -> CapRepair:
        """BEN-CAP-1 to BEN-CAP-5: the candidates in order, each one's references released in
        ``released``, a scratch view of the segments it touches; the charge kept as in register and release."""
        total, additions, inexact = self.charge_total, self.charge_additions, self.charge_inexact
        if self.within_budget(total, additions, inexact, []):
            return CapRepair("satisfied")
        released: dict[int, Released] = {}
        victims: list[int] = []
        ledger, shares = self.ledger, self.shares
        for key in chain(self.unproven, self.proven):
            if key in pinned:
                continue
            entry = self.entries[key]
            victims.append(key)
            total -= whole(entry.exclusive_bytes)
            additions -= 2 + len(entry.segments)
            change, partials = released_charge(entry.segments, ledger, shares, released)
            total += change
            inexact += partials
            if self.within_budget(total, additions, inexact, victims):
                return self.pend(pinned, CapRepair("satisfied", tuple(victims)))
        shortfall = self.charge(total, additions, inexact, victims) - self.config.probation_byte_budget
        return self.pend(pinned, CapRepair("deferred", tuple(victims), shortfall))

    def pend(self, pinned: frozenset[int], repair: CapRepair) -> CapRepair:
        """Keep the repair: once its first victim is removed, the same walk from the state left gives the rest."""
        self.pending = (pinned, repair) if repair.victims else None
        return repair

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int] = frozenset()) -> Victims:
        """BEN-VICTIM-1 to BEN-VICTIM-5: the first pass walks the order, keeping the entries in
        grace aside; when it ends short, the second pass takes those, in the same order."""
        check_bytes(bytes_to_free, "bytes_to_free")
        if bytes_to_free == 0:
            return Victims((), 0)
        self.scored.refresh(self.entries, self.ledger, self.config.min_reuse_probability)
        grace, clock = self.config.grace_observations, self.clock
        chosen: list[int] = []
        waiting: list[int] = []  # in grace
        chosen_refs: dict[int, int] = {}
        freed = 0
        scored = self.scored.ascending()
        try:
            for key in chain(self.unproven, (key for key in scored if key not in self.unproven)):
                if freed >= bytes_to_free:
                    break
                if key in pinned:
                    continue
                if in_grace(self.entries[key], clock, grace):
                    waiting.append(key)
                else:
                    chosen.append(key)
                    freed += self.released_by(key, chosen_refs)
        finally:
            scored.close()
        for key in waiting:
            if freed >= bytes_to_free:
                break
            chosen.append(key)
            freed += self.released_by(key, chosen_refs)
        return Victims(tuple(chosen), freed)

    def released_by(self, key: int, chosen_refs: dict[int, int]) -> int:
        """BEN-VICTIM-4: a victim's exclusive bytes, and each of its segments whose references are now all chosen."""
        entry = self.entries[key]
        freed = entry.exclusive_bytes
        for segment_id in entry.segments:
            count = chosen_refs.get(segment_id, 0) + 1
            chosen_refs[segment_id] = count
            segment = self.ledger[segment_id]
            if count == len(segment.refs):
                freed += segment.size
        return freed

    def remove(self, key: int, pinned: frozenset[int] = frozenset()) -> tuple[Entry, CapRepair] | None:
        """BEN-REMOVE-1. Removing the first victim of the last cap walk, under the same pins, leaves
        the state that walk reached after it; the fresh repair is the rest of the walk."""
        check_id(key, "key")
        entry = self.entries.pop(key, None)
        if entry is None:
            return None
        pending, self.pending = self.pending, None
        self.record_ghost(key, entry)
        self.used -= entry.exclusive_bytes
        self.held -= entry.exclusive_bytes + self.release(key, entry)
        self.scored.forget(key)
        if pending is not None and pending[0] == pinned and pending[1].victims[0] == key:
            repair = pending[1]
            return entry, self.pend(pinned, repair._replace(victims=repair.victims[1:]))
        return entry, self.select_probation_cap_victims(pinned)

    def release(self, key: int, entry: Entry) -> int:
        """BEN-LEDGER-2: drop ``key``'s references, and its terms of the charge: the others' shares rise,
        and so their scores go stale. The bytes of the segments dropped."""
        probation = 1 if entry.state == "probation" else 0
        if probation:
            del (self.proven if entry.hits else self.unproven)[key]
            self.charge_total -= whole(entry.exclusive_bytes)
            self.charge_additions -= 2 + len(entry.segments)
        ledger, shares = self.ledger, self.shares
        dropped = total = inexact = 0
        for segment_id in entry.segments:
            segment = ledger[segment_id]
            refs = segment.refs
            del refs[key]
            if not refs:
                del ledger[segment_id]
                dropped += segment.size
                if probation:  # its only term goes
                    _, share, partial = shares.pop(segment_id)
                    total -= share
                    inexact -= partial
                continue
            self.scored.stale_segments.add(segment_id)
            old = shares.get(segment_id)
            if old is None:
                continue
            total -= old[0] * old[1]
            inexact -= old[0] * old[2]
            count = old[0] - probation
            if count:
                share, partial = share_terms(segment.size, len(refs))
                shares[segment_id] = (count, share, partial)
                total += count * share
                inexact += count * partial
            else:
                del shares[segment_id]
        self.charge_total += total
        self.charge_inexact += inexact
        return dropped

    def used_bytes(self) -> int:
        """BEN-CMP-2: the entries' exclusive bytes."""
        return self.used


def indexed_state(policy: IndexedBenefitPolicy) -> BenefitState:
    """The state in the adapter's shape, its scores and probation charge as the indexes hold them."""
    policy.scored.refresh(policy.entries, policy.ledger, policy.config.min_reuse_probability)
    entries = tuple(EntryView(key, e.state, e.hits, e.misses, e.rw, e.ow, e.last_observation, policy.scored.score_of(key))
                    for key, e in sorted(policy.entries.items()))
    ghosts = tuple((key, g.hits, g.rw, g.ow, g.last_observation) for key, g in sorted(policy.ghosts.items()))
    return BenefitState(policy.clock, entries, ghosts, policy.probation_charge())


class IndexedBenefitAdapter(ReferenceBenefitAdapter):
    """IndexedBenefitPolicy (or a subclass) behind the BenefitAdapter interface, at the state level:
    ``--adapter python:kvspec.conformance.measurement.indexed_benefit:IndexedBenefitAdapter``."""

    identity = Identity(name="kvspec-indexed-benefit", language="python", version=SPEC_VERSION)

    def __init__(self, policy_class: type[IndexedBenefitPolicy] = IndexedBenefitPolicy) -> None:
        super().__init__(policy_class)

    def benefit_state(self) -> BenefitState:
        policy = self.policy
        assert isinstance(policy, IndexedBenefitPolicy)
        return indexed_state(policy)
