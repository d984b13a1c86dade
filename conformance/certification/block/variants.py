"""The spec with one rule broken, built from the reference: the variants a diagnosis replays a
divergence through (diagnosis.py), each naming in ``breaks`` the clauses it breaks.

A variant is the reference behind the Adapter interface (adapters/reference.py) with one step of
a request replaced: the policy that runs, its queue sizes, the prefix scan's residency test, the
longest prefix, the hit tokens, the blocks accessed or the resident count; or the reference in a
dialect of one variation point (spec/dialects.md) that replaces the rule. Every other step is the
reference's own, contracts included.
"""

from collections import OrderedDict

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.reference import FIFO, LRU, S3FIFO, Caps, ConfigError, ReplayConfig, make_policy
from kvspec.reference.dialects import VARIATIONS
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks


class Variant(ReferenceAdapter):
    """The reference, each step of a request a method a variant overrides."""

    breaks = ""

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return self.tokens(self.prefix_blocks(hash_ids), input_length)

    def is_resident(self, h: int) -> bool:
        return self._cache().is_resident(h)

    def prefix_blocks(self, hash_ids: list[int]) -> int:
        return prefix_hit_blocks(hash_ids, self.is_resident)

    def tokens(self, k: int, input_length: int) -> int:
        return hit_tokens(k, self._block_size, input_length)

    def start_from(self, before: Snapshot) -> bool:
        """The queues ``before`` (the implementation's, PROTO-12) in place of the cache's own; whether
        the spec allows them (the reference's rules run only from such a state: their contracts
        refuse any other)."""
        cache = self._cache()
        if isinstance(cache, S3FIFO):  # a DialectS3FIFO too
            cache.small, cache.main, cache.ghost = OrderedDict(before.small), OrderedDict(before.main), OrderedDict.fromkeys(before.ghost, True)
        elif isinstance(cache, LRU):
            cache.recency = OrderedDict.fromkeys((h for h, _ in before.main), True)
        else:
            assert isinstance(cache, FIFO)
            cache.arrival = OrderedDict.fromkeys((h for h, _ in before.main), True)
        return cache.state_invariants_hold()


class RunsAnother(Variant):
    """A policy that checks its own configuration and then runs another policy's rules."""

    runs: dict[str, str] = {}

    def configure(self, config: AdapterConfig) -> None:
        super().configure(config)
        if config.policy in self.runs:
            self._policy = make_policy(ReplayConfig(self.runs[config.policy], config.capacity, config.block_size))


class LruInsteadOfS3FIFO(RunsAnother):
    """Seed 000's "LRU instead of S3FIFO": asked for S3FIFO, a plain LRU of ``capacity`` blocks."""

    breaks = "S3-ACCESS-1 to S3-ACCESS-4"
    runs = {"s3fifo": "lru"}


class HitRequeues(RunsAnother):
    """FIFO with LRU's hit: a resident block is requeued at the tail."""

    breaks = "FIFO-ACCESS-1"
    runs = {"fifo": "lru"}


class HitChangesNothing(RunsAnother):
    """LRU with FIFO's hit: a resident block stays where it is."""

    breaks = "LRU-ACCESS-1"
    runs = {"lru": "fifo"}


class NoMinClamp(Variant):
    """Seed 000's "no min(k × block_size, L) clamp": k × block_size hit tokens."""

    breaks = "REPLAY-HIT-1"

    def tokens(self, k: int, input_length: int) -> int:
        return k * self._block_size


class GhostCountedAsResident(Variant):
    """Seed 000's "ghost counted as resident": the prefix scan counts a hash in G as a hit."""

    breaks = "S3-QUEUE-3"

    def is_resident(self, h: int) -> bool:
        return super().is_resident(h) or h in getattr(self._cache(), "ghost", ())


class SetIntersection(Variant):
    """Seed 000's "set intersection instead of longest prefix": resident blocks anywhere count."""

    breaks = "REPLAY-PREFIX-2"

    def prefix_blocks(self, hash_ids: list[int]) -> int:
        return sum(1 for h in set(hash_ids) if self.is_resident(h))


class FreqOnlyOnPrefixHits(Variant):
    """Seed 000's "freq updated only on prefix hits": a resident block past the request's hit
    prefix (the k of the last hit-token scan) is not accessed; misses are admitted as usual."""

    breaks = "REPLAY-ACCESS-1"
    window = 0

    def prefix_blocks(self, hash_ids: list[int]) -> int:
        self.window = super().prefix_blocks(hash_ids)
        return self.window

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        window, self.window = self.window, 0
        for i, h in enumerate(hash_ids):
            if i < window or not self.is_resident(h):
                super().access([h])


class GhostInFinalSize(Variant):
    """Seed 000's "ghost counted in final_cache_blocks": the resident count is |S| + |M| + |G|."""

    breaks = "S3-FINAL-1"

    def resident_count(self) -> int:
        return super().resident_count() + len(getattr(self._cache(), "ghost", ()))


class NoSecondChance(Variant):
    """Seed 000's "plain FIFO pop on M" (and "second-chance requeue at the head", which evicts the
    same head): a full M evicts its head whatever its freq. The reference's rules run with the
    head's freq read as 0 during an access that is not to the head itself, and given back when
    the head stays (a valid state admits at most one entry to M an access)."""

    breaks = "S3-ADMIT-M-2"

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        for h in hash_ids:
            cache = self._cache()
            head = next(iter(cache.main), h) if isinstance(cache, S3FIFO) and len(cache.main) >= cache.caps.main_cap else h
            if head == h:
                super().access([h])
                continue
            freq, cache.main[head] = cache.main[head], 0
            super().access([h])
            if head in cache.main:
                cache.main[head] = freq


class InDialect(Variant):
    """The reference in a dialect of one variation point (spec/dialects.md), for the policies it
    applies to: the variation point replaces the canonical rules it names, and no other."""

    point = ""

    def configure(self, config: AdapterConfig) -> None:
        super().configure(config)  # the canonical spec's refusals
        if config.policy in VARIATIONS[self.point].policies:
            self._policy = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq,
                                                    frozenset({self.point})))


class FreqResetOnPromotion(InDialect):
    """Seed 000's "freq reset on S → M promotion": the dialect promote-freq-reset (S3-DIALECT-10)."""

    point = "promote-freq-reset"
    breaks = ", ".join(VARIATIONS[point].replaces)


class IntSmallCap(Variant):
    """Seed 000's "int() instead of round() for small_cap": small_cap = int(capacity × small_ratio),
    refused by S3-CONF-5 where that leaves a queue without an entry."""

    breaks = "S3-CONF-2"

    def configure(self, config: AdapterConfig) -> None:
        try:
            super().configure(config)
        except ConfigRefused as refused:
            if not (isinstance(refused.__cause__, ConfigError) and refused.__cause__.clause == "S3-CONF-5"):
                raise
        if config.policy != "s3fifo":
            return
        small_cap = int(config.capacity * config.small_ratio)
        main_cap = config.capacity - small_cap
        if small_cap < 1 or main_cap < 1:
            raise ConfigRefused(f"S3-CONF-5: small_cap {small_cap}, main_cap {main_cap}")
        self._policy = S3FIFO(Caps(small_cap, main_cap, main_cap, config.max_freq), OrderedDict(), OrderedDict(), OrderedDict())
        self._block_size = config.block_size


VARIANTS: tuple[type[Variant], ...] = (LruInsteadOfS3FIFO, NoMinClamp, GhostCountedAsResident, SetIntersection, FreqOnlyOnPrefixHits,
                                       GhostInFinalSize, NoSecondChance, FreqResetOnPromotion, IntSmallCap, HitRequeues,
                                       HitChangesNothing)
