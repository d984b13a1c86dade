"""kvspec adapter for lru-dict's LRU (PyPI lru-dict 1.4.1; MIT; a C extension), through the
adapter kit (kvspec.adapters.kit, docs/wrap-a-library.md):

    kvspec certify --adapter python:docs/certifications/lru-dict/adapter.py:adapter

The kit's defaults are lru-dict's mapping protocol (src/lru/_lru.c of its sdist): ``block in
cache`` asks the dict and moves nothing (:237-241), ``get`` moves a hit to the most recent end
(:277, :254-258), and a write of a new key evicts the least recent when full (:317-318). ``keys()``
lists the order most recent first (:497-499, :343-360), through the public API: the state level,
with no version's internals read. Every capacity goes to lru-dict as given: it refuses a size
below 1 (:663-665).
"""

from importlib.metadata import version
from typing import Any

from lru import LRU

from kvspec.adapters.interface import Identity
from kvspec.adapters.kit import BlockCacheAdapter


class LruDict(BlockCacheAdapter):
    identity = Identity(name="lru-dict LRU", language="python", version=version("lru-dict"))
    policies = ("lru",)
    checks_capacity = False

    def make_cache(self, policy: str, capacity: int) -> Any:
        return LRU(capacity)

    def queue(self) -> Any:
        return reversed(self.cache.keys())


def adapter() -> LruDict:
    return LruDict()
