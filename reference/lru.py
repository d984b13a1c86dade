"""LRU, the first baseline (spec/lru.md): evict the block accessed least recently."""

from collections import OrderedDict

from .contracts import ensure, require, snapshot
from .queues import HashQueue, pop_head, requeue
from .validation import check_count


@snapshot(lambda recency: len(recency), "resident")
@snapshot(lambda recency, h: h in recency, "was_resident")
@require(lambda recency, capacity: capacity >= 1 and len(recency) <= capacity, "LRU-CAP-1")
@ensure(lambda recency, h: next(reversed(recency)) == h, "LRU-ACCESS-1, LRU-ADMIT-1: h is the most recent")
@ensure(
    lambda OLD, recency, capacity: len(recency) == (OLD.resident if OLD.was_resident else min(OLD.resident + 1, capacity)),
    "LRU-EVICT-1: one eviction, and only when full",
)
def access(recency: HashQueue, capacity: int, h: int) -> None:
    """LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1: one block access."""
    if h in recency:
        requeue(recency, h, True)  # LRU-ACCESS-1
        return
    if len(recency) >= capacity:
        pop_head(recency)  # LRU-EVICT-1: the head is the least recently accessed
    recency[h] = True  # LRU-ADMIT-1


class LRU:
    """One LRU cache: the replay's policy interface (spec/replay.md, REPLAY-POLICY-1)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
        self.recency: HashQueue = OrderedDict()

    def is_resident(self, h: int) -> bool:
        return h in self.recency

    def access(self, h: int) -> None:
        access(self.recency, self.capacity, h)

    def resident_count(self) -> int:
        return len(self.recency)

    def state_invariants_hold(self) -> bool:
        """LRU-CAP-1."""
        return len(self.recency) <= self.capacity
