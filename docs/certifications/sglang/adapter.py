"""kvspec adapter for SGLang 0.5.23's RadixCache (python/sglang/srt/mem_cache/radix_cache.py) with
its real token-to-KV pool allocator, on the CPU, eviction policies "lru" and "fifo".

    PYTHONPATH=. /work/engines/sglang/venv/bin/python -m kvspec certify \
        --adapter python:docs/certifications/sglang/adapter.py:adapter --dialect sglang-lru

One kvspec request is one SGLang request run to completion with its prompt only, as the scheduler
runs it (line numbers are the installed 0.5.23's; /work/notes/engines/sglang.md has the whole rule set):

- match (schedule_batch.py:1723, 1766-1785; common.py:193-239): ``match_prefix`` on the prompt's
  tokens with ``limit`` = L - 1 raw tokens, page-aligned inside (radix_cache.py:406), so the hit is
  at most floor((L - 1) / page_size) pages; the hit path is locked (``lock``, base_prefix_cache.py:550);
- allocate (allocation.py:152-172 for page_size 1, 175-255 otherwise): the engine's own
  ``alloc_token_slots`` / ``alloc_paged_token_slots_extend``, which evict through
  ``evict_to_free_tokens`` (allocator/base.py:155-169) before allocating;
- finish (common.py:400-444): ``checkpoint`` (radix_cache.py:510-543: insert the full pages, free the
  duplicates, match again, move the lock), then the row's tail (the partial page) is freed and the
  lock dropped, as ``release_kv_cache`` does.

The request object is a namespace carrying what ``checkpoint`` reads, with SGLang's own
``ReqKvInfo`` as its ``kv``. A request of more pages than the pool (ceil(L / page_size) > capacity)
is refused before its lookup and changes nothing, as the server's input-length check refuses it
before scheduling (managers/utils.py:259-290); that check is stricter by a few tokens
(tp_worker.py:568-572) and the scheduler's admission reserves a page more (schedule_policy.py:1405-1431, 1617),
which this adapter does not model (see the notes).

hit_tokens: ``match_prefix`` stamps and splits nodes, so it cannot be asked without changing the
cache. The adapter walks the tree read-only with the engine's own key functions (``child_key``,
``match``: the very calls ``_match_prefix_helper`` makes, radix_cache.py:651-675), under the same
limit and page alignment; the sum it returns is ``_match_prefix_helper``'s ``device_prefix_len``
without the stamps and the split. ``last_match_tokens`` keeps what the real ``match_prefix`` of the
last access returned, so a check can compare the two on every request (check_model.py does).

Timestamps: RadixCache stamps nodes with ``time.monotonic()`` (radix_cache.py:259-260, 652, 716).
Distinct requests are microseconds apart, but two calls can return the same float on a coarse clock,
and a tie is then broken by the heap's layout, which follows the iteration order of a ``set`` of
nodes hashed by address (radix_cache.py:558-562). The adapter replaces the module's ``time`` by one
whose ``monotonic`` is a counter, incremented on every call: the calls keep their order, and no two
are equal. With that clock no two heap entries ever tie (notes, "Ties").
"""

import itertools
import time
import types
from array import array
from importlib.metadata import version

import torch
from sglang.srt.managers.schedule_batch import ReqKvInfo
from sglang.srt.mem_cache import radix_cache
from sglang.srt.mem_cache.allocation import alloc_paged_token_slots_extend, alloc_token_slots
from sglang.srt.mem_cache.allocator import PagedTokenToKVPoolAllocator, TokenToKVPoolAllocator
from sglang.srt.mem_cache.base_prefix_cache import MatchPrefixParams
from sglang.srt.mem_cache.cache_init_params import CacheInitParams
from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot

DEVICE = "cpu"
REQUEST_ROW = 1  # one request at a time: the pool's only row (row 0 is its padding row)


def counting_clock() -> types.SimpleNamespace:
    """radix_cache's ``time``, with a strictly increasing ``monotonic`` (module docstring)."""
    return types.SimpleNamespace(monotonic=itertools.count(1).__next__, perf_counter=time.perf_counter)


def prompt_tokens(hash_ids: list[int], input_length: int, block_size: int) -> array:
    """Block i holds [hash_ids[i]] * its tokens; the last block only what input_length leaves."""
    tokens = array("q")
    for index, hash_id in enumerate(hash_ids):
        tokens.extend([hash_id] * max(0, min(block_size, input_length - index * block_size)))
    return tokens


class SGLangRadixCache:
    identity = Identity(name="SGLang RadixCache + token-to-KV pool allocator", language="python", version=version("sglang"))
    level: Level = "results"
    policies = ("lru", "fifo")

    def __init__(self, clock: types.SimpleNamespace | None = None) -> None:
        radix_cache.time = clock or counting_clock()
        self.config: AdapterConfig | None = None
        self.cache: RadixCache | None = None
        self.last_match_tokens = 0

    def configure(self, config: AdapterConfig) -> None:
        self.config = self.cache = None
        if config.policy not in self.policies:
            raise ConfigRefused("SGLang's RadixCache is certified here with its LRU and FIFO eviction policies")
        if config.capacity < 1 or config.block_size < 1:
            raise ConfigRefused("a pool needs at least one page of at least one token")
        self.cache = RadixCache(self.params(config))
        self.config = config

    def params(self, config: AdapterConfig, **more: object) -> CacheInitParams:
        """A tree cache's parameters for ``config`` over SGLang's own pools: its token allocator
        (paged above one token a page) of capacity pages, and a request-to-token pool for the one
        request at a time; ``more`` for a cache that takes more."""
        page, tokens = config.block_size, config.capacity * config.block_size
        self.req_to_token_pool = ReqToTokenPool(size=1, max_context_len=tokens, device=DEVICE, enable_memory_saver=False)
        allocator = (TokenToKVPoolAllocator(tokens, torch.float16, DEVICE, None, need_sort=False) if page == 1
                     else PagedTokenToKVPoolAllocator(tokens, page, torch.float16, DEVICE, None, need_sort=False))
        return CacheInitParams(disable=False, req_to_token_pool=self.req_to_token_pool, token_to_kv_pool_allocator=allocator,
                               page_size=page, eviction_policy=config.policy, **more)

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        config, cache = self.configured()
        if self.refused(input_length):
            return 0
        key = RadixKey(prompt_tokens(hash_ids, input_length, config.block_size), limit=max(input_length - 1, 0))
        key = key.page_aligned(cache.page_size)
        node, hit = cache.root_node, 0
        while len(key) and (child := node.children.get(key.child_key(cache.page_size))) is not None:
            matched = child.key.match(key, page_size=cache.page_size)
            hit += matched
            if matched < len(child.key):
                break
            node, key = child, key[matched:]
        return hit

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        config, cache = self.configured()
        length = len(hash_ids) * config.block_size if input_length is None else input_length
        if self.refused(length):
            self.last_match_tokens = 0
            return
        tokens = prompt_tokens(hash_ids, length, config.block_size)
        match = cache.match_prefix(MatchPrefixParams(key=RadixKey(tokens, limit=max(length - 1, 0))))
        hit = self.last_match_tokens = match.device_prefix_len
        lock = cache.lock(match.last_device_node)
        prefix = cache.path_device_indices(match.last_device_node)[:hit]
        slots = self.allocate(hit, length, prefix)  # raises RuntimeError where the engine does (allocation.py:170, 246)
        row = REQUEST_ROW
        self.req_to_token_pool.req_to_token[row, :hit] = prefix.to(torch.int32)
        self.req_to_token_pool.req_to_token[row, hit:length] = slots.to(torch.int32)
        request = types.SimpleNamespace(
            full_untruncated_fill_ids=tokens, origin_input_ids=tokens, extra_key=None, cache_salt=None, priority=None,
            kv=ReqKvInfo(req_pool_idx=row, cache_protected_len=hit, kv_committed_len=length, kv_allocated_len=length),
            lock=lock, last_node=match.last_device_node,
            # what UnifiedRadixCache.checkpoint reads besides (check_unified.py): a finished request, no session
            rid="kvspec", finished=lambda: True, session=None, session_id=None, kv_rotation_base=None,
        )
        cache.checkpoint(request, up_to=length)
        cache.free_kv_row(request.kv, [(request.kv.cache_protected_len, length)])
        cache.unlock(request.lock)

    def refused(self, input_length: int) -> bool:
        """More pages than the pool: the engine refuses the request before it is scheduled."""
        config = self.configured()[0]
        return -(-input_length // config.block_size) > config.capacity

    def allocate(self, hit: int, length: int, prefix: torch.Tensor) -> torch.Tensor | None:
        """The engine's prefill allocation for one request, evicting as it does."""
        cache = self.cache
        if cache.page_size == 1:
            return alloc_token_slots(cache, length - hit)
        lengths = (torch.tensor([hit], dtype=torch.int64), torch.tensor([length], dtype=torch.int64))
        last_loc = prefix[-1:] if hit else torch.full((1,), -1, dtype=torch.int64)
        return alloc_paged_token_slots_extend(
            cache, lengths[0], lengths[0], lengths[1], lengths[1], last_loc, length - hit
        )

    def resident_count(self) -> int:
        """The pages the tree holds: its cached tokens over page_size (every node holds whole pages)."""
        config, cache = self.configured()
        return cache.total_size() // config.block_size

    def evictable_tokens(self) -> int:
        return self.configured()[1].evictable_size()

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.config = self.cache = None

    def configured(self) -> tuple[AdapterConfig, RadixCache]:
        if self.config is None or self.cache is None:
            raise ConfigRefused("no cache is configured")
        return self.config, self.cache


def adapter() -> SGLangRadixCache:
    return SGLangRadixCache()
