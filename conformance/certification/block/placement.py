"""A queue difference, read on the implementation's own state (diagnosis.py's evidence 1 to 3):
its invariants first, then the variants of the spec with one rule broken started from its queues
before the request, then each block it placed otherwise traced to the rule the spec applied to
it during the request (S to M is S3-ADMIT-S-2, M to G is S3-ADMIT-M-3, ...)."""

import json
from collections import OrderedDict

from kvspec.adapters.interface import AdapterConfig, Snapshot
from kvspec.conformance.certification.block.diagnosis import (
    ONE_QUEUE,
    Diagnosis,
    consistent,
    eviction_clauses,
    from_state,
    invariant_diagnosis,
    named,
    variants_for,
)
from kvspec.conformance.core.workloads import Request
from kvspec.reference import S3FIFO
from kvspec.reference.s3fifo import derive_caps


def queue_diagnosis(config: AdapterConfig, request: Request, before: Snapshot, expected: Snapshot, actual: Snapshot) -> Diagnosis:
    """Queues that differ after a request, read on the implementation's queues before it (at the
    state level they are the reference's: the two agreed after the request before)."""
    hash_ids = request[0]
    broken = invariant_diagnosis(config, hash_ids, actual)
    if broken is not None:  # it leads; what the spec did to the first block placed otherwise may explain it
        explains = config.policy == "s3fifo" and "S3-FREQ-1" not in broken.named  # a wrong freq places blocks wrongly in turn
        placed = placement_diagnosis(config, hash_ids, before, expected, actual) if explains else Diagnosis()
        return Diagnosis(broken.named, broken.consistent + tuple(placed.clauses), broken.evidence + placed.evidence)
    variants = [clauses for variant, clauses in variants_for(config.policy) if from_state(variant(), config, before, request) == actual]
    placed = placement_diagnosis(config, hash_ids, before, expected, actual) if config.policy == "s3fifo" else None
    if variants:
        found = variant_diagnosis(variants, "; the spec with only this rule broken, from the implementation's queues before the request, "
                                  "gives exactly its queues after it")
        if placed is not None and len(found.named) > 1 and placed.named and placed.named[0] in found.named:
            return named(placed.named[0], evidence=placed.evidence + found.evidence)  # the one of the variant's rules it breaks first
        return found
    if placed is not None:
        return placed
    rules = ONE_QUEUE[config.policy]
    if {h for h, _ in expected.main} == {h for h, _ in actual.main}:
        return consistent(rules.hit, rules.admit, evidence="; the same blocks, in another order")
    return consistent(*eviction_clauses(config.policy))


def variant_diagnosis(variants: list[tuple[str, ...]], evidence: str) -> Diagnosis:
    """Named when one rule's variant explains the difference, consistent with each when several do."""
    clauses = tuple(dict.fromkeys(c for group in variants for c in group))
    if len(set(variants)) == 1:
        return named(*clauses, evidence=evidence)
    return consistent(*clauses, evidence=evidence.replace("this rule", "one of these rules"))


Place = tuple[str, int] | None  # (queue, freq); None: in no queue


def places(state: Snapshot) -> dict[int, Place]:
    found: dict[int, Place] = {h: ("S", f) for h, f in state.small}
    found.update((h, ("M", f)) for h, f in state.main)
    found.update((h, ("G", 0)) for h in state.ghost)
    return found


# The rule that moves a block from one queue to another (None: no queue).
MOVES = {(None, "S"): "S3-ACCESS-4", ("S", "M"): "S3-ADMIT-S-2", ("S", "G"): "S3-ADMIT-S-3", ("M", "G"): "S3-ADMIT-M-3",
         ("G", "M"): "S3-ACCESS-3", ("G", None): "S3-GHOST-2"}


Move = tuple[int, Place, str]  # (the access, the place after it, the rule that moved the block there)


def spec_histories(config: AdapterConfig, hash_ids: list[int], before: Snapshot) -> dict[int, list[Move]]:
    """For each block the spec moves during the request, the places it goes through and the rule
    that moves it each time, found by running the reference from ``before`` one access at a time."""
    cache = S3FIFO(derive_caps(config.capacity, config.small_ratio, config.max_freq), OrderedDict(before.small), OrderedDict(before.main),
                   OrderedDict.fromkeys(before.ghost, True))
    histories: dict[int, list[Move]] = {}
    old = places(before)
    for step, h in enumerate(hash_ids):
        cache.access(h)
        new = places(Snapshot(tuple(cache.small.items()), tuple(cache.main.items()), tuple(cache.ghost)))
        for block in old.keys() | new.keys():
            was, now = old.get(block), new.get(block)
            if was == now:
                continue
            if was is not None and now is not None and was[0] == now[0]:
                clause = "S3-ADMIT-M-2" if now[1] < was[1] else ("S3-ACCESS-1" if now[0] == "S" else "S3-ACCESS-2")
            else:
                clause = MOVES[(was and was[0], now and now[0])]
            histories.setdefault(block, [(-1, was, "")]).append((step, now, clause))
        old = new
    return histories


def diverging_move(history: list[Move], got: Place) -> tuple[int, str, str] | None:
    """The spec's move of a block where the implementation, which left it at ``got``, parted from
    it: (the access, the clause it breaks, what happened); None if no move explains it."""
    final = history[-1][1]
    if got is None and final is not None and final[0] == "G":  # forgotten where the spec keeps it in G
        return history[-1][0], "S3-GHOST-2", "the spec keeps it in G"
    for i in range(len(history) - 2, 0 if history[0][1] is None else -1, -1):
        if history[i][1] == got:  # the implementation stopped where the spec moved on
            step, now, clause = history[i + 1]
            return step, LEFT_IN_PLACE.get(clause, clause), f"the spec moves it on by {clause} ({describe(now)})"
    queue = got and got[0]
    for i in range(1, len(history)):
        step, now, clause = history[i]
        if (now and now[0]) == queue:  # the right queue with another freq: the move into it
            return step, clause, f"the spec's {clause} puts it {describe(now)}"
    for i in range(1, len(history)):
        step, now, clause = history[i]
        if (now and now[0]) != (history[i - 1][1] and history[i - 1][1][0]):  # a queue the spec never puts it in
            return step, clause, f"the spec's {clause} puts it {describe(now)}"
    requeue = next((move for move in history[1:] if move[2] == "S3-ADMIT-M-2"), None)
    if requeue is not None:  # the spec requeued it, the implementation evicted it
        return requeue[0], "S3-ADMIT-M-2", f"the spec's S3-ADMIT-M-2 requeues it, {describe(requeue[1])}"
    return None


def placement_diagnosis(config: AdapterConfig, hash_ids: list[int], before: Snapshot, expected: Snapshot, actual: Snapshot) -> Diagnosis:
    """The first block the implementation placed otherwise, traced to the spec's move it parted from."""
    histories = spec_histories(config, hash_ids, before)
    want, got, was = places(expected), places(actual), places(before)
    evicted = any(clause == "S3-ADMIT-M-3" for history in histories.values() for _, _, clause in history)
    first: tuple[int, str, str] | None = None  # (access, clause, what)
    for block in sorted(want.keys() | got.keys(), key=repr):
        if want.get(block) == got.get(block):
            continue
        found = diverging_move(histories[block], got.get(block)) if block in histories else None
        if found is None:
            found = (len(hash_ids), unmoved_clause(was.get(block), evicted), f"the spec leaves it {describe(want.get(block))}")
        step, clause, how = found
        if first is None or (step, RULE_ORDER.index(clause)) < (first[0], RULE_ORDER.index(first[1])):
            first = (step, clause, f"{block!r} is {describe(got.get(block))}, and {how}")
    if first is None:  # the same blocks with the same freqs, in another order
        return consistent(*order_clauses(expected, actual), evidence="; the same entries, in another order")
    _, clause, what = first
    ghost_cap = derive_caps(config.capacity, config.small_ratio, config.max_freq).ghost_cap
    if clause == "S3-GHOST-2" and len(actual.ghost) < ghost_cap:  # forgotten before G was full: the size, or the rule
        return consistent("S3-CONF-4", "S3-GHOST-2", evidence=f"; {what}, with G at {len(actual.ghost)} entries, below ghost_cap {ghost_cap}")
    if clause == "S3-ADMIT-S-1" and len(actual.small) < len(expected.small):
        return consistent("S3-CONF-2", "S3-ADMIT-S-1", evidence=f"; {what}: S was drained below small_cap")
    return named(clause, evidence=f"; {what}")


# A block the spec moved on and the implementation left where it was: the rule that starts the move.
LEFT_IN_PLACE = {"S3-ADMIT-S-2": "S3-ADMIT-S-1", "S3-ADMIT-S-3": "S3-ADMIT-S-1", "S3-ADMIT-M-2": "S3-ADMIT-M-1", "S3-ADMIT-M-3": "S3-ADMIT-M-1"}

RULE_ORDER = ["S3-ACCESS-1", "S3-ACCESS-2", "S3-ACCESS-3", "S3-ACCESS-4", "S3-ADMIT-S-1", "S3-ADMIT-S-2", "S3-ADMIT-S-3", "S3-ADMIT-M-1",
              "S3-ADMIT-M-2", "S3-ADMIT-M-3", "S3-GHOST-2", "REPLAY-ACCESS-1"]


def unmoved_clause(was: Place, evicted: bool) -> str:
    """The rule that keeps a block in place, for a block the spec leaves where it was and the implementation moved."""
    if was is None:
        return "REPLAY-ACCESS-1"  # a block the request did not carry, or one the spec had forgotten
    if was[0] == "S":
        return "S3-ADMIT-S-1"  # popped from S when the spec's S was not full
    if was[0] == "M":
        return "S3-ADMIT-M-3" if evicted else "S3-ADMIT-M-1"  # more than one left M, or M evicted below main_cap
    return "S3-GHOST-2"


def order_clauses(expected: Snapshot, actual: Snapshot) -> tuple[str, ...]:
    if expected.small != actual.small:
        return ("S3-ACCESS-1", "S3-ADMIT-S-4")
    if expected.main != actual.main:
        return ("S3-ADMIT-M-2", "S3-ADMIT-M-4", "S3-ACCESS-2")
    return ("S3-GHOST-3", "S3-ADMIT-S-3", "S3-ADMIT-M-3")  # not G's re-insertion, unreachable by S3-QUEUE-2 (findings F-10)


def describe(place: Place) -> str:
    if place is None:
        return "in no queue"
    return "in G" if place[0] == "G" else f"in {place[0]} with freq {place[1]!r}"


def entries(count: int) -> str:
    return f"{count} {'entry' if count == 1 else 'entries'}"


def queue_difference(expected: Snapshot, actual: Snapshot) -> str:
    """Where each differing queue first differs, head first: short enough to read for any cache size."""
    parts = []
    for name in ("small", "main", "ghost"):
        want, got = getattr(expected, name), getattr(actual, name)
        if want != got:
            i = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            at = lambda queue: json.dumps(queue[i]) if i < len(queue) else "the end of the queue"  # noqa: E731
            parts.append(f"{name}[{i}] is {at(got)}, expected {at(want)} ({entries(len(got))}, expected {len(want)})")
    return "; ".join(parts)
