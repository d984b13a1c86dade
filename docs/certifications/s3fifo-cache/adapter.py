"""kvspec adapter for the PyPI package s3fifo-cache (``s3fifo.Cache``;
https://github.com/gitSouvik/S3-FIFO-Cache-Library), driven through the longest-prefix replay of
spec/replay.md, in a process of its own:

    kvspec certify --adapter 'cmd:.venv/bin/python -m kvspec.adapters.serve python:docs/certifications/s3fifo-cache/adapter.py:adapter'

s3fifo-cache installs a top-level package named ``s3fifo``, as the PyPI package s3fifo (in
kvspec's ``test`` extra) does, so the two cannot share an environment or a process. s3fifo-cache
is installed into a folder of its own inside the environment that runs this adapter,
PACKAGE_DIR, and imported from there only:

    .venv/bin/python -m pip install --no-deps --target .venv/s3fifo-cache s3fifo-cache==0.1.1

The package is a key-value cache, so the adapter supplies the replay: the prefix scan asks
``key in cache`` (which changes nothing), and each block is accessed as a cache-aside caller
would, ``get`` and, on a miss, ``put`` with a value other than None (``get`` answers None on a
miss, and ``put`` on a resident key would count a hit twice). The cache is configured as its
users get it: capacity, small_ratio and max_freq as kvspec's configuration carries them, and the
package's default for the knob it does not carry (ghost_ratio 1.0), so that the dialect kvspec
certifies it against, s3fifo-cache (spec/dialects.md), is the package's own. The adapter is at the
state level: it reads the cache's ``_small`` and ``_main`` deques, whose right end is the oldest
entry (the spec's head), and its ghost's OrderedDict, oldest first.
"""

import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Identity, Level, Snapshot
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks

PACKAGE_DIR = Path(sys.prefix) / "s3fifo-cache"
INSTALL = f"{sys.executable} -m pip install --no-deps --target {PACKAGE_DIR} s3fifo-cache==0.1.1"


def s3fifo_cache() -> Any:
    """The package's ``s3fifo`` module, imported from PACKAGE_DIR and from nowhere else."""
    if not (PACKAGE_DIR / "s3fifo").is_dir():
        raise ImportError(f"s3fifo-cache is not installed in {PACKAGE_DIR}: {INSTALL}")
    loaded = sys.modules.get("s3fifo")
    if loaded is None:
        sys.path.insert(0, str(PACKAGE_DIR))
        import s3fifo as loaded
    if not Path(loaded.__file__).is_relative_to(PACKAGE_DIR):
        raise ImportError(f"this process imported another package named s3fifo ({loaded.__file__}), PyPI's s3fifo most likely; "
                          "run the adapter in a process of its own (python -m kvspec.adapters.serve)")
    return loaded


s3fifo = s3fifo_cache()


class S3fifoCachePackage:
    identity = Identity(name="s3fifo-cache (PyPI)", language="python", version=version("s3fifo-cache"))
    level: Level = "state"
    policies = ("s3fifo",)

    def __init__(self) -> None:
        self.cache: Any = None
        self.block_size = 1

    def configure(self, config: AdapterConfig) -> None:
        self.cache = None
        if config.policy != "s3fifo":
            raise ConfigRefused("the package implements S3FIFO only")
        if config.block_size < 1:  # the replay's knob, which the adapter holds (hit_tokens), not the package
            raise ConfigRefused(f"REPLAY-CONF-2: block_size must be at least 1, not {config.block_size}")
        try:
            self.cache = s3fifo.Cache(config.capacity, small_ratio=config.small_ratio, max_freq=config.max_freq)
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
            small=tuple((entry.key, entry.freq) for entry in reversed(cache._small)),
            main=tuple((entry.key, entry.freq) for entry in reversed(cache._main)),
            ghost=tuple(cache._ghost._store),
        )

    def close(self) -> None:
        self.cache = None

    def configured(self) -> Any:
        if self.cache is None:
            raise ConfigRefused("no cache is configured")
        return self.cache


def adapter() -> S3fifoCachePackage:
    return S3fifoCachePackage()
