"""kvspec adapter for libCacheSim's S3FIFO, LRU and FIFO through its Python binding, the PyPI
package libcachesim (https://github.com/cacheMon/libCacheSim-python; GPL-3.0-or-later, which is why
this adapter lives beside its report and not inside kvspec), driven through the longest-prefix
replay of spec/replay.md.

    kvspec certify --adapter python:docs/certifications/libcachesim/adapter.py:adapter

Each block is an object of one byte, so a capacity of N blocks is a cache of N bytes. The prefix
scan asks ``find(request, update_cache=False)``, which changes nothing (the binding's default,
update_cache=True, would move an LRU hit); each block is accessed with ``get``, which hits or
inserts (evicting first). The cache is configured as its users get it: small_ratio as
small_size_ratio, and the binding's defaults for every knob the spec's configuration does not
carry (ghost_size_ratio 0.9, move_to_main_threshold 2, no max_freq; consider_obj_metadata off, so
that an object costs its one byte alone), so that the dialect kvspec certifies it against,
libcachesim (spec/dialects.md), is libCacheSim's own. hashpower 10 sizes the hash table for small
caches; it changes no decision. The binding exposes no queues, so the adapter is at the results level.

Capacities go to the binding as they are: it refuses a negative one itself, and takes 0 as a cache
that admits nothing (libcachesim's dialect of LRU and FIFO, capacity-0-empty). Where libCacheSim
would end the process (S3FIFO_init aborts when the small or the main FIFO has 0 bytes or fewer),
the adapter refuses the configuration instead, with libCacheSim's own message: in-process, an
abort would end kvspec too.
"""

import math
from importlib.metadata import version

import libcachesim

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks

UINT64 = (1 << 64) - 1  # libCacheSim's obj_id is unsigned; kvspec's hash ids are signed (F-9)


Cache = libcachesim.S3FIFO | libcachesim.LRU | libcachesim.FIFO


class LibCacheSim:
    identity = Identity(name="libCacheSim S3FIFO, LRU and FIFO (PyPI libcachesim)", language="c", version=version("libcachesim"))
    level: Level = "results"
    policies = ("s3fifo", "lru", "fifo")

    def __init__(self) -> None:
        self.cache: Cache | None = None
        self.block_size = 1

    def configure(self, config: AdapterConfig) -> None:
        self.cache = None
        if config.policy not in self.policies:
            raise ConfigRefused("the adapter drives libCacheSim's S3FIFO, LRU and FIFO only")
        if config.block_size < 1:  # the replay's knob, which the adapter holds (hit_tokens), not libCacheSim
            raise ConfigRefused(f"REPLAY-CONF-2: block_size must be at least 1, not {config.block_size}")
        self.cache = new_cache(config)
        self.block_size = config.block_size

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        cache = self.configured()
        return hit_tokens(prefix_hit_blocks(hash_ids, lambda h: cache.find(request(h), update_cache=False) is not None), self.block_size, input_length)

    def access(self, hash_ids: list[int]) -> None:
        cache = self.configured()
        for h in hash_ids:
            cache.get(request(h))

    def resident_count(self) -> int:
        return self.configured().get_n_obj()

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.cache = None

    def configured(self) -> Cache:
        if self.cache is None:
            raise ConfigRefused("no cache is configured")
        return self.cache


def new_cache(config: AdapterConfig) -> Cache:
    if config.policy in ("lru", "fifo"):
        try:
            return (libcachesim.LRU if config.policy == "lru" else libcachesim.FIFO)(cache_size=config.capacity, hashpower=10)
        except ValueError as error:  # the binding's own refusal: a negative cache_size
            raise ConfigRefused(str(error)) from error
    # As S3FIFO_init computes the two sizes; it aborts the process where either is not positive
    # (a NaN or infinite ratio gives C's undefined cast, so no size at all).
    product = config.capacity * config.small_ratio
    small_bytes = int(product) if math.isfinite(product) else 0
    if small_bytes < 1 or config.capacity - small_bytes < 1:
        raise ConfigRefused(f"Invalid cache size configuration: small_fifo={small_bytes} bytes, main_fifo={config.capacity - small_bytes} "
                            "bytes (libCacheSim aborts here)")
    return libcachesim.S3FIFO(cache_size=config.capacity, hashpower=10, small_size_ratio=config.small_ratio)


def request(h: int) -> libcachesim.Request:
    return libcachesim.Request(obj_size=1, obj_id=h & UINT64)


def adapter() -> LibCacheSim:
    return LibCacheSim()
