"""An independent model of S3FIFO's dialects, written from spec/dialects.md's text and the
packages' sources (not from reference/dialects/s3fifo.py), for tests/test_dialects.py to replay
the reference against. One class, one switch a variation point; head = the first item."""

import math
from collections import OrderedDict


class ModelS3FIFO:
    def __init__(self, variations: frozenset[str], capacity: int, small_ratio: float, max_freq: int) -> None:
        v = self.v = variations
        small = math.floor(capacity * small_ratio) if "small-cap-floor" in v else round(capacity * small_ratio)
        if "small-cap-min-1" in v:
            small = max(1, small)
        main = capacity - small
        if main < 1 and "main-zero-all-main" in v:
            small, main = 0, capacity
        elif main < 1 and "main-zero-drop" in v:
            main = 0
        elif small < 1 or main < 1:
            raise ValueError("refused")
        if "small-ratio-open" in v and not 0 < small_ratio < 1:
            raise ValueError("refused")
        if "max-freq-min-1" in v and max_freq < 1:
            raise ValueError("refused")
        self.capacity, self.small_cap, self.main_cap = capacity, small, main
        self.ghost_cap = math.floor(capacity * 0.9) if "ghost-cap-0.9" in v else int(capacity * 1.0) if "ghost-cap-capacity" in v else main
        self.top = None if "freq-unsaturated" in v else max_freq
        self.threshold = 2 if "promote-at-2" in v else 1
        self.S: OrderedDict[int, int] = OrderedDict()
        self.M: OrderedDict[int, int] = OrderedDict()
        self.G: OrderedDict[int, None] = OrderedDict()
        self.evicted = False

    def hit(self, f: int) -> int:
        return f + 1 if self.top is None else min(f + 1, self.top)

    def requeued(self, f: int) -> int:
        return f - 1 if self.top is not None else min(f, 3) - 1

    def promoted(self, f: int) -> int:
        return 0 if "promote-freq-reset" in self.v else f - 1 if "promote-freq-minus-1" in self.v else f

    def to_ghost(self, k: int) -> None:
        if self.ghost_cap == 0:
            return
        if k in self.G:
            del self.G[k]
        elif len(self.G) >= self.ghost_cap:
            self.G.popitem(last=False)
        self.G[k] = None

    def main_out(self) -> None:
        """Requeue heads with a chance left until one leaves M."""
        while self.M:
            k, f = self.M.popitem(last=False)
            if f >= 1:
                self.M[k] = self.requeued(f)
            else:
                if "main-victim-forgotten" not in self.v:
                    self.to_ghost(k)
                return

    def into_main(self, k: int, f: int, drain: bool) -> None:
        if self.main_cap == 0:
            return
        while drain and self.M and len(self.M) >= self.main_cap:
            self.main_out()
        self.M[k] = f

    def small_head_out(self, drain: bool) -> bool:
        """Pop S's head; True if it went to G."""
        k, f = self.S.popitem(last=False)
        if f >= self.threshold:
            self.into_main(k, self.promoted(f), drain)
            return False
        self.to_ghost(k)
        return True

    def access(self, h: int) -> None:
        if h in self.S:
            self.S[h] = self.hit(self.S[h])
            return
        if h in self.M:
            self.M[h] = self.hit(self.M[h])
            return
        ghost = h in self.G
        if ghost:
            del self.G[h]
            ghost = "ghost-ignored" not in self.v
        glob = "global-eviction" in self.v
        if glob:
            while len(self.S) + len(self.M) >= self.capacity:
                self.evicted = True
                if len(self.M) > self.main_cap or not self.S:
                    self.main_out()
                else:
                    while self.S and not self.small_head_out(drain=False):
                        pass
        if not ghost and "small-refuses-own-size" in self.v and self.small_cap <= 1:
            return
        early = ("new-to-main-until-first-eviction" in self.v and not self.evicted and self.small_cap > 0
                 and len(self.S) >= self.small_cap)
        if ghost or self.small_cap == 0 or early:
            self.into_main(h, 0, drain=not glob)
            return
        while not glob and len(self.S) >= self.small_cap:
            self.small_head_out(drain=True)
        self.S[h] = 0

    def state(self) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...], tuple[int, ...]]:
        return tuple(self.S.items()), tuple(self.M.items()), tuple(self.G)


class ModelAdapter:
    """The model as an implementation under test (kvspec's Adapter interface, at the state level)."""

    level = "state"
    policies = ("s3fifo",)

    def __init__(self, variations: frozenset[str], *, small_evicts_newest: bool = False) -> None:
        from kvspec.adapters.interface import Identity

        self.identity = Identity(name=f"model of {', '.join(sorted(variations)) or 'canonical'}", language="python", version="0")
        self.variations, self.small_evicts_newest = variations, small_evicts_newest
        self.cache: ModelS3FIFO | None = None
        self.block_size = 1

    def configure(self, config: object) -> None:
        from kvspec.adapters.interface import ConfigRefused

        self.cache = None
        c = config  # an AdapterConfig
        if c.policy != "s3fifo" or type(c.capacity) is not int or c.capacity < 1 or c.block_size < 1 or not 0 <= c.small_ratio <= 1 \
                or c.max_freq < (-(2**63) if "freq-unsaturated" in self.variations else 0):
            raise ConfigRefused("refused")
        try:
            self.cache = ModelS3FIFO(self.variations, c.capacity, c.small_ratio, c.max_freq)
        except (ValueError, OverflowError) as error:
            raise ConfigRefused(str(error)) from error
        if self.small_evicts_newest:  # a mistake no variation point names: S pops its newest entry
            self.cache.S = LastOut()
        self.block_size = c.block_size

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        assert self.cache is not None
        k = 0
        for h in hash_ids:
            if h not in self.cache.S and h not in self.cache.M:
                break
            k += 1
        return min(k * self.block_size, input_length)

    def access(self, hash_ids: list[int]) -> None:
        assert self.cache is not None
        for h in hash_ids:
            self.cache.access(h)

    def resident_count(self) -> int:
        assert self.cache is not None
        return len(self.cache.S) + len(self.cache.M)

    def snapshot(self) -> object:
        from kvspec.adapters.interface import Snapshot

        assert self.cache is not None
        small, main, ghost = self.cache.state()
        return Snapshot(small=small, main=main, ghost=ghost)

    def close(self) -> None:
        self.cache = None


class LastOut(OrderedDict):  # type: ignore[type-arg]
    def popitem(self, last: bool = True) -> tuple[int, int]:
        return super().popitem(last=True)


def promote_at_2_forgetting() -> ModelAdapter:
    return ModelAdapter(frozenset({"promote-at-2", "main-victim-forgotten"}))


def s3fifo_cache_like() -> ModelAdapter:
    return ModelAdapter(frozenset({"small-cap-floor", "small-cap-min-1", "small-ratio-open", "main-zero-drop", "ghost-cap-capacity",
                                   "promote-freq-minus-1", "main-victim-forgotten", "max-freq-min-1"}))


def small_evicts_newest() -> ModelAdapter:
    return ModelAdapter(frozenset(), small_evicts_newest=True)
