"""kvspec adapter for the v1 prefix cache of vLLM 0.33.0 (``KVCacheManager`` over its ``BlockPool``),
driven through the engine replay of the issue-16 dialects (one kvspec request is one vLLM request
run to completion with its prompt only) and through the lifecycle's operations, several requests in
flight at once (below).

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

The lifecycle (``lifecycle = True``, PROTO-35 to PROTO-43; spec/dialects.md LIFE-VLLM-10 to
LIFE-VLLM-16, reference/dialects/in_flight_lifecycle.py): the same manager, with several vLLM
``Request``s in flight at once, one a kvspec request id, kept across its preemptions, the adapter
playing the scheduler's part (``sched/scheduler.py``) and each operation the manager's calls below.
The manager's ``max_model_len`` is the one no request reaches, as above (LIFE-VLLM-10: only the pool
refuses).

- arrive: a new ``Request`` of the prompt above (status WAITING); nothing of the manager is called.
- lookup: ``get_computed_blocks(request)``: its hit tokens over the request's tokens so far (its
  prompt, and what its decodes generated before a preemption), capped by vLLM at ``num_tokens - 1``;
  k = hit / block_size. It reads only.
- allocate: ``get_computed_blocks``, then ``allocate_slots(request, num_tokens - hit, hit, blocks,
  delay_cache_blocks=True, full_sequence_must_fit=True)`` (``kv_cache_manager.py:380-627``): None is
  refused, and nothing changed; made, the request is RUNNING with ``num_computed_tokens = hit`` (as the
  scheduler sets it at an admission), holding blocks for all its tokens, none newly cached: delayed
  caching, the path of a KV connector's load (``:611-614``), so that a block is cached only when a
  compute says it is computed (LIFE-VLLM-12).
- compute(upto): ``cache_blocks(request, u)`` (``kv_cache_manager.py:791-801``), u = upto ×
  block_size, or all the request's tokens at upto = n (its hash ids), and ``num_computed_tokens`` =
  u when u is more. vLLM caches the full blocks it has not cached yet, its hit ones not again.
- decode: ``allocate_slots(request, block_size, delay_cache_blocks=True)`` for the next block_size
  tokens, one block more: None is refused (the pool has no free block), nothing changed; made,
  block_size output tokens are appended (``append_output_token_ids``: ids no prompt holds,
  ``OUTPUT_IDS`` + the request's own number × 2^32 + position, so its output blocks hash apart),
  ``num_computed_tokens`` grows by block_size and ``cache_blocks`` caches its full blocks.
- finish: ``free(request)`` (the blocks in reverse order, ``single_type_kv_cache_manager.py:591-599``);
  the answer is the accounting below.
- preempt: ``free(request)``, then what ``_preempt_request`` does to it (``sched/scheduler.py:1799-1822``):
  status PREEMPTED, ``num_computed_tokens`` 0, its output kept.
- the accounting (LIFE-HIT-1, LIFE-HIT-2), from vLLM's own hits: hit tokens min(hit, L) at its first
  allocation made; at a later one, max(0, c - min(hit, L)) more recomputed tokens, c its
  ``num_computed_tokens`` at its last preemption, at most L.

Refused (ConfigRefused): a policy other than lru; a capacity or block size below 1, which vLLM
refuses at startup (``kv_cache_planning.py:56``, ``config/cache.py:187``); and a capacity or block
size too large to build in memory: the pool makes one Python object a block at once
(``block_pool.py:176-178``) and a request holds a Python list of its tokens. Results level: vLLM's
free queue holds block objects whose hashes are sha256 digests, not kvspec's queues.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version

import torch
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_manager import KVCacheBlocks, KVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request, RequestStatus

from kvspec.adapters.interface import (
    Accounting,
    AdapterConfig,
    AdapterFailure,
    ConfigRefused,
    Finished,
    Identity,
    Level,
    LifecycleState,
    Snapshot,
)

HASH_ALGORITHM = "sha256"  # CacheConfig.prefix_caching_hash_algo's default
MAX_POOL_BLOCKS = 2**20  # one KVCacheBlock object each, built at once
MAX_BLOCK_TOKENS = 2**16  # a request holds a list of its tokens
UNREACHED_MODEL_LEN = 2**62  # max_model_len: only the pool bounds a request
OUTPUT_IDS = 10**15  # above every prompt's hash ids: a generated token is OUTPUT_IDS + its request's number * 2**32 + its position


@dataclass(slots=True)
class InFlight:
    """A kvspec request in flight: its vLLM Request, its block count, and its accounting."""

    request: Request
    number: int  # its vLLM request id, which names its output tokens
    count: int  # n, its hash ids
    computed: int = 0  # the blocks its computes have reached since its allocation (PROTO-36)
    accounting: Accounting = field(default_factory=Accounting)


class VllmPrefixCache:
    identity = Identity(name="vLLM v1 KVCacheManager (prefix caching)", language="python", version=version("vllm"))
    level: Level = "results"
    policies = ("lru",)
    lifecycle = True

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.manager: KVCacheManager | None = None
        self.hasher = None
        self.requests = 0  # request ids are unique over the adapter's life
        self.in_flight: dict[int, InFlight] = {}

    def configure(self, config: AdapterConfig) -> None:
        self.config = self.manager = None
        self.in_flight = {}
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

    # the lifecycle (the module's docstring says how each operation maps) -----------------------

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        self.in_flight[rid] = InFlight(self.request(hash_ids, input_length), self.requests, len(hash_ids))

    def lookup(self, rid: int) -> int:
        _, hit, _ = self.configured().get_computed_blocks(self.in_flight[rid].request)
        return hit // self.configured_config().block_size

    def allocate(self, rid: int) -> bool:
        manager, flight = self.configured(), self.in_flight[rid]
        request = flight.request
        blocks, hit, _ = manager.get_computed_blocks(request)
        if manager.allocate_slots(request, request.num_tokens - hit, hit, blocks, delay_cache_blocks=True,
                                  full_sequence_must_fit=True) is None:
            return False
        request.status, request.num_computed_tokens = RequestStatus.RUNNING, hit
        flight.accounting.admitted(min(hit, request.num_prompt_tokens))
        flight.computed = 0
        return True

    def compute(self, rid: int, upto: int) -> None:
        flight = self.in_flight[rid]
        request = flight.request
        tokens = upto * self.configured_config().block_size if upto < flight.count else request.num_tokens
        self.configured().cache_blocks(request, tokens)
        request.num_computed_tokens = max(request.num_computed_tokens, tokens)
        flight.computed = upto

    def decode(self, rid: int) -> bool:
        manager, flight, block_size = self.configured(), self.in_flight[rid], self.configured_config().block_size
        request = flight.request
        if manager.allocate_slots(request, block_size, delay_cache_blocks=True) is None:
            return False
        base = OUTPUT_IDS + flight.number * 2**32
        request.append_output_token_ids([base + position for position in range(request.num_tokens, request.num_tokens + block_size)])
        request.num_computed_tokens += block_size
        manager.cache_blocks(request, request.num_computed_tokens)
        return True

    def finish(self, rid: int) -> Finished:
        flight = self.in_flight.pop(rid)
        self.configured().free(flight.request)
        return flight.accounting.finished()

    def preempt(self, rid: int) -> None:
        flight = self.in_flight[rid]
        request = flight.request
        self.configured().free(request)
        flight.accounting.computed_before = min(request.num_computed_tokens, request.num_prompt_tokens)
        request.status, request.num_computed_tokens = RequestStatus.PREEMPTED, 0
        flight.computed = 0

    def lifecycle_state(self) -> LifecycleState:
        raise AdapterFailure("the results level has no lifecycle state")

    def close(self) -> None:
        self.config = self.manager = None
        self.in_flight = {}

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
