"""kvspec adapter for LMCache 0.5.6's local CPU backend (``LocalCPUBackend``, with its own LRU or
FIFO cache policy and its own ``MixedMemoryAllocator``), on the CPU. LMCache, torch and what they
import live in a venv outside the repository (README.md: the recipe):

    /work/engines/lmcache/venv/bin/kvspec certify --adapter python:docs/certifications/lmcache/adapter.py:adapter \
        --dialect lmcache-lru

One kvspec request is one request through LMCache as its vLLM connector drives it, one at a time,
prompt only (file:line are LMCache 0.5.6's, under ``lmcache/``; /work/notes/engines/lmcache.md has
the whole account):

- lookup: ``LMCacheEngine.lookup(pin=True)`` (``v1/cache_engine.py:1255-1276``), which the lookup
  server runs for the connector (``v1/lookup_client/lmcache_lookup_client.py:246-251``): the backend's
  ``batched_contains(keys, pin=True)`` counts the resident prefix of the request's chunks, stopping
  at the first missing (``v1/storage_backend/abstract_backend.py:288-292``), pinning each and noting
  its key (``local_cpu_backend.py:127-135``), then ``touch_cache()`` touches them in reverse order
  (``local_cpu_backend.py:137-142``);
- unpin: the connector's ``lookup_unpin`` releases those pins before it stores
  (``integration/vllm/vllm_v1_adapter.py:868`` after the retrieve, ``:1147`` before the store),
  each through the backend's ``unpin(key)`` (``v1/storage_backend/storage_manager.py:1101-1119``);
- store: ``LMCacheEngine.store`` with the mask that skips the hit (``vllm_v1_adapter.py:1174-1191``,
  the tracker's ``num_saved_tokens`` being LMCache's hit, ``:193``): one ``allocate`` per remaining
  full chunk, in order, evicting as the backend does (``local_cpu_backend.py:682-746``, without the
  busy loop: ``force_store_wait`` is off), stopping at the first that gets nothing
  (``v1/cache_engine.py:485-530``); then one ``batched_submit_put_task`` of every chunk allocated
  (``:575-580`` through ``storage_manager.py:386-431``), which puts each at the tail and leaves a
  chunk already resident where it is (``local_cpu_backend.py:163-170``); then each allocation's
  reference is dropped (``storage_manager.py:433-435``), which frees the one of a chunk not put.

The engine's chunks are made by its own ``ChunkedTokenDatabase`` (chunk_size = block_size,
``save_unfull_chunk`` at its default, off: full chunks only) from the token ids [h] * block_size of
each block, so that a chunk's key is LMCache's chained hash of its prefix (kvspec's ``path-ids``).
Each chunk's memory object has the engine's shape for a full chunk (``metadata.get_shapes``, as
``v1/cache_engine.py:506`` asks), of a model with one layer, one head of size one, in bytes: 2 x
block_size bytes, padded by the allocator to its 4096-byte alignment. Every stored chunk is full,
so all are one size, and the pool is the backend's own, made from ``max_local_cpu_size`` (GB) to
hold exactly ``capacity`` of them. The results level.

Token ids: each hash id is numbered as a vocabulary id, 1, 2, 3, ... in the order the cache first
meets it. LMCache's chunk key is CPython's builtin hash of a tuple of token ids
(``v1/token_database.py:123-177``), under which -1 and -2 hash alike, as do integers equal modulo
2^61 - 1: passed through unchanged, the hash ids the certification draws merged two chunks at once
(``[-1, -2]`` then ``[-2]`` hit 1 block; README.md keeps that report). A real prompt's token ids are
small and non-negative, so the numbering certifies the policy as LMCache runs it.
"""

import os

os.environ.setdefault("LMCACHE_LOG_LEVEL", "ERROR")  # read as LMCache's modules import: a full pool warns at every allocation

from importlib.metadata import version  # noqa: E402

import torch  # noqa: E402
from lmcache.v1.config import LMCacheEngineConfig  # noqa: E402
from lmcache.v1.memory_management import AddressManager, MemoryFormat  # noqa: E402
from lmcache.v1.metadata import LMCacheMetadata  # noqa: E402
from lmcache.v1.pin_monitor import PinMonitor  # noqa: E402
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend  # noqa: E402
from lmcache.v1.token_database import ChunkedTokenDatabase  # noqa: E402

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot  # noqa: E402

GIB = 1024**3


class LMCacheLocalCPU:
    identity = Identity(name="LMCache LocalCPUBackend", language="python", version=version("lmcache"))
    level: Level = "results"
    policies = ("lru", "fifo")

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.backend: LocalCPUBackend | None = None
        self.tokens: ChunkedTokenDatabase | None = None
        self.shapes: list[torch.Size] = []
        self.dtypes: list[torch.dtype] = []
        self.last: tuple[tuple[int, ...], int, list] = ((), -1, [])  # the last request's keys: hit_tokens then access hash the same
        self.token_of: dict[int, int] = {}  # each hash id's token id, numbered from 1 as met

    def configure(self, config: AdapterConfig) -> None:
        self.close()
        if config.policy not in self.policies:
            raise ConfigRefused("LMCache's local CPU backend runs LRU, FIFO, LFU and MRU; kvspec has LRU and FIFO of them")
        if config.block_size < 1:
            raise ConfigRefused(f"REPLAY-CONF-2: block_size must be at least 1, not {config.block_size}")
        if config.capacity < 0:
            raise ConfigRefused(f"a CPU pool of {config.capacity} chunks has a negative size")
        metadata = LMCacheMetadata(
            model_name="kvspec", world_size=1, local_world_size=1, worker_id=0, local_worker_id=0,
            kv_dtype=torch.uint8, kv_shape=(1, 2, config.block_size, 1, 1), chunk_size=config.block_size,
        )
        self.shapes, self.dtypes = metadata.get_shapes(config.block_size), metadata.get_dtypes()
        chunk_bytes = AddressManager(0).compute_aligned_size(2 * config.block_size)
        engine_config = LMCacheEngineConfig.from_defaults(
            chunk_size=config.block_size,
            local_cpu=True,
            max_local_cpu_size=config.capacity * chunk_bytes / GIB,  # powers of two apart: exact
            cache_policy=config.policy.upper(),
        )
        PinMonitor.GetOrCreate(engine_config)  # as LMCacheEngine does first (cache_engine.py:224); a pin outlives 300 s only in a stall
        self.backend = LocalCPUBackend(engine_config, metadata)  # its own allocator (local_cpu_backend.py:574-579)
        if self.backend.memory_allocator.size != config.capacity * chunk_bytes:
            raise AdapterFailure(f"the pool holds {self.backend.memory_allocator.size} bytes, not {config.capacity} chunks")
        self.tokens = ChunkedTokenDatabase(engine_config, metadata)
        self.config = config

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """LMCacheEngine.lookup's answer, from the same prefix scan without pin=True: without it the
        backend neither pins nor notes the keys it finds (local_cpu_backend.py:127-135), and the
        engine touches nothing (cache_engine.py:1274-1276), so the cache is left as it was."""
        backend, block_size = self.configured()
        return backend.batched_contains(self.keys(hash_ids, input_length), pin=False) * block_size

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        backend, block_size = self.configured()
        keys = self.keys(hash_ids, len(hash_ids) * block_size if input_length is None else input_length)
        hit = backend.batched_contains(keys, pin=True)
        backend.touch_cache()
        for key in keys[:hit]:
            backend.unpin(key)
        stored, objects = [], []
        for key in keys[hit:]:
            memory = backend.allocate(self.shapes, self.dtypes, fmt=MemoryFormat.KV_2LTD, eviction=True, busy_loop=False)
            if memory is None:  # the pool is full and nothing in it can be evicted: store what was allocated
                break
            stored.append(key)
            objects.append(memory)
        if objects:
            backend.batched_submit_put_task(stored, objects)
        for memory in objects:
            memory.ref_count_down()

    def resident_count(self) -> int:
        """The hot cache's entries: one per chunk key holding a memory object; between requests
        every object allocated is one of them or freed."""
        backend, _ = self.configured()
        return len(backend.hot_cache)

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
        self.config, self.backend, self.tokens, self.last, self.token_of = None, None, None, ((), -1, []), {}

    def configured(self) -> tuple[LocalCPUBackend, int]:
        if self.config is None or self.backend is None:
            raise ConfigRefused("no cache is configured")
        return self.backend, self.config.block_size

    def keys(self, hash_ids: list[int], input_length: int) -> list:
        """The engine's keys of the request's full chunks, its tokens being [h] * block_size a block."""
        request = (tuple(hash_ids), input_length)
        if request != self.last[:2]:
            assert self.tokens is not None and self.config is not None
            size = self.config.block_size
            tokens = [self.token_of.setdefault(h, len(self.token_of) + 1) for h in hash_ids for _ in range(size)][:input_length]
            self.last = (*request, [key for _, _, key in self.tokens.process_tokens(tokens=tokens)])
        return self.last[2]


def adapter() -> LMCacheLocalCPU:
    return LMCacheLocalCPU()
