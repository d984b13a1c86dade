"""The engine replay (spec/dialects.md, section 7): a request run whole, as a serving engine runs
it, instead of block by block.

A serving engine looks a request's prefix up, allocates a slot for each block it computes, caches
what it computed and frees the request's blocks when it finishes. The variation points
REPLAY-DIALECT-4 to REPLAY-DIALECT-9 say how that differs from spec/replay.md's replay; they apply
to any LRU or FIFO dialect (EngineReplay runs one block by block within the request), and the
engines' own caches (vllm.py, radix.py) are EngineCaches too.
"""

from dataclasses import dataclass

from ..contracts import ensure, require
from ..request import Policy, prefix_hit_blocks
from .baselines import DialectFIFO, DialectLRU, admit, evict, fifo_evict
from .catalogue import Dialect

ENGINE_REPLAY = ("hit-cap-last-token", "too-long-skipped", "pin-request", "full-blocks-only", "partial-block-slot", "allocate-then-put")


def runs_whole(dialect: Dialect) -> bool:
    """Whether a replay in ``dialect`` runs each request whole (this module) rather than block by block."""
    return any(v in dialect for v in ENGINE_REPLAY)


def cached_blocks(n: int, input_length: int, block_size: int, dialect: Dialect) -> int:
    """REPLAY-DIALECT-7 (full-blocks-only): how many of a request's n blocks it caches, all but a
    partial last one; REPLAY-TRACE-4: all of them."""
    if "full-blocks-only" in dialect and input_length < n * block_size:
        return n - 1
    return n


def skipped(n: int, capacity: int, dialect: Dialect) -> bool:
    """REPLAY-DIALECT-5 (too-long-skipped): a request of more blocks than the cache holds is not run."""
    return "too-long-skipped" in dialect and n > capacity


@require(lambda k, n: 0 <= k <= n, "REPLAY-PREFIX-1")
@ensure(lambda k, result: 0 <= result <= k, "REPLAY-DIALECT-4, REPLAY-DIALECT-5, REPLAY-DIALECT-7: never more than the resident prefix")
@ensure(lambda dialect, input_length, block_size, result: "hit-cap-last-token" not in dialect or result * block_size < input_length,
        "REPLAY-DIALECT-4: the last prompt token is always computed")
def engine_hit_blocks(k: int, n: int, input_length: int, block_size: int, capacity: int, dialect: Dialect) -> int:
    """The hit blocks of a request whose resident prefix is k of its n blocks (REPLAY-PREFIX-1):
    none for a request not run (REPLAY-DIALECT-5), no partial block (REPLAY-DIALECT-7), and at most
    ⌊(input_length − 1) / block_size⌋ (REPLAY-DIALECT-4)."""
    if skipped(n, capacity, dialect):
        return 0  # REPLAY-DIALECT-5
    k = min(k, cached_blocks(n, input_length, block_size, dialect))  # REPLAY-DIALECT-7: a partial block is never looked up
    if "hit-cap-last-token" in dialect:
        k = min(k, (input_length - 1) // block_size)  # REPLAY-DIALECT-4
    return k


class EngineCache(Policy):
    """A cache whose replay runs each request whole: its lookup, the resident prefix as the engine
    makes it (``lookup``), then the request itself (``run``), on the Policy of
    reference/request.py. Subclasses hold ``dialect``, ``capacity``, ``block_size`` and ``stored``,
    the blocks their requests have stored (made resident), as an engine counts them."""

    dialect: Dialect
    capacity: int
    block_size: int
    stored: int

    def is_resident(self, h: int) -> bool:
        """Whether block h is resident, as each engine holds its blocks."""
        raise NotImplementedError

    def lookup(self, blocks: list[int], input_length: int) -> int:
        """A request's hit blocks, changing nothing: its resident prefix (REPLAY-PREFIX-1 to
        REPLAY-PREFIX-3), or what an engine makes of it (REPLAY-DIALECT-4, REPLAY-DIALECT-5, REPLAY-DIALECT-7)."""
        k = prefix_hit_blocks(blocks, self.is_resident)
        return engine_hit_blocks(k, len(blocks), input_length, self.block_size, self.capacity, self.dialect)

    def serve(self, blocks: list[int], input_length: int, k: int) -> None:
        """REPLAY-DIALECT-4 to REPLAY-DIALECT-9: the request, whose lookup found k hit blocks, run whole."""
        self.stored += self.run(blocks, input_length, k)

    def run(self, blocks: list[int], input_length: int, k: int) -> int:
        """Run the request whose hit blocks are k; how many blocks it stored (made resident)."""
        raise NotImplementedError


@dataclass(slots=True, eq=False)
class EngineReplay(EngineCache):
    """An LRU or FIFO dialect run request by request (REPLAY-DIALECT-4 to REPLAY-DIALECT-9): within
    a request, each block it caches is accessed in order, as REPLAY-ACCESS-1 says."""

    cache: DialectLRU | DialectFIFO
    dialect: Dialect
    capacity: int
    block_size: int
    stored: int = 0

    def blocks(self, hash_ids: list[int]) -> list[int]:
        return self.cache.blocks(hash_ids)

    def is_resident(self, h: int) -> bool:
        return self.cache.is_resident(h)

    def resident_count(self) -> int:
        return self.cache.resident_count()

    def state_invariants_hold(self) -> bool:
        """The cache's own, and REPLAY-DIALECT-6: no pin outlives its request (LRU-DIALECT-2's
        protection does, until the next request begins)."""
        return self.cache.state_invariants_hold() and ("lru-protect-request" in self.dialect or not self.cache.protected)

    def run(self, blocks: list[int], input_length: int, k: int) -> int:
        """REPLAY-DIALECT-5: nothing, for a request not run; else REPLAY-ACCESS-1 on the blocks it
        caches (REPLAY-DIALECT-7), each pinned once resident (REPLAY-DIALECT-6), then its partial
        block's slot (REPLAY-DIALECT-8); the pins end with the request."""
        cache, dialect = self.cache, self.dialect
        if skipped(len(blocks), self.capacity, dialect):
            return 0  # REPLAY-DIALECT-5
        cached = cached_blocks(len(blocks), input_length, self.block_size, dialect)
        if "allocate-then-put" in dialect:
            return self.touch_then_store(blocks[:k], blocks[k:cached])
        stored = 0
        for h in blocks[:cached]:
            was_resident = cache.is_resident(h)
            cache.access(h)
            stored += not was_resident and cache.is_resident(h)  # not when every block was pinned (REPLAY-DIALECT-6)
            if "pin-request" in dialect and cache.is_resident(h):
                cache.protected.add(h)  # REPLAY-DIALECT-6: the request's own admissions never evict it
        if cached < len(blocks) and "partial-block-slot" in dialect:
            slot = cache.paths.slot(blocks[-1])  # REPLAY-DIALECT-8: a block no request names again
            cache.access(slot)
            cache.release(slot)  # freed with the request, and never cached
        if "pin-request" in dialect:
            cache.protected.clear()  # REPLAY-DIALECT-6: only while the request runs
        return stored

    def touch_then_store(self, hits: list[int], rest: list[int]) -> int:
        """REPLAY-DIALECT-9 (allocate-then-put): the hit blocks touched, then the blocks after the hit
        stored. The blocks stored."""
        self.touch(hits)
        return self.put(rest)

    def touch(self, hits: list[int]) -> None:
        """REPLAY-DIALECT-9: the hit blocks are accessed by the policy's own rule (in reverse order under
        LRU-DIALECT-4, lru-reverse-touch)."""
        for h in reversed(hits) if "lru-reverse-touch" in self.dialect else hits:
            self.cache.access(h)  # a hit: the policy's access cites its own clause, which this line shares (FIX-4)

    def put(self, blocks: list[int]) -> int:
        """REPLAY-DIALECT-9: a slot is allocated for each block, in order, evicting one block while the
        queue and the slots already allocated fill the cache, and stopping, with this block and the
        rest not stored, when there is none to evict (in flight, a pinned block is none: in_flight_lmcache.py); then
        each block allocated is appended at the tail, unless it is resident by then, when it is left
        where it is. The blocks stored."""
        cache = self.cache
        allocated: list[int] = []
        for h in blocks:
            if cache.resident_count() + len(allocated) >= cache.capacity and not self.evict_one():
                break  # REPLAY-DIALECT-9: nothing left to evict, so the store stops
            allocated.append(h)
        stored = 0
        for h in allocated:
            if not cache.is_resident(h):
                self.append(h)
                stored += 1
        return stored

    def evict_one(self) -> bool:
        """LRU-EVICT-1 or FIFO-EVICT-1 (as the dialect has them): whether a block was evicted."""
        return evict(self.cache) if isinstance(self.cache, DialectLRU) else fifo_evict(self.cache)

    def append(self, h: int) -> None:
        """LRU-ADMIT-1 or FIFO-ADMIT-1: at the tail."""
        if isinstance(self.cache, DialectLRU):
            admit(self.cache, h)
        else:
            self.cache.arrival[h] = True
