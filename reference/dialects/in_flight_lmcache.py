"""spec/dialects.md section 9: LMCache's local CPU backend with requests in flight (LIFE-LMCACHE-1 to
LIFE-LMCACHE-8), and the server of spec/lifecycle.md section 6 over it.

The pool is the engine replay's store in `lmcache` (engine.py's EngineReplay: REPLAY-DIALECT-9's
allocate-then-put, LRU-DIALECT-4's touch), whose lookups pin the chunks they hit until the request
reads them; a pinned chunk is one of the queue's protected blocks, which its eviction passes over.
vLLM's pool of GPU blocks, above LMCache, is not modeled: the running requests' KV takes none of the
store's chunks, so nothing refuses an admission or a slot.
"""

from collections import Counter
from dataclasses import dataclass, field

from ..contracts import ensure
from ..replay import ReplayConfig
from ..request import prefix_hit_blocks
from ..serve import InService
from . import dialect_policy
from .engine import EngineReplay
from .in_flight import EngineServer


@dataclass(slots=True, eq=False)
class LmcacheRequest:
    """A request in flight over LMCache's store: its chunks, the chunks its lookup pinned and those it has stored."""

    blocks: list[int]  # LIFE-LMCACHE-2: its whole prompt chunks' paths
    input_length: int
    pinned: list[int] = field(default_factory=list)  # LIFE-LMCACHE-3: pinned by its lookup, until it reads them (LIFE-LMCACHE-4)
    saved: int = 0  # its first chunks hit or stored: the connector's num_saved_tokens, in chunks (LIFE-LMCACHE-6)
    new: bool = False  # admitted in the step being scheduled, whose stores come first (LIFE-LMCACHE-6)
    running: bool = False
    hit_tokens: int | None = None  # LIFE-HIT-1
    hit_blocks: int = 0
    recomputed_tokens: int = 0  # LIFE-HIT-2: none is preempted (LIFE-LMCACHE-1)
    computed_before: int = 0


def pool_holds(pool: "LmcachePool") -> bool:
    """LIFE-LMCACHE-5: every pinned chunk resident (so none evicted); the queue's protected blocks exactly the
    chunks pinned, each pin count the requests whose lookup pinned it and that have not read it yet; the
    store within its capacity."""
    store = pool.store
    counted = Counter(chunk for request in pool.requests.values() for chunk in request.pinned)
    return (counted == pool.pins and store.cache.protected == pool.pins.keys() and all(store.is_resident(c) for c in pool.pins)
            and store.resident_count() <= max(store.capacity, 0))


@dataclass(slots=True, eq=False)
class LmcachePool:
    """LIFE-LMCACHE-1: LMCache's store of ``capacity`` chunks, each resident chunk's pins, and the requests in flight."""

    store: EngineReplay
    requests: dict[int, LmcacheRequest] = field(default_factory=dict)
    pins: Counter[int] = field(default_factory=Counter)  # each pinned chunk: its pin count (memory_management.py:812-856)
    own_blocks: int = 0  # LIFE-LMCACHE-2: none: LMCache stores no chunk of a request's output

    @property
    def policy(self) -> EngineReplay:
        """The store is LMCache's eviction policy too (REPLAY-DIALECT-9)."""
        return self.store

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        self.requests[rid] = LmcacheRequest(self.store.blocks(hash_ids)[:input_length // self.store.block_size], input_length)

    @ensure(lambda self: pool_holds(self), "LIFE-LMCACHE-5", per_access_state=True)
    def lookup(self, rid: int) -> int:
        """LIFE-LMCACHE-3: every resident whole chunk of its prefix hits, no last-token cap; each is pinned once, then
        touched (LRU-DIALECT-4). The hit chunks."""
        request = self.requests[rid]
        k = prefix_hit_blocks(request.blocks, self.store.is_resident)
        request.pinned = request.blocks[:k]
        for chunk in request.pinned:
            self.pin(chunk, 1)
        self.store.touch(request.pinned)
        request.saved, request.new, request.running = k, True, True
        return k

    @ensure(lambda self: pool_holds(self), "LIFE-LMCACHE-5", per_access_state=True)
    def read(self, rid: int) -> None:
        """LIFE-LMCACHE-4: its hit chunks read, its pins released (lookup_unpin: a request read already has none)."""
        request = self.requests[rid]
        for chunk in request.pinned:
            self.pin(chunk, -1)
        request.pinned = []

    def pin(self, chunk: int, by: int) -> None:
        """LIFE-LMCACHE-5: ``by`` (1 or -1) on the chunk's pin count; a chunk pinned is protected from eviction."""
        self.pins[chunk] += by
        if self.pins[chunk]:
            self.store.cache.protected.add(chunk)
        else:
            del self.pins[chunk]
            self.store.cache.protected.discard(chunk)

    @ensure(lambda self: pool_holds(self), "LIFE-LMCACHE-5", per_access_state=True)
    def put(self, request: LmcacheRequest, whole: int) -> None:
        """LIFE-LMCACHE-6: one store of its chunks past those it hit or stored, up to ``whole`` (REPLAY-DIALECT-9), its
        evictions passing over the pinned chunks (LIFE-LMCACHE-5); they count as saved even where the store stopped."""
        if whole > request.saved:
            self.store.stored += self.store.put(request.blocks[request.saved:whole])
            request.saved = whole  # vllm_v1_adapter.py:1255-1257, "We assume all tokens are saved"

    def finish(self, rid: int) -> LmcacheRequest:
        """LIFE-LMCACHE-7: a request's end changes nothing of the store."""
        request = self.requests.pop(rid)
        request.running = False
        return request


class LmcacheServer(EngineServer):
    """spec/lifecycle.md section 6 over LMCache's store: LIFE-LMCACHE-1 to LIFE-LMCACHE-8."""

    pool: LmcachePool  # type: ignore[assignment]

    def empty_pool(self, config: ReplayConfig) -> LmcachePool:  # type: ignore[override]
        self.stores: list[tuple[LmcacheRequest, int]] = []  # the step's stores, each request's and its whole chunks (LIFE-LMCACHE-6)
        store = dialect_policy(config.policy, config.dialect, config.capacity, config.block_size, config.small_ratio, config.max_freq)
        assert isinstance(store, EngineReplay)  # REPLAY-DIALECT-9's, in lmcache's dialect
        return LmcachePool(store)

    def admit(self, rid: int) -> bool:
        """LIFE-LMCACHE-1, LIFE-LMCACHE-3: the head's lookup, which nothing refuses; a whole-prompt hit still computes
        its last token (``vllm_v1_adapter.py:1454-1455``), its hit tokens LIFE-HIT-1's."""
        k = self.pool.lookup(rid)
        self.admitted(rid, k)
        state = self.in_service[rid]
        state.position = min(state.position, state.input_length - 1)
        return True

    def run_step(self, chunks: list[tuple[int, int]]) -> None:
        """LIFE-LMCACHE-4, LIFE-LMCACHE-6: the step's requests read their hits before its forward pass, and store what
        it computed after it: the requests admitted in the step first, then the others, each in admission order."""
        for rid, _ in chunks:
            self.pool.read(rid)
        super().run_step(chunks)
        for request, whole in sorted(self.stores, key=lambda store: not store[0].new):
            self.pool.put(request, whole)
            request.new = False
        self.stores.clear()

    def chunk_computed(self, rid: int, state: InService) -> None:
        """LIFE-LMCACHE-6: the whole chunks of its computed prompt, stored after the step."""
        request = self.pool.requests[rid]
        self.stores.append((request, min(state.position // self.block_size, len(request.blocks))))

    def take_slots(self, rid: int, tokens: int) -> bool:
        """LIFE-LMCACHE-1: vLLM's pool is not modeled, so no slot is refused (and no request preempted)."""
        return True

    def slots_held(self, rid: int) -> int:
        """LIFE-LMCACHE-1: slots enough for all its tokens, so that its decoding never asks for one."""
        state = self.in_service[rid]
        return -(-(state.input_length + state.output_length) // self.block_size)

    def uncomputed(self, rid: int, k: int) -> int:
        """LIFE-LMCACHE-6: none: a chunk is stored only after the step that computed it."""
        return 0

    def pool_peaks(self) -> None:
        """LIFE-LMCACHE-8: the chunks in use are the pinned ones."""
        self.peak_referenced = max(self.peak_referenced, len(self.pool.pins))
        self.peak_running = max(self.peak_running, len(self.running))
