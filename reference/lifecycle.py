"""spec/lifecycle.md sections 1, 2, 4 and 5: requests in flight in one pool of blocks.

A Pool is a policy in use (reference/in_use.py, whose ``refs`` are the reference counts), the
blocks not yet computed, the blocks held outside the cache, and the requests waiting and running.
Each operation of section 2 is a method; the accounting identity, referenced-never-evicted and
computed-before-hit (LIFE-INV-1, LIFE-INV-2) are its contracts.
"""

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from .contracts import ensure, require
from .errors import KvspecError
from .in_use import IN_USE, InUseFIFO, InUseLRU, InUseS3FIFO
from .replay import ReplayConfig, hit_tokens
from .request import prefix_hit_blocks

InUse = InUseS3FIFO | InUseLRU | InUseFIFO
R = TypeVar("R")


@dataclass(slots=True)
class Request:
    """A request in flight: its blocks and tokens, how far it has computed, what it references and
    holds while it runs, and what its accounting has counted (section 4)."""

    blocks: list[int]
    input_length: int
    computed: int = 0  # LIFE-COMPUTE-1: its blocks [0, computed) are computed
    referenced: list[int] = field(default_factory=list)  # LIFE-ALLOC-2: each once
    unreferenced: set[int] = field(default_factory=set)  # its other blocks: evicted, or held, in its allocation
    held: int = 0  # LIFE-ALLOC-3, LIFE-DECODE-1
    held_blocks: set[int] = field(default_factory=set)  # LIFE-ALLOC-3: each block it holds outside the cache, once
    running: bool = False
    hit_tokens: int | None = None  # LIFE-HIT-1: set by its first allocation made
    hit_blocks: int = 0  # k, of its latest allocation made
    recomputed_tokens: int = 0  # LIFE-HIT-2
    computed_before: int = 0  # the blocks it had computed when it was last preempted


def resident_blocks(pool: "Pool") -> Iterator[int]:
    """Every resident block of the pool's policy (S and M for S3FIFO, the queue for LRU and FIFO)."""
    policy = pool.policy
    if isinstance(policy, InUseS3FIFO):
        yield from policy.small
        yield from policy.main
    else:
        yield from policy.recency if isinstance(policy, InUseLRU) else policy.arrival


def pool_holds(pool: "Pool") -> bool:
    """LIFE-INV-1: every referenced block resident, referenced plus evictable the resident count,
    resident plus held within the capacity, each count that of the running requests naming it, every
    block not computed referenced."""
    refs, policy = pool.policy.refs, pool.policy
    counted: dict[int, int] = {}
    for request in pool.requests.values():
        for h in request.referenced:
            counted[h] = counted.get(h, 0) + 1
    evictable = sum(1 for h in resident_blocks(pool) if h not in refs)
    return (all(policy.is_resident(h) for h in refs) and len(refs) + evictable == policy.resident_count()
            and policy.resident_count() + pool.held <= pool.capacity and counted == refs
            and pool.held == sum(request.held for request in pool.requests.values())
            and all(h in refs for h in pool.pending))


def drop_counts(counts: dict[int, int], blocks: Iterable[int]) -> None:
    """Each block's count one less, and the block gone from ``counts`` at 0 (LIFE-POOL-2: present only while above 0)."""
    for h in blocks:
        count = counts[h] - 1
        if count:
            counts[h] = count
        else:
            del counts[h]


def usable(pool: "Pool", h: int) -> bool:
    """LIFE-POOL-3: resident and computed."""
    return pool.policy.is_resident(h) and h not in pool.pending


def may_arrive(requests: Mapping[int, object], rid: int, hash_ids: list[int], input_length: int) -> None:
    """LIFE-ARRIVE-1: a KvspecError unless ``rid`` may arrive: an id not in flight, a block and a token at least."""
    if rid in requests:
        raise KvspecError(f"LIFE-ARRIVE-1: request {rid} is in flight already; a request in flight has an id of its own")
    if not hash_ids or input_length < 1:
        raise KvspecError("REPLAY-TRACE-2: a request has at least one block and at least one token")


def waiting_in(requests: Mapping[int, R], rid: int) -> R:
    """The waiting request ``rid`` of ``requests`` (each with a ``running`` flag), else a KvspecError (PROTO-36)."""
    request = requests.get(rid)
    if request is None or request.running:  # type: ignore[attr-defined]
        raise KvspecError(f"LIFE-ARRIVE-1: request {rid} is not waiting ({'running' if request else 'not in flight'})")
    return request


def running_in(requests: Mapping[int, R], rid: int) -> R:
    """The running request ``rid`` of ``requests``, else a KvspecError (PROTO-36)."""
    request = requests.get(rid)
    if request is None or not request.running:  # type: ignore[attr-defined]
        raise KvspecError(f"LIFE-ALLOC-2: request {rid} is not running ({'waiting' if request else 'not in flight'})")
    return request


@dataclass(slots=True, eq=False)
class Pool:
    """LIFE-POOL-1: one pool of ``capacity`` slots, its policy in use, and the requests in flight."""

    policy: InUse
    capacity: int
    block_size: int
    pending: set[int] = field(default_factory=set)  # LIFE-POOL-3: resident blocks not yet computed
    held: int = 0  # LIFE-POOL-1: the blocks requests hold outside the cache
    requests: dict[int, Request] = field(default_factory=dict)

    usable = usable  # LIFE-POOL-3, a method for lookup's scan

    @classmethod
    def empty(cls, config: ReplayConfig) -> "Pool":
        """An empty pool of the configuration's canonical policy, in use."""
        in_use = IN_USE[config.policy]
        policy = in_use.empty(config.capacity, config.small_ratio, config.max_freq) if config.policy == "s3fifo" else in_use.empty(config.capacity)
        return cls(policy, config.capacity, config.block_size)

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-ARRIVE-1: the request waits; nothing of the cache changes. (The checks are errors, not
        contracts: they refuse a caller's input whether contracts are installed or not.)"""
        may_arrive(self.requests, rid, hash_ids, input_length)
        self.requests[rid] = Request(self.policy.blocks(hash_ids), input_length)

    def waiting(self, rid: int) -> Request:
        return waiting_in(self.requests, rid)

    def running(self, rid: int) -> Request:
        return running_in(self.requests, rid)

    def computed_all(self, rid: int, clause: str) -> Request:
        """The running request ``rid``, which has computed all its blocks (LIFE-DECODE-1, LIFE-FINISH-1)."""
        request = self.running(rid)
        if request.computed < len(request.blocks):
            raise KvspecError(f"{clause}: request {rid} has computed {request.computed} of its {len(request.blocks)} blocks")
        return request

    @ensure(lambda self, rid, result: all(usable(self, h) for h in self.requests[rid].blocks[:result]),
            "LIFE-INV-2: every hit block is computed")
    def lookup(self, rid: int) -> int:
        """LIFE-LOOKUP-1: k, the longest prefix of usable blocks; it changes nothing."""
        return prefix_hit_blocks(self.waiting(rid).blocks, self.usable)

    def fits(self, request: Request) -> bool:
        """LIFE-ALLOC-4: the request's blocks that no other request references (each once, resident
        or not) fit beside the blocks held and those referenced (by other requests: a waiting one
        references none), or nothing is in use."""
        refs, blocks = self.policy.refs, request.blocks
        room = self.capacity - self.held - len(refs)
        # the set only when its blocks, counted with repeats and referenced ones, do not fit already
        return room == self.capacity or len(blocks) <= room or len(set(blocks).difference(refs)) <= room

    @require(lambda self: pool_holds(self), "LIFE-INV-1", per_access_state=True)
    @ensure(lambda self: pool_holds(self), "LIFE-INV-1", per_access_state=True)
    def allocate(self, rid: int) -> bool:
        """LIFE-ALLOC-1 to LIFE-ALLOC-4 and LIFE-HIT-1, LIFE-HIT-2: whether the allocation is made."""
        request = self.waiting(rid)
        k = self.lookup(rid)
        if not self.fits(request):
            return False  # LIFE-ALLOC-4: refused, nothing changes, and no hit is counted (LIFE-HIT-1)
        self.count_hits(request, k)
        request.hit_blocks = k
        self.access_blocks(request)
        self.reference_blocks(request)
        request.running = True
        return True

    def reference_blocks(self, request: Request) -> None:
        """LIFE-ALLOC-2: each block once, in order, referenced if it is resident."""
        is_resident, refs, referenced = self.policy.is_resident, self.policy.refs, request.referenced
        for h in dict.fromkeys(request.blocks):
            if is_resident(h):
                referenced.append(h)
                refs[h] = refs.get(h, 0) + 1
            else:
                self.pending.discard(h)  # admitted, then evicted by its own later accesses (LIFE-INV-1: no other pending block can leave)
                request.unreferenced.add(h)

    def count_hits(self, request: Request, k: int) -> None:
        """LIFE-HIT-1 (the first allocation made counts the hit tokens) and LIFE-HIT-2 (a resumed one, its recomputed tokens)."""
        hits = hit_tokens(k, self.block_size, request.input_length)
        if request.hit_tokens is None:
            request.hit_tokens = hits
        else:
            before = hit_tokens(request.computed_before, self.block_size, request.input_length)
            request.recomputed_tokens += max(0, before - hits)

    def access_blocks(self, request: Request) -> None:
        """LIFE-ALLOC-1, LIFE-ALLOC-3: every block accessed, in order; a block not admitted is held, and
        slots are freed while the pool is over. (One loop, not a call a block: bench/bench_lifecycle.py.)"""
        is_resident, access, pending, held_blocks = self.policy.is_resident, self.policy.access, self.pending, request.held_blocks
        for h in request.blocks:
            if h in held_blocks:
                continue  # LIFE-ALLOC-3: held once, outside the cache, whatever the request names after
            if is_resident(h):
                access(h)  # a hit, or a block resident past the prefix (REPLAY-ACCESS-1)
            else:
                access(h)
                if is_resident(h):
                    pending.add(h)
                else:
                    self.hold(request, h)
            if self.held:  # with none held, the policy's own sizes keep it within the pool (S3-INV-1, S3-INV-2, LRU-CAP-1, FIFO-CAP-1)
                self.make_room()

    def hold(self, request: Request, h: int) -> None:
        """LIFE-ALLOC-3: a block not admitted, held outside the cache."""
        request.held_blocks.add(h)
        request.held += 1
        self.held += 1

    def make_room(self) -> None:
        """LIFE-ALLOC-3, LIFE-EVICT-2: while the pool is over its capacity, a slot is freed."""
        while self.policy.resident_count() + self.held > self.capacity:
            if not self.policy.free_slot():
                raise KvspecError("LIFE-ALLOC-4: no block to evict (the allocation was made though the pool could not hold it)")

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-COMPUTE-1: blocks [computed, upto) become computed."""
        request = self.running(rid)
        if not request.computed < upto <= len(request.blocks):
            raise KvspecError(f"LIFE-COMPUTE-1: request {rid} has computed {request.computed} of its {len(request.blocks)} blocks; "
                              f"a step computes from the first not computed, to {upto}")
        computing, unreferenced = request.blocks[request.computed:upto], request.unreferenced
        # a block it does not reference (evicted or held in its allocation) is not its to compute
        self.pending.difference_update((h for h in computing if h not in unreferenced) if unreferenced else computing)
        request.computed = upto

    @ensure(lambda self: pool_holds(self), "LIFE-INV-1", per_access_state=True)
    def decode(self, rid: int) -> bool:
        """LIFE-DECODE-1: one more held block, after a slot is freed if the pool is full; refused, changing
        nothing, when every resident block is referenced."""
        request, policy = self.computed_all(rid, "LIFE-DECODE-1"), self.policy
        if policy.resident_count() + self.held >= self.capacity:
            if len(policy.refs) == policy.resident_count():
                return False
            policy.free_slot()  # finds one: an evictable block is resident
        request.held += 1
        self.held += 1
        return True

    @ensure(lambda self: pool_holds(self), "LIFE-INV-1", per_access_state=True)
    def finish(self, rid: int) -> Request:
        """LIFE-FINISH-1: its references dropped, its held blocks freed; the request, with its accounting."""
        self.release(self.computed_all(rid, "LIFE-FINISH-1"))
        return self.requests.pop(rid)

    @ensure(lambda self: pool_holds(self), "LIFE-INV-1", per_access_state=True)
    def preempt(self, rid: int) -> None:
        """LIFE-PREEMPT-1: as finish, then each block it referenced that is not computed and that no
        running request references is removed (LIFE-EVICT-3); it waits again."""
        request = self.running(rid)
        uncomputed = [h for h in request.referenced if h in self.pending]
        self.release(request)
        for h in uncomputed:
            if h not in self.policy.refs:
                self.policy.remove(h)
                self.pending.discard(h)
        request.computed_before, request.computed, request.running = request.computed, 0, False

    def release(self, request: Request) -> None:
        """LIFE-FINISH-1, LIFE-PREEMPT-1: the request's references dropped and its held blocks freed."""
        drop_counts(self.policy.refs, request.referenced)
        request.referenced, request.unreferenced = [], set()
        self.held -= request.held
        request.held, request.held_blocks = 0, set()
