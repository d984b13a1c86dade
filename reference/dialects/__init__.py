"""Dialects (spec/dialects.md): the canonical policies with the variation points real
implementations take, each a literal alternative rule chosen by configuration. S3FIFO in a
dialect and the engines' own caches (radix.py, vllm.py) load when first asked for: a canonical
replay needs none of them."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .baselines import DialectFIFO, DialectLRU
from .catalogue import (
    CANONICAL,
    KNOWN_DIALECTS,
    VARIATIONS,
    Dialect,
    Variation,
    dialect_for,
    dialect_problem,
    in_catalogue_order,
    queues_hold_hashes,
    replaced_clauses,
)
from .engine import EngineCache, EngineReplay, runs_whole

if TYPE_CHECKING:
    from .radix import RadixCache
    from .s3fifo import DialectS3FIFO
    from .vllm import BlockPool

LAZY = {"DialectS3FIFO": "s3fifo", "RadixCache": "radix", "BlockPool": "vllm"}  # name -> its module

__all__ = [
    "CANONICAL", "KNOWN_DIALECTS", "VARIATIONS", "Dialect", "DialectFIFO", "DialectLRU", "DialectS3FIFO", "EngineCache", "Variation",
    "BlockPool", "RadixCache", "dialect_for", "runs_whole",
    "dialect_policy", "in_catalogue_order", "queues_hold_hashes", "replaced_clauses",
]


def __getattr__(name: str) -> object:
    """DialectS3FIFO, RadixCache and BlockPool, their modules loaded when one is first asked for."""
    if name in LAZY:
        return getattr(import_module(f"{__name__}.{LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dialect_policy(policy: str, dialect: Dialect, capacity: int, block_size: int, small_ratio: float,
                   max_freq: int) -> DialectS3FIFO | DialectLRU | DialectFIFO | EngineCache:
    """DIALECT-1: an empty cache of ``policy`` in ``dialect``, or the ConfigError of DIALECT-2 to
    DIALECT-4 for a set of variation points that makes no dialect of it."""
    problem = dialect_problem(policy, dialect)
    if problem is not None:
        raise problem
    if policy == "s3fifo":
        from .s3fifo import DialectS3FIFO

        return DialectS3FIFO.empty(dialect, capacity, small_ratio, max_freq)
    if "lru-free-queue" in dialect:
        from .vllm import BlockPool

        return BlockPool.empty_pool(dialect, capacity, block_size)  # LRU-DIALECT-6
    if "radix-lru-leaves" in dialect or "radix-fifo-leaves" in dialect:
        from .radix import RadixCache

        return RadixCache.empty(dialect, capacity, block_size, policy)  # LRU-DIALECT-5, FIFO-DIALECT-1
    cache = DialectLRU.empty(dialect, capacity) if policy == "lru" else DialectFIFO.empty(dialect, capacity)
    if runs_whole(dialect):
        return EngineReplay(cache, dialect, cache.capacity, block_size)  # REPLAY-DIALECT-4 to REPLAY-DIALECT-9
    return cache
