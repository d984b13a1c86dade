"""vLLM's block pool (spec/dialects.md, LRU-DIALECT-6): slots that hold prefix paths, a free queue
that takes a finished request's blocks deepest first, and no de-duplication.

Between requests each slot is empty or holds one block (a prefix path, REPLAY-DIALECT-3); the
slots that hold one form the free queue, head first, and behind the empty ones, which are always
taken first. A path may be held by two slots, each its own entry in the queue; a path is resident
while any slot holds it, and a lookup takes the slot that came to hold it first.
"""

from collections import OrderedDict
from dataclasses import dataclass, field

from ..validation import check_count
from .baselines import Paths, dialect_blocks
from .catalogue import Dialect
from .engine import EngineCache, cached_blocks, skipped


def pool_state_holds(pool: "BlockPool") -> bool:
    """LRU-CAP-1 over slots: the held slots and the empty ones are the capacity; each path's slots
    are exactly the queue's slots that hold it (LRU-DIALECT-6)."""
    held = [s for slots in pool.slots_of.values() for s in slots]
    return (len(pool.queue) + pool.empty == pool.capacity and pool.empty >= 0 and sorted(held) == sorted(pool.queue)
            and all(pool.queue[s] == path for path, slots in pool.slots_of.items() for s in slots) and all(pool.slots_of.values()))


@dataclass(slots=True, eq=False)
class BlockPool(EngineCache):
    """One vLLM block pool (LRU-DIALECT-6), in a dialect with the engine replay's points."""

    dialect: Dialect
    capacity: int
    block_size: int
    empty: int  # the slots that hold no block
    paths: Paths = field(default_factory=Paths)
    queue: OrderedDict[int, int] = field(default_factory=OrderedDict)  # the free queue's held slots, head first: slot -> path
    slots_of: dict[int, list[int]] = field(default_factory=dict)  # each resident path's slots, in the order they came to hold it
    next_slot: int = 0
    stored: int = 0  # the blocks its requests stored (EngineCache.serve)

    @classmethod
    def empty_pool(cls, dialect: Dialect, capacity: int, block_size: int) -> "BlockPool":
        capacity = check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
        return cls(dialect, capacity, block_size, capacity)

    blocks = dialect_blocks
    state_invariants_hold = pool_state_holds

    def is_resident(self, h: int) -> bool:
        """A path is resident while a slot holds it."""
        return h in self.slots_of

    def resident_count(self) -> int:
        """The slots that hold a block: a path held twice counts twice (LRU-DIALECT-6)."""
        return len(self.queue)

    def take(self, path: int) -> int:
        """A hit: the slot that came to hold ``path`` first leaves the free queue while the request runs."""
        slot = self.slots_of[path][0]
        del self.queue[slot]
        return slot

    def allocate(self) -> None:
        """One slot for the request: an empty one, or else the free queue's head, whose block is
        evicted (its path stays resident while another slot holds it)."""
        if self.empty:
            self.empty -= 1
            return
        slot, path = self.queue.popitem(last=False)
        slots = self.slots_of[path]
        slots.remove(slot)
        if not slots:
            del self.slots_of[path]

    def hold(self, path: int) -> int:
        """A slot the request computed comes to hold ``path``, beside any slot that holds it already."""
        self.next_slot += 1
        self.slots_of.setdefault(path, []).append(self.next_slot)
        return self.next_slot

    def run(self, blocks: list[int], input_length: int, k: int) -> int:
        """LRU-DIALECT-6: take the k hit blocks' slots out of the free queue, allocate a slot for
        each other block (all before any is cached), cache the whole blocks past the hit, then free
        the request's blocks: those that hold a path to the queue's tail, deepest first, the
        partial one empty. The blocks stored."""
        n = len(blocks)
        if skipped(n, self.capacity, self.dialect):
            return 0  # REPLAY-DIALECT-5
        whole = cached_blocks(n, input_length, self.block_size, self.dialect)
        held = [self.take(path) for path in blocks[:k]]
        for _ in range(n - k):
            self.allocate()
        held += [self.hold(path) for path in blocks[k:whole]]  # no de-duplication: a path cached already is held twice
        for position in reversed(range(whole)):
            self.queue[held[position]] = blocks[position]  # deepest first to the tail
        self.empty += n - whole  # the partial block's slot, empty again
        return whole - k
