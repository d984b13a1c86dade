"""Hand-made wrong implementations of the replay policies, each with one known mistake that is
not one of the mutant gallery's (conformance/galleries/mutants.py), to test what the diagnosis names
(tests/test_diagnosis.py). Each is an in-process adapter: ``python:tests/handmade/replay_mistakes.py:NAME``
certifies it at the state level, ``python:tests/handmade/replay_mistakes.py:NAME_results`` at the
results level (no snapshot: the diagnosis cannot see its queues)."""

import math
from collections import OrderedDict

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Snapshot
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO


class NewKeysToMainUntilFull(CanonicalS3FIFO):
    """Admits a new block to M while the cache has room, to S only once it is full: breaks S3-ACCESS-4."""

    name = "new-keys-to-main-until-full"

    def s3fifo_access(self, h: int) -> None:
        if h in self.small or h in self.main or h in self.ghost or len(self.small) + len(self.main) >= self.configured().capacity:
            super().s3fifo_access(h)
        else:
            self.main[h] = 0


class HalfUpSmallCap(CanonicalS3FIFO):
    """Rounds capacity × small_ratio half up (2.5 gives 3, 0.5 gives 1): breaks S3-CONF-2."""

    name = "half-up-small-cap"

    def small_cap_for(self, capacity: int, small_ratio: float) -> int:
        return math.floor(capacity * small_ratio + 0.5)


class GhostNineTenths(CanonicalS3FIFO):
    """Sizes the ghost at 0.9 × capacity, not main_cap: breaks S3-CONF-4."""

    name = "ghost-nine-tenths"

    def ghost_cap_for(self) -> int:
        return round(0.9 * self.configured().capacity)


class PromotionThreshold2(CanonicalS3FIFO):
    """Promotes from S to M only at freq 2 or more; freq 1 goes to G: breaks S3-ADMIT-S-2."""

    name = "promotion-threshold-2"

    def admit_to_small(self, h: int) -> None:
        while len(self.small) >= self.small_cap:
            victim, freq = self.small.popitem(last=False)
            if freq >= 2:
                self.admit_to_main(victim, freq)
            else:
                self.insert_to_ghost(victim)
        self.small[h] = 0


class RefusesMaxFreq0(CanonicalS3FIFO):
    """Refuses max_freq 0, which findings F-3 makes valid: breaks S3-CONF-6."""

    name = "refuses-max-freq-0"

    def configure(self, config: AdapterConfig) -> None:
        if config.policy == "s3fifo" and config.max_freq == 0:
            raise ConfigRefused("max_freq must be at least 1")
        super().configure(config)


class SmallAboveItsSize(CanonicalS3FIFO):
    """Drains S only once it holds more than small_cap entries: breaks S3-ADMIT-S-1 (and S3-INV-1)."""

    name = "small-above-its-size"

    def admit_to_small(self, h: int) -> None:
        while len(self.small) > self.small_cap:
            victim, freq = self.small.popitem(last=False)
            if freq >= 1:
                self.admit_to_main(victim, freq)
            else:
                self.insert_to_ghost(victim)
        self.small[h] = 0


class GhostAboveItsSize(CanonicalS3FIFO):
    """Forgets the ghost's head only once it holds more than ghost_cap hashes: breaks S3-GHOST-2 (and S3-INV-3)."""

    name = "ghost-above-its-size"

    def insert_to_ghost(self, h: int) -> None:
        if len(self.ghost) > self.ghost_cap:
            self.ghost.popitem(last=False)
        self.ghost[h] = None


class GhostHitKeepsGhost(CanonicalS3FIFO):
    """On a ghost hit, admits the block to M and leaves it in G too: breaks S3-ACCESS-3 (and S3-QUEUE-2)."""

    name = "ghost-hit-keeps-ghost"

    def s3fifo_access(self, h: int) -> None:
        if h in self.ghost and h not in self.main:
            self.admit_to_main(h, 0)
        elif h in self.ghost:
            self.main[h] = self.bump(self.main[h])
        else:
            super().s3fifo_access(h)

    def is_resident(self, h: int) -> bool:
        return h in self.small or h in self.main


class CountOffByOne(CanonicalS3FIFO):
    """Reports one block more than its LRU or FIFO queue holds: breaks LRU-CAP-1 or FIFO-CAP-1."""

    name = "count-off-by-one"

    def resident_count(self) -> int:
        return super().resident_count() + (self.engine() != "s3fifo")


class HitAppendsAgain(CanonicalS3FIFO):
    """An LRU kept as a list of accesses: a hit appends the block again instead of moving it, and
    eviction pops the head: breaks LRU-ACCESS-1 (and REPLAY-QUEUE-1: its queue holds a hash twice)."""

    name = "hit-appends-again"

    def configure(self, config: AdapterConfig) -> None:
        super().configure(config)
        self.accesses: list[int] = []

    def lru_access(self, h: int) -> None:
        if h not in self.accesses and len(set(self.accesses)) >= self.configured().capacity:
            oldest = self.accesses.pop(0)
            while oldest in self.accesses:
                self.accesses.remove(oldest)
        self.accesses.append(h)
        self.main = OrderedDict.fromkeys(self.accesses, 0)

    def snapshot(self) -> Snapshot:
        return Snapshot(main=tuple((h, 0) for h in self.accesses)) if self.engine() == "lru" else super().snapshot()


def results_level(cls: type[CanonicalS3FIFO]) -> type[CanonicalS3FIFO]:
    """The same implementation, certified at the results level: no snapshot."""
    return type(f"{cls.__name__}Results", (cls,), {"level": "results"})


HANDMADE = (NewKeysToMainUntilFull, HalfUpSmallCap, GhostNineTenths, PromotionThreshold2, RefusesMaxFreq0, SmallAboveItsSize,
            GhostAboveItsSize, GhostHitKeepsGhost, CountOffByOne, HitAppendsAgain)
for _cls in HANDMADE:
    globals()[_cls.name.replace("-", "_")] = _cls
    globals()[_cls.name.replace("-", "_") + "_results"] = results_level(_cls)
