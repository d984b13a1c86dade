"""The lifecycle gallery: one mutant for each bug the serving engines' own trackers report about
blocks in use and hit accounting (/work/shared/notes/serving-reports.md; issue 32 section 3), each
a subclass of the correct pool, CanonicalPool (canonical_lifecycle.py), that overrides the smallest
piece that makes the engine's mistake, and nothing else. Each names the report it comes from
(``report``: repository, number and title) and the clause of spec/lifecycle.md it breaks
(``breaks``); the lifecycle cases of the corpus must tell every one apart from the spec, with a case
that declares that clause (tests/test_lifecycle_gallery.py).

``MUTANTS`` maps each mutant's stable name to its class, in the order of the issue's list. Each
pool is an in-process adapter too (PROTO-29), its lifecycle the pool's and its replay the
reference's: ``python:kvspec.conformance.galleries.lifecycle_mutants:canonical`` names the correct
one, ``python:kvspec.conformance.galleries.lifecycle_mutants:<factory>`` a mutant (``FACTORIES``),
so that ``kvspec fixtures verify`` replays the lifecycle cases on it (FIX-18).
"""

from collections.abc import Callable

from kvspec.adapters.interface import Identity, Level, LifecycleState
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, Flight
from kvspec.reference import SPEC_VERSION


class SameStepRegistration(CanonicalPool):
    """A block usable by another request's lookup before it is computed. Breaks LIFE-LOOKUP-1.

    The blocks an allocation admits are hashed into the prefix table at once, before the forward
    pass that computes them: the lookup asks only whether a block is resident.
    """

    name = "same-step-registration"
    mistake = "a block usable by another request's lookup before it is computed"
    report = 'vllm-project/vllm #37152 "fix(v1/prefix-cache): prevent KV-cache pollution from same-step block registration"'
    breaks = "LIFE-LOOKUP-1"

    def usable(self, h: int) -> bool:
        return self.is_resident(h)


class LockWalkOffByOne(CanonicalPool):
    """The block in use left evictable by an off-by-one in the lock walk. Breaks LIFE-ALLOC-2.

    The walk that references the matched prefix stops one node short: the last hit block is not
    referenced, so it can be evicted while the request reads it.
    """

    name = "lock-walk-off-by-one"
    mistake = "the last matched block left evictable by an off-by-one in the lock walk"
    report = 'sgl-project/mini-sglang #52 "Missed lock/unlock of current node in RadixCacheManager when using lock_handle"'
    breaks = "LIFE-ALLOC-2"

    def blocks_to_reference(self, request: Flight, k: int) -> list[int]:
        blocks = super().blocks_to_reference(request, k)
        return [h for h in blocks if not (k and h == request.blocks[k - 1])]


class DetachedLockKept(CanonicalPool):
    """A reference not released on a detached node, so the pool fills with unevictable blocks.
    Breaks LIFE-PREEMPT-1.

    A preempted request's last reference to a block no one computed is never dropped: the block is
    neither removed nor ever evictable again.
    """

    name = "detached-lock-kept"
    mistake = "a reference not released on a detached block, which stays in use for ever"
    report = 'sgl-project/sglang #29291 "Guard unified radix lock release for detached nodes"'
    breaks = "LIFE-PREEMPT-1"

    def release_detached(self, h: int) -> None:
        pass


class EvictableSizeDrift(CanonicalPool):
    """Evictable-size accounting that drifts from what is resident. Breaks LIFE-POOL-2.

    A request that drops its reference marks the block evictable whatever the other requests that
    reference it: its count is cleared, not lowered by one.
    """

    name = "evictable-size-drift"
    mistake = "a block made evictable when one of the requests sharing it lets it go"
    report = 'UbiquitousLearning/mllm #656 "fix RadixCache evictable size accounting bug"'
    breaks = "LIFE-POOL-2"

    def unreference(self, h: int) -> None:
        self.refs.pop(h, None)


class RecomputationCountedAsHits(CanonicalPool):
    """Recomputation after preemption counted as hits. Breaks LIFE-HIT-1.

    Every allocation made counts its lookup's hits, a resumed request's too, and its recomputed
    tokens are not counted apart.
    """

    name = "recomputation-counted-as-hits"
    mistake = "a resumed request's lookup counted as prefix hits"
    report = 'vllm-project/vllm #25780 "vLLM counts re-computation tokens as prefix match"'
    breaks = "LIFE-HIT-1"

    def count_hits(self, request: Flight, k: int) -> None:
        request.allocated_once = False
        super().count_hits(request, k)


class RetryCountedTwice(CanonicalPool):
    """A retried allocation counted twice. Breaks LIFE-HIT-1.

    The lookup before an allocation that is refused counts its hits, and the retry counts them again.
    """

    name = "retry-counted-twice"
    mistake = "the hits of a lookup whose allocation is refused counted, and again at the retry"
    report = ('vllm-project/vllm #43736 "Local prefix cache hit rate can be over-counted when scheduling retries after KV allocation '
              'failure"')
    breaks = "LIFE-HIT-1"

    def refused(self, request: Flight, k: int) -> None:
        request.hit_tokens += self.tokens(k, request.input_length)


class EvictionIgnoresChunkRead(CanonicalPool):
    """Eviction that ignores a chunk being read. Breaks LIFE-EVICT-1.

    Every eviction takes its victim as if no block were referenced, without passing over the ones
    in use: LRU's and FIFO's (LMCache's local store evicts by either, spec/dialects.md
    LIFE-LMCACHE-5, where `get_evict_candidates` passes over a chunk being read) take the queue's
    head, and S3FIFO's drains send an entry in use to G.
    """

    name = "eviction-ignores-chunk-read"
    mistake = "a block evicted while a request is reading it"
    report = 'LMCache/LMCache #222 "Eviction policy needs to consider whether the KV Chunk is being read."'
    breaks = "LIFE-EVICT-1"

    def evictable(self, h: int) -> bool:
        return True


MUTANTS: dict[str, type[CanonicalPool]] = {
    mutant.name: mutant
    for mutant in (SameStepRegistration, LockWalkOffByOne, DetachedLockKept, EvictableSizeDrift, RecomputationCountedAsHits,
                   RetryCountedTwice, EvictionIgnoresChunkRead)
}


class PoolAdapter(ReferenceAdapter):
    """The reference behind the Adapter interface, with ``pool_class``'s pool for the lifecycle (PROTO-35);
    at the ``results`` level, an implementation that shows neither its queues nor its pool."""

    def __init__(self, pool_class: type[CanonicalPool], level: Level = "state") -> None:
        super().__init__(pool_factory=pool_class.empty)
        self.identity = Identity(name=f"lifecycle-{pool_class.name}", language="python", version=SPEC_VERSION)
        self.level = level

    def lifecycle_state(self) -> LifecycleState:
        """PROTO-44: the pool's own ``state`` (FIX-18's form) as the interface holds it."""
        state = self.pool().state()
        return LifecycleState(small=pairs(state["small"]), main=pairs(state["main"]), ghost=tuple(state["ghost"]), refs=pairs(state["refs"]),
                              pending=tuple(state["pending"]), held=state["held"])


def pairs(rows: list[list[int]]) -> tuple[tuple[int, int], ...]:
    return tuple((a, b) for a, b in rows)


def canonical() -> PoolAdapter:
    return PoolAdapter(CanonicalPool)


def same_step_registration() -> PoolAdapter:
    return PoolAdapter(SameStepRegistration)


def lock_walk_off_by_one() -> PoolAdapter:
    return PoolAdapter(LockWalkOffByOne)


def detached_lock_kept() -> PoolAdapter:
    return PoolAdapter(DetachedLockKept)


def evictable_size_drift() -> PoolAdapter:
    return PoolAdapter(EvictableSizeDrift)


def recomputation_counted_as_hits() -> PoolAdapter:
    return PoolAdapter(RecomputationCountedAsHits)


def retry_counted_twice() -> PoolAdapter:
    return PoolAdapter(RetryCountedTwice)


def eviction_ignores_chunk_read() -> PoolAdapter:
    return PoolAdapter(EvictionIgnoresChunkRead)


FACTORIES: dict[str, Callable[[], PoolAdapter]] = {name: globals()[name.replace("-", "_")] for name in MUTANTS}
