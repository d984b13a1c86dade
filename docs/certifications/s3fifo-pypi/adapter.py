"""kvspec adapter for the PyPI package s3fifo (S3FIFOCache; https://github.com/psiace/s3fifo),
driven through the longest-prefix replay of spec/replay.md.

    kvspec certify --adapter python:docs/certifications/s3fifo-pypi/adapter.py:adapter

The package is a key-value cache, so the adapter supplies the replay: the prefix scan asks
``key in cache`` (which changes nothing), and each block is accessed as a cache-aside caller
would, ``get`` and, on a miss, ``put``. The cache is configured as its users get it: capacity as
maxsize, small_ratio as small_size_ratio, and the package's defaults for every knob the spec's
configuration does not carry (ghost_size_ratio 0.9, move_to_main_threshold 2; it has no max_freq),
so that the dialect kvspec certifies it against, s3fifo-pypi (spec/dialects.md), is the package's
own. The adapter is at the state level: it reads the queues from the cache's own ``_small``,
``_main`` and ``_ghost`` OrderedDicts, head first.
"""

from importlib.metadata import version

from s3fifo import S3FIFOCache

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Identity, Level, Snapshot
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks


class S3fifoPackage:
    identity = Identity(name="s3fifo (PyPI)", language="python", version=version("s3fifo"))
    level: Level = "state"
    policies = ("s3fifo",)

    def __init__(self) -> None:
        self.cache: S3FIFOCache[bool] | None = None
        self.block_size = 1

    def configure(self, config: AdapterConfig) -> None:
        self.cache = None
        if config.policy != "s3fifo":
            raise ConfigRefused("the package implements S3FIFO only")
        if config.block_size < 1:  # the replay's knob, which the adapter holds (hit_tokens), not the package
            raise ConfigRefused(f"REPLAY-CONF-2: block_size must be at least 1, not {config.block_size}")
        try:
            self.cache = S3FIFOCache(config.capacity, small_size_ratio=config.small_ratio)
        except ValueError as error:
            raise ConfigRefused(str(error)) from error
        self.block_size = config.block_size

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        cache = self.configured()
        return hit_tokens(prefix_hit_blocks(hash_ids, cache.__contains__), self.block_size, input_length)

    def access(self, hash_ids: list[int]) -> None:
        cache = self.configured()
        for h in hash_ids:
            if cache.get(h) is None:
                cache.put(h, True)

    def resident_count(self) -> int:
        return len(self.configured())

    def snapshot(self) -> Snapshot:
        cache = self.configured()
        return Snapshot(
            small=tuple((h, entry.freq) for h, entry in cache._small.items()),
            main=tuple((h, entry.freq) for h, entry in cache._main.items()),
            ghost=tuple(cache._ghost),
        )

    def close(self) -> None:
        self.cache = None

    def configured(self) -> S3FIFOCache[bool]:
        if self.cache is None:
            raise ConfigRefused("no cache is configured")
        return self.cache


def adapter() -> S3fifoPackage:
    return S3fifoPackage()
