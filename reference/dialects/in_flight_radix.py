"""spec/dialects.md section 9: SGLang's radix cache with requests in flight (LIFE-SGLANG-1 to LIFE-SGLANG-9),
and the server of spec/lifecycle.md section 6 over it.

The pool is LRU-DIALECT-5's tree (radix.py, whose stamps, splits, insertion and eviction it runs as
they are) with SGLang's lock references kept between a request's admission and its end, and the
pages each request holds outside the tree. The server is section 6's, each rule the pool changes
overridden as the clause says.
"""

from dataclasses import dataclass, field

from ..contracts import ensure
from ..errors import KvspecError
from ..replay import ReplayConfig
from ..serve import InService
from ..trace import Request
from .baselines import Paths
from .in_flight import EngineServer, VllmPool, VllmServer, refuse
from .radix import Node, RadixCache, descendants

CLIP_MAX_NEW_TOKENS = 4096  # schedule_policy.py:89, SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION's default


@dataclass(slots=True, eq=False)
class SglangRequest:
    """A request in flight in SGLang's pool: its blocks, its row of pages and the node its lock is taken on."""

    blocks: list[int]  # LIFE-SGLANG-2: its whole prompt blocks' paths, then blocks of its own, named as they are inserted
    input_length: int
    row: int = 0  # the pages of its row (LIFE-SGLANG-6)
    protected: int = 0  # the first pages of its row that are the tree's: its hit, then what it inserted (cache_protected_len)
    node: Node | None = None  # the node its lock is taken on: its last matched or inserted node (LIFE-SGLANG-3)
    running: bool = False
    hit_tokens: int | None = None  # LIFE-HIT-1
    hit_blocks: int = 0
    recomputed_tokens: int = 0  # LIFE-HIT-2
    computed_before: int = 0  # the prompt tokens it had inserted when it was last retracted


def pool_holds(pool: "SglangPool") -> bool:
    """LIFE-SGLANG-1: a locked node never evicted (every request's lock is on a node of the tree); evictable
    plus protected pages the tree's (the identity of mllm #656); each node's lock count the
    running requests whose lock runs through it; the tree's pages and the held ones within the pool."""
    tree = pool.tree
    nodes = descendants(tree.root)
    counted: dict[int, int] = {}
    for request in pool.requests.values():
        node = request.node
        while node is not None and node is not tree.root:
            counted[id(node)] = counted.get(id(node), 0) + 1
            node = node.parent
    in_tree = {id(n) for n in nodes}
    return (all(r.node is None or r.node is tree.root or id(r.node) in in_tree for r in pool.requests.values())
            and all(n.locked == counted.get(id(n), 0) for n in nodes) and sum(len(n.run) for n in nodes if n.locked) == pool.protected
            and pool.evictable() + pool.protected == len(tree.resident)
            and pool.held == sum(r.row - r.protected for r in pool.requests.values()) >= 0
            and len(tree.resident) + pool.held <= tree.capacity)


@dataclass(slots=True, eq=False)
class SglangPool:
    """LIFE-SGLANG-1: ``capacity`` pages, the tree's and those the requests hold outside it, and the requests in flight."""

    tree: RadixCache
    requests: dict[int, SglangRequest] = field(default_factory=dict)
    protected: int = 0  # the tree's pages in locked nodes (radix_cache.py:582-616, protected_size_)
    held: int = 0  # the pages of the rows that are not the tree's
    own_blocks: int = 0  # the requests' own blocks named (LIFE-SGLANG-2), which the result reports

    block_at = VllmPool.block_at  # LIFE-SGLANG-2: a block past the prompt's whole blocks is the request's own, as in vLLM's

    @property
    def policy(self) -> "SglangPool":
        """The pool is SGLang's eviction policy too: its tree (LRU-DIALECT-5)."""
        return self

    @property
    def paths(self) -> Paths:
        """The tree's interned paths, which block_at extends with the requests' own blocks."""
        return self.tree.paths

    @property
    def block_size(self) -> int:
        return self.tree.block_size

    def resident_count(self) -> int:
        return len(self.tree.resident)

    def free(self) -> int:
        """The pages no one holds (the allocator's available_size)."""
        return self.tree.capacity - len(self.tree.resident) - self.held

    def evictable(self) -> int:
        """The tree's pages in unlocked nodes (evictable_size_)."""
        return len(self.tree.resident) - self.protected

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        self.requests[rid] = SglangRequest(self.tree.blocks(hash_ids)[:input_length // self.block_size], input_length)

    def match(self, rid: int, tokens: int) -> tuple[int, Node]:
        """LIFE-SGLANG-4: the resident prefix of its blocks, at most (tokens - 1) // block_size, walked (stamped,
        split where it ends inside a node); the hit blocks and the last node matched."""
        request, k = self.requests[rid], 0
        for block in request.blocks[:(tokens - 1) // self.block_size]:
            if block not in self.tree.resident:
                break
            k += 1
        path = self.tree.walk(request.blocks[:k]) if k else []  # radix.py's engine replay stamps nothing for a hit of 0 blocks either
        return k, path[-1] if path else self.tree.root

    def lock(self, node: Node | None, by: int) -> None:
        """LIFE-SGLANG-3: ``by`` (1 or -1) on the lock count of every node from ``node`` to the root (inc_lock_ref, dec_lock_ref)."""
        while node is not None and node is not self.tree.root:
            if node.locked == (0 if by > 0 else 1):
                self.protected += by * len(node.run)
            node.locked += by
            node = node.parent

    def admissible(self, need: int, node: Node, reserved: int) -> bool:
        """LIFE-SGLANG-5: with the matched path locked, ``need`` tokens less than the free and evictable ones past ``reserved``."""
        self.lock(node, 1)
        fits = need < (self.free() + self.evictable()) * self.block_size - reserved
        self.lock(node, -1)
        return fits

    @ensure(lambda self: pool_holds(self), "LIFE-SGLANG-1", per_access_state=True)
    def allocate(self, rid: int, k: int, node: Node) -> None:
        """LIFE-SGLANG-5: the hit pages are the row's first, the tree's, locked from its last matched node."""
        request = self.requests[rid]
        self.lock(node, 1)
        request.node, request.row, request.protected, request.running = node, k, k, True

    @ensure(lambda self: pool_holds(self), "LIFE-SGLANG-1", per_access_state=True)
    def take(self, rid: int, pages: int, extend: bool) -> bool:
        """LIFE-SGLANG-6: the pages the row lacks of ``pages``, all or none, after evicting leaves for the shortfall
        (a page more for an extend when pages hold more than a token: allocation.py:186-200)."""
        request = self.requests[rid]
        lacking = pages - request.row
        if lacking <= 0:
            return True
        shortfall = lacking + (extend and self.block_size > 1) - self.free()
        if shortfall > 0:
            self.tree.evict(shortfall)
        if lacking > self.free():
            return False
        request.row += lacking
        self.held += lacking
        return True

    @ensure(lambda self: pool_holds(self), "LIFE-SGLANG-1", per_access_state=True)
    def checkpoint(self, rid: int, tokens: int) -> None:
        """LIFE-SGLANG-7: the whole pages of its first ``tokens`` tokens inserted (a page another request inserted
        meanwhile is the tree's, and the row's copy freed), the path matched again, the lock moved to its end."""
        request = self.requests[rid]
        whole = tokens // self.block_size
        if whole <= request.protected:
            return  # radix_cache.py:463-468: nothing new is whole
        blocks = [self.block_at(request, position) for position in range(whole)]
        self.tree.insert(blocks)
        end = self.tree.walk(blocks)[-1]  # radix_cache.py:524, the second match
        self.lock(end, 1)
        self.lock(request.node, -1)
        self.held -= whole - request.protected
        request.node, request.protected = end, whole

    @ensure(lambda self: pool_holds(self), "LIFE-SGLANG-1", per_access_state=True)
    def release(self, rid: int) -> SglangRequest:
        """LIFE-SGLANG-8: the row past what is the tree's freed, the lock dropped (common.py:400-437)."""
        request = self.requests[rid]
        self.held -= request.row - request.protected
        self.lock(request.node, -1)
        request.row = request.protected = 0
        request.node, request.running = None, False
        return request

    def finish(self, rid: int) -> SglangRequest:
        self.release(rid)
        return self.requests.pop(rid)

    def preempt(self, rid: int) -> None:
        request = self.requests[rid]
        request.computed_before = min(request.protected * self.block_size, request.input_length)
        self.release(rid)


class SglangServer(EngineServer):
    """spec/lifecycle.md section 6 over SGLang's radix cache: LIFE-SGLANG-2 to LIFE-SGLANG-9."""

    pool: SglangPool  # type: ignore[assignment]

    def empty_pool(self, config: ReplayConfig) -> SglangPool:  # type: ignore[override]
        self.max_req_len = config.capacity * config.block_size - 1  # LIFE-SGLANG-2: tp_worker.py:568-572
        return SglangPool(RadixCache.empty(config.dialect, config.capacity, config.block_size, config.policy))

    def arrive(self, number: int, line: int, record: Request) -> None:
        """LIFE-SGLANG-2: a prompt of max_req_len - 5 tokens or more refused; the output cut to max_req_len - 1 tokens in all."""
        if record.input_length >= self.max_req_len - 5:
            refuse(self, number, line, record)
            return
        super().arrive(number, line, record)
        state = self.in_service[number]
        state.output_length = min(state.output_length, self.max_req_len - 1 - state.input_length)

    def reserved(self) -> int:
        """LIFE-SGLANG-5: the tokens the running requests have still to take: their prefill past their rows, and their
        output left, at most CLIP_MAX_NEW_TOKENS each (a new-token ratio of 1, schedule_policy.py:785-793)."""
        total = 0
        for rid in self.running:
            state, request = self.in_service[rid], self.pool.requests[rid]
            generated = state.generated + (self.steps - state.decoding_since if state.decoding_since >= 0 else 0)
            total += max(0, state.prefill_end - request.row * self.block_size) + min(state.output_length - generated, CLIP_MAX_NEW_TOKENS)
        return total

    def admit(self, rid: int) -> bool:
        """LIFE-SGLANG-4, LIFE-SGLANG-5: the head's match and admission."""
        state = self.in_service[rid]
        k, node = self.pool.match(rid, state.prefill_end)
        need = state.prefill_end - k * self.block_size + min(state.output_length - state.generated, CLIP_MAX_NEW_TOKENS)
        if not self.pool.admissible(need, node, self.reserved()):
            return False
        self.pool.allocate(rid, k, node)
        self.admitted(rid, k)
        return True

    chunk = VllmServer.chunk  # LIFE-SGLANG-6: a resumed request's prompt and output in one extend, as in vLLM

    def uncomputed(self, rid: int, k: int) -> int:
        """LIFE-SGLANG-7: none: a page is in the tree only once a step has computed it."""
        return 0

    def pool_peaks(self) -> None:
        """LIFE-SGLANG-9: the pages in use are the tree's locked ones and the rows' own."""
        self.peak_referenced = max(self.peak_referenced, self.pool.protected + self.pool.held)
        self.peak_running = max(self.peak_running, len(self.running))

    def take_slots(self, rid: int, tokens: int) -> bool:
        """LIFE-SGLANG-6: the pages for ``tokens`` tokens, all at once; an extend's with the page more."""
        extend = self.in_service[rid].decoding_since < 0
        if not self.pool.take(rid, -(-tokens // self.block_size), extend):
            return False
        self.pool_peaks()
        return True

    def slots_held(self, rid: int) -> int:
        return self.pool.requests[rid].row

    def chunk_computed(self, rid: int, state: InService) -> None:
        """LIFE-SGLANG-7: a chunk run is inserted, unless it ends the request, whose finish inserts it."""
        if state.position < state.prefill_end or state.generated + 1 < state.output_length:
            self.pool.checkpoint(rid, state.position)

    def finish(self, rid: int, state: InService) -> None:
        """LIFE-SGLANG-8: a finished request's computed tokens inserted, its output's whole pages with them."""
        self.pool.checkpoint(rid, state.position)
        super().finish(rid, state)

    def cut_short(self, rid: int) -> None:
        raise KvspecError("LIFE-SGLANG-6: a request alone was refused a page, which max_req_len rules out (a bug of the served replay)")
