"""spec/benefit.md section 5: the shared-segment ledger and fractional accounting."""

import math
from dataclasses import dataclass, field

from ..contracts import ensure


@dataclass(slots=True)
class Segment:
    """BEN-LEDGER-1: a size, fixed at the first registration, and the keys that reference it, in order."""

    size: int
    refs: dict[int, bool] = field(default_factory=dict)  # an ordered set: True for every key


Ledger = dict[int, Segment]


def register(ledger: Ledger, key: int, shared: list[tuple[int, int]]) -> None:
    """BEN-LEDGER-1: ``key`` references each segment; a reference already there changes nothing."""
    for segment_id, size in shared:
        ledger.setdefault(segment_id, Segment(size)).refs[key] = True


def new_bytes(ledger: Ledger, shared: list[tuple[int, int]]) -> int:
    """BEN-KEY-2: the sizes of the segments ``shared`` names that the ledger does not hold, each id
    once, at its first size (as BEN-LEDGER-1 would register it)."""
    first: dict[int, int] = {}
    for segment_id, size in shared:
        first.setdefault(segment_id, size)
    return sum(size for segment_id, size in first.items() if segment_id not in ledger)


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
