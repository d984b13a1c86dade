"""spec/lifecycle.md section 3: eviction that passes over the blocks requests are using.

Each policy in use is the canonical one with a reference count beside its queues (``refs``: a
block's count, present only while above 0, LIFE-POOL-2) and, where the canonical rule would evict
a referenced block, the modified rule of section 3: the canonical functions run as they are for
everything else (S3FIFO's access is the canonical one, rebuilt over the modified admissions). With
no block referenced, each modified rule is the canonical one (LIFE-LIMIT-1), which a contract
checks access by access.
"""

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import s3fifo
from .contracts import ensure, require, snapshot
from .fifo import FIFO
from .lru import LRU
from .queues import requeue
from .rebuilt import rebuilt
from .s3fifo import S3FIFO, chance_spent, freq_in_main, insert_to_ghost, retire_from_main


def passed_over_are_referenced(queue: dict[int, Any], refs: dict[int, int], result: int | None) -> bool:
    """FIFO-LIFE-2, LRU-LIFE-2: every hash ahead of the victim (every hash, when there is none) is referenced."""
    for h in queue:
        if h == result:
            return True
        if h not in refs:
            return False
    return result is None


@ensure(lambda queue, refs, result: result is None or (result in queue and result not in refs),
        "LIFE-EVICT-1: the victim is a hash of the queue that no request references", per_access_state=True)
@ensure(passed_over_are_referenced, "FIFO-LIFE-2, LRU-LIFE-2: the evictable hash nearest the head", per_access_state=True)
def evictable_nearest_head(queue: dict[int, Any], refs: dict[int, int]) -> int | None:
    """The hash of ``queue`` nearest its head that no request references (LIFE-EVICT-1), or None."""
    for h in queue:
        if h not in refs:
            return h
    return None


def put_back_at_head(queue: dict[int, int], passed: list[tuple[int, int]]) -> None:
    """The entries a drain passed over, back at the queue's head in the order they were in (S3-LIFE-2)."""
    for h, freq in reversed(passed):
        queue[h] = freq
        queue.move_to_end(h, last=False)  # type: ignore[attr-defined]  # an OrderedDict, as every policy builds its queues


# S3FIFO ---------------------------------------------------------------------------------------

def evict_from_main(cache: "InUseS3FIFO") -> bool:
    """S3-ADMIT-M-2, S3-ADMIT-M-3 with S3-LIFE-2: second chance, passing over a referenced entry at
    freq 0; whether an entry left M (none does when every entry left is referenced at freq 0)."""
    main, passed = cache.main, []
    while main:
        victim = next(iter(main))  # REPLAY-QUEUE-2: the head
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = chance_spent(victim_freq)  # S3-ADMIT-M-2, referenced or not
        elif victim in cache.refs:
            passed.append((victim, victim_freq))  # S3-LIFE-2: in use, it stays
        else:
            retire_from_main(cache, victim)  # S3-ADMIT-M-3
            put_back_at_head(main, passed)
            return True
    put_back_at_head(main, passed)
    return False


def admit_to_main(cache: "InUseS3FIFO", h: int, freq: int) -> bool:
    """S3-ADMIT-M-1 to S3-ADMIT-M-4 with S3-LIFE-2: whether h is admitted."""
    if len(cache.main) >= cache.caps.main_cap and not evict_from_main(cache):  # S3-ADMIT-M-1
        return False  # S3-LIFE-2: nothing to evict, nothing admitted
    cache.main[h] = freq  # S3-ADMIT-M-4
    return True


def admit_to_small(cache: "InUseS3FIFO", h: int) -> None:
    """S3-ADMIT-S-1 to S3-ADMIT-S-4 with S3-LIFE-1 and S3-LIFE-3."""
    refs = cache.refs
    if not refs:
        # LIFE-LIMIT-1: with no block referenced the rule below is the canonical one, which is faster
        # (the conversation trace one request at a time at 4,096 blocks: 0.38 to 0.34 s, bench/bench_lifecycle.py)
        return s3fifo.admit_to_small(cache, h)
    small, small_cap = cache.small, cache.caps.small_cap
    passed: list[tuple[int, int]] = []
    while small and len(small) + len(passed) >= small_cap:  # S3-ADMIT-S-1
        victim = next(iter(small))  # REPLAY-QUEUE-2: the head
        victim_freq = small.pop(victim)
        promoted = victim_freq >= s3fifo.PROMOTION_FREQ
        if not promoted and victim not in refs:
            insert_to_ghost(cache, victim)  # S3-ADMIT-S-3
        elif admit_to_main(cache, victim, freq_in_main(victim_freq) if promoted else 0):
            cache.kept_in_main += not promoted  # S3-ADMIT-S-2, or S3-LIFE-1 (counted for the served replay) for one in use at freq 0
        elif victim in refs:
            passed.append((victim, victim_freq))  # S3-LIFE-3: M admits nothing, and it may not leave
        else:
            insert_to_ghost(cache, victim)  # S3-LIFE-3: M admits nothing, and a promoted entry not in use leaves for G
    if passed:
        put_back_at_head(small, passed)
        if len(small) >= small_cap:
            return  # S3-LIFE-3: S is full of entries in use, and h is not admitted
    small[h] = 0  # S3-ADMIT-S-4 (with none passed over, the drain has made room)


def admit_ghost_hit(cache: "InUseS3FIFO", h: int) -> None:
    """S3-ACCESS-3 with S3-LIFE-3: h leaves G for M with freq 0, if M admits it."""
    del cache.ghost[h]
    admit_to_main(cache, h, 0)


S3FIFO_ACCESS = rebuilt(s3fifo.access, {**vars(s3fifo), "admit_to_small": admit_to_small, "admit_ghost_hit": admit_ghost_hit})  # type: ignore[arg-type]


def free_s3fifo_slot(cache: "InUseS3FIFO") -> bool:
    """S3-LIFE-4: M's drain, or else S's evictable entry nearest the head into G; whether one left."""
    if evict_from_main(cache):
        return True
    victim = evictable_nearest_head(cache.small, cache.refs)
    if victim is None:
        return False
    del cache.small[victim]
    insert_to_ghost(cache, victim)
    return True


# LRU and FIFO ---------------------------------------------------------------------------------

def any_evictable(queue: dict[int, bool], refs: dict[int, int]) -> bool:
    """Whether a hash of ``queue`` is evictable (free_queue_slot's contract: a loop, as CrossHair explores it)."""
    for h in queue:
        if h not in refs:
            return True
    return False


@snapshot(lambda queue: len(queue), "length", per_access_state=True)
@snapshot(any_evictable, "evictable", per_access_state=True)  # O(queue): only with the contract that reads it
@ensure(lambda OLD, queue, result: result == OLD.evictable and len(queue) == OLD.length - result,
        "LRU-LIFE-2, FIFO-LIFE-2: one hash leaves when one is evictable, and none otherwise", per_access_state=True)
def free_queue_slot(queue: dict[int, bool], refs: dict[int, int]) -> bool:
    """LRU-LIFE-1, LRU-LIFE-2, FIFO-LIFE-1, FIFO-LIFE-2: the evictable hash nearest the head leaves; whether there was one."""
    victim = evictable_nearest_head(queue, refs)
    if victim is None:
        return False
    del queue[victim]
    return True


def lru_access(cache: "InUseLRU", h: int) -> None:
    """LRU-ACCESS-1, LRU-LIFE-1, LRU-ADMIT-1."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)  # LRU-ACCESS-1
    elif len(recency) < cache.capacity or free_queue_slot(recency, cache.refs):  # LRU-LIFE-1
        recency[h] = True  # LRU-ADMIT-1


def fifo_access(cache: "InUseFIFO", h: int) -> None:
    """FIFO-ACCESS-1, FIFO-LIFE-1, FIFO-ADMIT-1."""
    arrival = cache.arrival
    if h not in arrival and (len(arrival) < cache.capacity or free_queue_slot(arrival, cache.refs)):  # FIFO-LIFE-1
        arrival[h] = True  # FIFO-ADMIT-1


# The policies in use --------------------------------------------------------------------------

def queues_of(cache: S3FIFO | LRU | FIFO) -> tuple[list[tuple[int, Any]], ...]:
    """Every queue of the cache, head first, with its values."""
    if isinstance(cache, S3FIFO):
        return list(cache.small.items()), list(cache.main.items()), list(cache.ghost.items())
    return (list((cache.recency if isinstance(cache, LRU) else cache.arrival).items()),)


def canonical_after(cache: "InUseS3FIFO | InUseLRU | InUseFIFO", h: int) -> S3FIFO | LRU | FIFO | None:
    """With no block referenced, a canonical cache of the same state after its canonical access of
    h (LIFE-LIMIT-1's contract compares it with the access in use); None otherwise."""
    if cache.refs:
        return None
    twin = cache.canonical_copy()
    twin.access(h)
    return twin


def referenced_are_resident(cache: "InUseS3FIFO | InUseLRU | InUseFIFO") -> bool:
    """LIFE-POOL-2, LIFE-EVICT-1: every referenced block is resident."""
    return all(cache.is_resident(h) for h in cache.refs)


def policy_bounds_hold(cache: "InUseS3FIFO | InUseLRU | InUseFIFO") -> bool:
    """The policy's own bounds and queues (S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3, LRU-CAP-1, FIFO-CAP-1)."""
    return cache.state_invariants_hold()


def as_canonical(OLD: Any, cache: "InUseS3FIFO | InUseLRU | InUseFIFO") -> bool:
    """LIFE-LIMIT-1: with no block referenced, the state the canonical access leaves."""
    return OLD.twin is None or queues_of(cache) == queues_of(OLD.twin)


def policy_state_valid(cache: "InUseS3FIFO | InUseLRU | InUseFIFO") -> bool:
    """The state the policy's own rules start from, its sizes valid and within its bounds (the canonical access
    requires it of the twin LIFE-LIMIT-1 compares with): the hunt searches only such states, as a Pool keeps them."""
    sizes_valid = s3fifo.sizes_are_valid(cache) if isinstance(cache, S3FIFO) else cache.capacity >= 1
    return sizes_valid and cache.state_invariants_hold()


def in_use_rule(access: Any) -> Any:
    """A policy's access in use: from a state in which only resident blocks are referenced, it
    leaves them resident (LIFE-EVICT-1) and the policy's own bounds holding, and with no block
    referenced it does what the canonical access does (LIFE-LIMIT-1). (Named conditions: icontract
    reads a lambda's text from a decorator line.)"""
    access = ensure(as_canonical, "LIFE-LIMIT-1: with no block referenced, the canonical access", per_access_state=True)(access)
    access = snapshot(canonical_after, "twin", per_access_state=True)(access)
    access = ensure(referenced_are_resident, "LIFE-EVICT-1: a referenced block stays resident", per_access_state=True)(access)
    access = ensure(policy_bounds_hold, "S3-INV-1 to S3-INV-3, LRU-CAP-1, FIFO-CAP-1: the policy's own bounds", per_access_state=True)(access)
    access = require(referenced_are_resident, "LIFE-POOL-2: only a resident block is referenced", per_access_state=True)(access)
    return require(policy_state_valid, "REPLAY-CONF-1, S3-CONF-3 to S3-CONF-6, S3-INV-1 to S3-INV-3, LRU-CAP-1, FIFO-CAP-1",
                   per_access_state=True)(access)


@dataclass(slots=True, eq=False)
class InUseS3FIFO(S3FIFO):
    """An S3FIFO cache whose blocks requests use: S3-LIFE-1 to S3-LIFE-4."""

    refs: dict[int, int] = field(default_factory=dict)
    kept_in_main: int = 0  # S3-LIFE-1's admissions to M of entries in use at freq 0, which the served replay reports

    access = in_use_rule(S3FIFO_ACCESS)
    free_slot = free_s3fifo_slot

    def remove(self, h: int) -> None:
        """LIFE-EVICT-3: out of S or M, and not into G."""
        del (self.small if h in self.small else self.main)[h]

    def canonical_copy(self) -> S3FIFO:
        return S3FIFO(self.caps, OrderedDict(self.small), OrderedDict(self.main), OrderedDict(self.ghost))


@dataclass(slots=True, eq=False)
class InUseLRU(LRU):
    """An LRU cache whose blocks requests use: LRU-LIFE-1 and LRU-LIFE-2."""

    refs: dict[int, int] = field(default_factory=dict)

    access = in_use_rule(lru_access)

    def free_slot(self) -> bool:
        return free_queue_slot(self.recency, self.refs)  # LRU-LIFE-2

    def remove(self, h: int) -> None:
        """LIFE-EVICT-3."""
        del self.recency[h]

    def canonical_copy(self) -> LRU:
        return LRU(self.capacity, OrderedDict(self.recency))


@dataclass(slots=True, eq=False)
class InUseFIFO(FIFO):
    """A FIFO cache whose blocks requests use: FIFO-LIFE-1 and FIFO-LIFE-2."""

    refs: dict[int, int] = field(default_factory=dict)

    access = in_use_rule(fifo_access)

    def free_slot(self) -> bool:
        return free_queue_slot(self.arrival, self.refs)  # FIFO-LIFE-2

    def remove(self, h: int) -> None:
        """LIFE-EVICT-3."""
        del self.arrival[h]

    def canonical_copy(self) -> FIFO:
        return FIFO(self.capacity, OrderedDict(self.arrival))


IN_USE = {"s3fifo": InUseS3FIFO, "lru": InUseLRU, "fifo": InUseFIFO}
