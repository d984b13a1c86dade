"""The spec-level mutants of spec/lifecycle.md section 3 (spec_mutants.py plants them): each restates
one rule of reference/in_use.py with its mistake, whole. A mutant's body reads the rules it calls
from its copy of the reference (its globals are the copy's): the imports below are the reference's
names, for the reader and the linter. S3FIFO's rules in use and the Pool's are not hunted
(conformance/hunt/targets.py NOT_EXPLORED says why).
"""

from typing import Any

from kvspec.reference.in_use import InUseLRU, free_queue_slot

# --- The victim (LIFE-EVICT-1, LRU-LIFE-2, FIFO-LIFE-2) ------------------------------------------


def referenced_head_evicted(queue: dict[int, Any], refs: dict[int, int]) -> int | None:
    """LIFE-EVICT-1 left out: the head is the victim, referenced or not."""
    return next(iter(queue), None)


def evictable_nearest_tail(queue: dict[int, Any], refs: dict[int, int]) -> int | None:
    """FIFO-LIFE-2 at the wrong end: the evictable hash nearest the tail, the newest."""
    for h in reversed(queue):
        if h not in refs:
            return h
    return None


def free_slot_stops_at_referenced_head(queue: dict[int, bool], refs: dict[int, int]) -> bool:
    """LRU-LIFE-2 as "the head, if evictable": a referenced head leaves no slot to free."""
    victim = next(iter(queue), None)
    if victim is None or victim in refs:
        return False
    del queue[victim]
    return True


# --- An access in use (LIFE-LIMIT-1) -------------------------------------------------------------


def lru_hit_not_requeued_in_use(cache: "InUseLRU", h: int) -> None:
    """LIFE-LIMIT-1 broken: in use, a hit is not requeued (LRU-ACCESS-1 left out), referenced or not."""
    recency = cache.recency
    if h not in recency and (len(recency) < cache.capacity or free_queue_slot(recency, cache.refs)):
        recency[h] = True

