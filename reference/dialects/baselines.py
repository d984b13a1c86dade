"""LRU and FIFO in a dialect (spec/dialects.md, LRU and FIFO): spec/lru.md's and spec/fifo.md's
rules, each written with the alternatives its variation points put in its place.

The canonical LRU and FIFO (reference/lru.py, reference/fifo.py) stay the spec's literal text;
this module is the same rules once more, with a branch where a variation point replaces one, so
that a dialect with no variation point is the canonical policy (tests/test_dialects_baselines.py
replays both in lockstep).

Under path-ids (REPLAY-DIALECT-3) a block is its prefix path, interned as (its parent block, its
hash) -> an int; ROOT is the parent of a request's first block, so a request's start is visible
from its keys, which is where the LRU's protection (LRU-DIALECT-2) begins afresh.
"""

from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

from ..contracts import ensure, require, snapshot
from ..queues import HashQueue, requeue
from ..request import BlockPolicy, access_every_block, prefix_lookup
from ..validation import INT64_MIN, check_count
from .catalogue import Dialect, dialect_problem

ROOT = 0  # REPLAY-DIALECT-3: the empty path, every first block's parent; never a block, always resident


def dialect_capacity(capacity: int, dialect: Dialect) -> int:
    """REPLAY-CONF-1, or REPLAY-DIALECT-1 (capacity-0-empty) and REPLAY-DIALECT-2 (capacity-nonpositive-empty)."""
    if "capacity-nonpositive-empty" in dialect:
        return check_count(capacity, INT64_MIN, "REPLAY-DIALECT-2", "capacity")
    if "capacity-0-empty" in dialect:
        return check_count(capacity, 0, "REPLAY-DIALECT-1", "capacity")
    return check_count(capacity, 1, "REPLAY-CONF-1", "capacity")


@dataclass(slots=True, eq=False)
class Paths:
    """REPLAY-DIALECT-3: every prefix path seen, (parent block, hash) -> block, and each block's parent."""

    block_of: dict[tuple[int, int], int] = field(default_factory=dict)
    parent_of: list[int] = field(default_factory=lambda: [ROOT])  # indexed by block; ROOT's own entry is unused

    def slot(self, block: int) -> int:
        """REPLAY-DIALECT-8: a new block with ``block``'s parent, which no path names, so no request finds it."""
        self.parent_of.append(self.parent_of[block])
        return len(self.parent_of) - 1


class NamesBlocks(Protocol):
    """A cache that names a request's blocks as its dialect says: any of this package's."""

    dialect: Dialect
    paths: Paths


def dialect_blocks(cache: NamesBlocks, hash_ids: list[int]) -> list[int]:
    """REPLAY-TRACE-4: a request's blocks are its hash ids; or REPLAY-DIALECT-3 (path-ids): the
    block at position i is the path h_0..h_i, the same block only where every id up to it agrees."""
    if "path-ids" not in cache.dialect:
        return hash_ids
    paths, blocks, parent = cache.paths, [], ROOT
    for h in hash_ids:
        if (parent, h) not in paths.block_of:
            paths.block_of[parent, h] = len(paths.parent_of)
            paths.parent_of.append(parent)
        parent = paths.block_of[parent, h]
        blocks.append(parent)
    return blocks


# FIFO (spec/fifo.md) in a dialect


def fifo_state_holds(cache: "DialectFIFO") -> bool:
    """FIFO-CAP-1, at most max(capacity, 0) blocks (a capacity <= 0 holds nothing: REPLAY-DIALECT-1, REPLAY-DIALECT-2)."""
    return len(cache.arrival) <= max(cache.capacity, 0)


@snapshot(lambda cache: len(cache.arrival), "resident")
@snapshot(lambda cache, h: h in cache.arrival, "was_resident")
@snapshot(lambda cache: list(cache.arrival), "order", per_access_state=True)
@require(fifo_state_holds, "FIFO-CAP-1, REPLAY-DIALECT-1, REPLAY-DIALECT-2")
@ensure(fifo_state_holds, "FIFO-CAP-1, REPLAY-DIALECT-1, REPLAY-DIALECT-2")
@ensure(lambda OLD, cache: not OLD.was_resident or list(cache.arrival) == OLD.order, "FIFO-ACCESS-1: a hit changes nothing", per_access_state=True)
@ensure(lambda OLD, cache, h: OLD.was_resident or h not in cache.arrival or next(reversed(cache.arrival)) == h,
        "FIFO-ADMIT-1: a missed block joins at the tail")
@ensure(lambda OLD, cache, h: OLD.was_resident or cache.capacity < 1 or h in cache.arrival or cache.protected >= cache.arrival.keys(),
        "FIFO-ADMIT-1: a missed block is admitted, unless every resident block is pinned (REPLAY-DIALECT-6)")
@ensure(lambda OLD, cache, h: len(cache.arrival) == (OLD.resident if OLD.was_resident or h not in cache.arrival
                                                   else min(OLD.resident + 1, max(cache.capacity, 0))),
        "FIFO-EVICT-1: one eviction, and only when full (REPLAY-DIALECT-6: none, when every block is pinned)")
def fifo_access(cache: "DialectFIFO", h: int) -> None:
    """FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1 (on blocks as the dialect names them)."""
    arrival = cache.arrival
    if h in arrival:
        return  # FIFO-ACCESS-1
    if cache.capacity < 1:
        return  # REPLAY-DIALECT-1, REPLAY-DIALECT-2: a cache that holds nothing admits nothing
    if len(arrival) >= cache.capacity and not fifo_evict(cache):
        return  # REPLAY-DIALECT-6: every block is the running request's, so h is not admitted
    arrival[h] = True  # FIFO-ADMIT-1


def fifo_evict(cache: "DialectFIFO") -> bool:
    """FIFO-EVICT-1: remove the head, the first admitted; under REPLAY-DIALECT-6 the first admitted
    block that is not pinned. Whether there was one to remove."""
    arrival = cache.arrival
    if not cache.protected and arrival:
        del arrival[next(iter(arrival))]  # FIFO-EVICT-1: the head (REPLAY-QUEUE-2)
        return True
    victim = next((b for b in arrival if b not in cache.protected), None)  # REPLAY-DIALECT-6: the oldest unpinned
    if victim is None:
        return False
    del arrival[victim]
    return True


@dataclass(slots=True, eq=False)
class DialectFIFO(BlockPolicy):
    """One FIFO cache in a dialect: the canonical arrival queue, and the paths seen (REPLAY-DIALECT-3)."""

    dialect: Dialect
    capacity: int
    arrival: HashQueue
    paths: Paths
    protected: set[int] = field(default_factory=set)  # REPLAY-DIALECT-6: the running request's resident blocks

    @classmethod
    def empty(cls, dialect: Dialect, capacity: int) -> "DialectFIFO":
        return cls(dialect, dialect_capacity(capacity, dialect), OrderedDict(), Paths())

    blocks = dialect_blocks
    access = fifo_access
    lookup = prefix_lookup
    serve = access_every_block
    state_invariants_hold = fifo_state_holds

    def is_resident(self, h: int) -> bool:
        """FIFO-CAP-1."""
        return h in self.arrival

    def release(self, h: int) -> None:
        """REPLAY-DIALECT-8: the partial block's slot, freed with its request."""
        self.arrival.pop(h, None)

    def resident_count(self) -> int:
        return len(self.arrival)


# LRU (spec/lru.md) in a dialect


def starts_request(cache: "DialectLRU", h: int) -> bool:
    """REPLAY-DIALECT-3: a block whose parent is the root is a request's first."""
    return cache.paths.parent_of[h] == ROOT


def is_candidate(cache: "DialectLRU", b: int) -> bool:
    """Whether resident block ``b`` may be evicted: under LRU-DIALECT-1 not while it has a resident
    child, under LRU-DIALECT-2 not while the current request has found it resident."""
    if "lru-evict-leaves" in cache.dialect and cache.resident_children.get(b, 0) > 0:
        return False  # LRU-DIALECT-1: only a leaf of the resident paths
    return b not in cache.protected  # LRU-DIALECT-2


def evict(cache: "DialectLRU") -> bool:
    """LRU-EVICT-1: remove the least recently accessed block, the head; under LRU-DIALECT-1 and
    LRU-DIALECT-2 the least recently accessed candidate. Whether there was one to remove."""
    victim = next((b for b in cache.recency if is_candidate(cache, b)), None)  # head first: least recent first
    if victim is None:
        return False  # every resident block is protected (LRU-DIALECT-2), or there is none
    del cache.recency[victim]
    if "path-ids" in cache.dialect:
        cache.resident_children[cache.paths.parent_of[victim]] -= 1
    return True


def admit(cache: "DialectLRU", h: int) -> None:
    """LRU-ADMIT-1: append at the tail, the most recent."""
    cache.recency[h] = True
    if "path-ids" in cache.dialect:
        parent = cache.paths.parent_of[h]
        cache.resident_children[parent] = cache.resident_children.get(parent, 0) + 1


def parent_refuses(cache: "DialectLRU", h: int) -> bool:
    """LRU-DIALECT-3 (lru-admit-under-parent): a block is admitted only while its parent is resident (the root always is)."""
    if "lru-admit-under-parent" not in cache.dialect:
        return False
    parent = cache.paths.parent_of[h]
    return parent != ROOT and parent not in cache.recency


def lru_state_holds(cache: "DialectLRU") -> bool:
    """LRU-CAP-1 at max(capacity, 0) blocks (REPLAY-DIALECT-1, REPLAY-DIALECT-2); LRU-DIALECT-2: a
    protected block is resident; REPLAY-DIALECT-3: each resident block is a path seen, and
    ``resident_children`` counts each block's resident children; LRU-DIALECT-1 and LRU-DIALECT-3
    together: the resident blocks are prefix-closed (each one's parent is resident, or the root)."""
    recency, paths = cache.recency, cache.paths
    if len(recency) > max(cache.capacity, 0) or not cache.protected <= recency.keys():
        return False
    if "path-ids" not in cache.dialect:
        return True
    if not all(0 < b < len(paths.parent_of) for b in recency):
        return False
    children = Counter(paths.parent_of[b] for b in recency)
    closed = not {"lru-evict-leaves", "lru-admit-under-parent"} <= cache.dialect or all(
        paths.parent_of[b] == ROOT or paths.parent_of[b] in recency for b in recency)
    return closed and all(cache.resident_children.get(b, 0) == n for b, n in children.items()) and sum(cache.resident_children.values()) == len(recency)


@snapshot(lambda cache: len(cache.recency), "resident")
@snapshot(lambda cache, h: h in cache.recency, "was_resident")
@require(lambda cache: dialect_problem("lru", cache.dialect) is None, "DIALECT-2 to DIALECT-4")
@require(lambda cache, h: "path-ids" not in cache.dialect or 0 < h < len(cache.paths.parent_of), "REPLAY-DIALECT-3: h is a block")
@require(lambda cache: len(cache.recency) <= max(cache.capacity, 0), "LRU-CAP-1, REPLAY-DIALECT-1, REPLAY-DIALECT-2")
@require(lru_state_holds, "LRU-CAP-1, REPLAY-DIALECT-3, LRU-DIALECT-1 to LRU-DIALECT-3 as the dialect keeps them", per_access_state=True)
@ensure(lru_state_holds, "LRU-CAP-1, REPLAY-DIALECT-3, LRU-DIALECT-1 to LRU-DIALECT-3 as the dialect keeps them", per_access_state=True)
@ensure(lambda OLD, cache, h: not OLD.was_resident or h in cache.recency, "LRU-ACCESS-1: a resident block stays resident")
@ensure(lambda OLD, cache, h: OLD.was_resident or h not in cache.recency or next(reversed(cache.recency)) == h,
        "LRU-ADMIT-1: an admitted block is the most recent")
@ensure(lambda OLD, cache: OLD.resident - 1 <= len(cache.recency) <= min(OLD.resident + 1, max(cache.capacity, 0)),
        "LRU-EVICT-1: at most one eviction and one admission")
def lru_access(cache: "DialectLRU", h: int) -> None:
    """LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1 (on blocks as the dialect names them), with the
    request's protection (LRU-DIALECT-2) and the parent's check (LRU-DIALECT-3)."""
    if "lru-protect-request" in cache.dialect and starts_request(cache, h):
        cache.protected.clear()  # LRU-DIALECT-2: a request protects only what it found
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)  # LRU-ACCESS-1
        if "lru-protect-request" in cache.dialect:
            cache.protected.add(h)  # LRU-DIALECT-2: found resident by this request
        return
    if len(recency) >= cache.capacity and not evict(cache):  # LRU-EVICT-1
        # No victim, so h is not admitted: every resident block is protected (LRU-DIALECT-2), or a
        # capacity <= 0 holds none (REPLAY-DIALECT-1, REPLAY-DIALECT-2).
        return
    if parent_refuses(cache, h):
        return  # LRU-DIALECT-3: checked after the eviction, even one that took the parent
    admit(cache, h)  # LRU-ADMIT-1


@dataclass(slots=True, eq=False)
class DialectLRU(BlockPolicy):
    """One LRU cache in a dialect: the canonical recency queue, the paths seen and each block's
    resident children (REPLAY-DIALECT-3, LRU-DIALECT-1), and the blocks the current request has
    found resident (LRU-DIALECT-2)."""

    dialect: Dialect
    capacity: int
    recency: HashQueue
    paths: Paths
    resident_children: dict[int, int] = field(default_factory=dict)
    protected: set[int] = field(default_factory=set)

    @classmethod
    def empty(cls, dialect: Dialect, capacity: int) -> "DialectLRU":
        return cls(dialect, dialect_capacity(capacity, dialect), OrderedDict(), Paths())

    blocks = dialect_blocks
    access = lru_access
    lookup = prefix_lookup
    serve = access_every_block
    state_invariants_hold = lru_state_holds

    def release(self, h: int) -> None:
        """REPLAY-DIALECT-8: the partial block's slot, freed with its request."""
        if self.recency.pop(h, None) is not None and "path-ids" in self.dialect:
            self.resident_children[self.paths.parent_of[h]] -= 1

    def is_resident(self, h: int) -> bool:
        """LRU-CAP-1."""
        return h in self.recency

    def resident_count(self) -> int:
        return len(self.recency)
