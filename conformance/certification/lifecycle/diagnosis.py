"""Which lifecycle clause a difference of requests in flight breaks (spec/lifecycle.md sections 1 to 5).

A clause is named only where its broken rule explains the symptom; otherwise the diagnosis is
"consistent with" the clauses a break of any of which would. The evidence, strongest first:

1. At the state level the implementation's pool agreed with the spec's after the operation before
   (the lockstep compares them after every one), so a reply that differs is the operation's own
   rule broken, and a pool that differs after it is read against its own pool before: a block it
   referenced that it evicted (LIFE-EVICT-1), a count its allocation did not raise (LIFE-ALLOC-2),
   a reference its release kept (LIFE-FINISH-1, LIFE-PREEMPT-1) or a count that fell by more than
   one request's (LIFE-POOL-2), a block it computed or left uncomputed (LIFE-COMPUTE-1), ...
2. At the results level, the spec's pool is replayed over the operations (``History``), and the
   reply is read against what it held: hits on a block no request has computed (LIFE-LOOKUP-1), a
   block lost while a request referenced it during an eviction (LIFE-EVICT-1 and the rules that
   keep it referenced), an allocation refused after the releases the trace made, hit tokens that
   are a known wrong count of the request's own lookups (LIFE-HIT-1).
"""

from dataclasses import dataclass
from typing import Any

from kvspec.adapters.reference import pool_state
from kvspec.conformance.certification.block.diagnosis import Diagnosis, consistent, eviction_clauses, named
from kvspec.conformance.core.output import plural
from kvspec.reference.caches import pool_for
from kvspec.reference.replay import hit_tokens

Operation = tuple[Any, ...]  # (op, request id, its arguments...), as a lifecycle case lists it (FIX-18)
Json = dict[str, Any]
InFlight = Any  # lockstep.py's InFlight, which imports this module: its operations, config, dialect and the pool it showed last

# The clause of each operation's own rule (spec/lifecycle.md section 2).
OPERATION_CLAUSES = {"arrive": "LIFE-ARRIVE-1", "lookup": "LIFE-LOOKUP-1", "allocate": "LIFE-ALLOC-4", "compute": "LIFE-COMPUTE-1",
                     "decode": "LIFE-DECODE-1", "finish": "LIFE-FINISH-1", "preempt": "LIFE-PREEMPT-1"}
# The operations that release what a request holds or references, and their clauses.
RELEASES = {"finish": "LIFE-FINISH-1", "preempt": "LIFE-PREEMPT-1"}
# spec/lifecycle.md section 3's rules of each policy for blocks in use.
IN_USE_RULES = {"s3fifo": ("S3-LIFE-1", "S3-LIFE-2", "S3-LIFE-3", "S3-LIFE-4"), "lru": ("LRU-LIFE-1", "LRU-LIFE-2"),
                "fifo": ("FIFO-LIFE-1", "FIFO-LIFE-2")}
# What keeps a block in use resident: never a victim, referenced by its allocation, counted per request.
KEPT_IN_USE = ("LIFE-EVICT-1", "LIFE-ALLOC-2", "LIFE-POOL-2")


def eviction(policy: str) -> tuple[str, ...]:
    """What decides which blocks stay resident in a pool of requests in flight (LIFE-EVICT-2)."""
    return ("LIFE-EVICT-2", *IN_USE_RULES[policy], *eviction_clauses(policy))


@dataclass(frozen=True)
class Moment:
    """The spec's pool after one operation: its resident blocks, reference counts and blocks not
    computed; and for an allocation, the k its lookup found just before it and whether it was made."""

    resident: frozenset[int]
    refs: dict[int, int]
    pending: frozenset[int]
    k: int = 0
    made: bool = False


def history(flight: InFlight) -> list[Moment]:
    """The spec's pool replayed over every operation but the last: the empty pool's moment first,
    then one after each operation."""
    pool = pool_for(flight.reference_config)()
    moments = [moment(pool)]
    for operation in flight.operations[:-1]:
        op, rid, *args = operation
        k = pool.lookup(rid) if op == "allocate" else 0
        made = getattr(pool, op)(rid, *args) is True
        moments.append(moment(pool, k, made))
    return moments


def moment(pool: Any, k: int = 0, made: bool = False) -> Moment:
    state = pool_state(pool)
    return Moment(frozenset(h for h, _ in state.small + state.main), dict(state.refs), frozenset(state.pending), k, made)


def blocks_of(operations: list[Operation], rid: int) -> list[int]:
    """The hash ids of request ``rid``, from its latest arrival."""
    return next(list(op[2]) for op in reversed(operations) if op[0] == "arrive" and op[1] == rid)


def since_arrival(operations: list[Operation], rid: int) -> int:
    """The index of request ``rid``'s latest arrival."""
    return max(i for i, op in enumerate(operations) if op[0] == "arrive" and op[1] == rid)


def admitted_at(moments: list[Moment], h: int) -> int:
    """The moment block ``h`` last became resident (it is resident at the last moment)."""
    return max(i for i in range(1, len(moments)) if h in moments[i].resident and h not in moments[i - 1].resident)


def left_while_referenced(moments: list[Moment], h: int) -> bool:
    """Whether, since ``h`` was last admitted, another block left the pool (evicted, or removed by a
    preemption) while ``h`` was referenced: where an implementation that does not count ``h`` as in
    use could have let it go instead."""
    start = admitted_at(moments, h)
    return any(h in moments[i - 1].refs and moments[i - 1].resident - moments[i].resident for i in range(start + 1, len(moments)))


def removals(operations: list[Operation], moments: list[Moment]) -> tuple[str, ...]:
    """LIFE-PREEMPT-1 and LIFE-EVICT-3 where a preemption removed a block in the spec's pool: one the
    implementation keeps takes a slot, and so another block leaves."""
    removed = any(op[0] == "preempt" and moments[i].resident - moments[i + 1].resident for i, op in enumerate(operations[:-1]))
    return ("LIFE-PREEMPT-1", "LIFE-EVICT-3") if removed else ()


def computed_by_someone(operations: list[Operation], moments: list[Moment], h: int) -> bool:
    """Whether a compute since ``h`` was last admitted covered a position of ``h`` in its request."""
    start = admitted_at(moments, h)
    return any(op[0] == "compute" and h in blocks_of(operations[:i + 1], op[1])[:op[2]] for i, op in enumerate(operations[start:-1], start))


def released(operations: list[Operation]) -> tuple[str, ...]:
    """The clauses of the releases the operations made (a finish, a preemption)."""
    return tuple(dict.fromkeys(RELEASES[op[0]] for op in operations if op[0] in RELEASES))


# -- a reply that differs ---------------------------------------------------------------------------

def reply_diagnosis(flight: InFlight, expected: Json, actual: Json) -> Diagnosis:
    """The operation's reply differs from the spec's."""
    op, rid, *_ = flight.operations[-1]
    if flight.dialect:
        return consistent(OPERATION_CLAUSES[op], *eviction(flight.config.policy), evidence=f"; against the dialect {flight.dialect_name}")
    if op == "finish":
        return finish_diagnosis(flight, rid, expected, actual)
    if flight.state_level:  # its pool agreed with the spec's before the operation: the operation's own rule
        return named(OPERATION_CLAUSES[op], *(("LIFE-INV-2",) if op == "lookup" and actual["k"] > expected["k"] else ()),
                     evidence=f"; {lookup_evidence(flight, rid, expected['k'], actual['k']) if op == 'lookup' else ''}"
                              "its own pool agreed with the spec's before it")
    if op == "lookup":
        return lookup_diagnosis(flight, rid, expected["k"], actual["k"])
    if op in ("allocate", "decode") and not actual["made"]:
        return consistent(OPERATION_CLAUSES[op], *released(flight.operations), "LIFE-POOL-2", "LIFE-POOL-1",
                          evidence=f"; it refused {'an allocation' if op == 'allocate' else 'a decode block'} the spec makes: it counts more "
                                   "in use than the spec, or frees less")
    if op in ("allocate", "decode"):
        return consistent(OPERATION_CLAUSES[op], *KEPT_IN_USE, "LIFE-POOL-1",
                          evidence=f"; it made {'an allocation' if op == 'allocate' else 'a decode block'} the spec refuses: it counts less "
                                   "in use than the spec")
    return named(OPERATION_CLAUSES[op])


def lookup_evidence(flight: InFlight, rid: int, k: int, got: int) -> str:
    """What the implementation's own pool before a lookup says of the block the two k's part at."""
    shown = flight.shown
    assert shown is not None
    h = blocks_of(flight.operations, rid)[min(k, got)]
    resident = {e[0] for e in shown["small"] + shown["main"]}
    if got > k:
        return f"block {h} is {'not resident' if h not in resident else 'not computed' if h in shown['pending'] else 'usable'} in its own pool, and it hit it; "
    return f"block {h} is resident and computed in its own pool, and it did not hit it; "


def lookup_diagnosis(flight: InFlight, rid: int, k: int, got: int) -> Diagnosis:
    """At the results level: the k's part at block h, read against the spec's pool before the lookup."""
    operations, policy, moments = flight.operations, flight.config.policy, history(flight)
    h, before = blocks_of(operations, rid)[min(k, got)], moments[-1]
    if got > k and h in before.pending:
        if not computed_by_someone(operations, moments, h):
            return named("LIFE-LOOKUP-1", "LIFE-INV-2", evidence=f"; block {h} is resident and not computed: no request has computed it since "
                                                                 "its admission, and the lookup hit it")
        return consistent("LIFE-LOOKUP-1", "LIFE-COMPUTE-1", "LIFE-POOL-3", evidence=f"; block {h} is resident and not computed in the spec's pool")
    if got > k:
        return consistent(*left_by(operations, moments, h), "LIFE-ALLOC-3", *eviction(policy),
                          evidence=f"; block {h} is not resident in the spec's pool, and the lookup hit it")
    if left_while_referenced(moments, h):
        return consistent(*KEPT_IN_USE, *removals(operations, moments), *eviction(policy),
                          evidence=f"; block {h} is usable in the spec's pool, and was referenced when another block left it: a block in "
                                   "use is never a victim")
    return consistent(*removals(operations, moments), *eviction(policy), "LIFE-COMPUTE-1", "LIFE-POOL-3",
                      evidence=f"; block {h} is usable in the spec's pool")


def left_by(operations: list[Operation], moments: list[Moment], h: int) -> tuple[str, ...]:
    """How block ``h`` last left the spec's pool: removed by a preemption (LIFE-PREEMPT-1,
    LIFE-EVICT-3), or evicted while other blocks were in use, of which an implementation that evicts
    one instead keeps ``h`` (LIFE-EVICT-1); nothing more is known if it never was resident."""
    left = [i for i in range(1, len(moments)) if h in moments[i - 1].resident and h not in moments[i].resident]
    if not left:
        return ()
    i = left[-1]
    if operations[i - 1][0] == "preempt":
        return ("LIFE-PREEMPT-1", "LIFE-EVICT-3")
    return ("LIFE-EVICT-1",) if moments[i - 1].refs else ()


def finish_diagnosis(flight: InFlight, rid: int, expected: Json, actual: Json) -> Diagnosis:
    """Hit tokens or recomputed tokens that differ (section 4): read against the spec's own lookups
    of the request, one before each of its allocations."""
    operations = flight.operations
    start = since_arrival(operations, rid)
    moments = history(flight)
    allocations = [i for i in range(start, len(operations) - 1) if operations[i][:2] == ("allocate", rid)]
    attempts = [(moments[i + 1].k, moments[i + 1].made) for i in allocations]
    looked = all(operations[i - 1][:2] == ("lookup", rid) for i in allocations)
    agreed = flight.state_level and looked  # its pool and its lookups agreed with the spec's throughout
    if actual["hit_tokens"] != expected["hit_tokens"]:
        why = wrong_count(attempts, flight.config.block_size, operations[start][3], actual["hit_tokens"])
        if why:
            return named("LIFE-HIT-1", evidence=f"; {why}")
        return named("LIFE-HIT-1", evidence="; its pool and its lookups agreed with the spec's") if agreed else consistent("LIFE-HIT-1", "LIFE-LOOKUP-1")
    return named("LIFE-HIT-2", evidence="; its pool and its lookups agreed with the spec's") if agreed else consistent("LIFE-HIT-2", "LIFE-LOOKUP-1", "LIFE-COMPUTE-1")


def wrong_count(attempts: list[tuple[int, bool]], block_size: int, input_length: int, got: int) -> str:
    """Which known wrong count of the request's lookups gives ``got`` hit tokens, if one does (LIFE-HIT-1)."""
    tokens = [hit_tokens(k, block_size, input_length) for k, _ in attempts]
    made = [t for t, (_, was_made) in zip(tokens, attempts, strict=True) if was_made]
    counts = [(sum(made), "it counted the hits of its resumed allocations too"),
              (sum(tokens), "it counted the hits of every allocation's lookup, the refused ones too"),
              (made[-1] if made else 0, "it counted the hits of its last allocation, not of its first")]
    first = next((k for k, was_made in attempts if was_made), None)
    if first is not None:
        counts.append((first * block_size, "its hit tokens are its hit blocks' tokens, not capped at its input length (REPLAY-HIT-1)"))
    expected = made[0] if made else 0
    whys = list(dict.fromkeys(why for value, why in counts if value == got != expected))
    return f"{' or '.join(whys)} ({plural(got, 'token')})" if whys else ""


# -- a pool that differs (the state level) ------------------------------------------------------------

def state_diagnosis(flight: InFlight, want: Json, got: Json) -> Diagnosis:
    """The implementation's pool after the operation differs from the spec's, its pool before agreeing."""
    op, rid, *_ = flight.operations[-1]
    before = flight.shown
    assert before is not None
    if flight.dialect:
        return consistent(OPERATION_CLAUSES[op], *eviction(flight.config.policy), evidence=f"; against the dialect {flight.dialect_name}")
    resident = {e[0] for e in got["small"] + got["main"]}
    if len(resident) + got["held"] > flight.config.capacity:
        return named("LIFE-POOL-1", evidence=f"; its pool holds {len(resident)} resident and {got['held']} held blocks in {flight.config.capacity} slots")
    referenced_before, spec_resident = dict(map(tuple, before["refs"])), {e[0] for e in want["small"] + want["main"]}
    lost = sorted(h for h in referenced_before if h in spec_resident and h not in resident)
    if lost:
        return named("LIFE-EVICT-1", evidence=f"; it evicted block {lost[0]}, which its own pool counted as referenced")
    if resident != spec_resident:  # the counts and blocks not computed of blocks resident in one pool alone follow from it
        return queues_diagnosis(flight, op, want, got, resident, spec_resident)
    for field, diagnose in (("refs", refs_diagnosis), ("pending", pending_diagnosis), ("held", held_diagnosis)):
        if got[field] != want[field]:
            return diagnose(flight, op, rid, before, want, got)
    return queues_diagnosis(flight, op, want, got, resident, spec_resident)


def refs_diagnosis(flight: InFlight, op: str, rid: int, before: Json, want: Json, got: Json) -> Diagnosis:
    counts_before, wanted, counts = (dict(map(tuple, state["refs"])) for state in (before, want, got))
    differing = sorted(h for h in wanted.keys() | counts.keys() if wanted.get(h, 0) != counts.get(h, 0))
    h = differing[0]
    was, should, now = counts_before.get(h, 0), wanted.get(h, 0), counts.get(h, 0)
    change = f"block {h}'s count went from {was} to {now}, not to {should}"
    if op == "allocate":
        return named("LIFE-ALLOC-2", evidence=f"; {change}: the request references each of its resident blocks once")
    if op in RELEASES and now > should:
        return named(RELEASES[op], evidence=f"; {change}: the request drops its reference")
    if op in RELEASES:
        return named("LIFE-POOL-2", evidence=f"; {change}: a count falls by one for the request that drops its reference")
    return named(OPERATION_CLAUSES[op], evidence=f"; {change}, which the operation does not change")


def pending_diagnosis(flight: InFlight, op: str, rid: int, before: Json, want: Json, got: Json) -> Diagnosis:
    extra, missing = sorted(set(got["pending"]) - set(want["pending"])), sorted(set(want["pending"]) - set(got["pending"]))
    said = f"block {extra[0]} is not computed in its pool" if extra else f"block {missing[0]} is computed in its pool"
    clause = {"allocate": "LIFE-ALLOC-1", "compute": "LIFE-COMPUTE-1", "preempt": "LIFE-PREEMPT-1"}.get(op, OPERATION_CLAUSES[op])
    return named(clause, "LIFE-POOL-3", evidence=f"; {said}, and in the spec's {'it is computed' if extra else 'not'}")


def held_diagnosis(flight: InFlight, op: str, rid: int, before: Json, want: Json, got: Json) -> Diagnosis:
    clause = {"allocate": "LIFE-ALLOC-3"}.get(op, OPERATION_CLAUSES[op])
    return named(clause, "LIFE-POOL-1", evidence=f"; it holds {got['held']} blocks outside the cache, the spec {want['held']}")


def queues_diagnosis(flight: InFlight, op: str, want: Json, got: Json, resident: set[int], spec_resident: set[int]) -> Diagnosis:
    """The queues differ, and the counts, blocks not computed and held count agree."""
    policy = flight.config.policy
    if op == "preempt":
        kept, ghosted = sorted(resident - spec_resident), sorted(set(got["ghost"]) - set(want["ghost"]))
        if ghosted:
            return named("LIFE-EVICT-3", evidence=f"; it put block {ghosted[0]}, removed, into the ghost")
        if kept:
            return named("LIFE-PREEMPT-1", "LIFE-EVICT-3", evidence=f"; block {kept[0]}, not computed and referenced by no running request, stays")
    if op in ("allocate", "decode"):
        return consistent(*(("LIFE-ALLOC-1", "LIFE-ALLOC-3") if op == "allocate" else ("LIFE-DECODE-1",)), *eviction(policy))
    return named(OPERATION_CLAUSES[op], evidence="; the queues changed, which the operation does not change")
