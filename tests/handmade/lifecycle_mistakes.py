"""Hand-made mistakes of a pool of requests in flight, none of them one of the lifecycle gallery's
seven (conformance/galleries/lifecycle_mutants.py): each a one-method subclass of the independent
pool of tests/handmade/lifecycle_pool.py, a mistake a cache author could make in reading a clause of
spec/lifecycle.md, so that the lifecycle certification's power is measured on mistakes it has never
seen (issue 32). Each has its ``name``, its ``mistake`` and the clause it ``breaks``;
tests/test_handmade_lifecycle.py shows each on a short sequence of operations.

``MISTAKES`` maps each name to its class. Each is an in-process adapter:
``python:tests/handmade/lifecycle_mistakes.py:NAME`` certifies it at the state level,
``python:tests/handmade/lifecycle_mistakes.py:NAME_results`` at the results level (NAME the name
with ``_`` for ``-``).
"""

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # an adapter spec imports this file by its path, not as a package

from lifecycle_pool import Block, HandmadePool, PoolAdapter, Request  # noqa: E402


class HeldBlockFound(HandmadePool):
    """A block a request holds outside the cache, once it has computed it, is found by a lookup, as if
    it were registered in the prefix table: breaks LIFE-ALLOC-3 ("no lookup finds it")."""

    name = "held-block-found"
    mistake = "a held block that its request has computed is a hit for another request's lookup"
    breaks = "LIFE-ALLOC-3"

    def usable(self, h: int) -> bool:
        return super().usable(h) or any(h in r.held and h in r.hash_ids[:r.computed] for r in self.requests.values())


class RemovedToGhost(HandmadePool):
    """A block removed at a preemption is inserted into S3FIFO's G, as if it had been evicted:
    breaks LIFE-EVICT-3."""

    name = "removed-to-ghost"
    mistake = "a block a preemption removes goes into S3FIFO's ghost, as an evicted one does"
    breaks = "LIFE-EVICT-3"

    def remove(self, h: int) -> None:
        self.evict(h)


class FinishKeepsHeld(HandmadePool):
    """A request that finishes drops its references but does not free the blocks it holds (its
    decoding's among them): they take their slots for ever. Breaks LIFE-FINISH-1."""

    name = "finish-keeps-held"
    mistake = "a finished request's held blocks are never freed"
    breaks = "LIFE-FINISH-1"

    def finish(self, rid: int) -> Request:
        request = self.request(rid, "computed")
        self.drop_references(request)
        del self.requests[rid]
        return request


class FitCountsRepeats(HandmadePool):
    """The fit of an allocation counts a block the request names twice as two: breaks LIFE-ALLOC-4
    ("each counted once")."""

    name = "fit-counts-repeats"
    mistake = "an allocation's fit counts each position, a repeated block twice"
    breaks = "LIFE-ALLOC-4"

    def blocks_to_fit(self, request: Request) -> list[int]:  # type: ignore[override]
        return [h for h in request.hash_ids if not (h in self.blocks and self.blocks[h].refs > 0)]


class ComputesUnreferenced(HandmadePool):
    """A compute step marks every resident block of its range computed, one its own allocation
    evicted and another request admitted since among them: breaks LIFE-COMPUTE-1 ("not its to compute")."""

    name = "computes-unreferenced"
    mistake = "a compute step marks a resident block it does not reference computed"
    breaks = "LIFE-COMPUTE-1"

    def computes(self, request: Request, h: int) -> bool:
        return h in self.blocks


class ReferencedKeptInSmall(HandmadePool):
    """S's drain passes over a referenced entry at freq 0 in S, rather than admitting it to M: the
    blocks in use fill S and new blocks are held. Breaks S3-LIFE-1."""

    name = "referenced-kept-in-small"
    mistake = "S's drain keeps a referenced freq-0 entry in S instead of admitting it to M"
    breaks = "S3-LIFE-1"

    def goes_to_main(self, block: Block) -> bool:
        return block.freq >= 1


class InUseSkipsItsChance(HandmadePool):
    """M's drain passes over every referenced entry, one at freq 1 or more too, without spending its
    chance: breaks S3-LIFE-2 ("spends a chance and is requeued whether referenced or not")."""

    name = "in-use-skips-its-chance"
    mistake = "M's drain passes over a referenced entry at freq 1 or more without lowering its freq"
    breaks = "S3-LIFE-2"

    def passed_over(self, block: Block) -> bool:
        return block.refs > 0


class FifoInUseRequeued(HandmadePool):
    """FIFO's eviction gives a referenced head a second chance, moving it to the tail, instead of
    passing over it where it stands: breaks FIFO-LIFE-1 (the arrival order is lost)."""

    name = "fifo-in-use-requeued"
    mistake = "FIFO's eviction moves a referenced head to the tail as it passes over it"
    breaks = "FIFO-LIFE-1"

    def victim(self, queue: list[int]) -> int | None:
        if self.policy != "fifo":
            return super().victim(queue)
        for _ in range(len(queue)):
            if self.evictable(queue[0]):
                return queue[0]
            queue.append(queue.pop(0))
        return None


class DecodeRefusedWhenFull(HandmadePool):
    """A decoding request is refused its block whenever the pool is full, though an evictable block
    could be freed for it: breaks LIFE-DECODE-1 (refused only when every resident block is referenced)."""

    name = "decode-refused-when-full"
    mistake = "decode refused when the pool is full, whether or not an evictable block exists"
    breaks = "LIFE-DECODE-1"

    def decode(self, rid: int) -> bool:
        return not self.full() and super().decode(rid)


class RecomputedBelowZero(HandmadePool):
    """A resumed request's recomputed tokens are its computed tokens less its resumed hits, without
    the floor at 0: a resumed lookup that finds more than it had computed (another request computed
    its blocks meanwhile) subtracts. Breaks LIFE-HIT-2 (max(0, ...))."""

    name = "recomputed-below-zero"
    mistake = "recomputed tokens not floored at 0 when the resumed lookup finds more than was computed"
    breaks = "LIFE-HIT-2"

    def recomputed(self, computed_tokens: int, hit_tokens: int) -> int:
        return computed_tokens - hit_tokens


MISTAKES: dict[str, type[HandmadePool]] = {
    mistake.name: mistake  # type: ignore[attr-defined]
    for mistake in (HeldBlockFound, RemovedToGhost, FinishKeepsHeld, FitCountsRepeats, ComputesUnreferenced, ReferencedKeptInSmall,
                    InUseSkipsItsChance, FifoInUseRequeued, DecodeRefusedWhenFull, RecomputedBelowZero)
}


def factories(name: str, pool_class: type[HandmadePool]) -> tuple[Callable[[], PoolAdapter], Callable[[], PoolAdapter]]:
    """The mistake as an in-process adapter at the state level, and at the results level."""
    return (lambda: PoolAdapter(pool_class, name)), (lambda: PoolAdapter(pool_class, name, level="results"))


for _name, _class in MISTAKES.items():
    globals()[_name.replace("-", "_")], globals()[_name.replace("-", "_") + "_results"] = factories(_name, _class)
