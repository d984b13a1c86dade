"""An independent model of LMCache 0.5.6's local CPU backend under one request at a time, written
from LMCache's source (not from kvspec's reference), for CI to certify the lmcache-lru and
lmcache-fifo dialects against. docs/certifications/lmcache/check_model.py checks it against the
real engine; /work/notes/engines/lmcache.md cites each rule (file:line under ``lmcache/``).

The cache is one ordered map, head first (``hot_cache``: an OrderedDict under LRU, a dict under
FIFO), whose keys are chunks; a chunk is the prefix path of hash ids up to it (the engine's chained
chunk hash), and only full chunks exist (``save_unfull_chunk`` off). One request:

1. lookup: k = the number of leading chunks resident; under LRU they are moved to the tail in
   reverse order, the last hit first, so the first chunk ends the most recent; FIFO moves nothing.
2. store, the chunks after the hit, in order: each is allocated a slot of the pool first; when the
   pool's ``capacity`` slots are all taken (resident chunks and the slots this request already
   allocated), the map's head is evicted (nothing is pinned now: the request's pins are released
   before it stores), and when the map is empty the store stops there. Then every chunk allocated
   is put at the tail, in order, unless it is resident now (left where it is, its slot freed).
3. hit tokens = k * block_size, as LMCache's lookup returns it (no cap).
"""

from collections import OrderedDict

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot


class LMCacheModel:
    identity = Identity(name="model of LMCache 0.5.6 LocalCPUBackend", language="python", version="0.5.6")
    level: Level = "results"
    policies = ("lru", "fifo")

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.cache: OrderedDict[tuple[int, ...], None] = OrderedDict()

    def configure(self, config: AdapterConfig) -> None:
        if config.policy not in self.policies:
            raise ConfigRefused(f"no {config.policy}")
        if config.block_size < 1 or config.capacity < 0:
            raise ConfigRefused("block_size below 1 or a negative pool")
        self.config, self.cache = config, OrderedDict()

    def chunks(self, hash_ids: list[int], input_length: int | None) -> list[tuple[int, ...]]:
        size = self.configured().block_size
        full = len(hash_ids) if input_length is None else min(len(hash_ids), input_length // size)
        return [tuple(hash_ids[: i + 1]) for i in range(full)]

    def hit_chunks(self, chunks: list[tuple[int, ...]]) -> int:
        k = 0
        while k < len(chunks) and chunks[k] in self.cache:
            k += 1
        return k

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return self.hit_chunks(self.chunks(hash_ids, input_length)) * self.configured().block_size

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        config = self.configured()
        chunks = self.chunks(hash_ids, input_length)
        k = self.hit_chunks(chunks)
        if config.policy == "lru":
            for chunk in reversed(chunks[:k]):
                self.cache.move_to_end(chunk)
        allocated: list[tuple[int, ...]] = []
        for chunk in chunks[k:]:
            if len(self.cache) + len(allocated) >= config.capacity:
                if not self.cache:
                    break
                self.cache.popitem(last=False)
            allocated.append(chunk)
        for chunk in allocated:
            if chunk not in self.cache:
                self.cache[chunk] = None

    def resident_count(self) -> int:
        self.configured()
        return len(self.cache)

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.config, self.cache = None, OrderedDict()

    def configured(self) -> AdapterConfig:
        if self.config is None:
            raise ConfigRefused("no cache is configured")
        return self.config


def adapter() -> LMCacheModel:
    return LMCacheModel()
