"""The spec-level mutants of spec/s3fifo.md (spec_mutants.py plants them): each restates one rule of
reference/s3fifo.py with its mistake, whole, section by section. A mutant's body reads the rules it
calls from its copy of the reference (its globals are the copy's): the imports below are the
reference's names, for the reader and the linter.
"""

import math
from collections import OrderedDict

from kvspec.reference.errors import ConfigError
from kvspec.reference.s3fifo import (
    S3FIFO,
    Caps,
    admit_to_main,
    admit_to_small,
    caps_for,
    derive_caps,
    insert_to_ghost,
    ratio_is_valid,
    saturating_increment,
    small_cap_for,
)
from kvspec.reference.validation import check_count

# --- S3FIFO: configuration (spec/s3fifo.md section 1) -------------------------------------------


def ratio_excludes_one(small_ratio: float) -> bool:
    """S3-CONF-1 read as a half-open interval: small_ratio 1.0 refused."""
    return type(small_ratio) is float and math.isfinite(small_ratio) and 0.0 <= small_ratio < 1.0


def small_cap_by_floor(capacity: int, small_ratio: float) -> int:
    """S3-CONF-2 by floor, not round: 1.5 gives 1 (the issue's first planted bug)."""
    return math.floor(capacity * small_ratio)


def main_cap_is_capacity(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-3 forgotten: M sized like the whole cache."""
    small_cap = small_cap_for(capacity, small_ratio)
    return Caps(small_cap=small_cap, main_cap=capacity, ghost_cap=capacity, max_freq=max_freq)


def ghost_cap_is_small_cap(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-4 confused: G sized like S (seed 000's own common mistake)."""
    small_cap = small_cap_for(capacity, small_ratio)
    main_cap = capacity - small_cap
    return Caps(small_cap=small_cap, main_cap=main_cap, ghost_cap=small_cap, max_freq=max_freq)


def refused_only_when_both_zero(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-5 with `and` for `or`: a cache with small_cap 0 is accepted when main_cap is not 0."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    if not ratio_is_valid(small_ratio):
        raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {small_ratio!r}")
    check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    caps = derive_caps(capacity, small_ratio, max_freq)
    if caps.small_cap < 1 and caps.main_cap < 1:
        raise ConfigError("S3-CONF-5", "S3FIFO needs both small_cap and main_cap >= 1")
    return caps


def max_freq_unchecked(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-6 forgotten: a negative max_freq accepted."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    if not ratio_is_valid(small_ratio):
        raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {small_ratio!r}")
    small_cap = small_cap_for(capacity, small_ratio)
    caps = Caps(small_cap=small_cap, main_cap=capacity - small_cap, ghost_cap=capacity - small_cap, max_freq=max_freq)
    if caps.small_cap < 1 or caps.main_cap < 1:
        raise ConfigError("S3-CONF-5", "S3FIFO needs both small_cap and main_cap >= 1")
    return caps


# --- S3FIFO: state (section 2) -------------------------------------------------------------------


def queues_share_one_dict(cls: type, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> "S3FIFO":
    """S3-QUEUE-1 with one empty queue made once and handed to S and M."""
    empty: OrderedDict[int, int] = OrderedDict()
    return cls(caps_for(capacity, small_ratio, max_freq), empty, empty, OrderedDict())


def ghost_hit_left_in_ghost(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-3 without its removal from G: the hash is in M and G at once (breaks S3-QUEUE-2)."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def ghost_is_resident(cache: "S3FIFO", h: int) -> bool:
    """S3-QUEUE-3 with G counted: a ghost entry is resident (seed 000's own common mistake)."""
    return h in cache.small or h in cache.main or h in cache.ghost


def freq_above_max(freq: int, max_freq: int) -> int:
    """S3-FREQ-1 off by one: the freq saturates at max_freq + 1."""
    return min(freq + 1, max_freq + 1)


def freq_unsaturated(freq: int, max_freq: int) -> int:
    """S3-FREQ-2 without its clamp: freq left unsaturated (the issue's third planted bug)."""
    return freq + 1


# --- S3FIFO: access (section 3) ------------------------------------------------------------------


def hit_in_small_moves_to_tail(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-1 as LRU does it: a hit in S goes to the tail of S."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small.pop(h), cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def hit_in_small_not_counted(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-1 left out: a hit in S changes nothing (only M's hits counted)."""
    if h in cache.small:
        return
    if h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def hit_in_main_not_counted(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-2 left out: a hit in M changes nothing (only S's hits counted)."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        return
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def hit_in_main_moves_to_tail(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-2 as LRU does it: a hit in M goes to the tail of M."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main.pop(h), cache.caps.max_freq)
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def ghost_hit_to_small(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-3 read as a miss: a ghost hit admitted to S instead of M."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_small(cache, h)
    else:
        admit_to_small(cache, h)


def new_block_to_main(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-4 sent to the wrong queue: a new hash admitted to M."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        del cache.ghost[h]
        admit_to_main(cache, h, 0)
    else:
        admit_to_main(cache, h, 0)


# --- S3FIFO: admission to S (section 4) ----------------------------------------------------------


def drain_empties_small(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-1's drain read as "empty S": every entry popped when S is full."""
    small = cache.small
    if len(small) >= cache.caps.small_cap:
        while small:
            victim = next(iter(small))
            victim_freq = small.pop(victim)
            if victim_freq >= 1:
                admit_to_main(cache, victim, victim_freq)
            else:
                insert_to_ghost(cache, victim)
    small[h] = 0


def freq_reset_on_promotion(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-2 with the freq reset: the promoted entry enters M with freq 0 (a seed 000 mistake)."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:
        victim = next(iter(small))
        victim_freq = small.pop(victim)
        if victim_freq >= 1:
            admit_to_main(cache, victim, 0)
        else:
            insert_to_ghost(cache, victim)
    small[h] = 0


def popped_entry_forgotten(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-3 forgotten: a popped entry with freq 0 is dropped, not inserted into G."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:
        victim = next(iter(small))
        victim_freq = small.pop(victim)
        if victim_freq >= 1:
            admit_to_main(cache, victim, victim_freq)
    small[h] = 0


def admitted_with_freq_one(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-4 counting the access itself: a new entry starts with freq 1."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:
        victim = next(iter(small))
        victim_freq = small.pop(victim)
        if victim_freq >= 1:
            admit_to_main(cache, victim, victim_freq)
        else:
            insert_to_ghost(cache, victim)
    small[h] = 1


def small_over_cap(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-1 with > for >=: S holds one entry more than small_cap (breaks S3-INV-1)."""
    small = cache.small
    while len(small) > cache.caps.small_cap:
        victim = next(iter(small))
        victim_freq = small.pop(victim)
        if victim_freq >= 1:
            admit_to_main(cache, victim, victim_freq)
        else:
            insert_to_ghost(cache, victim)
    small[h] = 0


# --- S3FIFO: admission to M (section 5) ----------------------------------------------------------


def main_examined_once(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-1 with `if` for `while`: one head examined, and M grows past main_cap when it had a chance left."""
    main = cache.main
    if len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = victim_freq - 1
        else:
            insert_to_ghost(cache, victim)
    main[h] = freq


def m_drain_without_decrement(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-2 without its "freq - 1": the drain never ends once every entry of M has freq >= 1
    (the issue's first mutant the hunt missed)."""
    main = cache.main
    while len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = victim_freq
            continue
        insert_to_ghost(cache, victim)
        break
    main[h] = freq


def m_drain_without_second_chance(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-2 left out: M's head is evicted whatever its freq (plain FIFO, a seed 000 mistake)."""
    main = cache.main
    if len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        main.pop(victim)
        insert_to_ghost(cache, victim)
    main[h] = freq


def evicted_from_main_forgotten(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-3 without G: the entry evicted from M is dropped."""
    main = cache.main
    while len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = victim_freq - 1
            continue
        break
    main[h] = freq


def admitted_at_head_of_main(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-4 at the wrong end: (h, f) joins M at its head."""
    main = cache.main
    while len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = victim_freq - 1
            continue
        insert_to_ghost(cache, victim)
        break
    main[h] = freq
    for other in [key for key in main if key != h]:  # every other entry moved behind it
        main[other] = main.pop(other)


def main_over_cap(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-1 with > for >=: M holds one entry more than main_cap (breaks S3-INV-2)."""
    main = cache.main
    while len(main) > cache.caps.main_cap:
        victim = next(iter(main))
        victim_freq = main.pop(victim)
        if victim_freq >= 1:
            main[victim] = victim_freq - 1
            continue
        insert_to_ghost(cache, victim)
        break
    main[h] = freq


def resident_entry_to_ghost(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-GHOST-4 in the wrong order: M's victim goes into G before it leaves M."""
    main = cache.main
    while len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        if main[victim] >= 1:
            main[victim] = main.pop(victim) - 1
            continue
        insert_to_ghost(cache, victim)
        del main[victim]
        break
    main[h] = freq


# --- S3FIFO: ghost insertion (section 6) ---------------------------------------------------------


def ghost_not_refreshed(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-1 left out: a hash already in G keeps its old place."""
    ghost = cache.ghost
    if h in ghost:
        return
    if len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]
    ghost[h] = True


def ghost_forgets_newest(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-2 at the wrong end: a full G forgets its tail, the newest."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]
    elif len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(reversed(ghost))]
    ghost[h] = True


def ghost_appended_at_head(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-3 at the wrong end: h joins G at its head."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]
    elif len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]
    ghost[h] = True
    for other in [key for key in ghost if key != h]:  # every other hash moved behind it
        del ghost[other]
        ghost[other] = True


def ghost_over_cap(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-2 with > for >=: G holds one hash more than ghost_cap (breaks S3-INV-3)."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]
    elif len(ghost) > cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]
    ghost[h] = True


# --- S3FIFO: final size (section 7) --------------------------------------------------------------


def resident_count_with_ghost(self: "S3FIFO") -> int:
    """S3-FINAL-1 with G counted: the resident count includes the ghost (a seed 000 mistake)."""
    return len(self.small) + len(self.main) + len(self.ghost)
