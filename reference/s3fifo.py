"""S3FIFO (spec/s3fifo.md): three FIFO queues and a saturating frequency per resident block.

Each rule is a function of the cache it changes, a plain dataclass of dicts that CrossHair can
build in any state and explore; the class takes the rules a replay calls as its methods.
"""

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TypeVar, no_type_check

from .contracts import F, ensure, require, snapshot
from .errors import ConfigError
from .queues import HashQueue as Ghost
from .queues import Queue, same_blocks
from .request import BlockPolicy, access_every_block, prefix_lookup
from .validation import INT64_MAX, check_count

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Caps:
    """S3-CONF-2 to S3-CONF-5: the sizes one S3FIFO cache is built with."""

    small_cap: int
    main_cap: int
    ghost_cap: int
    max_freq: int


@ensure(lambda small_ratio, result: result == (type(small_ratio) is float and -0.0 <= small_ratio <= 1.0), "S3-CONF-1: a double in [0, 1]")
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


def ghost_cap_for(main_cap: int) -> int:
    """S3-CONF-4: ghost_cap = main_cap."""
    return main_cap


def check_small_ratio(small_ratio: float) -> None:
    """S3-CONF-1: a ConfigError for a small_ratio that is not a finite float in [0, 1]."""
    if not ratio_is_valid(small_ratio):
        raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {small_ratio!r}")


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
    return Caps(small_cap=small_cap, main_cap=main_cap, ghost_cap=ghost_cap_for(main_cap), max_freq=max_freq)


@ensure(lambda result: result.small_cap >= 1 and result.main_cap >= 1, "S3-CONF-5: both queues hold at least one entry")
@ensure(lambda max_freq, result: result.max_freq == max_freq >= 0, "S3-CONF-6: max_freq >= 0")
def caps_for(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-1 to S3-CONF-6: the queue sizes, or a ConfigError citing the clause refused."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    check_small_ratio(small_ratio)
    check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    caps = derive_caps(capacity, small_ratio, max_freq)
    if caps.small_cap < 1 or caps.main_cap < 1:
        raise ConfigError(
            "S3-CONF-5",
            f"capacity {capacity} at small_ratio {small_ratio} gives small_cap = round({capacity} * {small_ratio})"
            f" = {caps.small_cap} and main_cap = {caps.main_cap}; S3FIFO needs both >= 1",
        )
    return caps


def caps_are_valid(caps: Caps) -> bool:
    """S3-CONF-3 to S3-CONF-6, for rules that take a Caps built elsewhere."""
    return caps.small_cap >= 1 and caps.main_cap >= 1 and caps.ghost_cap == caps.main_cap and caps.max_freq >= 0


# The state checks from here (and tail and lengths below) are called by the contracts of every rule,
# a million times in one typed certification, always with the cache the rule itself was given,
# whose type typeguard checks there; it skips them (no_type_check), which took half of its checks.
@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def queues_are_disjoint(cache: "S3FIFO") -> bool:
    """S3-QUEUE-2: no hash is in two of S, M and G."""
    small, main, ghost = cache.small, cache.main, cache.ghost
    return small.keys().isdisjoint(main) and small.keys().isdisjoint(ghost) and main.keys().isdisjoint(ghost)


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def freqs_in_range(cache: "S3FIFO") -> bool:
    """S3-FREQ-1: every freq lies in [0, max_freq]."""
    top = cache.caps.max_freq
    return all(0 <= f <= top for f in cache.small.values()) and all(0 <= f <= top for f in cache.main.values())


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def within_caps(cache: "S3FIFO") -> bool:
    """S3-INV-1 to S3-INV-3: |S| <= small_cap, |M| <= main_cap, |G| <= ghost_cap."""
    caps = cache.caps
    return len(cache.small) <= caps.small_cap and len(cache.main) <= caps.main_cap and len(cache.ghost) <= caps.ghost_cap


def queue_of(cache: "S3FIFO", h: int) -> str | None:
    """Which of S, M and G holds h (S3-QUEUE-2: at most one), or None."""
    return "S" if h in cache.small else "M" if h in cache.main else "G" if h in cache.ghost else None


def is_queued(cache: "S3FIFO", h: int) -> bool:
    """Whether h is in S, M or G."""
    return h in cache.small or h in cache.main or h in cache.ghost


@ensure(lambda cache, h, result: result == (h in cache.small or h in cache.main), "S3-QUEUE-3: resident iff in S or M, never in G alone",
        per_access_state=True)
def is_resident(cache: "S3FIFO", h: int) -> bool:
    """S3-QUEUE-3: h is resident iff it is in S or M; the ghost never counts."""
    return h in cache.small or h in cache.main


@require(lambda freq, max_freq: 0 <= freq <= max_freq, "S3-FREQ-1", per_access_state=True)
@ensure(lambda freq, max_freq, result: result == freq + 1 if freq < max_freq else result == max_freq, "S3-FREQ-2: one more, up to max_freq",
        per_access_state=True)
def saturating_increment(freq: int, max_freq: int) -> int:
    """S3-FREQ-2: add one, clamped at max_freq."""
    return min(freq + 1, max_freq)


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def sizes_are_valid(cache: "S3FIFO") -> bool:
    """S3-CONF-3 to S3-CONF-6: the sizes the cache was built with."""
    return caps_are_valid(cache.caps)  # looked up when called: conformance/hunt/seed_rules.py swaps it


def state_invariants_hold(cache: "S3FIFO") -> bool:
    """S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3 over the whole state."""
    return queues_are_disjoint(cache) and freqs_in_range(cache) and within_caps(cache)


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def entries_are_valid(cache: "S3FIFO") -> bool:
    """S3-QUEUE-2 and S3-FREQ-1: the checks of the state that cost O(cache size)."""
    return queues_are_disjoint(cache) and freqs_in_range(cache)


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def tail(queue: dict[int, V]) -> tuple[int, V] | None:
    """The entry at a queue's tail (REPLAY-QUEUE-1), or None for an empty queue. (The tail's key
    first: CrossHair's dicts cannot reverse their items.)"""
    h = next(reversed(queue), None)
    return None if h is None else (h, queue[h])


def head_to_make_room(cache: "S3FIFO") -> tuple[int, int] | None:
    """The entry S3-ADMIT-S-1 pops before an admission to S: the head, when S is full."""
    return next(iter(cache.small.items())) if len(cache.small) >= cache.caps.small_cap else None


@no_type_check  # O(|M|), in the postconditions of every admission to M: typeguard would check each item again
def second_chance(main: list[tuple[int, int]], main_cap: int) -> tuple[int | None, list[tuple[int, int]]]:
    """S3-ADMIT-M-1 to S3-ADMIT-M-3 in closed form, for the postconditions of admit_to_main: the
    hash that leaves a full M for good, and M after it (before the new entry). With m the smallest
    freq in M, every entry first spends m chances in m whole turns of the queue; then the first entry
    whose freq was m is evicted, those ahead of it spend one chance more and go behind those after it.
    A queue that is not full loses nothing."""
    if len(main) < main_cap:
        return None, main
    m = min(freq for _, freq in main)
    first = next(i for i, (_, freq) in enumerate(main) if freq == m)
    return main[first][0], [(h, freq - m) for h, freq in main[first + 1:]] + [(h, freq - m - 1) for h, freq in main[:first]]


@no_type_check  # a state check of the contracts (above queues_are_disjoint)
def lengths(cache: "S3FIFO") -> tuple[int, int, int]:
    """|S|, |M| and |G|. (Where a hit leaves its entry, S3-ACCESS-1 and S3-ACCESS-2, no contract
    states: conformance/hunt/targets.py PARTLY_EXPLORED says why.)"""
    return len(cache.small), len(cache.main), len(cache.ghost)


# The state every rule starts from: each condition, the clauses a violation names, and whether it
# costs O(cache size) a call (the levels of contracts.py). Named functions, not lambdas: icontract
# reads a lambda's text from the decorator it is written in.
STATE_PRECONDITIONS = (
    (sizes_are_valid, "S3-CONF-3, S3-CONF-4, S3-CONF-5, S3-CONF-6", False),
    (within_caps, "S3-INV-1, S3-INV-2, S3-INV-3", False),
    (queues_are_disjoint, "S3-QUEUE-2", True),
    (freqs_in_range, "S3-FREQ-1", True),
)


def s3fifo_rule(rule: F) -> F:
    """A rule of spec/s3fifo.md: it starts from a cache whose sizes S3-CONF-3 to S3-CONF-6 allow,
    within S3-INV-1 to S3-INV-3, with S3-QUEUE-2 and S3-FREQ-1 holding, and leaves S3-QUEUE-2 and
    S3-FREQ-1 holding (the sizes are access's own postcondition, and the next rule's precondition)."""
    rule = ensure(entries_are_valid, "S3-QUEUE-2, S3-FREQ-1: the rule leaves a valid state", per_access_state=True)(rule)
    for holds, clauses, per_access_state in reversed(STATE_PRECONDITIONS):  # checked in the order listed
        rule = require(holds, clauses, per_access_state=per_access_state)(rule)
    return rule


@s3fifo_rule
@snapshot(lambda cache, h: (queue_of(cache, h), cache.small.get(h, cache.main.get(h)), lengths(cache)), "before", per_access_state=True)
@ensure(within_caps, "S3-INV-1, S3-INV-2, S3-INV-3: every queue within its size after the access")
@ensure(lambda cache, h: is_resident(cache, h) and h not in cache.ghost, "S3-ACCESS-1 to S3-ACCESS-4: h is resident after its access")
@ensure(lambda cache, h: 0 <= cache.small.get(h, cache.main.get(h, 0)) <= cache.caps.max_freq, "S3-FREQ-1")
@ensure(lambda OLD, cache, h: OLD.before[0] != "S"
        or (cache.small[h] == min(OLD.before[1] + 1, cache.caps.max_freq) and lengths(cache) == OLD.before[2]),
        "S3-ACCESS-1: a hit in S increments its freq, and no queue grows or shrinks", per_access_state=True)
@ensure(lambda OLD, cache, h: OLD.before[0] != "M"
        or (cache.main[h] == min(OLD.before[1] + 1, cache.caps.max_freq) and lengths(cache) == OLD.before[2]),
        "S3-ACCESS-2: a hit in M increments its freq, and no queue grows or shrinks", per_access_state=True)
@ensure(lambda OLD, cache, h: OLD.before[0] != "G" or (len(cache.small) == OLD.before[2][0] and tail(cache.main) == (h, 0)),
        "S3-ACCESS-3: a ghost hit is admitted to M with freq 0, and S does not change", per_access_state=True)
@ensure(lambda OLD, cache, h: OLD.before[0] is not None or tail(cache.small) == (h, 0),
        "S3-ACCESS-4: a new hash is admitted to S with freq 0", per_access_state=True)
def access(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-1 to S3-ACCESS-4: one block access."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)  # S3-ACCESS-1
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)  # S3-ACCESS-2: in place
    elif h in cache.ghost:
        admit_ghost_hit(cache, h)  # S3-ACCESS-3
    else:
        admit_to_small(cache, h)  # S3-ACCESS-4


def admit_ghost_hit(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-3: a hash found in G leaves G for M's tail, with freq 0 (access states it)."""
    del cache.ghost[h]
    admit_to_main(cache, h, 0)


# A value, not a function (promote-at-2 rebinds it): a call on every pop from S cost 4 to 5 % of
# the CPU time of bench/bench_replay.py's 4,096-block replay.
PROMOTION_FREQ = 1  # S3-ADMIT-S-2: S's popped head is promoted from this freq up


def freq_in_main(freq: int) -> int:
    """S3-ADMIT-S-2: a promoted entry keeps its freq."""
    return freq


@s3fifo_rule
@snapshot(lambda cache: len(cache.small), "small_len")
@snapshot(head_to_make_room, "head", per_access_state=True)
@snapshot(lambda cache: list(cache.small.items()), "small", per_access_state=True)
@require(lambda cache, h: not is_queued(cache, h), "S3-ADMIT-S-4: h is new")
@ensure(lambda cache, h: cache.small[h] == 0 and next(reversed(cache.small)) == h, "S3-ADMIT-S-4: h at the tail of S, freq 0")
@ensure(lambda OLD, cache: len(cache.small) == min(OLD.small_len + 1, cache.caps.small_cap), "S3-ADMIT-S-1: drain only to make room")
@ensure(lambda OLD, cache, h: list(cache.small.items()) == OLD.small[len(OLD.small) - cache.caps.small_cap + 1:] + [(h, 0)]
        if OLD.head else list(cache.small.items()) == OLD.small + [(h, 0)],
        "S3-ADMIT-S-1: a full S loses its head, and only its head", per_access_state=True)
@ensure(lambda OLD, cache: OLD.head is None or OLD.head[1] == 0 or tail(cache.main) == OLD.head,
        "S3-ADMIT-S-2: the head popped with freq >= 1 is at the tail of M, its freq unchanged", per_access_state=True)
@ensure(lambda OLD, cache: OLD.head is None or OLD.head[1] >= 1 or tail(cache.ghost) == (OLD.head[0], True),
        "S3-ADMIT-S-3: the head popped with freq 0 is at the tail of G", per_access_state=True)
def admit_to_small(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-1 to S3-ADMIT-S-4."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:  # S3-ADMIT-S-1
        victim = next(iter(small))  # REPLAY-QUEUE-2: the head
        victim_freq = small.pop(victim)
        if victim_freq >= PROMOTION_FREQ:
            admit_to_main(cache, victim, freq_in_main(victim_freq))  # S3-ADMIT-S-2
        else:
            insert_to_ghost(cache, victim)  # S3-ADMIT-S-3
    small[h] = 0  # S3-ADMIT-S-4


@s3fifo_rule
@snapshot(lambda cache: (len(cache.main), len(cache.ghost)), "lengths")
@snapshot(lambda cache: second_chance(list(cache.main.items()), cache.caps.main_cap), "second_chance", per_access_state=True)
@require(lambda cache, h: not is_queued(cache, h), "S3-ADMIT-M-4: h is not queued")
@require(lambda cache, freq: 0 <= freq <= cache.caps.max_freq, "S3-FREQ-1")
@ensure(lambda cache, h, freq: cache.main[h] == freq and next(reversed(cache.main)) == h, "S3-ADMIT-M-4: h at the tail of M with its freq")
@ensure(
    lambda OLD, cache: (len(cache.main), len(cache.ghost)) == lengths_after_admit_to_main(cache.caps, OLD.lengths[0], OLD.lengths[1]),
    "S3-ADMIT-M-3: exactly one real eviction, and only when M is full, and it goes to G",
)
@ensure(lambda OLD, cache: list(cache.main.items())[:-1] == OLD.second_chance[1],
        "S3-ADMIT-M-1, S3-ADMIT-M-2: a full M requeues its heads with one chance less until one has none left", per_access_state=True)
@ensure(lambda OLD, cache: OLD.second_chance[0] is None or tail(cache.ghost) == (OLD.second_chance[0], True),
        "S3-ADMIT-M-3: the entry evicted from M is at the tail of G", per_access_state=True)
def admit_to_main(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-1 to S3-ADMIT-M-4: second chance, then exactly one real eviction."""
    if len(cache.main) >= cache.caps.main_cap:  # S3-ADMIT-M-1
        evict_from_main(cache)
    cache.main[h] = freq  # S3-ADMIT-M-4


def evict_from_main(cache: "S3FIFO") -> None:
    """S3-ADMIT-M-2 and S3-ADMIT-M-3: M's heads go back to its tail, each with a chance spent,
    until one has none left and leaves M (admit_to_main states it)."""
    main = cache.main
    while True:
        victim = next(iter(main))  # REPLAY-QUEUE-2: the head
        victim_freq = main.pop(victim)
        if victim_freq < 1:
            retire_from_main(cache, victim)  # S3-ADMIT-M-3
            return
        main[victim] = chance_spent(victim_freq)  # S3-ADMIT-M-2: back at the tail


def chance_spent(freq: int) -> int:
    """S3-ADMIT-M-2: a requeued head of M spends one chance."""
    return freq - 1


def retire_from_main(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-M-3: the entry evicted from M goes to G."""
    insert_to_ghost(cache, h)


def lengths_after_admit_to_main(caps: Caps, main_len: int, ghost_len: int) -> tuple[int, int]:
    """S3-ADMIT-M-3: |M| and |G| after an admission to M that found them at these lengths (one real
    eviction, to G, only when M was full)."""
    if main_len < caps.main_cap:
        return main_len + 1, ghost_len
    return caps.main_cap, min(ghost_len + 1, caps.ghost_cap)


@s3fifo_rule
@snapshot(lambda cache: list(cache.ghost), "ghost", per_access_state=True)
@require(lambda cache, h: not is_resident(cache, h), "S3-GHOST-4: a ghost is not resident")
@ensure(lambda cache, h: next(reversed(cache.ghost)) == h, "S3-GHOST-3: h at the tail of G")
@ensure(lambda OLD, cache, h: list(cache.ghost) == ([g for g in OLD.ghost if g != h] + [h])[-cache.caps.ghost_cap:],
        "S3-GHOST-1, S3-GHOST-2: G keeps its newest ghost_cap hashes, h once, at the tail", per_access_state=True)
def insert_to_ghost(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-1 to S3-GHOST-3: a bounded FIFO of evicted hashes."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]  # S3-GHOST-1: re-appended below with fresh recency
    elif len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]  # S3-GHOST-2: forget the oldest, the head (REPLAY-QUEUE-2)
    ghost[h] = True  # S3-GHOST-3


@dataclass(slots=True, eq=False)
class S3FIFO(BlockPolicy):
    """One S3FIFO cache (S3-QUEUE-1): S and M hold (hash, freq), G hashes alone.

    The rules above are its methods, so that the replay's ``cache.access(h)`` is one call to
    the rule; built from its fields, any state can be handed to a rule (as CrossHair does).
    """

    caps: Caps
    small: Queue
    main: Queue
    ghost: Ghost

    @classmethod
    @ensure(lambda result: not (result.small or result.main or result.ghost)
            and len({id(result.small), id(result.main), id(result.ghost)}) == 3, "S3-QUEUE-1: three queues, each empty")
    def empty(cls, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> "S3FIFO":
        """An empty cache (S3-QUEUE-1), its sizes derived by S3-CONF-1 to S3-CONF-6."""
        return cls(caps_for(capacity, small_ratio, max_freq), OrderedDict(), OrderedDict(), OrderedDict())

    blocks = same_blocks
    is_resident = is_resident
    access = access
    lookup = prefix_lookup
    serve = access_every_block
    state_invariants_hold = state_invariants_hold

    @ensure(lambda self, result: result == len(self.small) + len(self.main), "S3-FINAL-1: |S| + |M|, never G")
    def resident_count(self) -> int:
        """S3-FINAL-1: |S| + |M|, never the ghost."""
        return len(self.small) + len(self.main)
