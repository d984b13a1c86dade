"""kvspec adapter for cachetools' LRUCache and FIFOCache (PyPI cachetools 8.0.0; MIT), through the
adapter kit (kvspec.adapters.kit, docs/wrap-a-library.md):

    kvspec certify --adapter python:docs/certifications/cachetools/adapter.py:adapter

The kit's defaults are cachetools' mapping protocol: ``block in cache`` reads the dict and moves
nothing (cachetools/__init__.py:104), ``get`` is LRU's use (:122, through __getitem__, :301), and
a write evicts ``popitem``'s head first (:70). Each class keeps its order in an OrderedDict beside
the dict (:179, :299; private, so the version is pinned), head first: the state level. Every
capacity goes to cachetools as given, so that its own reading is certified: it refuses a negative
maxsize (:36) and accepts 0, at which every write raises (:65).
"""

from importlib.metadata import version
from typing import Any

import cachetools

from kvspec.adapters.interface import Identity
from kvspec.adapters.kit import BlockCacheAdapter

CACHES = {"lru": cachetools.LRUCache, "fifo": cachetools.FIFOCache}


class Cachetools(BlockCacheAdapter):
    identity = Identity(name="cachetools LRUCache and FIFOCache", language="python", version=version("cachetools"))
    policies = ("lru", "fifo")
    checks_capacity = False

    def make_cache(self, policy: str, capacity: int) -> Any:
        return CACHES[policy](maxsize=capacity)

    def queue(self) -> Any:
        return getattr(self.cache, f"_{type(self.cache).__name__}__order")


def adapter() -> Cachetools:
    return Cachetools()
