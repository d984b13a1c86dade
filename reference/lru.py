"""LRU, the first baseline (spec/lru.md): evict the block accessed least recently."""

from collections import OrderedDict
from dataclasses import dataclass

from .contracts import ensure, require, snapshot
from .queues import HashQueue, requeue, same_blocks
from .request import BlockPolicy, access_every_block, prefix_lookup
from .validation import check_count


@ensure(lambda cache, h, result: result == (h in cache.recency), "LRU-CAP-1: resident iff in the recency queue", per_access_state=True)
def is_resident(cache: "LRU", h: int) -> bool:
    """LRU-CAP-1: resident iff in the recency queue."""
    return h in cache.recency


@snapshot(lambda cache: len(cache.recency), "resident")
@snapshot(lambda cache, h: h in cache.recency, "was_resident")
@snapshot(lambda cache: list(cache.recency), "order", per_access_state=True)
@require(lambda cache: cache.capacity >= 1 and len(cache.recency) <= cache.capacity, "LRU-CAP-1")
@ensure(lambda cache, h: next(reversed(cache.recency)) == h, "LRU-ACCESS-1, LRU-ADMIT-1: h is the most recent")
@ensure(
    lambda OLD, cache: len(cache.recency) == (OLD.resident if OLD.was_resident else min(OLD.resident + 1, cache.capacity)),
    "LRU-EVICT-1: one eviction, and only when full",
)
@ensure(lambda OLD, cache, h: not OLD.was_resident or list(cache.recency) == [g for g in OLD.order if g != h] + [h],
        "LRU-ACCESS-1: a hit moves h to the tail, and changes nothing else", per_access_state=True)
@ensure(lambda OLD, cache: OLD.was_resident or list(cache.recency)[:-1] == OLD.order[len(OLD.order) >= cache.capacity:],
        "LRU-EVICT-1: a miss pops the head when the queue is full, and only then", per_access_state=True)
def access(cache: "LRU", h: int) -> None:
    """LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1: one block access."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)  # LRU-ACCESS-1
        return
    if len(recency) >= cache.capacity:
        del recency[next(iter(recency))]  # LRU-EVICT-1: the head (REPLAY-QUEUE-2) is the least recently accessed
    recency[h] = True  # LRU-ADMIT-1


@dataclass(slots=True, eq=False)
class LRU(BlockPolicy):
    """One LRU cache (LRU-CAP-1); the rules above are its methods, as in s3fifo.S3FIFO."""

    capacity: int
    recency: HashQueue

    @classmethod
    @ensure(lambda capacity, result: result.capacity == capacity and not result.recency, "LRU-CAP-1: it starts empty")
    def empty(cls, capacity: int) -> "LRU":
        """An empty cache of ``capacity`` blocks."""
        return cls(check_count(capacity, 1, "REPLAY-CONF-1", "capacity"), OrderedDict())

    blocks = same_blocks
    is_resident = is_resident
    access = access
    lookup = prefix_lookup
    serve = access_every_block

    @ensure(lambda self, result: result == len(self.recency), "LRU-CAP-1: the resident count is the queue's length")
    def resident_count(self) -> int:
        return len(self.recency)

    def state_invariants_hold(self) -> bool:
        """LRU-CAP-1."""
        return len(self.recency) <= self.capacity
