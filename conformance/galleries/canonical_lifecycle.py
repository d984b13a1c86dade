"""The correct pool the lifecycle gallery (lifecycle_mutants.py) overrides: requests in flight in one
pool of blocks under S3FIFO, LRU and FIFO, written from spec/lifecycle.md's text alone.

``CanonicalPool`` has the reference Pool's operations (reference/lifecycle.py), with the same
names and arguments: ``empty(config)``, ``arrive``, ``lookup``, ``allocate``, ``compute``,
``decode``, ``finish`` and ``preempt``; ``state()`` gives the pool in the form of a lifecycle case's
``state`` (spec/fixtures.md FIX-18). It does not use the reference's pool or policies (only its
configuration type and error), so that agreeing with the reference means something, and it is
built from small methods so that each mutant overrides the smallest piece that makes its mistake.

Its queues are OrderedDicts, head first: LRU's and FIFO's one queue in ``main`` (hash -> 0), and
S3FIFO's S and M (hash -> freq) and G (hash -> None).
"""

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from kvspec.reference import ReplayConfig
from kvspec.reference.errors import KvspecError


@dataclass
class Flight:
    """A request in flight (spec/lifecycle.md section 2), and what section 4 has counted for it."""

    blocks: list[int]
    input_length: int
    running: bool = False
    computed: int = 0  # LIFE-COMPUTE-1: its blocks before this index are computed
    referenced: list[int] = field(default_factory=list)  # LIFE-ALLOC-2: each block it references, once
    held_ids: set[int] = field(default_factory=set)  # LIFE-ALLOC-3: the blocks it holds outside the cache
    held: int = 0  # LIFE-ALLOC-3 and LIFE-DECODE-1: every block it holds, its decoded ones too
    allocated_once: bool = False  # LIFE-HIT-1: whether an allocation of it was made
    hit_tokens: int = 0  # LIFE-HIT-1
    recomputed_tokens: int = 0  # LIFE-HIT-2
    computed_when_preempted: int = 0  # LIFE-HIT-2's c


class CanonicalPool:
    """A plain, correct pool of requests in flight (spec/lifecycle.md sections 1 to 4)."""

    name = "canonical"
    mistake = ""  # a mutant's: the engine's bug, in a few words
    report = ""  # a mutant's: the report it comes from (repository #number "title")
    breaks = ""  # a mutant's: the clause its mistake breaks

    def __init__(self, config: ReplayConfig) -> None:
        if config.policy not in ("s3fifo", "lru", "fifo"):
            raise KvspecError(f"REPLAY-CONF-3: unknown policy {config.policy!r}")
        self.policy, self.capacity, self.block_size, self.max_freq = config.policy, config.capacity, config.block_size, config.max_freq
        self.small_cap = round(config.capacity * config.small_ratio) if config.policy == "s3fifo" else 0  # S3-CONF-2
        self.main_cap = config.capacity - self.small_cap  # S3-CONF-3
        self.ghost_cap = self.main_cap  # S3-CONF-4
        self.small: OrderedDict[int, int] = OrderedDict()
        self.main: OrderedDict[int, int] = OrderedDict()
        self.ghost: OrderedDict[int, None] = OrderedDict()
        self.refs: dict[int, int] = {}  # LIFE-POOL-2: each referenced block's count, present only above 0
        self.uncomputed: set[int] = set()  # LIFE-POOL-3: the resident blocks not computed
        self.requests: dict[int, Flight] = {}

    @classmethod
    def empty(cls, config: ReplayConfig) -> "CanonicalPool":
        """An empty pool of the configuration's policy (LIFE-POOL-1)."""
        return cls(config)

    # -- reading the pool -------------------------------------------------------------------------

    def is_resident(self, h: int) -> bool:
        """LIFE-POOL-1: in S or M (S3FIFO's G holds hashes alone), or in LRU's or FIFO's queue."""
        return h in self.small or h in self.main

    def resident(self) -> int:
        return len(self.small) + len(self.main)

    def held(self) -> int:
        """LIFE-POOL-1: the blocks the requests hold outside the cache."""
        return sum(request.held for request in self.requests.values())

    def over(self) -> bool:
        """LIFE-POOL-1: resident plus held blocks above the capacity."""
        return self.resident() + self.held() > self.capacity

    def usable(self, h: int) -> bool:
        """LIFE-POOL-3: resident and computed."""
        return self.is_resident(h) and h not in self.uncomputed

    def evictable(self, h: int) -> bool:
        """LIFE-POOL-2: a resident block no running request references."""
        return h not in self.refs

    def tokens(self, k: int, input_length: int) -> int:
        """LIFE-HIT-1 by REPLAY-HIT-1: min(k × block_size, input_length)."""
        return min(k * self.block_size, input_length)

    def state(self) -> dict[str, Any]:
        """FIX-18's ``state``: every queue head first ([hash, freq]; LRU's and FIFO's in main at freq
        0), the reference counts and the blocks not computed by hash id, and the held count."""
        return {"small": [[h, f] for h, f in self.small.items()], "main": [[h, f] for h, f in self.main.items()],
                "ghost": list(self.ghost), "refs": [[h, n] for h, n in sorted(self.refs.items())],
                "pending": sorted(self.uncomputed), "held": self.held()}

    # -- the requests' states ---------------------------------------------------------------------

    def flight(self, rid: int, running: bool, clause: str) -> Flight:
        request = self.requests.get(rid)
        if request is None or request.running != running:
            raise KvspecError(f"{clause}: request {rid} is not {'running' if running else 'waiting'}")
        return request

    def done(self, rid: int, clause: str) -> Flight:
        """A running request that has computed all its blocks (LIFE-DECODE-1, LIFE-FINISH-1)."""
        request = self.flight(rid, True, clause)
        if request.computed < len(request.blocks):
            raise KvspecError(f"{clause}: request {rid} has not computed all its blocks")
        return request

    # -- section 2: a request's life --------------------------------------------------------------

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-ARRIVE-1: it waits; the cache does not change."""
        if rid in self.requests:
            raise KvspecError(f"LIFE-ARRIVE-1: request {rid} is in flight already")
        if not hash_ids or input_length < 1:
            raise KvspecError("REPLAY-TRACE-2: a request has at least one block and at least one token")
        self.requests[rid] = Flight(list(hash_ids), input_length)

    def lookup(self, rid: int) -> int:
        """LIFE-LOOKUP-1: the longest prefix of usable blocks (REPLAY-PREFIX-1 to REPLAY-PREFIX-3)."""
        k = 0
        for h in self.flight(rid, False, "LIFE-LOOKUP-1").blocks:
            if not self.usable(h):
                break
            k += 1
        return k

    def fits(self, request: Flight) -> bool:
        """LIFE-ALLOC-4: nothing in use, or the request's blocks no other request references (each
        once) within the capacity less the held and the referenced blocks."""
        if not self.refs and not self.held():
            return True
        own = {h for h in request.blocks if h not in self.refs}
        return len(own) <= self.capacity - self.held() - len(self.refs)

    def allocate(self, rid: int) -> bool:
        """LIFE-ALLOC-1 to LIFE-ALLOC-4, with LIFE-HIT-1 and LIFE-HIT-2 counted when it is made."""
        request = self.flight(rid, False, "LIFE-ALLOC-1")
        k = self.lookup(rid)
        if not self.fits(request):
            self.refused(request, k)
            return False
        self.count_hits(request, k)
        for h in request.blocks:
            self.access_for(request, h)
        for h in self.blocks_to_reference(request, k):
            self.reference(request, h)
        request.running = True
        return True

    def refused(self, request: Flight, k: int) -> None:
        """LIFE-ALLOC-4, LIFE-HIT-1: a refused allocation changes nothing and counts nothing."""

    def count_hits(self, request: Flight, k: int) -> None:
        """LIFE-HIT-1 at the first allocation made; LIFE-HIT-2 at a resumed one."""
        if not request.allocated_once:
            request.allocated_once = True
            request.hit_tokens += self.tokens(k, request.input_length)
        else:
            before = self.tokens(request.computed_when_preempted, request.input_length)
            request.recomputed_tokens += max(0, before - self.tokens(k, request.input_length))

    def access_for(self, request: Flight, h: int) -> None:
        """LIFE-ALLOC-1 and LIFE-ALLOC-3: one access of the allocation; a block not admitted is held;
        then slots are freed while the pool is over."""
        if h in request.held_ids:
            return  # LIFE-ALLOC-3: held once; a later access leaves it held
        was_resident = self.is_resident(h)
        self.access(h)
        if not was_resident:
            if self.is_resident(h):
                self.uncomputed.add(h)  # LIFE-ALLOC-1: admitted, not computed
            else:
                request.held_ids.add(h)  # LIFE-ALLOC-3
                request.held += 1
        while self.over():
            self.free_slot()

    def blocks_to_reference(self, request: Flight, k: int) -> list[int]:
        """LIFE-ALLOC-2: each of its blocks that is resident, once however often it names it (the
        first k, its hits, among them)."""
        return [h for h in dict.fromkeys(request.blocks) if self.is_resident(h)]

    def reference(self, request: Flight, h: int) -> None:
        """LIFE-ALLOC-2, LIFE-POOL-2: one more running request references h."""
        request.referenced.append(h)
        self.refs[h] = self.refs.get(h, 0) + 1

    def unreference(self, h: int) -> None:
        """LIFE-FINISH-1, LIFE-POOL-2: one running request fewer references h; at none it is evictable."""
        self.refs[h] -= 1
        if self.refs[h] == 0:
            del self.refs[h]

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-COMPUTE-1: its blocks from the first not computed up to ``upto``; those it references
        become computed."""
        request = self.flight(rid, True, "LIFE-COMPUTE-1")
        if not request.computed < upto <= len(request.blocks):
            raise KvspecError(f"LIFE-COMPUTE-1: request {rid} computes from block {request.computed} to {upto}")
        for h in request.blocks[request.computed:upto]:
            if h in request.referenced:
                self.uncomputed.discard(h)
        request.computed = upto

    def decode(self, rid: int) -> bool:
        """LIFE-DECODE-1: one more held block, a slot freed first when the pool is full; refused when
        the pool is full and every resident block is referenced."""
        request = self.done(rid, "LIFE-DECODE-1")
        if self.resident() + self.held() >= self.capacity:
            if len(self.refs) == self.resident():
                return False
            self.free_slot()
        request.held += 1
        return True

    def finish(self, rid: int) -> Flight:
        """LIFE-FINISH-1: its references dropped and its held blocks freed; the request, with its hit
        and recomputed tokens."""
        request = self.done(rid, "LIFE-FINISH-1")
        for h in request.referenced:
            self.unreference(h)
        del self.requests[rid]
        return request

    def preempt(self, rid: int) -> None:
        """LIFE-PREEMPT-1: its references dropped and its held blocks freed; each block it referenced
        that is not computed and that no running request references then is removed; it waits."""
        request = self.flight(rid, True, "LIFE-PREEMPT-1")
        for h in request.referenced:
            if h in self.uncomputed and self.refs[h] == 1:
                self.release_detached(h)
            else:
                self.unreference(h)
        request.referenced, request.held_ids, request.held = [], set(), 0
        request.computed_when_preempted, request.computed, request.running = request.computed, 0, False

    def release_detached(self, h: int) -> None:
        """LIFE-PREEMPT-1, LIFE-EVICT-3: the last reference of a block no one computed is dropped, and
        the block leaves the cache: out of its queue, not into G."""
        self.unreference(h)
        self.uncomputed.discard(h)
        del (self.small if h in self.small else self.main)[h]

    # -- section 3: the policies' accesses, passing over the blocks in use ------------------------

    def access(self, h: int) -> None:
        """LIFE-ALLOC-1: the access of the pool's policy, with section 3's rules."""
        if self.policy == "lru":
            self.lru_access(h)
        elif self.policy == "fifo":
            self.fifo_access(h)
        else:
            self.s3fifo_access(h)

    def victim(self, queue: "OrderedDict[int, Any]") -> int | None:
        """LIFE-EVICT-1, LRU-LIFE-1, FIFO-LIFE-1: the evictable hash nearest the head, or None."""
        for h in queue:
            if self.evictable(h):
                return h
        return None

    def evict(self, h: int) -> None:
        """LIFE-EVICT-2: h leaves its queue, S3FIFO's S for G (S3-LIFE-4), LRU's or FIFO's for good
        (M's evictions are drain_main's); a block evicted is no longer pending (one its own
        request's allocation admitted, then evicted, LIFE-ALLOC-2)."""
        self.uncomputed.discard(h)
        if h in self.small:
            del self.small[h]
            self.to_ghost(h)
        else:
            del self.main[h]

    def admit_to_queue(self, h: int) -> None:
        """LRU-ADMIT-1, FIFO-ADMIT-1 with LRU-LIFE-1 and FIFO-LIFE-1: to a full queue only in the place
        of an evictable hash; with none, h is not admitted."""
        if len(self.main) >= self.capacity:
            victim = self.victim(self.main)
            if victim is None:
                return
            self.evict(victim)
        self.main[h] = 0

    def lru_access(self, h: int) -> None:
        """LRU-ACCESS-1 (a hit moves to the tail), else an admission."""
        if h in self.main:
            self.main.move_to_end(h)
        else:
            self.admit_to_queue(h)

    def fifo_access(self, h: int) -> None:
        """FIFO-ACCESS-1 (a hit changes nothing), else an admission."""
        if h not in self.main:
            self.admit_to_queue(h)

    def free_slot(self) -> None:
        """LIFE-EVICT-2: one evictable block leaves, by LRU-LIFE-2, FIFO-LIFE-2 or S3-LIFE-4."""
        if self.policy == "s3fifo":
            if self.drain_main():
                return
            victim = self.victim(self.small)  # S3-LIFE-4: S's evictable entry nearest the head, to G
        else:
            victim = self.victim(self.main)
        if victim is None:
            raise KvspecError("LIFE-ALLOC-4: no evictable block left to free a slot")
        self.evict(victim)

    # S3FIFO ------------------------------------------------------------------------------------

    def s3fifo_access(self, h: int) -> None:
        """S3-ACCESS-1 to S3-ACCESS-4, with S3-LIFE-3 for a ghost hit M does not admit."""
        if h in self.small:
            self.small[h] = min(self.small[h] + 1, self.max_freq)  # S3-ACCESS-1, S3-FREQ-2
        elif h in self.main:
            self.main[h] = min(self.main[h] + 1, self.max_freq)  # S3-ACCESS-2
        elif h in self.ghost:
            del self.ghost[h]  # S3-ACCESS-3: it leaves G, admitted or not (S3-LIFE-3)
            self.admit_to_main(h, 0)
        else:
            self.admit_to_small(h)  # S3-ACCESS-4

    def to_ghost(self, h: int) -> None:
        """S3-GHOST-1 to S3-GHOST-3."""
        if h in self.ghost:
            del self.ghost[h]
        elif len(self.ghost) >= self.ghost_cap:
            self.ghost.popitem(last=False)
        self.ghost[h] = None

    def drain_main(self) -> bool:
        """S3-ADMIT-M-1 to S3-ADMIT-M-3 with S3-LIFE-2: heads of freq ≥ 1 spend a chance and go to the
        tail; a referenced head at freq 0 is passed over and keeps its place; the first evictable head
        at freq 0 leaves for G. Whether one left (none does when all left are in use at freq 0)."""
        passed: list[int] = []
        left = False
        while self.main:
            h, freq = self.main.popitem(last=False)
            if freq >= 1:
                self.main[h] = freq - 1
            elif not self.evictable(h):
                passed.append(h)
            else:
                self.uncomputed.discard(h)
                self.to_ghost(h)
                left = True
                break
        for h in reversed(passed):
            self.main[h] = 0
            self.main.move_to_end(h, last=False)
        return left

    def admit_to_main(self, h: int, freq: int) -> bool:
        """S3-ADMIT-M-1 to S3-ADMIT-M-4 with S3-LIFE-2: whether h is admitted."""
        if len(self.main) >= self.main_cap and not self.drain_main():
            return False
        self.main[h] = freq
        return True

    def admit_to_small(self, h: int) -> None:
        """S3-ADMIT-S-1 to S3-ADMIT-S-4 with S3-LIFE-1 and S3-LIFE-3: S's drain pops its heads while
        it is full; an entry that may not leave the cache (in use, and M does not take it) keeps its
        place; when none can leave, h is not admitted."""
        kept: list[tuple[int, int]] = []
        while self.small and len(self.small) + len(kept) >= self.small_cap:
            victim, freq = self.small.popitem(last=False)
            if freq == 0 and self.evictable(victim):
                self.uncomputed.discard(victim)
                self.to_ghost(victim)  # S3-ADMIT-S-3
            elif self.admit_to_main(victim, freq):
                pass  # S3-ADMIT-S-2, or S3-LIFE-1: in use at freq 0, to M with freq 0
            elif self.evictable(victim):
                self.uncomputed.discard(victim)
                self.to_ghost(victim)  # S3-LIFE-3: M takes nothing, and it is not in use
            else:
                kept.append((victim, freq))  # S3-LIFE-3: in use, it keeps its place
        for victim, freq in reversed(kept):
            self.small[victim] = freq
            self.small.move_to_end(victim, last=False)
        if len(self.small) < self.small_cap:
            self.small[h] = 0  # S3-ADMIT-S-4


# -- replaying a lifecycle case, as a consumer does (spec/fixtures.md FIX-18, step 8) -------------

def config_of(case: dict[str, Any]) -> ReplayConfig:
    """A lifecycle case's configuration (PROTO-7's config)."""
    c = case["config"]
    return ReplayConfig(policy=c["policy"], capacity=c["capacity"], block_size=c["block_size"], small_ratio=c["small_ratio"],
                        max_freq=c["max_freq"])


def performed(pool: Any, step: dict[str, Any]) -> dict[str, Any]:
    """One operation of a case on ``pool`` (a pool with the reference Pool's operations: this
    module's, a mutant's, or reference/lifecycle.py's), and what it returned, as FIX-18's ``expect``
    writes it."""
    op, rid = step["op"], step["id"]
    if op == "arrive":
        pool.arrive(rid, step["hash_ids"], step["input_length"])
    elif op == "compute":
        pool.compute(rid, step["upto"])
    elif op == "preempt":
        pool.preempt(rid)
    elif op == "lookup":
        return {"k": pool.lookup(rid)}
    elif op == "finish":
        request = pool.finish(rid)
        return {"hit_tokens": request.hit_tokens, "recomputed_tokens": request.recomputed_tokens}
    else:
        return {"made": pool.allocate(rid) if op == "allocate" else pool.decode(rid)}
    return {}


def first_failure(pool_class: type[CanonicalPool], case: dict[str, Any], states: bool = True) -> str | None:
    """FIX-18, step 8: where the case's first operation whose result (or, with ``states``, state)
    differs is, or None when every one agrees. An error the pool raises on an operation the case
    allows is a failure there too."""
    pool = pool_class.empty(config_of(case))
    for number, step in enumerate(case["operations"], start=1):
        try:
            got = performed(pool, step)
        except (KvspecError, KeyError, ValueError) as error:
            return f"operation {number} ({step['op']}): {error}"
        if got != step["expect"]:
            return f"operation {number} ({step['op']}): {got} where the case expects {step['expect']}"
        if states and pool.state() != step["state"]:
            return f"operation {number} ({step['op']}): the state differs"
    return None
