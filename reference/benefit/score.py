"""spec/benefit.md sections 3 and 4: entries, their reuse probability, and the score."""

import math
from dataclasses import dataclass, field
from typing import Literal

from ..contracts import ensure
from .config import CostSample, is_valid, net_benefit
from .ledger import Ledger, fractional_bytes

State = Literal["probation", "admitted"]


@dataclass(slots=True)
class Entry:
    """BEN-ENTRY-1."""

    state: State
    hits: int
    misses: int
    rw: float
    ow: float
    last_cost: CostSample
    exclusive_bytes: int
    segments: list[int] = field(default_factory=list)
    last_observation: int = 0


def reuse_probability(entry: Entry) -> float:
    """BEN-ENTRY-2: clamp(rw / ow, 0, 1), or 0 when ow <= 0."""
    if entry.ow <= 0.0:
        return 0.0
    return min(max(entry.rw / entry.ow, 0.0), 1.0)


def charged_bytes(ledger: Ledger, key: int, entry: Entry) -> float:
    """BEN-SCORE-3: exclusive bytes plus the fractional shares, as a double."""
    return float(entry.exclusive_bytes) + fractional_bytes(ledger, key, entry.segments)


@ensure(lambda result: result is None or (math.isfinite(result) and math.copysign(1.0, result) == 1.0), "BEN-SCORE-4: no NaN, infinity or -0.0 is a score")
def score(ledger: Ledger, key: int, entry: Entry, min_reuse_probability: float) -> float | None:
    """BEN-SCORE-1 to BEN-SCORE-5: reuse x net benefit / bytes, or None when there is no score."""
    if not is_valid(entry.last_cost):
        return None  # BEN-SCORE-1
    reuse = max(reuse_probability(entry), min_reuse_probability)  # BEN-SCORE-2: the first unless the floor is greater
    size = charged_bytes(ledger, key, entry)
    if size <= 0.0:
        return None  # BEN-SCORE-3
    value = reuse * net_benefit(entry.last_cost) / size  # BEN-SCORE-5: the latest sample
    return value if math.isfinite(value) else None  # BEN-SCORE-4
