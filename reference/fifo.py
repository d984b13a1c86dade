"""FIFO, the second baseline (spec/fifo.md): evict the block admitted first; hits change nothing."""

from collections import OrderedDict
from dataclasses import dataclass

from .contracts import ensure, require, snapshot
from .queues import HashQueue, same_blocks
from .request import BlockPolicy, access_every_block, prefix_lookup
from .validation import check_count


@ensure(lambda cache, h, result: result == (h in cache.arrival), "FIFO-CAP-1: resident iff in the arrival queue", per_access_state=True)
def is_resident(cache: "FIFO", h: int) -> bool:
    """FIFO-CAP-1: resident iff in the arrival queue."""
    return h in cache.arrival


@snapshot(lambda cache: len(cache.arrival), "resident")
@snapshot(lambda cache, h: h in cache.arrival, "was_resident")
@snapshot(lambda cache: list(cache.arrival), "order", per_access_state=True)
@require(lambda cache: cache.capacity >= 1 and len(cache.arrival) <= cache.capacity, "FIFO-CAP-1")
@ensure(lambda OLD, cache: not OLD.was_resident or list(cache.arrival) == OLD.order, "FIFO-ACCESS-1: a hit changes nothing", per_access_state=True)
@ensure(lambda OLD, cache, h: OLD.was_resident or next(reversed(cache.arrival)) == h, "FIFO-ADMIT-1: a missed block joins at the tail")
@ensure(
    lambda OLD, cache: len(cache.arrival) == (OLD.resident if OLD.was_resident else min(OLD.resident + 1, cache.capacity)),
    "FIFO-EVICT-1: one eviction, and only when full",
)
@ensure(lambda OLD, cache: OLD.was_resident or list(cache.arrival)[:-1] == OLD.order[len(OLD.order) >= cache.capacity:],
        "FIFO-EVICT-1: a miss pops the head when the queue is full, and only then", per_access_state=True)
def access(cache: "FIFO", h: int) -> None:
    """FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1: one block access."""
    arrival = cache.arrival
    if h in arrival:
        return  # FIFO-ACCESS-1
    if len(arrival) >= cache.capacity:
        del arrival[next(iter(arrival))]  # FIFO-EVICT-1: the head (REPLAY-QUEUE-2) was admitted first
    arrival[h] = True  # FIFO-ADMIT-1


@dataclass(slots=True, eq=False)
class FIFO(BlockPolicy):
    """One FIFO cache (FIFO-CAP-1); the rules above are its methods, as in s3fifo.S3FIFO."""

    capacity: int
    arrival: HashQueue

    @classmethod
    @ensure(lambda capacity, result: result.capacity == capacity and not result.arrival, "FIFO-CAP-1: it starts empty")
    def empty(cls, capacity: int) -> "FIFO":
        """An empty cache of ``capacity`` blocks."""
        return cls(check_count(capacity, 1, "REPLAY-CONF-1", "capacity"), OrderedDict())

    blocks = same_blocks
    is_resident = is_resident
    access = access
    lookup = prefix_lookup
    serve = access_every_block

    @ensure(lambda self, result: result == len(self.arrival), "FIFO-CAP-1: the resident count is the queue's length")
    def resident_count(self) -> int:
        return len(self.arrival)

    def state_invariants_hold(self) -> bool:
        """FIFO-CAP-1."""
        return len(self.arrival) <= self.capacity
