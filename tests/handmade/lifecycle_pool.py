"""An independent pool of requests in flight for S3FIFO, LRU and FIFO, written from the text of
spec/lifecycle.md sections 1 to 5 (and spec/s3fifo.md, spec/lru.md, spec/fifo.md, spec/replay.md for
the policies' own rules), not from reference/lifecycle.py or the lifecycle gallery's canonical pool:
the implementation whose hand-made mistakes (tests/handmade/lifecycle_mistakes.py) measure the
lifecycle certification on mistakes it has never seen (issue 32).

Its structure is its own: one record per resident block (its queue, freq, reference count and
computed flag), plain lists for the queues, a count of the blocks held outside the cache. It is an
in-process adapter (PROTO-29, PROTO-35), its lifecycle this pool and its one-at-a-time replay the
reference's: ``python:tests/handmade/lifecycle_pool.py:pool`` certifies it at the state level,
``python:tests/handmade/lifecycle_pool.py:pool_results`` at the results level.
"""

from dataclasses import dataclass, field
from typing import Any

from kvspec.adapters.interface import Identity, LifecycleState, Level
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.adapters.wire import lifecycle_state_json
from kvspec.reference import SPEC_VERSION, KvspecError, ReplayConfig


@dataclass
class Block:
    """A resident block (LIFE-POOL-1): the queue it is in ("S" or "M" for S3FIFO, "Q" for LRU's and
    FIFO's one queue), its freq (S3-QUEUE-1), its reference count (LIFE-POOL-2) and whether it is
    computed (LIFE-POOL-3)."""

    queue: str
    freq: int = 0
    refs: int = 0
    computed: bool = False


@dataclass
class Request:
    """A request in flight (section 2): waiting or running, the blocks it has computed in order, the
    blocks it references and holds, and its accounting (section 4)."""

    hash_ids: list[int]
    input_length: int
    running: bool = False
    computed: int = 0  # LIFE-COMPUTE-1: its blocks [0, computed) are computed
    referenced: set[int] = field(default_factory=set)  # LIFE-ALLOC-2
    held: set[int] = field(default_factory=set)  # LIFE-ALLOC-3: hashes it holds outside the cache
    decoded: int = 0  # LIFE-DECODE-1: held blocks its decoding added
    computed_when_preempted: int | None = None  # LIFE-HIT-2's c; None until its first preemption
    allocated: bool = False  # LIFE-HIT-1: an allocation of it has been made
    hit_tokens: int = 0
    recomputed_tokens: int = 0


class HandmadePool:
    """One pool of ``capacity`` slots (LIFE-POOL-1) under one policy."""

    def __init__(self, config: ReplayConfig) -> None:
        self.policy = config.policy
        self.capacity = config.capacity
        self.block_size = config.block_size
        self.max_freq = config.max_freq
        self.small_cap = round(config.capacity * config.small_ratio)  # S3-CONF-2
        self.main_cap = config.capacity - self.small_cap  # S3-CONF-3
        self.ghost_cap = self.main_cap  # S3-CONF-4
        self.blocks: dict[int, Block] = {}
        self.small: list[int] = []  # S3FIFO's S, head first
        self.main: list[int] = []  # S3FIFO's M, or LRU's recency queue, or FIFO's arrival queue, head first
        self.ghost: list[int] = []  # S3FIFO's G, head first
        self.held = 0  # LIFE-POOL-1: blocks held outside the cache, by every running request
        self.requests: dict[int, Request] = {}

    @classmethod
    def empty(cls, config: ReplayConfig) -> "HandmadePool":
        return cls(config)

    # -- section 1: the pool ---------------------------------------------------------------------

    def over(self) -> bool:
        """LIFE-ALLOC-3: resident and held blocks number more than ``capacity``."""
        return len(self.blocks) + self.held > self.capacity

    def full(self) -> bool:
        """LIFE-DECODE-1: no slot is free."""
        return len(self.blocks) + self.held >= self.capacity

    def referenced(self) -> int:
        """LIFE-POOL-2: the resident blocks whose reference count is above 0."""
        return sum(block.refs > 0 for block in self.blocks.values())

    def evictable(self, h: int) -> bool:
        """LIFE-POOL-2: a resident block no running request references."""
        return self.blocks[h].refs == 0

    def usable(self, h: int) -> bool:
        """LIFE-POOL-3: resident and computed."""
        return h in self.blocks and self.blocks[h].computed

    def in_use(self) -> bool:
        """LIFE-ALLOC-4: some block is held or referenced."""
        return self.held > 0 or self.referenced() > 0

    def tokens(self, k: int, input_length: int) -> int:
        """REPLAY-HIT-1: min(k × block_size, L)."""
        return min(k * self.block_size, input_length)

    # -- section 2: a request's life -------------------------------------------------------------

    def request(self, rid: int, *phases: str) -> Request:
        """PROTO-36: the request in flight, in one of the ``phases`` that allow the operation."""
        request = self.requests.get(rid)
        phase = "not in flight" if request is None else self.phase(request)
        if request is None or phase not in phases:
            raise KvspecError(f"PROTO-36: request {rid} is {phase}, where the operation needs it {' or '.join(phases)}")
        return request

    def phase(self, request: Request) -> str:
        """Section 2: a request waits, runs, or runs with all its blocks computed (LIFE-DECODE-1, LIFE-FINISH-1)."""
        if not request.running:
            return "waiting"
        return "computed" if request.computed == len(request.hash_ids) else "running"

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-ARRIVE-1: the request waits; nothing of the cache changes."""
        if rid in self.requests:
            raise KvspecError(f"PROTO-36: request {rid} is in flight already")
        self.requests[rid] = Request(list(hash_ids), input_length)

    def lookup(self, rid: int) -> int:
        """LIFE-LOOKUP-1: the longest prefix of usable blocks; a block not computed is no hit."""
        return self.hit_blocks(self.request(rid, "waiting"))

    def hit_blocks(self, request: Request) -> int:
        """REPLAY-PREFIX-1, REPLAY-PREFIX-2 with "usable" for "resident" (LIFE-LOOKUP-1)."""
        k = 0
        while k < len(request.hash_ids) and self.usable(request.hash_ids[k]):
            k += 1
        return k

    def blocks_to_fit(self, request: Request) -> set[int]:
        """LIFE-ALLOC-4: its blocks that no other request references, each once, resident or not."""
        return {h for h in request.hash_ids if not (h in self.blocks and self.blocks[h].refs > 0)}

    def fits(self, request: Request) -> bool:
        """LIFE-ALLOC-4: its blocks fit beside the held and referenced ones, or nothing is in use."""
        return len(self.blocks_to_fit(request)) <= self.capacity - self.held - self.referenced() or not self.in_use()

    def allocate(self, rid: int) -> bool:
        """LIFE-ALLOC-1 to LIFE-ALLOC-4: refused, nothing changes; made, the hits are counted, every
        block accessed, the resident ones referenced, and the request runs."""
        request = self.request(rid, "waiting")
        if not self.fits(request):
            return False
        k = self.hit_blocks(request)
        self.count_hits(request, k)
        self.access_blocks(request)
        self.reference_blocks(request)
        request.running = True
        return True

    def count_hits(self, request: Request, k: int) -> None:
        """LIFE-HIT-1 at its first allocation made, once; LIFE-HIT-2 at each resumed one."""
        if not request.allocated:
            request.hit_tokens = self.tokens(k, request.input_length)
        else:
            assert request.computed_when_preempted is not None
            computed = self.tokens(request.computed_when_preempted, request.input_length)
            request.recomputed_tokens += self.recomputed(computed, self.tokens(k, request.input_length))
        request.allocated = True

    def recomputed(self, computed_tokens: int, hit_tokens: int) -> int:
        """LIFE-HIT-2: the tokens it had computed that its resumed lookup does not find, never below 0."""
        return max(0, computed_tokens - hit_tokens)

    def access_blocks(self, request: Request) -> None:
        """LIFE-ALLOC-1: every block, in order (REPLAY-ACCESS-1); one the policy does not admit is
        held (LIFE-ALLOC-3), and a later access of it leaves it held; after each access, slots are
        freed while the pool is over."""
        for h in request.hash_ids:
            if h not in request.held and not self.access(h):
                self.hold(request, h)
            while self.over():
                self.free_slot()

    def hold(self, request: Request, h: int) -> None:
        """LIFE-ALLOC-3: the block takes a slot outside the cache, once however often it is named."""
        request.held.add(h)
        self.held += 1

    def reference_blocks(self, request: Request) -> None:
        """LIFE-ALLOC-2: each of its blocks that is resident, once however often it names it."""
        for h in set(request.hash_ids):
            if h in self.blocks:
                self.blocks[h].refs += 1
                request.referenced.add(h)

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-COMPUTE-1: its blocks from the first it has not computed to ``upto`` (exclusive);
        each it references becomes computed."""
        request = self.request(rid, "running")
        if not request.computed < upto <= len(request.hash_ids):
            raise KvspecError(f"PROTO-36: compute of request {rid} up to {upto}, past {request.computed}, at most {len(request.hash_ids)}")
        for h in request.hash_ids[request.computed:upto]:
            if self.computes(request, h):
                self.blocks[h].computed = True
        request.computed = upto

    def computes(self, request: Request, h: int) -> bool:
        """LIFE-COMPUTE-1: a block it does not reference is not its to compute."""
        return h in request.referenced

    def decode(self, rid: int) -> bool:
        """LIFE-DECODE-1: a held block, a slot freed first when the pool is full; refused, changing
        nothing, when the pool is full and every resident block is referenced."""
        request = self.request(rid, "computed")
        if self.full():
            if all(block.refs > 0 for block in self.blocks.values()):
                return False
            self.free_slot()
        request.decoded += 1
        self.held += 1
        return True

    def finish(self, rid: int) -> Request:
        """LIFE-FINISH-1: it drops its references and frees its held blocks; its blocks stay resident
        and computed. Its id is free again (PROTO-42)."""
        request = self.request(rid, "computed")
        self.drop_references(request)
        self.free_held(request)
        del self.requests[rid]
        return request

    def preempt(self, rid: int) -> None:
        """LIFE-PREEMPT-1: it drops its references and frees its held blocks; each block it referenced
        that is not computed and no running request references is removed (LIFE-EVICT-3); it waits
        again, its blocks computed kept for LIFE-HIT-2."""
        request = self.request(rid, "running", "computed")
        referenced = [h for h in request.hash_ids if h in request.referenced]
        self.drop_references(request)
        self.free_held(request)
        for h in dict.fromkeys(referenced):
            if not self.blocks[h].computed and self.evictable(h):
                self.remove(h)
        request.running = False
        request.computed_when_preempted = request.computed
        request.computed = 0

    def drop_references(self, request: Request) -> None:
        """LIFE-FINISH-1, LIFE-PREEMPT-1: each count it holds lowered by one, not cleared (LIFE-POOL-2)."""
        for h in request.referenced:
            self.blocks[h].refs -= 1
        request.referenced = set()

    def free_held(self, request: Request) -> None:
        """LIFE-FINISH-1, LIFE-PREEMPT-1: the blocks it holds, its decoding's among them, free their slots."""
        self.held -= len(request.held) + request.decoded
        request.held, request.decoded = set(), 0

    # -- section 3: references and eviction ------------------------------------------------------

    def queue_of(self, h: int) -> list[int]:
        return self.small if self.blocks[h].queue == "S" else self.main

    def evict(self, h: int) -> None:
        """LIFE-EVICT-2: the block leaves the cache as the policy's eviction makes it leave (S3FIFO's
        to G, S3-ADMIT-S-3, S3-ADMIT-M-3)."""
        self.take_out(h)
        if self.policy == "s3fifo":
            self.to_ghost(h)

    def remove(self, h: int) -> None:
        """LIFE-EVICT-3: a block removed at a preemption was not evicted: it goes into no ghost."""
        self.take_out(h)

    def take_out(self, h: int) -> None:
        """LIFE-EVICT-2, LIFE-EVICT-3: out of the policy's queues and out of the cache."""
        self.queue_of(h).remove(h)
        del self.blocks[h]

    def victim(self, queue: list[int]) -> int | None:
        """LRU-LIFE-1, LRU-LIFE-2, FIFO-LIFE-1, FIFO-LIFE-2, S3-LIFE-4: the evictable hash nearest
        the head, passing over the referenced ones where they stand (LIFE-EVICT-1)."""
        return next((h for h in queue if self.evictable(h)), None)

    def free_slot(self) -> None:
        """LIFE-EVICT-2: one evictable block leaves, the victim of the policy's rule for it. Under
        S3FIFO (S3-LIFE-4), M's drain, and when it evicts nothing (its chances spent stay spent) S's
        evictable entry nearest the head, to G."""
        if self.policy == "s3fifo" and self.drain_main():
            return
        h = self.victim(self.small if self.policy == "s3fifo" else self.main)
        assert h is not None, "LIFE-ALLOC-4: a pool over its capacity has an evictable block"
        self.evict(h)

    def access(self, h: int) -> bool:
        """REPLAY-ACCESS-1 by the policy's rules and section 3's: whether the block is resident after
        it (False: the policy did not admit it, LIFE-ALLOC-3)."""
        if self.policy == "lru":
            return self.lru_access(h)
        if self.policy == "fifo":
            return self.fifo_access(h)
        return self.s3fifo_access(h)

    def lru_access(self, h: int) -> bool:
        """LRU-ACCESS-1: a resident hash is requeued at the tail; LRU-EVICT-1 with LRU-LIFE-1, LRU-ADMIT-1."""
        if h in self.blocks:
            self.main.remove(h)
            self.main.append(h)
            return True
        return self.admit_to_queue(h)

    def fifo_access(self, h: int) -> bool:
        """FIFO-ACCESS-1: a resident hash changes nothing; FIFO-EVICT-1 with FIFO-LIFE-1, FIFO-ADMIT-1."""
        return h in self.blocks or self.admit_to_queue(h)

    def admit_to_queue(self, h: int) -> bool:
        """LRU-LIFE-1, FIFO-LIFE-1: a full queue evicts its evictable hash nearest the head, and when
        every hash is referenced admits nothing; then the hash is appended (LRU-ADMIT-1, FIFO-ADMIT-1)."""
        if len(self.main) >= self.capacity:
            h_out = self.victim(self.main)
            if h_out is None:
                return False
            self.evict(h_out)
        self.main.append(h)
        self.blocks[h] = Block("Q")
        return True

    def s3fifo_access(self, h: int) -> bool:
        """S3-ACCESS-1 to S3-ACCESS-4; a ghost hit M does not admit leaves G and is not admitted (S3-LIFE-3)."""
        if h in self.blocks:
            self.blocks[h].freq = min(self.blocks[h].freq + 1, self.max_freq)  # S3-FREQ-2
            return True
        if h in self.ghost:
            self.ghost.remove(h)
            return self.admit_to_main(h, Block("M"))
        return self.admit_to_small(h)

    def admit_to_main(self, h: int, block: Block) -> bool:
        """S3-ADMIT-M-1 to S3-ADMIT-M-4: M's drain while M is full, then the entry at M's tail;
        not admitted when the drain evicts nothing (S3-LIFE-2)."""
        if len(self.main) >= self.main_cap and not self.drain_main():
            return False
        block.queue = "M"
        self.blocks[h] = block
        self.main.append(h)
        return True

    def drain_main(self) -> bool:
        """M's drain (S3-ADMIT-M-1 to S3-ADMIT-M-3, S3-LIFE-2): a head at freq 1 or more spends a chance
        and is requeued, referenced or not; a referenced entry at freq 0 is passed over where it stands;
        the first evictable entry at freq 0 goes to G. False when every entry left is referenced at freq 0."""
        i = 0
        while i < len(self.main):
            h = self.main[i]
            block = self.blocks[h]
            if self.passed_over(block):
                i += 1
            elif block.freq >= 1:
                del self.main[i]
                block.freq -= 1
                self.main.append(h)
            else:
                self.evict(h)
                return True
        return False

    def passed_over(self, block: Block) -> bool:
        """S3-LIFE-2: M's drain passes over a referenced entry at freq 0 alone; one at freq 1 or more
        spends its chance, referenced or not."""
        return block.refs > 0 and block.freq == 0

    def admit_to_small(self, h: int) -> bool:
        """S3-ADMIT-S-1 to S3-ADMIT-S-4: S's drain, then h at S's tail with freq 0; not admitted when
        no entry can leave S (S3-LIFE-3)."""
        if not self.drain_small():
            return False
        self.small.append(h)
        self.blocks[h] = Block("S")
        return True

    def drain_small(self) -> bool:
        """S's drain while |S| ≥ small_cap (S3-ADMIT-S-1): an entry at freq 1 or more (S3-ADMIT-S-2),
        or referenced at freq 0 (S3-LIFE-1), goes to M; one M does not admit goes to G if evictable
        and keeps its place if referenced (S3-LIFE-3); an evictable entry at freq 0 goes to G
        (S3-ADMIT-S-3). False when no entry can leave S."""
        i = 0
        while len(self.small) >= self.small_cap:
            if i == len(self.small):
                return False
            h = self.small[i]
            block = self.blocks[h]
            if self.goes_to_main(block) and self.admit_to_main(h, block):
                del self.small[i]
            elif block.refs > 0:
                i += 1
            else:
                self.evict(h)
        return True

    def goes_to_main(self, block: Block) -> bool:
        """S3-ADMIT-S-2: an entry of S at freq 1 or more goes to M; S3-LIFE-1: so does a referenced one
        at freq 0, which S3-ADMIT-S-3 would send to G: in use, it may not leave the cache."""
        return block.freq >= 1 or block.refs > 0

    def to_ghost(self, h: int) -> None:
        """S3-GHOST-1 to S3-GHOST-3."""
        if h in self.ghost:
            self.ghost.remove(h)
        elif len(self.ghost) >= self.ghost_cap:
            del self.ghost[0]
        self.ghost.append(h)

    # -- the pool as FIX-18 and PROTO-44 show it -------------------------------------------------

    def lifecycle_state(self) -> LifecycleState:
        """PROTO-44: the queues head first as (hash, freq) (LRU's and FIFO's at freq 0), the ghost,
        the reference counts above 0 and the blocks not computed in ascending hash order, the held count."""
        return LifecycleState(
            small=tuple((h, self.blocks[h].freq) for h in self.small),
            main=tuple((h, self.blocks[h].freq) for h in self.main),
            ghost=tuple(self.ghost),
            refs=tuple(sorted((h, block.refs) for h, block in self.blocks.items() if block.refs > 0)),
            pending=tuple(sorted(h for h, block in self.blocks.items() if not block.computed)),
            held=self.held,
        )

    def state(self) -> dict[str, Any]:
        """FIX-18: a lifecycle case's ``state``, as PROTO-44's reply carries it."""
        return lifecycle_state_json(self.lifecycle_state())


class PoolAdapter(ReferenceAdapter):
    """The reference behind the Adapter interface, with ``pool_class``'s pool for the lifecycle (PROTO-35)."""

    def __init__(self, pool_class: type[HandmadePool], name: str, level: Level = "state") -> None:
        super().__init__(pool_factory=pool_class.empty)
        self.identity = Identity(name=f"handmade-lifecycle-{name}", language="python", version=SPEC_VERSION)
        self.level = level

    def lifecycle_state(self) -> LifecycleState:
        """PROTO-44: read from the handmade pool's own fields."""
        return self.pool().lifecycle_state()  # type: ignore[no-any-return]


def pool() -> PoolAdapter:
    return PoolAdapter(HandmadePool, "pool")


def pool_results() -> PoolAdapter:
    return PoolAdapter(HandmadePool, "pool", level="results")
