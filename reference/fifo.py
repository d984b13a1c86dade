"""FIFO, the second baseline (spec/fifo.md): evict the block admitted first; hits change nothing."""

from collections import OrderedDict

from .contracts import ensure, require, snapshot
from .queues import HashQueue, pop_head
from .validation import check_count


@snapshot(lambda arrival: len(arrival), "resident")
@snapshot(lambda arrival, h: h in arrival, "was_resident")
@snapshot(lambda arrival: list(arrival), "order", per_access_state=True)
@require(lambda arrival, capacity: capacity >= 1 and len(arrival) <= capacity, "FIFO-CAP-1")
@ensure(lambda OLD, arrival: not OLD.was_resident or list(arrival) == OLD.order, "FIFO-ACCESS-1: a hit changes nothing", per_access_state=True)
@ensure(lambda OLD, arrival, h: OLD.was_resident or next(reversed(arrival)) == h, "FIFO-ADMIT-1: a missed block joins at the tail")
@ensure(
    lambda OLD, arrival, capacity: len(arrival) == (OLD.resident if OLD.was_resident else min(OLD.resident + 1, capacity)),
    "FIFO-EVICT-1: one eviction, and only when full",
)
def access(arrival: HashQueue, capacity: int, h: int) -> None:
    """FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1: one block access."""
    if h in arrival:
        return  # FIFO-ACCESS-1
    if len(arrival) >= capacity:
        pop_head(arrival)  # FIFO-EVICT-1: the head was admitted first
    arrival[h] = True  # FIFO-ADMIT-1


class FIFO:
    """One FIFO cache: the replay's policy interface (spec/replay.md, REPLAY-POLICY-1)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
        self.arrival: HashQueue = OrderedDict()

    def is_resident(self, h: int) -> bool:
        return h in self.arrival

    def access(self, h: int) -> None:
        access(self.arrival, self.capacity, h)

    def resident_count(self) -> int:
        return len(self.arrival)

    def state_invariants_hold(self) -> bool:
        """FIFO-CAP-1."""
        return len(self.arrival) <= self.capacity
