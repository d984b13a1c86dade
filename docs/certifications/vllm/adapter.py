"""kvspec adapter for the v1 prefix cache of vLLM 0.33.0 (``KVCacheManager`` over its ``BlockPool``),
driven through the engine replay of the issue-16 dialects: one kvspec request is one vLLM request
run to completion with its prompt only.

    kvspec certify --adapter python:docs/certifications/vllm/adapter.py:adapter --dialect vllm

Run it in a venv holding vLLM and torch (README.md says how), never in kvspec's own. It builds the
engine's real ``KVCacheManager`` for one full-attention KV cache group, as the scheduler does
(``vllm/v1/core/sched/scheduler.py:351-370``), with ``num_gpu_blocks = capacity + 1`` blocks (block
0 is vLLM's null block, ``block_pool.py:191``), ``block_size = hash_block_size =
scheduler_block_size`` = kvspec's block size, prefix caching on, vLLM's default block hash
(``sha256``, ``config/cache.py:259``), no EAGLE, no KV connector, no KV events, no watermark, and a
``max_model_len`` no request reaches, so that only the pool decides whether a request runs.

A request's prompt: the block at position i with hash id h holds the token ids [h] * block_size, the
last one only the input_length - (n - 1) * block_size tokens left. vLLM's own chained block hashes
(``kv_cache_utils.py:953-1036``) then make a cached block its prefix path. Token ids are passed
through unchanged: nothing on this path looks a token id up in a vocabulary.

- hit tokens (PROTO-9): a fresh ``Request`` and the manager's own lookup, ``get_computed_blocks``
  (``kv_cache_manager.py:266-328``: reads only, with stats and events off), whose hit is capped at
  floor((L - 1) / block_size) blocks. If the request could not be allocated, the engine does not run
  it and its hit is 0: the adapter asks the manager's own ``coordinator.get_num_blocks_to_allocate``
  (reads only) and compares it with the pool's free blocks, as ``allocate_slots`` does
  (``kv_cache_manager.py:570-588``). Nothing is allocated, touched or hashed.
- access (PROTO-10): what the scheduler does for a new request whose whole prompt is one chunk and
  which then finishes: ``get_computed_blocks``, ``allocate_slots(request, L - hit, hit, blocks,
  full_sequence_must_fit=True)`` (``scheduler.py:1127``, ``:1306``, ``:1435-1449``; the last is
  ``scheduler_reserve_full_isl``, True by default), which touches the hit, takes the new blocks from the
  free queue's head, evicting what they held, and caches the full ones; then ``free(request)``
  (``scheduler.py:3089``), which returns the blocks in reverse order. When ``allocate_slots`` returns
  None (the request needs more blocks than the pool has free), nothing changed and nothing else is
  done, as the scheduler leaves such a request waiting (``scheduler.py:1454-1461``).
- resident count (PROTO-11): the pool's blocks that hold a block hash now (``block.block_hash is not
  None``), i.e. that a later lookup can find. A block recomputed past a hit whose hash was already
  cached takes a second block (``block_pool.py:49-53``), and both are counted: each holds content and
  takes a slot of the capacity.

Refused (ConfigRefused): a policy other than lru; a capacity or block size below 1, which vLLM
refuses at startup (``kv_cache_planning.py:56``, ``config/cache.py:187``); and a capacity or block
size too large to build in memory: the pool makes one Python object a block at once
(``block_pool.py:176-178``) and a request holds a Python list of its tokens. Results level: vLLM's
free queue holds block objects whose hashes are sha256 digests, not kvspec's queues.
"""

from collections.abc import Callable
from importlib.metadata import version

import torch
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_manager import KVCacheBlocks, KVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot

HASH_ALGORITHM = "sha256"  # CacheConfig.prefix_caching_hash_algo's default
MAX_POOL_BLOCKS = 2**20  # one KVCacheBlock object each, built at once
MAX_BLOCK_TOKENS = 2**16  # a request holds a list of its tokens
UNREACHED_MODEL_LEN = 2**62  # max_model_len: only the pool bounds a request


class VllmPrefixCache:
    identity = Identity(name="vLLM v1 KVCacheManager (prefix caching)", language="python", version=version("vllm"))
    level: Level = "results"
    policies = ("lru",)

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.manager: KVCacheManager | None = None
        self.hasher = None
        self.requests = 0  # request ids are unique over the adapter's life

    def configure(self, config: AdapterConfig) -> None:
        self.config = self.manager = None
        if config.policy not in self.policies:
            raise ConfigRefused("vLLM's prefix cache has one eviction order, an LRU by request (its free queue)")
        if config.capacity < 1 or config.block_size < 1:
            raise ConfigRefused("REPLAY-CONF-1, REPLAY-CONF-2: vLLM refuses a pool without blocks and a block size below 1")
        if config.capacity > MAX_POOL_BLOCKS or config.block_size > MAX_BLOCK_TOKENS:
            raise ConfigRefused(f"not buildable: vLLM makes every block at once (at most {MAX_POOL_BLOCKS} here) and lists every token "
                                f"of a request (blocks of at most {MAX_BLOCK_TOKENS} tokens here)")
        self.manager, self.hasher = kv_cache_manager(config.capacity, config.block_size, UNREACHED_MODEL_LEN)
        self.config = config

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        manager = self.configured()
        request = self.request(hash_ids, input_length)
        blocks, hit, _ = manager.get_computed_blocks(request)
        needed = manager.coordinator.get_num_blocks_to_allocate(
            request_id=request.request_id, num_tokens=input_length, new_computed_blocks=blocks.blocks, num_encoder_tokens=0,
            total_computed_tokens=hit, num_local_computed_tokens=hit, num_tokens_main_model=input_length)
        return hit if needed <= manager.block_pool.get_num_free_blocks() else 0

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        manager = self.configured()
        length = len(hash_ids) * self.configured_config().block_size if input_length is None else input_length
        request = self.request(hash_ids, length)
        blocks, hit, _ = manager.get_computed_blocks(request)
        allocated: KVCacheBlocks | None = manager.allocate_slots(request, length - hit, hit, blocks, full_sequence_must_fit=True)
        if allocated is not None:
            manager.free(request)

    def resident_count(self) -> int:
        pool = self.configured().block_pool
        return sum(block.block_hash is not None for block in pool.blocks)

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.config = self.manager = None

    def configured(self) -> KVCacheManager:
        if self.manager is None:
            raise ConfigRefused("no cache is configured")
        return self.manager

    def configured_config(self) -> AdapterConfig:
        assert self.config is not None
        return self.config

    def request(self, hash_ids: list[int], input_length: int) -> Request:
        """The vLLM request of kvspec's request: block i holds [hash_ids[i]] * block_size tokens."""
        block_size = self.configured_config().block_size
        tokens = [h for h in hash_ids for _ in range(block_size)][:input_length]
        self.requests += 1
        return Request(str(self.requests), tokens, SamplingParams(max_tokens=1), None, block_hasher=self.hasher)


def kv_cache_manager(capacity: int, block_size: int, max_model_len: int) -> tuple[KVCacheManager, Callable[[Request], list]]:
    """The scheduler's manager of one full-attention group over capacity + 1 blocks, and the block hasher
    its requests take (check_served.py builds it with vLLM's own max_model_len)."""
    spec = FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
    group = KVCacheGroupSpec(layer_names=["layer.0"], kv_cache_spec=spec)
    pool = KVCacheConfig(num_blocks=capacity + 1, kv_cache_tensors=[], kv_cache_groups=[group])
    manager = KVCacheManager(pool, max_model_len=max_model_len, scheduler_block_size=block_size, hash_block_size=block_size,
                             enable_caching=True)
    hash_function = get_hash_fn_by_name(HASH_ALGORITHM)
    init_none_hash(hash_function)
    return manager, get_request_block_hasher(block_size, hash_function)


def adapter() -> VllmPrefixCache:
    return VllmPrefixCache()
