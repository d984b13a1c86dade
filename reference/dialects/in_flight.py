"""spec/dialects.md section 9: vLLM's block pool with requests in flight (LIFE-VLLM-1 to LIFE-VLLM-9),
and the server of spec/lifecycle.md section 6 over it.

The pool is LRU-DIALECT-6's, with the references it keeps between a request's allocation and its
end: a slot is empty or holds a block, and has a reference count; the free queue is the slots at
count 0, the empty ones ahead of those that hold a block. The server is section 6's, each rule
the pool changes overridden as the clause says (the canonical functions run for everything else).
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..contracts import ensure
from ..errors import KvspecError
from ..replay import ReplayConfig, hit_tokens
from ..serve import InService, Server
from ..service import Served, ServedRequest, ServiceModel
from ..trace import Request
from .baselines import ROOT, Paths, dialect_blocks
from .catalogue import Dialect, in_catalogue_order


@dataclass(slots=True, eq=False)
class VllmRequest:
    """A request in flight in vLLM's pool: its blocks, its block table and what its accounting counts."""

    blocks: list[int]  # LIFE-VLLM-2: its whole prompt blocks' paths, then its own blocks, named as they are first cached
    input_length: int
    whole: int  # the whole blocks of its prompt
    table: list[int] = field(default_factory=list)  # its slots, by position (LIFE-VLLM-5, LIFE-VLLM-6)
    cached: int = 0  # the positions of its table whose slot it has cached, or found cached (LIFE-VLLM-7)
    computed_tokens: int = 0  # the tokens it has cached up to (LIFE-VLLM-7)
    running: bool = False
    hit_tokens: int | None = None  # LIFE-HIT-1
    hit_blocks: int = 0
    recomputed_tokens: int = 0  # LIFE-HIT-2
    computed_before: int = 0  # the prompt tokens it had computed when it was last preempted


class NamedBlocks(Protocol):
    """A request in flight whose blocks are named as it caches them (LIFE-VLLM-2, LIFE-SGLANG-2)."""

    blocks: list[int]


def pool_holds(pool: "VllmPool") -> bool:
    """LIFE-VLLM-1: each slot once, empty or holding a block; the free queue exactly the slots at count 0
    that hold a block; each block's slots exactly the slots that hold it; each count that of the tables
    naming the slot."""
    held = [s for slots in pool.slots_of.values() for s in slots]
    counted: dict[int, int] = {}
    for request in pool.requests.values():
        for slot in request.table:
            counted[slot] = counted.get(slot, 0) + 1
    return (pool.empty + len(pool.queue) + len(pool.refs) == pool.capacity and pool.empty >= 0 and counted == pool.refs
            and sorted(held) == sorted(pool.block_of) and all(pool.block_of[s] == b for b, slots in pool.slots_of.items() for s in slots)
            and all(s in pool.block_of and s not in pool.refs for s in pool.queue) and all(pool.slots_of.values()))


@dataclass(slots=True, eq=False)
class VllmPool:
    """LIFE-VLLM-1: ``capacity`` slots, the free queue, and the requests in flight."""

    dialect: Dialect
    capacity: int
    block_size: int
    empty: int  # the free queue's head: the slots at count 0 that hold no block
    paths: Paths = field(default_factory=Paths)
    queue: OrderedDict[int, None] = field(default_factory=OrderedDict)  # the free queue's slots that hold a block, head first
    block_of: dict[int, int] = field(default_factory=dict)  # each slot that holds a block: that block
    slots_of: dict[int, list[int]] = field(default_factory=dict)  # each cached block's slots, in the order they came to hold it
    cached_in_step: dict[int, int] = field(default_factory=dict)  # each slot's step of caching (LIFE-VLLM-7's same-step hits)
    refs: dict[int, int] = field(default_factory=dict)  # each slot at count above 0: its count
    requests: dict[int, VllmRequest] = field(default_factory=dict)
    next_slot: int = 0
    own_blocks: int = 0  # the requests' own blocks named (LIFE-VLLM-2), which the result reports

    blocks = dialect_blocks

    @property
    def policy(self) -> "VllmPool":
        """The pool is vLLM's eviction policy too: its free queue (LRU-DIALECT-6)."""
        return self

    def free(self) -> int:
        """The free queue's length: the slots an allocation may take (``block_pool.py:912``)."""
        return self.empty + len(self.queue)

    def resident_count(self) -> int:
        """LIFE-VLLM-9: the slots that hold a block, each block held twice counted twice (LRU-DIALECT-6)."""
        return len(self.block_of)

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        whole = input_length // self.block_size
        self.requests[rid] = VllmRequest(self.blocks(hash_ids)[:whole], input_length, whole)

    def lookup(self, rid: int, tokens: int) -> int:
        """LIFE-VLLM-4: the longest prefix of cached blocks, at most (tokens - 1) // block_size of them."""
        request, k = self.requests[rid], 0
        for block in request.blocks[:(tokens - 1) // self.block_size]:
            if block not in self.slots_of:
                break
            k += 1
        return k

    def needed(self, request: VllmRequest, k: int, tokens: int) -> int:
        """LIFE-VLLM-5: the slots an admission takes from the free queue: those of its tokens past the hit, and
        the hit blocks at count 0 (``single_type_kv_cache_manager.py:176-266``)."""
        hits = (self.slots_of[block][0] for block in request.blocks[:k])
        return -(-tokens // self.block_size) - k + sum(1 for slot in hits if slot not in self.refs)

    @ensure(lambda self: pool_holds(self), "LIFE-VLLM-1", per_access_state=True)
    def allocate(self, rid: int, k: int, tokens: int) -> bool:
        """LIFE-VLLM-5: whether the whole sequence fits; if so the hit slots are taken (``touch``), counted."""
        request = self.requests[rid]
        if self.needed(request, k, tokens) > self.free():
            return False
        for block in request.blocks[:k]:
            slot = self.slots_of[block][0]  # block_pool.py:63-72: the first slot that came to hold it
            self.queue.pop(slot, None)
            self.refs[slot] = self.refs.get(slot, 0) + 1
            request.table.append(slot)
        request.cached = k
        request.running = True
        return True

    @ensure(lambda self: pool_holds(self), "LIFE-VLLM-1", per_access_state=True)
    def take(self, rid: int, slots: int) -> bool:
        """LIFE-VLLM-6: the slots the request lacks of ``slots``, all or none, each the free queue's head."""
        request = self.requests[rid]
        lacking = slots - len(request.table)
        if lacking > self.free():
            return False
        for _ in range(lacking):
            request.table.append(self.head())
        return True

    def head(self) -> int:
        """LIFE-VLLM-6: the free queue's head, at count 1; the block it held, if any, no longer cached there."""
        if self.empty:
            self.empty -= 1
            self.next_slot += 1
            slot = self.next_slot
        else:
            slot, _ = self.queue.popitem(last=False)
            block = self.block_of.pop(slot)
            slots = self.slots_of[block]
            slots.remove(slot)
            if not slots:
                del self.slots_of[block]
        self.refs[slot] = 1
        return slot

    @ensure(lambda self: pool_holds(self), "LIFE-VLLM-1", per_access_state=True)
    def cache(self, rid: int, tokens: int, step: int) -> None:
        """LIFE-VLLM-7: the request's blocks wholly inside its first ``tokens`` tokens are cached, each in its
        slot, beside any slot that holds it already (``block_pool.py:230-303``)."""
        request = self.requests[rid]
        whole = tokens // self.block_size
        for position in range(request.cached, whole):
            slot = request.table[position]
            block = self.block_at(request, position)
            self.block_of[slot] = block
            self.slots_of.setdefault(block, []).append(slot)
            self.cached_in_step[slot] = step
        request.cached = max(request.cached, whole)
        request.computed_tokens = tokens

    def block_at(self, request: NamedBlocks, position: int) -> int:
        """LIFE-VLLM-2: a prompt's whole block is its path; a block past them is the request's own, named when first cached."""
        if position == len(request.blocks):
            self.own_blocks += 1
            self.paths.parent_of.append(request.blocks[-1] if request.blocks else ROOT)  # a path no trace names
            request.blocks.append(len(self.paths.parent_of) - 1)
        return request.blocks[position]

    @ensure(lambda self: pool_holds(self), "LIFE-VLLM-1", per_access_state=True)
    def release(self, rid: int) -> VllmRequest:
        """LIFE-VLLM-8: each slot of its table, last position first, one count less; at 0 a slot that holds a
        block joins the free queue's tail, one that holds none its head (``block_pool.py:816-849``)."""
        request = self.requests[rid]
        for slot in reversed(request.table):
            count = self.refs[slot] - 1
            if count:
                self.refs[slot] = count
                continue
            del self.refs[slot]
            if slot in self.block_of:
                self.queue[slot] = None
            else:
                self.empty += 1
                self.cached_in_step.pop(slot, None)
        request.table, request.cached, request.running = [], 0, False
        return request

    def finish(self, rid: int) -> VllmRequest:
        self.release(rid)
        return self.requests.pop(rid)

    def preempt(self, rid: int) -> None:
        request = self.release(rid)
        request.computed_before = min(request.computed_tokens, request.input_length)


def refuse(server: Server, number: int, line: int, record: Request) -> None:
    """LIFE-VLLM-3, LIFE-SGLANG-2: a request the engine refuses hits 0, changes nothing and generates nothing;
    its line is written and the result counts it."""
    result = server.result
    result.refused, result.requests = result.refused + 1, result.requests + 1  # type: ignore[operator]  # 0 from the server's __init__
    if server.add is not None:
        server.add(ServedRequest(number, line, 0, record.input_length, 0, 0.0, 0, 0, server.ms(server.now)))


class CountedRequest(Protocol):
    """What an admission counts of a request in an engine's pool (LIFE-HIT-1, LIFE-HIT-2)."""

    hit_tokens: int | None
    hit_blocks: int
    recomputed_tokens: int
    computed_before: int


def count_admission(request: CountedRequest, k: int, block_size: int, input_length: int) -> bool:
    """LIFE-HIT-1, LIFE-HIT-2 (LIFE-VLLM-8, LIFE-VLLM-15): an admission made with k hit blocks; its first
    counts its hit tokens, a later one the prompt tokens it had computed that it does not hit. Whether
    it is the first."""
    hit, first = hit_tokens(k, block_size, input_length), request.hit_tokens is None
    if first:
        request.hit_tokens = hit
    else:
        request.recomputed_tokens += max(0, request.computed_before - hit)
    request.hit_blocks = k
    return first


class EnginePool(Protocol):
    """An engine's pool in flight: vLLM's here, SGLang's in in_flight_radix.py."""

    @property
    def requests(self) -> Mapping[int, CountedRequest]: ...

    own_blocks: int


class EngineServer(Server):
    """Section 6's server over an engine's pool (section 9): the result names the dialect and counts the
    requests the engine refuses; an admission counts its hits as the engine matched them."""

    pool: "EnginePool"  # type: ignore[assignment]

    def __init__(self, config: ReplayConfig, service: ServiceModel, add: Callable[[ServedRequest], None] | None) -> None:
        super().__init__(config, service, add)
        self.result.dialect, self.result.refused = in_catalogue_order(config.dialect), 0

    def uncomputed(self, rid: int, k: int) -> int:
        """LIFE-SERVE-7: the hit tokens of the k hit blocks that are not yet computed."""
        raise NotImplementedError

    def serve(self, records: Iterable[tuple[int, Request]], path: str) -> Served:
        result = super().serve(records, path)
        result.own_blocks = self.pool.own_blocks  # LIFE-VLLM-9
        return result

    def admitted(self, rid: int, k: int) -> None:
        """LIFE-HIT-1, LIFE-HIT-2: the head, allocated with k hit blocks, runs from them."""
        request, state = self.pool.requests[rid], self.in_service[rid]
        self.waiting.popleft()
        if count_admission(request, k, self.block_size, state.input_length):
            self.result.uncomputed_tokens += self.uncomputed(rid, k)
        state.position = k * self.block_size
        state.waiting_ticks += self.now - state.joined
        self.running.append(rid)
        self.pool_peaks()


class VllmServer(EngineServer):
    """spec/lifecycle.md section 6 over vLLM's pool: LIFE-VLLM-3 to LIFE-VLLM-9."""

    pool: VllmPool  # type: ignore[assignment]

    def empty_pool(self, config: ReplayConfig) -> VllmPool:  # type: ignore[override]
        self.max_model_len = config.capacity * config.block_size  # LIFE-VLLM-1
        return VllmPool(config.dialect, config.capacity, config.block_size, config.capacity)

    def arrive(self, number: int, line: int, record: Request) -> None:
        """LIFE-VLLM-3: a prompt of max_model_len tokens or more refused; the output stopped at max_model_len."""
        if record.input_length >= self.max_model_len:
            refuse(self, number, line, record)
            return
        super().arrive(number, line, record)
        state = self.in_service[number]
        state.output_length = min(state.output_length, self.max_model_len - state.input_length)

    def admit(self, rid: int) -> bool:
        """LIFE-VLLM-4, LIFE-VLLM-5: the head's lookup and allocation."""
        k = self.pool.lookup(rid, self.in_service[rid].prefill_end)
        if not self.pool.allocate(rid, k, self.in_service[rid].prefill_end):
            return False
        self.admitted(rid, k)
        return True

    def chunk(self, state: InService, budget: int) -> int:
        """LIFE-VLLM-6, LIFE-SGLANG-6: what is left of the prefill, a resumed request's output too, at most the
        budget: neither engine ends a chunk at the prompt's end (vLLM's ``sched/scheduler.py:1306, 1346``;
        ``:839-848``; SGLang's ``schedule_policy.py:1603-1604``, ``schedule_batch.py:1672-1690``)."""
        return min(state.prefill_end - state.position, budget)

    def uncomputed(self, rid: int, k: int) -> int:
        """LIFE-VLLM-7: the hit tokens of the blocks cached in this very step, computed by it, not before."""
        request, state = self.pool.requests[rid], self.in_service[rid]
        computed = k
        while computed and self.pool.cached_in_step.get(request.table[computed - 1]) == self.steps:
            computed -= 1
        return hit_tokens(k, self.block_size, state.input_length) - hit_tokens(computed, self.block_size, state.input_length)

    def take_slots(self, rid: int, tokens: int) -> bool:
        """LIFE-VLLM-6, LIFE-VLLM-7: the slots for ``tokens`` tokens all at once, and its whole blocks cached."""
        if not self.pool.take(rid, -(-tokens // self.block_size)):
            return False
        self.pool.cache(rid, tokens, self.steps)
        self.pool_peaks()  # LIFE-SERVE-7: here, not at the allocation, do the slots in use grow
        return True

    def slots_held(self, rid: int) -> int:
        return len(self.pool.requests[rid].table)

    def chunk_computed(self, rid: int, state: InService) -> None:
        """LIFE-VLLM-7: nothing: its blocks were cached when the step was scheduled."""

    def preempt(self, rid: int) -> None:
        """LIFE-VLLM-7, LIFE-VLLM-8: its decoding's whole blocks cached, as each step's schedule cached them, then released."""
        state = self.in_service[rid]
        if state.decoding_since >= 0:
            self.stop_decoding(state)
        self.pool.cache(rid, state.position, self.steps)
        super().preempt(rid)

    def finish(self, rid: int, state: InService) -> None:
        self.pool.cache(rid, state.position, self.steps)
        super().finish(rid, state)

    def cut_short(self, rid: int) -> None:
        raise KvspecError("LIFE-VLLM-6: a request alone was refused a slot, which max_model_len rules out (a bug of the served replay)")
