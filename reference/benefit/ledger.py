"""spec/benefit.md section 5: the shared-segment ledger and fractional accounting."""

import math
from dataclasses import dataclass, field
from typing import no_type_check

from ..contracts import ensure, require, snapshot


@dataclass(slots=True)
class Segment:
    """BEN-LEDGER-1: a size, fixed at the first registration, and the keys that reference it, in order."""

    size: int
    refs: dict[int, bool] = field(default_factory=dict)  # an ordered set: True for every key


Ledger = dict[int, Segment]


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def holdings(ledger: Ledger) -> dict[int, tuple[int, list[int]]]:
    """Each segment's size and referencing keys, as a copy (for the contracts)."""
    return {segment_id: (segment.size, list(segment.refs)) for segment_id, segment in ledger.items()}


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def first_sizes(shared: list[tuple[int, int]]) -> dict[int, int]:
    """Each segment id of ``shared`` with the size it is first offered at."""
    first: dict[int, int] = {}
    for segment_id, size in shared:
        first.setdefault(segment_id, size)
    return first


def growth(ledger: Ledger, shared: list[tuple[int, int]]) -> int:
    """How many bytes registering ``shared`` (BEN-LEDGER-1) would add to the ledger's, on a copy."""
    copy = {segment_id: Segment(segment.size, dict(segment.refs)) for segment_id, segment in ledger.items()}
    register(copy, 0, shared)
    return sum(segment.size for segment in copy.values()) - sum(segment.size for segment in ledger.values())


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def is_held(ledger: Ledger) -> bool:
    """BEN-LEDGER-1, BEN-LEDGER-2: every segment the ledger holds is referenced."""
    return all(segment.refs for segment in ledger.values())


def are_offered(shared: list[tuple[int, int]]) -> bool:
    """BEN-KEY-1: segment ids and sizes as an offer has them once checked."""
    return all(0 <= segment_id and 0 <= size for segment_id, size in shared)


@require(lambda ledger: is_held(ledger), "BEN-LEDGER-1, BEN-LEDGER-2: a ledger as the policy holds it", per_access_state=True)
@snapshot(holdings, "held", per_access_state=True)
@ensure(lambda ledger, key, shared: all(key in ledger[segment_id].refs for segment_id, _ in shared),
        "BEN-LEDGER-1: key references each segment", per_access_state=True)
@ensure(lambda OLD, ledger, shared: all(ledger[s].size == OLD.held[s][0] if s in OLD.held else ledger[s].size == size
                                        for s, size in first_sizes(shared).items()),
        "BEN-LEDGER-1: the first registration fixes the size", per_access_state=True)
@ensure(lambda OLD, ledger, shared: all(holdings(ledger)[s] == held for s, held in OLD.held.items() if s not in first_sizes(shared))
        and set(ledger) == set(OLD.held) | set(first_sizes(shared)), "BEN-LEDGER-1: no other segment changes", per_access_state=True)
def register(ledger: Ledger, key: int, shared: list[tuple[int, int]]) -> None:
    """BEN-LEDGER-1: ``key`` references each segment; a reference already there changes nothing."""
    for segment_id, size in shared:
        ledger.setdefault(segment_id, Segment(size)).refs[key] = True


@require(lambda ledger, shared: is_held(ledger) and are_offered(shared),
         "BEN-LEDGER-1, BEN-KEY-1: a ledger and an offer as the policy holds them", per_access_state=True)
@ensure(lambda ledger, shared, result: result == growth(ledger, shared), "BEN-KEY-2: the bytes the ledger would grow by",
        per_access_state=True)
def new_bytes(ledger: Ledger, shared: list[tuple[int, int]]) -> int:
    """BEN-KEY-2: the sizes of the segments ``shared`` names that the ledger does not hold, each id
    once, at its first size (as BEN-LEDGER-1 would register it)."""
    first: dict[int, int] = {}
    for segment_id, size in shared:
        first.setdefault(segment_id, size)
    return sum(size for segment_id, size in first.items() if segment_id not in ledger)


@require(lambda ledger: is_held(ledger), "BEN-LEDGER-1, BEN-LEDGER-2: a ledger as the policy holds it", per_access_state=True)
@snapshot(holdings, "held", per_access_state=True)
@ensure(lambda ledger, key, segment_ids: all(s not in ledger or key not in ledger[s].refs for s in segment_ids),
        "BEN-LEDGER-2: key's references are released", per_access_state=True)
@ensure(lambda OLD, ledger: all(segment.refs for segment in ledger.values()) and set(ledger) <= set(OLD.held),
        "BEN-LEDGER-2: a segment whose last reference is released is dropped", per_access_state=True)
@ensure(lambda OLD, ledger, result: result == sum(OLD.held[s][0] for s in set(OLD.held) - set(ledger)),
        "BEN-LEDGER-2: the bytes of the segments dropped", per_access_state=True)
def release(ledger: Ledger, key: int, segment_ids: list[int]) -> int:
    """BEN-LEDGER-2: drop ``key``'s references; a segment with none left is dropped. The bytes of
    the segments dropped."""
    dropped = 0
    for segment_id in segment_ids:
        segment = ledger.get(segment_id)
        if segment is None or key not in segment.refs:
            continue
        del segment.refs[key]
        if not segment.refs:
            dropped += ledger.pop(segment_id).size
    return dropped


@ensure(lambda result: math.isfinite(result) and result >= 0.0, "BEN-LEDGER-3: a finite, non-negative share")
def fractional_bytes(ledger: Ledger, key: int, segment_ids: list[int]) -> float:
    """BEN-LEDGER-3: sum of size / reference count over the key's segments, in the order offered."""
    total = 0.0
    for segment_id in segment_ids:
        segment = ledger.get(segment_id)
        if segment is not None and key in segment.refs:
            total += segment.size / len(segment.refs)
    return total


def shares_add_up(ledger: Ledger) -> bool:
    """BEN-LEDGER-4: each segment's shares sum to its size, up to the rounding of the additions."""
    for segment in ledger.values():
        shares = math.fsum(segment.size / len(segment.refs) for _ in segment.refs)
        if not math.isclose(shares, segment.size, rel_tol=1e-12, abs_tol=0.0):
            return False
    return True
