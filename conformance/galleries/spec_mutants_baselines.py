"""The spec-level mutants of spec/lru.md and spec/fifo.md (spec_mutants.py plants them): each
restates one rule of reference/lru.py or reference/fifo.py with its mistake, whole. A mutant's body
reads the rules it calls from its copy of the reference (its globals are the copy's): the imports
below are the reference's names, for the reader and the linter.
"""

from kvspec.reference.fifo import FIFO
from kvspec.reference.lru import LRU
from kvspec.reference.queues import requeue

# --- LRU (spec/lru.md) ---------------------------------------------------------------------------


def lru_count_is_capacity(self: "LRU") -> int:
    """LRU-CAP-1's resident count confused with the capacity."""
    return self.capacity


def lru_hit_not_requeued(cache: "LRU", h: int) -> None:
    """LRU-ACCESS-1 left out: a hit changes nothing (FIFO)."""
    recency = cache.recency
    if h in recency:
        return
    if len(recency) >= cache.capacity:
        del recency[next(iter(recency))]
    recency[h] = True


def lru_evicts_most_recent(cache: "LRU", h: int) -> None:
    """LRU-EVICT-1 at the wrong end: the tail, the most recent, is evicted."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)
        return
    if len(recency) >= cache.capacity:
        del recency[next(reversed(recency))]
    recency[h] = True


def lru_admits_at_head(cache: "LRU", h: int) -> None:
    """LRU-ADMIT-1 at the wrong end: a new hash joins at the head, the next to go."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)
        return
    if len(recency) >= cache.capacity:
        del recency[next(iter(recency))]
    recency[h] = True
    for other in [key for key in recency if key != h]:  # every other hash moved behind it
        requeue(recency, other, True)


# --- FIFO (spec/fifo.md) -------------------------------------------------------------------------


def fifo_over_capacity(cache: "FIFO", h: int) -> None:
    """FIFO-CAP-1 with > for >=: the queue holds capacity + 1 hashes."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) > cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True


def fifo_hit_requeued(cache: "FIFO", h: int) -> None:
    """FIFO-ACCESS-1 as LRU does it: a hit moves to the tail."""
    arrival = cache.arrival
    if h in arrival:
        del arrival[h]
        arrival[h] = True
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True


def fifo_evicts_newest(cache: "FIFO", h: int) -> None:
    """FIFO-EVICT-1 at the wrong end: the tail, admitted last, is evicted."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(reversed(arrival))]
    arrival[h] = True


def fifo_admits_at_head(cache: "FIFO", h: int) -> None:
    """FIFO-ADMIT-1 at the wrong end: a new hash joins at the head."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True
    for other in [key for key in arrival if key != h]:  # every other hash moved behind it
        del arrival[other]
        arrival[other] = True
