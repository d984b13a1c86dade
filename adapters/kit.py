"""The adapter kit: an LRU or FIFO cache library behind the Adapter interface in about twenty lines.

A library that keeps blocks by key and evicts them in an order it can show is a block cache of
spec/replay.md. ``BlockCacheAdapter`` writes the Adapter half once (docs/wrap-a-library.md): a
library's adapter subclasses it, names itself (``identity``, ``policies``) and overrides
``make_cache``, as cachetools' caches override one method of one base class; the other hooks
default to Python's mapping protocol and are overridden where the library's names differ.

What the kit does for every adapter:

- configure (PROTO-7, PROTO-8): drops the earlier cache; refuses, naming the clause, a
  ``block_size`` REPLAY-CONF-2 refuses (the replay's knob: the library never sees it) and a
  ``capacity`` REPLAY-CONF-1 refuses (unless ``checks_capacity`` is False: then the library is
  given every capacity, so that a certification reads the library's own reading of it); ignores
  S3FIFO's knobs (REPLAY-CONF-3); and turns an exception of ``refusals`` raised by
  ``make_cache`` into a refusal with the library's message;
- hit_tokens (PROTO-9): the prefix scan of REPLAY-PREFIX-1 and REPLAY-PREFIX-2, the reference's
  own, by ``is_resident`` alone, which MUST NOT change the library's order (REPLAY-PREFIX-3: a
  peek, never a read that counts as a use); then REPLAY-HIT-1's clamp;
- access (PROTO-10): ``access_block`` for every block, in order (REPLAY-ACCESS-1);
- resident_count (PROTO-11) and, where the adapter has ``queue``, snapshot (PROTO-12): the
  library's one queue, head first, in ``main`` with every freq 0; such an adapter is at the
  ``state`` level, one without at the ``results`` level.

The kit serves the policies whose whole state is one queue, LRU and FIFO. It cannot serve S3FIFO:
its snapshot is two queues with a freq per entry and a ghost, which only a library's internals
hold, and its knobs (small_ratio, max_freq) map onto each library's parameters differently; an
S3FIFO library's adapter is written whole (docs/certifications/s3fifo-cache/adapter.py).
"""

from collections.abc import Iterable
from typing import Any, ClassVar

from kvspec.reference import ConfigError, KvspecError
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks
from kvspec.reference.validation import check_count

from .interface import AdapterConfig, ConfigRefused, Identity, Level, Snapshot, described_error

KIT_POLICIES = ("lru", "fifo")  # the policies whose state is one queue (PROTO-12)
STORED = True  # the value stored for every block: never None, which a lookup cannot tell from a miss


class BlockCacheAdapter:
    """An Adapter (kvspec.adapters.interface) over an LRU or FIFO library. A subclass sets
    ``identity`` and ``policies`` and overrides ``make_cache``; it overrides ``queue`` to be
    certified at the state level, and ``is_resident`` or ``access_block`` where the library's
    methods are not the mapping protocol's (a membership test that reorders among them)."""

    identity: Identity
    policies: tuple[str, ...] = KIT_POLICIES
    level: Level = "results"  # "state" for a subclass that overrides queue (set by __init_subclass__)
    refusals: ClassVar[tuple[type[Exception], ...]] = (ValueError, OverflowError, MemoryError)  # the library's "no" to a configuration
    checks_capacity: ClassVar[bool] = True  # REPLAY-CONF-1 checked by the kit; False: by the library, whose reading is certified

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        others = [policy for policy in cls.policies if policy not in KIT_POLICIES]
        if others:
            raise TypeError(f"{cls.__name__}: the adapter kit serves {' and '.join(KIT_POLICIES)}, not {', '.join(others)}: an S3FIFO's "
                            "queues and freqs are its library's internals, and its adapter is written whole")
        if "level" not in vars(cls):
            cls.level = "state" if cls.queue is not BlockCacheAdapter.queue else "results"

    def __init__(self) -> None:
        self.cache: Any = None  # the library's cache, as make_cache built it for the last configuration accepted
        self.block_size = 1

    # The hooks a library's adapter overrides ------------------------------------------------------

    def make_cache(self, policy: str, capacity: int) -> Any:
        """An empty cache of the library's for ``policy`` (one of ``policies``) holding ``capacity``
        blocks; an exception of ``refusals`` refuses the configuration with its message (PROTO-8)."""
        raise NotImplementedError(f"{type(self).__name__} must override make_cache(policy, capacity)")

    def is_resident(self, block: int) -> bool:
        """REPLAY-POLICY-1: whether ``block`` is in the cache, changing nothing (REPLAY-PREFIX-3)."""
        return block in self.cache

    def access_block(self, block: int) -> None:
        """REPLAY-ACCESS-1 for one block, as a cache-aside caller does: a read, which is a hit's use
        (LRU-ACCESS-1 moves it, FIFO-ACCESS-1 does not), and on a miss a write, which admits it."""
        if self.cache.get(block) is None:
            self.cache[block] = STORED

    def queue(self) -> Iterable[int]:
        """PROTO-12: the library's eviction order, head (next to go) first: LRU's least recent
        first, FIFO's oldest first. Overriding it puts the adapter at the state level."""
        raise NotImplementedError("at the results level there is no queue to show")

    # The Adapter interface (PROTO-7 to PROTO-12) ---------------------------------------------------

    def configure(self, config: AdapterConfig) -> None:
        """PROTO-7, PROTO-8: an empty cache for ``config``, or ConfigRefused naming the clause or
        giving the library's message."""
        self.cache = None  # PROTO-7: any earlier cache is gone, even when this one is refused
        if config.policy not in self.policies:
            raise ConfigRefused(f"PROTO-6: {self.identity.name} implements {', '.join(self.policies)}, not {config.policy!r}")
        try:
            check_count(config.block_size, 1, "REPLAY-CONF-2", "block_size")
            if self.checks_capacity:
                check_count(config.capacity, 1, "REPLAY-CONF-1", "capacity")
        except ConfigError as error:
            raise ConfigRefused(str(error)) from None
        try:
            cache = self.make_cache(config.policy, config.capacity)
        except self.refusals as error:
            raise ConfigRefused(f"the library refused capacity {config.capacity}: {described_error(error)}") from None
        self.cache, self.block_size = cache, config.block_size

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """PROTO-9: REPLAY-PREFIX-1 to REPLAY-HIT-1, by is_resident alone (REPLAY-PREFIX-3)."""
        self.configured()
        return hit_tokens(prefix_hit_blocks(hash_ids, self.is_resident), self.block_size, input_length)

    def access(self, hash_ids: list[int]) -> None:
        """PROTO-10: REPLAY-ACCESS-1, every block in order."""
        self.configured()
        for block in hash_ids:
            self.access_block(block)

    def resident_count(self) -> int:
        """PROTO-11: REPLAY-RESULT-4, the library's own count."""
        return len(self.configured())

    def snapshot(self) -> Snapshot:
        """PROTO-12: LRU's recency queue or FIFO's arrival queue in ``main``, head first, every freq 0."""
        self.configured()
        return Snapshot(main=tuple((block, 0) for block in self.queue()))

    def close(self) -> None:
        self.cache = None

    def configured(self) -> Any:
        if self.cache is None:
            raise KvspecError("PROTO-7: no cache is configured (configure first, or the last configure was refused)")
        return self.cache
