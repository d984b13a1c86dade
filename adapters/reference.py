"""The reference itself as an Adapter, at the "state" level (PROTO-6, PROTO-17).

It drives kvspec.reference exactly as the replay does (spec/replay.md): the prefix scan of
REPLAY-PREFIX-1 to REPLAY-HIT-1 without side effects, then REPLAY-ACCESS-1, block by block; and it
offers the lifecycle (PROTO-35), by reference/lifecycle.py's Pool, or by any pool with the Pool's
operations that ``pool_factory`` builds.
"""

from collections.abc import Callable
from typing import Any

from kvspec.reference import ALL_POLICIES, FIFO, LRU, S3FIFO, SPEC_VERSION, ConfigError, KvspecError, Policy, ReplayConfig, make_policy
from kvspec.reference.dialects import DialectFIFO, DialectLRU, EngineReplay
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks

from kvspec.reference.lifecycle import Pool

from .benefit import ReferenceBenefitAdapter
from .interface import AdapterConfig, ConfigRefused, Identity, LifecycleState, Level, Snapshot


def snapshot_of(policy: Policy) -> Snapshot:
    """PROTO-12: a reference cache's queues, head first; LRU's and FIFO's one queue in ``main``, freq 0."""
    if isinstance(policy, EngineReplay):
        policy = policy.cache  # the queue it runs each request on
    if isinstance(policy, S3FIFO):  # a DialectS3FIFO too
        return Snapshot(small=tuple(policy.small.items()), main=tuple(policy.main.items()), ghost=tuple(policy.ghost))
    if isinstance(policy, LRU | DialectLRU):
        return Snapshot(main=tuple((h, 0) for h in policy.recency))
    assert isinstance(policy, FIFO | DialectFIFO)
    return Snapshot(main=tuple((h, 0) for h in policy.arrival))


def pool_state(pool: Pool) -> LifecycleState:
    """PROTO-44, FIX-18: a reference pool's queues (PROTO-12's shapes), reference counts and blocks not
    computed by hash id, and held count."""
    queues = snapshot_of(pool.policy)  # type: ignore[arg-type]  # an in-use policy is its canonical policy's subclass
    return LifecycleState(queues.small, queues.main, queues.ghost, tuple(sorted(pool.policy.refs.items())), tuple(sorted(pool.pending)),
                          pool.held)


class ReferenceAdapter(ReferenceBenefitAdapter):
    """kvspec.reference behind the Adapter interface, and (inherited) behind the BenefitAdapter one."""

    identity: Identity = Identity(name="kvspec-reference", language="python", version=SPEC_VERSION)
    level: Level = "state"
    policies = ALL_POLICIES
    lifecycle = True  # PROTO-35

    def __init__(self, pool_factory: Callable[[ReplayConfig], Any] = Pool.empty) -> None:
        super().__init__()
        self._policy: Policy | None = None
        self._block_size = 1
        self._pool_factory = pool_factory
        self._config: ReplayConfig | None = None
        self._pool: Any = None

    def _cache(self) -> Policy:
        if self._policy is None:
            raise KvspecError("PROTO-7: no cache is configured (configure first, or the last configure was refused)")
        return self._policy

    def configure(self, config: AdapterConfig) -> None:
        """PROTO-7, PROTO-8: an empty cache, or ConfigRefused naming the clause that refuses it."""
        self._policy = self._config = self._pool = None  # PROTO-7: any earlier cache is gone, even when this one is refused
        replay_config = ReplayConfig(
            policy=config.policy,
            capacity=config.capacity,
            block_size=config.block_size,
            small_ratio=config.small_ratio,
            max_freq=config.max_freq,
        )
        try:
            self._policy = make_policy(replay_config)
        except ConfigError as error:
            raise ConfigRefused(str(error)) from error
        self._block_size = config.block_size
        self._config = replay_config

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """PROTO-9: REPLAY-PREFIX-1 to REPLAY-HIT-1; the residency checks change nothing."""
        policy = self._cache()
        if not hash_ids or input_length < 1:
            raise KvspecError("PROTO-9: a request has at least one block and at least one token (REPLAY-TRACE-2)")
        k = prefix_hit_blocks(hash_ids, policy.is_resident)
        return hit_tokens(k, self._block_size, input_length)

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        """PROTO-10: REPLAY-ACCESS-1, every block in order; the canonical spec has no use for the
        input length an engine dialect's lockstep sends."""
        policy = self._cache()
        for h in hash_ids:
            policy.access(h)

    def resident_count(self) -> int:
        """PROTO-11: REPLAY-RESULT-4."""
        return self._cache().resident_count()

    def snapshot(self) -> Snapshot:
        """PROTO-12: the queues, head first."""
        return snapshot_of(self._cache())

    # The lifecycle (PROTO-35 to PROTO-44): the Pool's operations, on the pool of the last configure -------------

    def pool(self) -> Any:
        """PROTO-35: the pool of the last configure, built empty at its first lifecycle operation (a
        certification's replays need none)."""
        if self._pool is None:
            if self._config is None:
                raise KvspecError("PROTO-7: no cache is configured (configure first, or the last configure was refused)")
            self._pool = self._pool_factory(self._config)
        return self._pool

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        self.pool().arrive(rid, hash_ids, input_length)

    def lookup(self, rid: int) -> int:
        return self.pool().lookup(rid)  # type: ignore[no-any-return]

    def allocate(self, rid: int) -> bool:
        return self.pool().allocate(rid)  # type: ignore[no-any-return]

    def compute(self, rid: int, upto: int) -> None:
        self.pool().compute(rid, upto)

    def decode(self, rid: int) -> bool:
        return self.pool().decode(rid)  # type: ignore[no-any-return]

    def finish(self, rid: int) -> Any:
        """PROTO-42: the Pool's finished Request, whose hit_tokens and recomputed_tokens the reply carries."""
        return self.pool().finish(rid)

    def preempt(self, rid: int) -> None:
        self.pool().preempt(rid)

    def lifecycle_state(self) -> LifecycleState:
        """PROTO-44: read from the reference Pool's fields (its policy's queues and refs, pending, held)."""
        return pool_state(self.pool())

    def close(self) -> None:
        self._policy = self._config = self._pool = None
        super().close()
