"""S3FIFO in a dialect (spec/dialects.md, section 2): spec/s3fifo.md's rules, each written with
the alternatives its variation points put in its place.

The canonical S3FIFO (reference/s3fifo.py) stays the spec's literal text; this module is the same
rules once more, with a branch where a variation point replaces one, so that a dialect with no
variation point is the canonical policy (tests/test_dialects.py replays both in lockstep).
"""

import math
from collections import OrderedDict
from dataclasses import dataclass

from ..contracts import ensure, require
from ..errors import ConfigError
from ..queues import HashQueue, Queue, same_blocks
from ..request import access_every_block, prefix_lookup
from ..s3fifo import ratio_is_valid
from ..validation import INT64_MIN, check_count
from .catalogue import Dialect


@dataclass(frozen=True, slots=True)
class DialectCaps:
    """S3-CONF-2 to S3-CONF-6 as a dialect derives them; ``max_freq`` is None where freqs do not
    saturate (S3-DIALECT-13)."""

    capacity: int
    small_cap: int
    main_cap: int
    ghost_cap: int
    max_freq: int | None
    promotion_freq: int


def small_ratio_refusal(small_ratio: float, dialect: Dialect) -> ConfigError | None:
    """S3-CONF-1, or S3-DIALECT-5 (small-ratio-open): the open interval (0, 1)."""
    if not ratio_is_valid(small_ratio):
        return ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {small_ratio!r}")
    if "small-ratio-open" in dialect and not 0.0 < small_ratio < 1.0:
        return ConfigError("S3-DIALECT-5", f"small_ratio must lie in the open interval (0, 1), not {small_ratio!r}")
    return None


def dialect_small_cap(capacity: int, small_ratio: float, dialect: Dialect) -> int:
    """S3-CONF-2, or S3-DIALECT-1 (small-cap-floor) and S3-DIALECT-2 (small-cap-min-1)."""
    product = capacity * small_ratio
    small_cap = math.floor(product) if "small-cap-floor" in dialect else round(product)  # S3-DIALECT-1: C's integer cast
    if "small-cap-min-1" in dialect:
        small_cap = max(1, small_cap)  # S3-DIALECT-2
    return small_cap


def dialect_ghost_cap(capacity: int, main_cap: int, dialect: Dialect) -> int:
    """S3-CONF-4, or S3-DIALECT-6 (ghost-cap-0.9) and S3-DIALECT-7 (ghost-cap-capacity)."""
    if "ghost-cap-0.9" in dialect:
        return math.floor(capacity * 0.9)  # S3-DIALECT-6
    if "ghost-cap-capacity" in dialect:
        return math.floor(capacity * 1.0)  # S3-DIALECT-7: the double product, as for the other sizes
    return main_cap  # S3-CONF-4


def dialect_caps(capacity: int, small_ratio: float, max_freq: int, dialect: Dialect) -> DialectCaps:
    """S3-CONF-1 to S3-CONF-6 with the dialect's configuration variation points, or a ConfigError
    citing the clause that refuses the configuration."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    refusal = small_ratio_refusal(small_ratio, dialect)
    if refusal is not None:
        raise refusal
    if "freq-unsaturated" in dialect:
        check_count(max_freq, INT64_MIN, "S3-DIALECT-13", "max_freq (not used)", low_text="-2**63")
    elif "max-freq-min-1" in dialect:
        check_count(max_freq, 1, "S3-DIALECT-8", "max_freq")
    else:
        check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    small_cap = dialect_small_cap(capacity, small_ratio, dialect)
    main_cap = capacity - small_cap  # S3-CONF-3
    if main_cap < 1 and "main-zero-all-main" in dialect:
        small_cap, main_cap = 0, capacity  # S3-DIALECT-3: no S at all
    elif main_cap < 1 and "main-zero-drop" in dialect:
        main_cap = 0  # S3-DIALECT-4: an M that holds nothing
    elif small_cap < 1 or main_cap < 1:
        raise ConfigError(
            "S3-CONF-5",
            f"capacity {capacity} at small_ratio {small_ratio} gives small_cap {small_cap} and main_cap {main_cap}; S3FIFO needs both >= 1",
        )
    return DialectCaps(
        capacity=capacity,
        small_cap=small_cap,
        main_cap=main_cap,
        ghost_cap=dialect_ghost_cap(capacity, main_cap, dialect),
        max_freq=None if "freq-unsaturated" in dialect else max_freq,
        promotion_freq=2 if "promote-at-2" in dialect else 1,  # S3-DIALECT-9, or S3-ADMIT-S-2's freq >= 1
    )


def incremented(cache: "DialectS3FIFO", freq: int) -> int:
    """S3-FREQ-2, or S3-DIALECT-13 (freq-unsaturated): one more, without bound."""
    top = cache.caps.max_freq
    return freq + 1 if top is None else min(freq + 1, top)


def chance_spent(cache: "DialectS3FIFO", freq: int) -> int:
    """S3-ADMIT-M-2's freq - 1, or S3-DIALECT-13's min(freq, 3) - 1."""
    return freq - 1 if cache.caps.max_freq is not None else min(freq, 3) - 1


def freq_in_main(cache: "DialectS3FIFO", freq: int) -> int:
    """S3-ADMIT-S-2's unchanged freq, or S3-DIALECT-10 (promote-freq-reset) and S3-DIALECT-11 (promote-freq-minus-1)."""
    if "promote-freq-reset" in cache.dialect:
        return 0  # S3-DIALECT-10
    if "promote-freq-minus-1" in cache.dialect:
        return freq - 1  # S3-DIALECT-11
    return freq


def insert_to_ghost(cache: "DialectS3FIFO", h: int) -> None:
    """S3-GHOST-1 to S3-GHOST-3; a ghost of no size (S3-DIALECT-6 at capacity 1, or S3-CONF-4's
    ghost_cap = main_cap under S3-DIALECT-4) keeps nothing."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]  # S3-GHOST-1
    elif len(ghost) >= cache.caps.ghost_cap:
        if cache.caps.ghost_cap == 0:
            return
        del ghost[next(iter(ghost))]  # S3-GHOST-2: the head (REPLAY-QUEUE-2)
    ghost[h] = True  # S3-GHOST-3


def main_victim(cache: "DialectS3FIFO", h: int) -> None:
    """S3-ADMIT-M-3: to G, or S3-DIALECT-12 (main-victim-forgotten): forgotten."""
    if "main-victim-forgotten" not in cache.dialect:
        insert_to_ghost(cache, h)


def evict_from_main(cache: "DialectS3FIFO") -> None:
    """S3-ADMIT-M-2, S3-ADMIT-M-3: requeue heads with a chance left until one real eviction."""
    main = cache.main
    while main:
        victim = next(iter(main))  # REPLAY-QUEUE-2: the head
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = chance_spent(cache, victim_freq)  # S3-ADMIT-M-2
            continue
        main_victim(cache, victim)  # S3-ADMIT-M-3
        return


@ensure(lambda cache, h, freq: (h in cache.main) == (cache.caps.main_cap > 0), "S3-ADMIT-M-4, S3-DIALECT-4: appended, or dropped by an M of no size")
def append_to_main(cache: "DialectS3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-4, or S3-DIALECT-4 (main-zero-drop): an M of no size drops h."""
    if cache.caps.main_cap > 0:
        cache.main[h] = freq


def admit_to_main(cache: "DialectS3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-1 to S3-ADMIT-M-4 (per-queue eviction)."""
    while cache.main and len(cache.main) >= cache.caps.main_cap:  # S3-ADMIT-M-1
        evict_from_main(cache)
    append_to_main(cache, h, freq)


def promote_or_forget(cache: "DialectS3FIFO", victim: int, victim_freq: int, *, per_queue: bool) -> bool:
    """S3-ADMIT-S-2 and S3-ADMIT-S-3 for S's popped head (S3-DIALECT-9 sets the freq that
    promotes); whether it was promoted. Under global eviction M is not drained for it (S3-DIALECT-14)."""
    if victim_freq < cache.caps.promotion_freq:
        insert_to_ghost(cache, victim)  # S3-ADMIT-S-3
        return False
    freq = freq_in_main(cache, victim_freq)
    if per_queue:
        admit_to_main(cache, victim, freq)  # S3-ADMIT-S-2
    else:
        append_to_main(cache, victim, freq)  # S3-DIALECT-14
    return True


def admit_to_small(cache: "DialectS3FIFO", h: int) -> None:
    """S3-ADMIT-S-1 to S3-ADMIT-S-4 (per-queue eviction)."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:  # S3-ADMIT-S-1
        victim = next(iter(small))  # REPLAY-QUEUE-2: the head
        victim_freq = small.pop(victim)
        promote_or_forget(cache, victim, victim_freq, per_queue=True)
    small[h] = 0  # S3-ADMIT-S-4


def eviction_step(cache: "DialectS3FIFO") -> None:
    """S3-DIALECT-14 (global-eviction): one step, from M when M is over main_cap or S is empty,
    else from S until one of its heads goes to G (or S empties)."""
    cache.has_evicted = True
    if len(cache.main) > cache.caps.main_cap or not cache.small:
        evict_from_main(cache)
        return
    while cache.small:
        victim = next(iter(cache.small))  # REPLAY-QUEUE-2: the head
        victim_freq = cache.small.pop(victim)
        if not promote_or_forget(cache, victim, victim_freq, per_queue=False):
            return


@ensure(lambda cache: len(cache.small) + len(cache.main) < cache.caps.capacity, "S3-DIALECT-14: room for one more")
def make_room(cache: "DialectS3FIFO") -> None:
    """S3-DIALECT-14: before an admission, evict while S and M together fill the capacity."""
    while len(cache.small) + len(cache.main) >= cache.caps.capacity:
        eviction_step(cache)


def placed_in_main(cache: "DialectS3FIFO", from_ghost: bool) -> bool:
    """Whether an admitted hash joins M rather than S: a ghost hit (S3-ACCESS-3), a cache with no
    S (S3-DIALECT-3), or a new hash that finds S full before the first eviction (S3-DIALECT-15)."""
    if from_ghost or cache.caps.small_cap == 0:
        return True
    return "new-to-main-until-first-eviction" in cache.dialect and not cache.has_evicted and len(cache.small) >= cache.caps.small_cap


@ensure(lambda cache, h, from_ghost: is_resident(cache, h) or (not from_ghost and "small-refuses-own-size" in cache.dialect
                                                                  and cache.caps.small_cap <= 1) or (cache.caps.main_cap == 0 and h not in cache.small),
        "S3-ACCESS-3, S3-ACCESS-4: h is admitted, unless S3-DIALECT-17 refuses it or S3-DIALECT-4 drops it")
def admit(cache: "DialectS3FIFO", h: int, from_ghost: bool) -> None:
    """S3-ACCESS-3 and S3-ACCESS-4: a ghost hit to M with freq 0, a new hash to S."""
    if "global-eviction" in cache.dialect:
        make_room(cache)  # S3-DIALECT-14
    if not from_ghost and "small-refuses-own-size" in cache.dialect and cache.caps.small_cap <= 1:
        return  # S3-DIALECT-17: a block as large as S is not admitted
    to_main = placed_in_main(cache, from_ghost)
    if "global-eviction" in cache.dialect:
        if to_main:
            append_to_main(cache, h, 0)
        else:
            cache.small[h] = 0
    elif to_main:
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def dialect_state_holds(cache: "DialectS3FIFO") -> bool:
    """S3-QUEUE-2, S3-FREQ-1 (no upper bound under S3-DIALECT-13), S3-INV-3, and the bound every
    dialect keeps: |S| + |M| <= capacity (S3-INV-1 and S3-INV-2 where eviction is per queue)."""
    small, main, ghost, caps = cache.small, cache.main, cache.ghost, cache.caps
    top = caps.max_freq
    per_queue = "global-eviction" not in cache.dialect
    return (
        small.keys().isdisjoint(main) and small.keys().isdisjoint(ghost) and main.keys().isdisjoint(ghost)
        and all(0 <= f and (top is None or f <= top) for f in (*small.values(), *main.values()))
        and len(small) + len(main) <= caps.capacity and len(ghost) <= caps.ghost_cap
        and (not per_queue or (len(small) <= caps.small_cap and len(main) <= caps.main_cap))
    )


@require(dialect_state_holds, "S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3 as the dialect keeps them", per_access_state=True)
@ensure(dialect_state_holds, "S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3 as the dialect keeps them", per_access_state=True)
def access(cache: "DialectS3FIFO", h: int) -> None:
    """S3-ACCESS-1 to S3-ACCESS-4, with S3-DIALECT-16 (ghost-ignored): a ghost hit is forgotten
    and the hash admitted as a new one."""
    if h in cache.small:
        cache.small[h] = incremented(cache, cache.small[h])  # S3-ACCESS-1
    elif h in cache.main:
        cache.main[h] = incremented(cache, cache.main[h])  # S3-ACCESS-2
    elif h in cache.ghost:
        del cache.ghost[h]  # S3-ACCESS-3
        admit(cache, h, from_ghost="ghost-ignored" not in cache.dialect)
    else:
        admit(cache, h, from_ghost=False)  # S3-ACCESS-4


def is_resident(cache: "DialectS3FIFO", h: int) -> bool:
    """S3-QUEUE-3."""
    return h in cache.small or h in cache.main


@dataclass(slots=True, eq=False)
class DialectS3FIFO:
    """One S3FIFO cache in a dialect: the canonical queues, the dialect's sizes, and whether an
    eviction has happened yet (S3-DIALECT-15 reads it)."""

    dialect: Dialect
    caps: DialectCaps
    small: Queue
    main: Queue
    ghost: HashQueue
    has_evicted: bool = False

    @classmethod
    def empty(cls, dialect: Dialect, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> "DialectS3FIFO":
        return cls(dialect, dialect_caps(capacity, small_ratio, max_freq, dialect), OrderedDict(), OrderedDict(), OrderedDict())

    blocks = same_blocks
    is_resident = is_resident
    access = access
    lookup = prefix_lookup
    serve = access_every_block
    state_invariants_hold = dialect_state_holds

    def resident_count(self) -> int:
        """S3-FINAL-1: |S| + |M|."""
        return len(self.small) + len(self.main)
