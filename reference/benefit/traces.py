"""spec/benefit.md section 17: the seeded traces, reproducible in any language."""

from collections.abc import Callable
from typing import NamedTuple

from .config import CostSample

MASK64 = 2**64 - 1


class Access(NamedTuple):
    key: int
    cost: CostSample
    bytes: int


class XorShift64:
    """BEN-TRACE-1."""

    def __init__(self, seed: int) -> None:
        self.state = max(seed, 1)

    def u64(self) -> int:
        x = self.state
        x ^= (x << 13) & MASK64
        x ^= x >> 7
        x ^= (x << 17) & MASK64
        self.state = x
        return x

    def f64(self) -> float:
        return (self.u64() >> 11) / 2.0**53


def access_for(rng: XorShift64, key: int) -> Access:
    """BEN-TRACE-2: the cold cost, then the size, drawn in that order."""
    cold = 50.0 + rng.f64() * 400.0
    return Access(key, CostSample(cold, 0.3 * cold), (1 + rng.u64() % 8) << 20)


def zipf_hotset(seed: int, n: int) -> list[Access]:
    """BEN-TRACE-3."""
    rng = XorShift64(seed)
    weights = [1.0 / (i + 1) for i in range(64)]
    total = 0.0
    for weight in weights:
        total += weight
    accesses = []
    for _ in range(n):
        pick = rng.f64() * total
        running, chosen = 0.0, 0
        for i, weight in enumerate(weights):
            running += weight
            if running >= pick:
                chosen = i
                break
        accesses.append(access_for(rng, chosen))
    return accesses


def turn_growth(seed: int, sessions: int, turns: int) -> list[Access]:
    """BEN-TRACE-4: every turn re-reads its session's earlier turns and adds one."""
    rng = XorShift64(seed)
    return [access_for(rng, s * turns + e) for s in range(sessions) for t in range(turns) for e in range(t + 1)]


def one_shot(seed: int, n: int) -> list[Access]:
    """BEN-TRACE-5: one-off keys, with the hot anchor 0 before every eighth."""
    rng = XorShift64(seed)
    accesses = []
    for i in range(n):
        if i % 8 == 7:
            accesses.append(access_for(rng, 0))
        accesses.append(access_for(rng, 1_000_000 + i))
    return accesses


def mixed_size(seed: int, n: int) -> list[Access]:
    """BEN-TRACE-6: three classes of 32 keys, 64 KiB, 4 MiB and 256 MiB."""
    rng = XorShift64(seed)
    sizes = (64 << 10, 4 << 20, 256 << 20)
    accesses = []
    for i in range(n):
        size_class = (i // 32) % 3
        key, cost, _ = access_for(rng, size_class * 32 + i % 32)
        accesses.append(Access(key, cost, sizes[size_class]))
    return accesses


def mixed_reuse(seed: int, n: int) -> list[Access]:
    """BEN-TRACE-7: three size classes of 8 keys each, drawn at random, so that both sides hit."""
    rng = XorShift64(seed)
    sizes = (64 << 10, 4 << 20, 64 << 20)
    accesses = []
    for i in range(n):
        size_class = i % 3
        key, cost, _ = access_for(rng, size_class * 8 + rng.u64() % 8)
        accesses.append(Access(key, cost, sizes[size_class]))
    return accesses


# The comparison traces (BEN-CMP-1): the PR's four, then kvspec's mixed-size trace on which both
# sides hit. Name -> (trace, capacity in bytes).
TRACES: dict[str, tuple[Callable[[], list[Access]], int]] = {
    "one_shot(7, 2000)": (lambda: one_shot(7, 2000), 64 << 20),
    "turn_growth(11, 4, 12)": (lambda: turn_growth(11, 4, 12), 64 << 20),
    "zipf_hotset(3, 4000)": (lambda: zipf_hotset(3, 4000), 64 << 20),
    "mixed_size(5, 3000)": (lambda: mixed_size(5, 3000), 256 << 20),
    "mixed_reuse(5, 3000)": (lambda: mixed_reuse(5, 3000), 256 << 20),
}
