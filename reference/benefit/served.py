"""spec/lifecycle.md section 7: the benefit policy's prefix cache (spec/benefit.md section 20) served
as a server runs a trace, with requests in flight, by the server of section 6 (reference/serve.py).

A BenefitPool is a Pool (reference/lifecycle.py) whose cache is the policy's ledger: its resident
blocks are the ledger's segments, and the blocks a running request computes that the ledger does
not hold are the request's own, held outside the cache (LIFE-BEN-1). The policy selects; the pool
removes (BEN-REMOVE-1), passing as ``pinned`` entries that hold every block a running request
references (LIFE-BEN-4). Pinned-never-evicted and computed-before-hit are its contracts.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..contracts import ensure, require
from ..errors import ConfigError, KvspecError
from ..lifecycle import Pool, Request, drop_counts
from ..replay import ReplayConfig
from ..request import prefix_hit_blocks
from ..serve import Server
from ..service import Served, ServedRequest, ServiceModel
from ..trace import Request as TraceRequest
from .config import BenefitConfig
from .model import Model
from .policy import BenefitPolicy
from .prefix import prefix_config, segment_id


@dataclass(slots=True, eq=False)
class LedgerView:
    """What the server reads of a pool's cache (reference/serve.py): the reference counts, residency and
    the resident count, over the policy's ledger (LIFE-BEN-1)."""

    policy: BenefitPolicy
    refs: dict[int, int] = field(default_factory=dict)  # LIFE-POOL-2: a block's count, present only while above 0
    computing: dict[int, int] = field(default_factory=dict)  # the blocks running requests hold to compute, and how many hold each

    def is_resident(self, h: int) -> bool:
        """Resident for LIFE-SERVE-7's uncomputed tokens: in the ledger, or being computed by a running
        request (LIFE-BEN-2: a lookup finds only the first)."""
        return h in self.policy.ledger or h in self.computing

    def resident_count(self) -> int:
        """LIFE-BEN-1: the ledger's segments, one slot each."""
        return len(self.policy.ledger)


def referenced_in_ledger(pool: "BenefitPool") -> bool:
    """LIFE-BEN-4, LIFE-EVICT-1: every block a running request references is in the ledger."""
    return all(h in pool.policy.policy.ledger for h in pool.policy.refs)


def within_pool(pool: "BenefitPool") -> bool:
    """LIFE-BEN-1: resident plus held blocks within the capacity, but while one request runs alone (LIFE-BEN-3)."""
    running = sum(1 for request in pool.requests.values() if request.running)
    return running <= 1 or pool.policy.resident_count() + pool.held <= pool.capacity


@dataclass(slots=True, eq=False)
class BenefitPool(Pool):
    """LIFE-BEN-1: ``capacity`` slots (⌊capacity_bytes / block bytes⌋), the benefit policy's ledger and the requests in flight."""

    capacity_bytes: int = 0
    model: Model = field(default_factory=Model)

    @classmethod
    def of(cls, capacity_bytes: int, block_size: int, model: Model,
           policy_class: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> "BenefitPool":
        """LIFE-BEN-1, BEN-PREFIX-5: an empty pool; a capacity that holds no block is refused (BEN-PREFIX-6)."""
        size = model.block_bytes(block_size)
        if capacity_bytes // size < 1:
            raise ConfigError("LIFE-BEN-1", f"a capacity of {capacity_bytes} bytes holds no {size}-byte block")
        view = LedgerView(policy_class(prefix_config(capacity_bytes)))
        return cls(view, capacity_bytes // size, block_size, capacity_bytes=capacity_bytes, model=model)  # type: ignore[arg-type]

    @property
    def benefit(self) -> BenefitPolicy:
        return self.policy.policy  # type: ignore[attr-defined]

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-ARRIVE-1; its blocks as segment ids (BEN-PREFIX-1)."""
        if rid in self.requests:
            raise KvspecError(f"LIFE-ARRIVE-1: request {rid} is in flight already; a request in flight has an id of its own")
        self.requests[rid] = Request([segment_id(h) for h in hash_ids], input_length)

    @ensure(lambda self, rid, result: all(h in self.benefit.ledger for h in self.requests[rid].blocks[:result]),
            "LIFE-BEN-2, LIFE-INV-2: every hit block is in the ledger, and so computed")
    def lookup(self, rid: int) -> int:
        """LIFE-BEN-2: BEN-PREFIX-2's k, the longest prefix in the ledger; it changes nothing."""
        return prefix_hit_blocks(self.waiting(rid).blocks, self.benefit.ledger.__contains__)

    def pinned(self, hits: Iterable[int] = ()) -> frozenset[int]:
        """LIFE-BEN-4: for each running request (and the ``hits`` of the allocation making room), from its last
        referenced block back, an entry that holds each block no entry chosen so far holds: the one keyed by the
        block, or else the first that references it."""
        entries, ledger = self.benefit.entries, self.benefit.ledger
        pinned: set[int] = set()
        covered: set[int] = set()
        for referenced in [*(request.referenced for request in self.requests.values()), list(hits)]:
            for h in reversed(referenced):
                if h not in covered:
                    key = h if h in entries else next(iter(ledger[h].refs))
                    pinned.add(key)
                    covered.update(entries[key].segments)
        return frozenset(pinned)

    def over(self, slots: int) -> int:
        """The bytes by which resident and held blocks, and ``slots`` more, exceed the capacity (LIFE-BEN-1)."""
        return self.benefit.held + (self.held + slots) * self.model.block_bytes(self.block_size) - self.capacity_bytes

    @ensure(lambda self, result: referenced_in_ledger(self), "LIFE-BEN-4: a referenced block is never a victim")
    def make_room(self, slots: int, hits: Iterable[int] = ()) -> bool:  # type: ignore[override]
        """LIFE-BEN-5: room for ``slots`` more blocks, all or nothing: choose_victims with the pinned entries (those
        of an allocation's own ``hits`` among them, LIFE-BEN-3), and its victims removed only if they free enough."""
        to_free = self.over(slots)
        if to_free <= 0:
            return True
        pinned = self.pinned(hits)
        victims = self.benefit.choose_victims(to_free, pinned)
        if victims.freed < to_free:
            return False  # LIFE-BEN-5: nothing changes
        for victim in victims.keys:
            self.benefit.remove(victim, pinned)
        return True

    @require(lambda self: within_pool(self), "LIFE-BEN-1")
    @ensure(lambda self: within_pool(self) and referenced_in_ledger(self), "LIFE-BEN-1, LIFE-BEN-4")
    def allocate(self, rid: int) -> bool:
        """LIFE-BEN-3: hits recorded (BEN-PREFIX-3), the hit blocks referenced, the others held to be computed;
        room made for them beside other requests, or none made when nothing is in use."""
        request = self.waiting(rid)
        k = self.lookup(rid)
        hits = dict.fromkeys(request.blocks[:k])
        new = [h for h in dict.fromkeys(request.blocks) if h not in hits]
        in_use = self.held or self.policy.refs
        if in_use and not self.make_room(len(new), hits):
            return False  # LIFE-BEN-3, LIFE-ALLOC-4: refused, nothing changes, no hit counted (LIFE-HIT-1)
        self.count_hits(request, k)
        request.hit_blocks = k
        self.record_hits(request, k)
        view = self.policy
        for h in dict.fromkeys(request.blocks):  # LIFE-ALLOC-2: each block once
            if h in hits:
                request.referenced.append(h)
                view.refs[h] = view.refs.get(h, 0) + 1
            else:
                request.held_blocks.add(h)
                view.computing[h] = view.computing.get(h, 0) + 1
        request.held += len(request.held_blocks)
        self.held += len(request.held_blocks)
        request.running = True
        return True

    def record_hits(self, request: Request, k: int) -> None:
        """BEN-PREFIX-3 at the allocation made (LIFE-BEN-3): each prefix state the request reuses counts a hit."""
        for j in range(k):
            if request.blocks[j] in self.benefit.entries:
                self.benefit.record_hit(request.blocks[j], self.model.cost_of_prefix(j + 1, self.block_size, request.input_length))

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-COMPUTE-1: blocks [computed, upto) computed; they enter the ledger only with the request's state (LIFE-BEN-6)."""
        request = self.running(rid)
        if not request.computed < upto <= len(request.blocks):
            raise KvspecError(f"LIFE-COMPUTE-1: request {rid} has computed {request.computed} of its {len(request.blocks)} blocks; "
                              f"a step computes from the first not computed, to {upto}")
        request.computed = upto

    @ensure(lambda self: within_pool(self) and referenced_in_ledger(self), "LIFE-BEN-1, LIFE-BEN-4")
    def decode(self, rid: int) -> bool:
        """LIFE-BEN-5, LIFE-DECODE-1: one more held block, after room is made for it; refused, changing nothing, when none can be."""
        request = self.computed_all(rid, "LIFE-DECODE-1")
        if not self.make_room(1):
            return False
        request.held += 1
        self.held += 1
        return True

    @ensure(lambda self: within_pool(self) and referenced_in_ledger(self), "LIFE-BEN-1, LIFE-BEN-4")
    def finish(self, rid: int) -> Request:
        """LIFE-FINISH-1, then LIFE-BEN-6: the request's prefix state offered."""
        request = self.computed_all(rid, "LIFE-FINISH-1")
        self.release(request)
        self.offer(request)
        return self.requests.pop(rid)

    @require(lambda request: request.computed == len(request.blocks), "LIFE-BEN-6: a state is offered once its blocks are computed")
    @ensure(lambda self: referenced_in_ledger(self), "LIFE-BEN-4: a referenced block is never a victim")
    def offer(self, request: Request) -> None:
        """LIFE-BEN-6: BEN-PREFIX-4 with the pinned entries of LIFE-BEN-4, and the loop on the pool's bytes (LIFE-BEN-1)."""
        blocks, policy, size = request.blocks, self.benefit, self.model.block_bytes(self.block_size)
        full = request.input_length // self.block_size  # BEN-PREFIX-1: only full blocks are kept
        if full == 0 or blocks[full - 1] in policy.entries:
            return
        pinned = self.pinned()
        cost = self.model.cost_of_prefix(full, self.block_size, request.input_length)
        decision = policy.consider_admission(blocks[full - 1], 0, [(block, size) for block in blocks[:full]], cost, pinned)
        for victim in decision.cap.victims if decision.cap is not None else ():
            policy.remove(victim, pinned)
        while (to_free := self.over(0)) > 0:
            victims = policy.choose_victims(to_free, pinned).keys
            if not victims:
                break  # LIFE-BEN-6: what is pinned stays, until an offer after the requests using it end
            for victim in victims:
                policy.remove(victim, pinned)

    @ensure(lambda self: referenced_in_ledger(self), "LIFE-BEN-4")
    def preempt(self, rid: int) -> None:
        """LIFE-BEN-7, LIFE-PREEMPT-1: as finish, without an offer: the blocks it computed were its own, and none is in the ledger."""
        request = self.running(rid)
        self.release(request)
        request.computed_before, request.computed, request.running = request.computed, 0, False

    def release(self, request: Request) -> None:
        """LIFE-FINISH-1, LIFE-PREEMPT-1: its references dropped, the blocks it held to compute no longer held by it."""
        drop_counts(self.policy.computing, request.held_blocks)
        Pool.release(self, request)


def served_benefit(records: Iterable[tuple[int, TraceRequest]], capacity_bytes: int, service: ServiceModel, *, block_size: int = 512,
                   path: str = "<trace>", add: Callable[[ServedRequest], None] | None = None,
                   policy_class: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> Served:
    """LIFE-BEN-1 to LIFE-BEN-8: the trace served by section 6's server over the benefit policy's prefix cache at
    ``capacity_bytes`` (the reference's policy, or another with its operations that ``policy_class`` builds)."""
    pool = BenefitPool.of(capacity_bytes, block_size, service.model, policy_class)
    return BenefitServer(pool, service, add).serve(records, path)


class BenefitServer(Server):
    """Section 6's server over a BenefitPool (LIFE-BEN-1): its result names the benefit policy."""

    def __init__(self, pool: BenefitPool, service: ServiceModel, add: Callable[[ServedRequest], None] | None) -> None:
        self.benefit_pool = pool
        super().__init__(ReplayConfig("lru", pool.capacity, pool.block_size), service, add)
        self.result.policy = "benefit"

    def empty_pool(self, config: ReplayConfig) -> Pool:
        return self.benefit_pool
