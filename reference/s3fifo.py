"""S3FIFO (spec/s3fifo.md): three FIFO queues and a saturating frequency per resident block.

Each rule is a function over plain dicts and a ``Caps`` tuple, so that CrossHair can explore
it; ``S3FIFO`` holds one cache's queues and hands them to the rules.
"""

import math
from collections import OrderedDict
from typing import NamedTuple, no_type_check

from .contracts import ensure, require, snapshot
from .errors import ConfigError
from .queues import HashQueue as Ghost
from .queues import Queue, pop_head
from .validation import INT64_MAX, check_count


class Caps(NamedTuple):
    """S3-CONF-2 to S3-CONF-5: the sizes one S3FIFO cache is built with."""

    small_cap: int
    main_cap: int
    ghost_cap: int
    max_freq: int


def ratio_is_valid(small_ratio: float) -> bool:
    """S3-CONF-1: a finite double in [0, 1]."""
    return type(small_ratio) is float and math.isfinite(small_ratio) and 0.0 <= small_ratio <= 1.0


@require(lambda capacity, small_ratio: 1 <= capacity <= INT64_MAX and ratio_is_valid(small_ratio), "REPLAY-CONF-1, S3-CONF-1")
@ensure(lambda capacity, small_ratio, result: abs(result - capacity * small_ratio) <= 0.5, "S3-CONF-2: nearest integer")
@ensure(
    lambda capacity, small_ratio, result: abs(result - capacity * small_ratio) != 0.5 or result % 2 == 0,
    "S3-CONF-2: a tie goes to the even integer (Python's round, not int())",
)
def small_cap_for(capacity: int, small_ratio: float) -> int:
    """S3-CONF-2: small_cap = round(capacity * small_ratio), on IEEE-754 doubles."""
    return round(capacity * small_ratio)


@require(
    lambda capacity, small_ratio, max_freq: 1 <= capacity <= INT64_MAX and ratio_is_valid(small_ratio) and 0 <= max_freq <= INT64_MAX,
    "REPLAY-CONF-1, S3-CONF-1, S3-CONF-6",
)
@ensure(lambda capacity, result: result.small_cap + result.main_cap == capacity, "S3-CONF-3: main_cap = capacity - small_cap")
@ensure(lambda result: result.ghost_cap == result.main_cap, "S3-CONF-4: ghost_cap == main_cap")
def derive_caps(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-2 to S3-CONF-4: the queue sizes, before S3-CONF-5 is checked."""
    small_cap = small_cap_for(capacity, small_ratio)
    main_cap = capacity - small_cap
    return Caps(small_cap=small_cap, main_cap=main_cap, ghost_cap=main_cap, max_freq=max_freq)


def caps_for(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-1 to S3-CONF-6: the queue sizes, or a ConfigError citing the clause refused."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    if not ratio_is_valid(small_ratio):
        raise ConfigError("S3-CONF-1", f"small_ratio must be a finite number in [0, 1], not {small_ratio!r}")
    check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    caps = derive_caps(capacity, small_ratio, max_freq)
    if caps.small_cap < 1 or caps.main_cap < 1:
        raise ConfigError(
            "S3-CONF-5",
            f"capacity {capacity} at small_ratio {small_ratio} gives small_cap = round({capacity} * {small_ratio})"
            f" = {caps.small_cap} and main_cap = {caps.main_cap}; S3FIFO needs both >= 1",
        )
    return caps


# The three predicates below run only inside contracts, on arguments that typeguard has just
# checked item by item at the rule's own entry; @no_type_check spares it checking them again,
# which would make every access cost O(cache size) three more times over in the tests.


def caps_are_valid(caps: Caps) -> bool:
    """S3-CONF-3 to S3-CONF-6, for rules that take a Caps built elsewhere."""
    return caps.small_cap >= 1 and caps.main_cap >= 1 and caps.ghost_cap == caps.main_cap and caps.max_freq >= 0


@no_type_check
def queues_are_disjoint(small: Queue, main: Queue, ghost: Ghost) -> bool:
    """S3-QUEUE-2: no hash is in two of S, M and G."""
    return small.keys().isdisjoint(main) and small.keys().isdisjoint(ghost) and main.keys().isdisjoint(ghost)


@no_type_check
def freqs_in_range(small: Queue, main: Queue, caps: Caps) -> bool:
    """S3-FREQ-1: every freq lies in [0, max_freq]."""
    return all(0 <= f <= caps.max_freq for f in small.values()) and all(0 <= f <= caps.max_freq for f in main.values())


@no_type_check
def within_caps(small: Queue, main: Queue, ghost: Ghost, caps: Caps) -> bool:
    """S3-INV-1 to S3-INV-3: |S| <= small_cap, |M| <= main_cap, |G| <= ghost_cap."""
    return len(small) <= caps.small_cap and len(main) <= caps.main_cap and len(ghost) <= caps.ghost_cap


def is_resident(small: Queue, main: Queue, h: int) -> bool:
    """S3-QUEUE-3: h is resident iff it is in S or M; the ghost never counts."""
    return h in small or h in main


def saturating_increment(freq: int, max_freq: int) -> int:
    """S3-FREQ-2: add one, clamped at max_freq."""
    return min(freq + 1, max_freq)


@require(lambda caps: caps_are_valid(caps), "S3-CONF-5")
@require(lambda small, main, ghost, caps: within_caps(small, main, ghost, caps), "S3-INV-1..3")
@require(lambda small, main, ghost: queues_are_disjoint(small, main, ghost), "S3-QUEUE-2", per_access_state=True)
@require(lambda small, main, caps: freqs_in_range(small, main, caps), "S3-FREQ-1", per_access_state=True)
@ensure(lambda small, main, ghost, caps: within_caps(small, main, ghost, caps), "S3-INV-1..3")
@ensure(lambda small, main, ghost, h: (h in small or h in main) and h not in ghost, "S3-ACCESS-1..4: h is resident after its access")
@ensure(lambda small, main, caps, h: 0 <= (small[h] if h in small else main[h]) <= caps.max_freq, "S3-FREQ-1")
@ensure(lambda small, main, ghost: queues_are_disjoint(small, main, ghost), "S3-QUEUE-2", per_access_state=True)
@ensure(lambda small, main, caps: freqs_in_range(small, main, caps), "S3-FREQ-1", per_access_state=True)
def access(small: Queue, main: Queue, ghost: Ghost, caps: Caps, h: int) -> None:
    """S3-ACCESS-1 to S3-ACCESS-4: one block access."""
    if h in small:
        small[h] = saturating_increment(small[h], caps.max_freq)  # S3-ACCESS-1
    elif h in main:
        main[h] = saturating_increment(main[h], caps.max_freq)  # S3-ACCESS-2: in place, no reordering
    elif h in ghost:
        del ghost[h]  # S3-ACCESS-3
        admit_to_main(small, main, ghost, caps, h, 0)
    else:
        admit_to_small(small, main, ghost, caps, h)  # S3-ACCESS-4


@require(lambda small, main, caps: freqs_in_range(small, main, caps), "S3-FREQ-1", per_access_state=True)
@require(lambda caps: caps_are_valid(caps), "S3-CONF-5")
@require(lambda small, main, ghost, caps: within_caps(small, main, ghost, caps), "S3-INV-1..3")
@snapshot(lambda small: len(small), "small_len")
@require(lambda small, main, ghost, h: h not in small and h not in main and h not in ghost, "S3-ACCESS-4: h is new")
@require(lambda small, main, ghost: queues_are_disjoint(small, main, ghost), "S3-QUEUE-2", per_access_state=True)
@ensure(lambda small, h: small[h] == 0 and next(reversed(small)) == h, "S3-ADMIT-S-4: h at the tail of S, freq 0")
@ensure(lambda OLD, small, caps: len(small) == min(OLD.small_len + 1, caps.small_cap), "S3-ADMIT-S-1: drain only to make room")
def admit_to_small(small: Queue, main: Queue, ghost: Ghost, caps: Caps, h: int) -> None:
    """S3-ADMIT-S-1 to S3-ADMIT-S-4."""
    while len(small) >= caps.small_cap:  # S3-ADMIT-S-1
        victim, victim_freq = pop_head(small)
        if victim_freq >= 1:
            admit_to_main(small, main, ghost, caps, victim, victim_freq)  # S3-ADMIT-S-2: freq preserved
        else:
            insert_to_ghost(small, main, ghost, caps, victim)  # S3-ADMIT-S-3
    small[h] = 0  # S3-ADMIT-S-4


@require(lambda small, main, caps: freqs_in_range(small, main, caps), "S3-FREQ-1", per_access_state=True)
@require(lambda caps: caps_are_valid(caps), "S3-CONF-5")
@require(lambda small, main, ghost, caps: within_caps(small, main, ghost, caps), "S3-INV-1..3")
@snapshot(lambda main: len(main), "main_len")
@snapshot(lambda ghost: len(ghost), "ghost_len")
@require(lambda small, main, ghost, h: h not in small and h not in main and h not in ghost, "S3-ADMIT-M-4: h is not queued")
@require(lambda small, main, ghost: queues_are_disjoint(small, main, ghost), "S3-QUEUE-2", per_access_state=True)
@require(lambda caps, freq: 0 <= freq <= caps.max_freq, "S3-FREQ-1")
@ensure(lambda main, h, freq: main[h] == freq and next(reversed(main)) == h, "S3-ADMIT-M-4: h at the tail of M with its freq")
@ensure(lambda OLD, main, caps: len(main) == min(OLD.main_len + 1, caps.main_cap), "S3-ADMIT-M-3: exactly one real eviction")
@ensure(
    lambda OLD, ghost, caps: len(ghost) == (min(OLD.ghost_len + 1, caps.ghost_cap) if OLD.main_len >= caps.main_cap else OLD.ghost_len),
    "S3-ADMIT-M-3: the evicted block goes to G",
)
def admit_to_main(small: Queue, main: Queue, ghost: Ghost, caps: Caps, h: int, freq: int) -> None:
    """S3-ADMIT-M-1 to S3-ADMIT-M-4: second chance, then exactly one real eviction."""
    while len(main) >= caps.main_cap:  # S3-ADMIT-M-1
        victim, victim_freq = pop_head(main)
        if victim_freq >= 1:
            main[victim] = victim_freq - 1  # S3-ADMIT-M-2: back at the tail, one chance spent
            continue
        insert_to_ghost(small, main, ghost, caps, victim)  # S3-ADMIT-M-3
        break
    main[h] = freq  # S3-ADMIT-M-4


@require(lambda caps: caps_are_valid(caps), "S3-CONF-5")
@require(lambda small, main, ghost, caps: within_caps(small, main, ghost, caps), "S3-INV-1..3")
@require(lambda small, main, h: h not in small and h not in main, "S3-GHOST-4: a ghost is not resident")
@ensure(lambda ghost, h: next(reversed(ghost)) == h, "S3-GHOST-3: h at the tail of G")
@ensure(lambda ghost, caps: len(ghost) <= caps.ghost_cap, "S3-INV-3")
def insert_to_ghost(small: Queue, main: Queue, ghost: Ghost, caps: Caps, h: int) -> None:
    """S3-GHOST-1 to S3-GHOST-3: a bounded FIFO of evicted hashes."""
    if h in ghost:
        del ghost[h]  # S3-GHOST-1: re-appended below with fresh recency
    elif len(ghost) >= caps.ghost_cap:
        pop_head(ghost)  # S3-GHOST-2
    ghost[h] = True  # S3-GHOST-3


class S3FIFO:
    """One S3FIFO cache: the replay's policy interface (spec/replay.md, REPLAY-POLICY-1)."""

    def __init__(self, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> None:
        self.caps = caps_for(capacity, small_ratio, max_freq)
        # S3-QUEUE-1: S and M hold (hash, freq), G hashes alone; all start empty.
        self.small: Queue = OrderedDict()
        self.main: Queue = OrderedDict()
        self.ghost: Ghost = OrderedDict()

    def is_resident(self, h: int) -> bool:
        return is_resident(self.small, self.main, h)

    def access(self, h: int) -> None:
        access(self.small, self.main, self.ghost, self.caps, h)

    def resident_count(self) -> int:
        """S3-FINAL-1: |S| + |M|, never the ghost."""
        return len(self.small) + len(self.main)

    def state_invariants_hold(self) -> bool:
        """S3-QUEUE-2, S3-FREQ-1, S3-INV-1..3 over the whole state."""
        return (
            queues_are_disjoint(self.small, self.main, self.ghost)
            and freqs_in_range(self.small, self.main, self.caps)
            and within_caps(self.small, self.main, self.ghost, self.caps)
        )
