"""The spec-level mutant gallery: a mistake a spec author could write into each rule of spec/s3fifo.md,
lru.md and fifo.md, planted one at a time in a copy of the reference, for `kvspec hunt` to find
(bench/bench_hunt.py measures which it finds, and how fast: docs/hunt-score.md).

Where conformance/galleries/mutants.py overrides one method of an implementation, each mutant here
restates one function of the reference with its mistake, whole, as consensus-specs restates a
modified function in a fork. The function takes the place of the reference's in a copy of its
module, which keeps every other rule and the reference's own contracts on the mutated one: the
contracts state the rule the mutant gets wrong. The copy is this module's attribute named after
the mutant (in snake case), made when it is first asked for, so that

    kvspec hunt check --function kvspec.conformance.galleries.spec_mutants.ghost_hit_to_small.access

searches the mistake and the rules that call it, and ``kvspec hunt diff --pair`` compares a rule
with its mutant. A mutant's body reads the rules it calls from its copy (its globals are the
copy's): the imports below are the reference's names, for the reader and the linter.
"""

import importlib.machinery
import importlib.util
import math
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

from kvspec.reference.benefit.config import UINT32_MAX, BenefitConfig, is_float
from kvspec.reference.benefit.ledger import Ledger, Segment
from kvspec.reference.errors import ConfigError, KvspecError
from kvspec.reference.fifo import FIFO
from kvspec.reference.lru import LRU
from kvspec.reference.queues import requeue
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


@dataclass(frozen=True)
class SpecMutant:
    """One planted mistake: the rule it breaks, the mistake in a spec author's words, the reference
    module it is planted in, the function it replaces there (``Class.method`` for a method), and
    the function that replaces it."""

    name: str
    breaks: str
    mistake: str
    module: str
    replaces: str
    rule: Callable[..., Any]

    @property
    def attribute(self) -> str:
        return self.name.replace("-", "_")

    @property
    def target(self) -> str:
        """The fully qualified function `kvspec hunt check --function` searches."""
        return f"{__name__}.{self.attribute}.{self.replaces}"


S3FIFO_MODULE, LRU_MODULE, FIFO_MODULE = "kvspec.reference.s3fifo", "kvspec.reference.lru", "kvspec.reference.fifo"
BENEFIT_CONFIG, BENEFIT_LEDGER = "kvspec.reference.benefit.config", "kvspec.reference.benefit.ledger"


# --- S3FIFO: configuration (spec/s3fifo.md section 1) -------------------------------------------


def _ratio_excludes_one(small_ratio: float) -> bool:
    """S3-CONF-1 read as a half-open interval: small_ratio 1.0 refused."""
    return type(small_ratio) is float and math.isfinite(small_ratio) and 0.0 <= small_ratio < 1.0


def _small_cap_by_floor(capacity: int, small_ratio: float) -> int:
    """S3-CONF-2 by floor, not round: 1.5 gives 1 (the issue's first planted bug)."""
    return math.floor(capacity * small_ratio)


def _main_cap_is_capacity(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-3 forgotten: M sized like the whole cache."""
    small_cap = small_cap_for(capacity, small_ratio)
    return Caps(small_cap=small_cap, main_cap=capacity, ghost_cap=capacity, max_freq=max_freq)


def _ghost_cap_is_small_cap(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-4 confused: G sized like S (seed 000's own common mistake)."""
    small_cap = small_cap_for(capacity, small_ratio)
    main_cap = capacity - small_cap
    return Caps(small_cap=small_cap, main_cap=main_cap, ghost_cap=small_cap, max_freq=max_freq)


def _refused_only_when_both_zero(capacity: int, small_ratio: float, max_freq: int) -> Caps:
    """S3-CONF-5 with `and` for `or`: a cache with small_cap 0 is accepted when main_cap is not 0."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    if not ratio_is_valid(small_ratio):
        raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {small_ratio!r}")
    check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    caps = derive_caps(capacity, small_ratio, max_freq)
    if caps.small_cap < 1 and caps.main_cap < 1:
        raise ConfigError("S3-CONF-5", "S3FIFO needs both small_cap and main_cap >= 1")
    return caps


def _max_freq_unchecked(capacity: int, small_ratio: float, max_freq: int) -> Caps:
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


def _queues_share_one_dict(cls: type, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> "S3FIFO":
    """S3-QUEUE-1 with one empty queue made once and handed to S and M."""
    empty: OrderedDict[int, int] = OrderedDict()
    return cls(caps_for(capacity, small_ratio, max_freq), empty, empty, OrderedDict())


def _ghost_hit_left_in_ghost(cache: "S3FIFO", h: int) -> None:
    """S3-ACCESS-3 without its removal from G: the hash is in M and G at once (breaks S3-QUEUE-2)."""
    if h in cache.small:
        cache.small[h] = saturating_increment(cache.small[h], cache.caps.max_freq)
    elif h in cache.main:
        cache.main[h] = saturating_increment(cache.main[h], cache.caps.max_freq)
    elif h in cache.ghost:
        admit_to_main(cache, h, 0)
    else:
        admit_to_small(cache, h)


def _ghost_is_resident(cache: "S3FIFO", h: int) -> bool:
    """S3-QUEUE-3 with G counted: a ghost entry is resident (seed 000's own common mistake)."""
    return h in cache.small or h in cache.main or h in cache.ghost


def _freq_above_max(freq: int, max_freq: int) -> int:
    """S3-FREQ-1 off by one: the freq saturates at max_freq + 1."""
    return min(freq + 1, max_freq + 1)


def _freq_unsaturated(freq: int, max_freq: int) -> int:
    """S3-FREQ-2 without its clamp: freq left unsaturated (the issue's third planted bug)."""
    return freq + 1


# --- S3FIFO: access (section 3) ------------------------------------------------------------------


def _hit_in_small_moves_to_tail(cache: "S3FIFO", h: int) -> None:
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


def _hit_in_small_not_counted(cache: "S3FIFO", h: int) -> None:
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


def _hit_in_main_not_counted(cache: "S3FIFO", h: int) -> None:
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


def _hit_in_main_moves_to_tail(cache: "S3FIFO", h: int) -> None:
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


def _ghost_hit_to_small(cache: "S3FIFO", h: int) -> None:
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


def _new_block_to_main(cache: "S3FIFO", h: int) -> None:
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


def _drain_empties_small(cache: "S3FIFO", h: int) -> None:
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


def _freq_reset_on_promotion(cache: "S3FIFO", h: int) -> None:
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


def _popped_entry_forgotten(cache: "S3FIFO", h: int) -> None:
    """S3-ADMIT-S-3 forgotten: a popped entry with freq 0 is dropped, not inserted into G."""
    small = cache.small
    while len(small) >= cache.caps.small_cap:
        victim = next(iter(small))
        victim_freq = small.pop(victim)
        if victim_freq >= 1:
            admit_to_main(cache, victim, victim_freq)
    small[h] = 0


def _admitted_with_freq_one(cache: "S3FIFO", h: int) -> None:
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


def _small_over_cap(cache: "S3FIFO", h: int) -> None:
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


def _main_examined_once(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _m_drain_without_decrement(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _m_drain_without_second_chance(cache: "S3FIFO", h: int, freq: int) -> None:
    """S3-ADMIT-M-2 left out: M's head is evicted whatever its freq (plain FIFO, a seed 000 mistake)."""
    main = cache.main
    if len(main) >= cache.caps.main_cap:
        victim = next(iter(main))
        main.pop(victim)
        insert_to_ghost(cache, victim)
    main[h] = freq


def _evicted_from_main_forgotten(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _admitted_at_head_of_main(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _main_over_cap(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _resident_entry_to_ghost(cache: "S3FIFO", h: int, freq: int) -> None:
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


def _ghost_not_refreshed(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-1 left out: a hash already in G keeps its old place."""
    ghost = cache.ghost
    if h in ghost:
        return
    if len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]
    ghost[h] = True


def _ghost_forgets_newest(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-2 at the wrong end: a full G forgets its tail, the newest."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]
    elif len(ghost) >= cache.caps.ghost_cap:
        del ghost[next(reversed(ghost))]
    ghost[h] = True


def _ghost_appended_at_head(cache: "S3FIFO", h: int) -> None:
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


def _ghost_over_cap(cache: "S3FIFO", h: int) -> None:
    """S3-GHOST-2 with > for >=: G holds one hash more than ghost_cap (breaks S3-INV-3)."""
    ghost = cache.ghost
    if h in ghost:
        del ghost[h]
    elif len(ghost) > cache.caps.ghost_cap:
        del ghost[next(iter(ghost))]
    ghost[h] = True


# --- S3FIFO: final size (section 7) --------------------------------------------------------------


def _resident_count_with_ghost(self: "S3FIFO") -> int:
    """S3-FINAL-1 with G counted: the resident count includes the ghost (a seed 000 mistake)."""
    return len(self.small) + len(self.main) + len(self.ghost)


# --- LRU (spec/lru.md) ---------------------------------------------------------------------------


def _lru_count_is_capacity(self: "LRU") -> int:
    """LRU-CAP-1's resident count confused with the capacity."""
    return self.capacity


def _lru_hit_not_requeued(cache: "LRU", h: int) -> None:
    """LRU-ACCESS-1 left out: a hit changes nothing (FIFO)."""
    recency = cache.recency
    if h in recency:
        return
    if len(recency) >= cache.capacity:
        del recency[next(iter(recency))]
    recency[h] = True


def _lru_evicts_most_recent(cache: "LRU", h: int) -> None:
    """LRU-EVICT-1 at the wrong end: the tail, the most recent, is evicted."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)
        return
    if len(recency) >= cache.capacity:
        del recency[next(reversed(recency))]
    recency[h] = True


def _lru_admits_at_head(cache: "LRU", h: int) -> None:
    """LRU-ADMIT-1 at the wrong end: a new hash joins at the head, the next to go."""
    recency = cache.recency
    if h in recency:
        requeue(recency, h, True)
        return
    if len(recency) >= cache.capacity:
        del recency[next(iter(recency))]
    recency[h] = True
    for other in [key for key in recency if key != h]:  # every other hash moved behind it
        requeue(recency, other, True)


# --- FIFO (spec/fifo.md) -------------------------------------------------------------------------


def _fifo_over_capacity(cache: "FIFO", h: int) -> None:
    """FIFO-CAP-1 with > for >=: the queue holds capacity + 1 hashes."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) > cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True


def _fifo_hit_requeued(cache: "FIFO", h: int) -> None:
    """FIFO-ACCESS-1 as LRU does it: a hit moves to the tail."""
    arrival = cache.arrival
    if h in arrival:
        del arrival[h]
        arrival[h] = True
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True


def _fifo_evicts_newest(cache: "FIFO", h: int) -> None:
    """FIFO-EVICT-1 at the wrong end: the tail, admitted last, is evicted."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(reversed(arrival))]
    arrival[h] = True


def _fifo_admits_at_head(cache: "FIFO", h: int) -> None:
    """FIFO-ADMIT-1 at the wrong end: a new hash joins at the head."""
    arrival = cache.arrival
    if h in arrival:
        return
    if len(arrival) >= cache.capacity:
        del arrival[next(iter(arrival))]
    arrival[h] = True
    for other in [key for key in arrival if key != h]:  # every other hash moved behind it
        del arrival[other]
        arrival[other] = True


# --- the benefit policy (spec/benefit.md): the rules over plain integers ---------------------------


# --- the benefit policy (spec/benefit.md): its rules over plain integers and the configuration ----


def _budget_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-1 forgotten: a negative probation_byte_budget accepted."""
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _threshold_zero_accepted(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-2 from 0: a persistence_hit_threshold of 0 accepted (every entry persists at once)."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 0, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _reuse_floor_above_one(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-3 half checked: a min_reuse_probability above 1 accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float >= 0, not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _decay_one_accepted(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-4 closed at 1: a decay_factor of 1.0 accepted (nothing decays)."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor <= 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f <= 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _grace_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-5 forgotten: a negative grace_observations accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _ghost_capacity_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-6 forgotten: a negative ghost_capacity accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def _ghost_age_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-7 forgotten: a negative ghost_max_age_observations accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    return config


def _negative_key_accepted(value: object, what: str) -> int:
    """BEN-KEY-1 read as a signed 64-bit id: a negative key accepted."""
    if type(value) is not int or not -(2**63) <= value <= 2**63 - 1:
        raise KvspecError(f"BEN-KEY-1: {what} must be a signed 64-bit integer, not {value!r}")
    return value


def _repeated_segment_counted_twice(ledger: Ledger, shared: list[tuple[int, int]]) -> int:
    """BEN-KEY-2 without "each id once": a segment id offered twice counted twice."""
    return sum(size for segment_id, size in shared if segment_id not in ledger)


def _later_size_wins(ledger: Ledger, key: int, shared: list[tuple[int, int]]) -> None:
    """BEN-LEDGER-1 read the other way: the latest registration sets the size."""
    for segment_id, size in shared:
        segment = ledger.setdefault(segment_id, Segment(size))
        segment.size = size
        segment.refs[key] = True


def _empty_segment_kept(ledger: Ledger, key: int, segment_ids: list[int]) -> int:
    """BEN-LEDGER-2 half done: a segment whose last reference is released stays in the ledger."""
    dropped = 0
    for segment_id in segment_ids:
        segment = ledger.get(segment_id)
        if segment is None or key not in segment.refs:
            continue
        del segment.refs[key]
        if not segment.refs:
            dropped += segment.size
    return dropped


MUTANTS: tuple[SpecMutant, ...] = (
    SpecMutant("ratio-excludes-one", "S3-CONF-1", "small_ratio 1.0 refused", S3FIFO_MODULE, "ratio_is_valid", _ratio_excludes_one),
    SpecMutant("small-cap-by-floor", "S3-CONF-2", "small_cap by floor", S3FIFO_MODULE, "small_cap_for", _small_cap_by_floor),
    SpecMutant("main-cap-is-capacity", "S3-CONF-3", "main_cap = capacity", S3FIFO_MODULE, "derive_caps", _main_cap_is_capacity),
    SpecMutant("ghost-cap-is-small-cap", "S3-CONF-4", "ghost_cap = small_cap", S3FIFO_MODULE, "derive_caps", _ghost_cap_is_small_cap),
    SpecMutant("refused-only-when-both-zero", "S3-CONF-5", "a small_cap of 0 accepted",
               S3FIFO_MODULE, "caps_for", _refused_only_when_both_zero),
    SpecMutant("max-freq-unchecked", "S3-CONF-6", "a negative max_freq accepted", S3FIFO_MODULE, "caps_for", _max_freq_unchecked),
    SpecMutant("queues-share-one-dict", "S3-QUEUE-1", "S and M one queue", S3FIFO_MODULE, "S3FIFO.empty", _queues_share_one_dict),
    SpecMutant("ghost-hit-left-in-ghost", "S3-QUEUE-2", "a ghost hit left in G", S3FIFO_MODULE, "access", _ghost_hit_left_in_ghost),
    SpecMutant("ghost-is-resident", "S3-QUEUE-3", "is_resident true for a ghost entry", S3FIFO_MODULE, "is_resident", _ghost_is_resident),
    SpecMutant("freq-above-max", "S3-FREQ-1", "freq saturated at max_freq + 1", S3FIFO_MODULE, "saturating_increment", _freq_above_max),
    SpecMutant("freq-unsaturated", "S3-FREQ-2", "freq left unsaturated", S3FIFO_MODULE, "saturating_increment", _freq_unsaturated),
    SpecMutant("hit-in-small-not-counted", "S3-ACCESS-1", "a hit in S not counted", S3FIFO_MODULE, "access", _hit_in_small_not_counted),
    SpecMutant("hit-in-main-not-counted", "S3-ACCESS-2", "a hit in M not counted", S3FIFO_MODULE, "access", _hit_in_main_not_counted),
    SpecMutant("hit-in-small-moves-to-tail", "S3-ACCESS-1", "a hit in S moved to its tail", S3FIFO_MODULE, "access",
               _hit_in_small_moves_to_tail),
    SpecMutant("hit-in-main-moves-to-tail", "S3-ACCESS-2", "a hit in M moved to its tail",
               S3FIFO_MODULE, "access", _hit_in_main_moves_to_tail),
    SpecMutant("ghost-hit-to-small", "S3-ACCESS-3", "a ghost hit admitted to S instead of M", S3FIFO_MODULE, "access", _ghost_hit_to_small),
    SpecMutant("new-block-to-main", "S3-ACCESS-4", "a new hash admitted to M", S3FIFO_MODULE, "access", _new_block_to_main),
    SpecMutant("drain-empties-small", "S3-ADMIT-S-1", "a full S emptied", S3FIFO_MODULE, "admit_to_small", _drain_empties_small),
    SpecMutant("freq-reset-on-promotion", "S3-ADMIT-S-2", "freq reset on S → M promotion", S3FIFO_MODULE, "admit_to_small",
               _freq_reset_on_promotion),
    SpecMutant("popped-entry-forgotten", "S3-ADMIT-S-3", "a popped freq-0 entry not inserted into G", S3FIFO_MODULE, "admit_to_small",
               _popped_entry_forgotten),
    SpecMutant("admitted-with-freq-one", "S3-ADMIT-S-4", "a new entry with freq 1",
               S3FIFO_MODULE, "admit_to_small", _admitted_with_freq_one),
    SpecMutant("main-examined-once", "S3-ADMIT-M-1", "M's head examined once (if for while)", S3FIFO_MODULE, "admit_to_main",
               _main_examined_once),
    SpecMutant("m-drain-without-decrement", "S3-ADMIT-M-2", "an M drain that requeues without decrementing", S3FIFO_MODULE,
               "admit_to_main", _m_drain_without_decrement),
    SpecMutant("m-drain-without-second-chance", "S3-ADMIT-M-2", "an M drain without the second chance", S3FIFO_MODULE, "admit_to_main",
               _m_drain_without_second_chance),
    SpecMutant("evicted-from-main-forgotten", "S3-ADMIT-M-3", "the entry evicted from M not inserted into G", S3FIFO_MODULE,
               "admit_to_main", _evicted_from_main_forgotten),
    SpecMutant("admitted-at-head-of-main", "S3-ADMIT-M-4", "(h, f) at the head of M", S3FIFO_MODULE, "admit_to_main",
               _admitted_at_head_of_main),
    SpecMutant("ghost-not-refreshed", "S3-GHOST-1", "a hash already in G not refreshed",
               S3FIFO_MODULE, "insert_to_ghost", _ghost_not_refreshed),
    SpecMutant("ghost-forgets-newest", "S3-GHOST-2", "a full G forgets its newest",
               S3FIFO_MODULE, "insert_to_ghost", _ghost_forgets_newest),
    SpecMutant("ghost-appended-at-head", "S3-GHOST-3", "h at the head of G", S3FIFO_MODULE, "insert_to_ghost", _ghost_appended_at_head),
    SpecMutant("resident-entry-to-ghost", "S3-GHOST-4", "M's victim inserted into G before it leaves M", S3FIFO_MODULE, "admit_to_main",
               _resident_entry_to_ghost),
    SpecMutant("small-over-cap", "S3-INV-1", "S one over small_cap", S3FIFO_MODULE, "admit_to_small", _small_over_cap),
    SpecMutant("main-over-cap", "S3-INV-2", "M one over main_cap", S3FIFO_MODULE, "admit_to_main", _main_over_cap),
    SpecMutant("ghost-over-cap", "S3-INV-3", "G one over ghost_cap", S3FIFO_MODULE, "insert_to_ghost", _ghost_over_cap),
    SpecMutant("resident-count-with-ghost", "S3-FINAL-1", "a resident count that includes the ghost",
               S3FIFO_MODULE, "S3FIFO.resident_count",
               _resident_count_with_ghost),
    SpecMutant("lru-count-is-capacity", "LRU-CAP-1", "the resident count is the capacity", LRU_MODULE, "LRU.resident_count",
               _lru_count_is_capacity),
    SpecMutant("lru-hit-not-requeued", "LRU-ACCESS-1", "a hit not requeued", LRU_MODULE, "access", _lru_hit_not_requeued),
    SpecMutant("lru-evicts-most-recent", "LRU-EVICT-1", "the most recent evicted", LRU_MODULE, "access", _lru_evicts_most_recent),
    SpecMutant("lru-admits-at-head", "LRU-ADMIT-1", "a new hash at the head", LRU_MODULE, "access", _lru_admits_at_head),
    SpecMutant("fifo-over-capacity", "FIFO-CAP-1", "capacity + 1 hashes held", FIFO_MODULE, "access", _fifo_over_capacity),
    SpecMutant("fifo-hit-requeued", "FIFO-ACCESS-1", "a hit requeued at the tail", FIFO_MODULE, "access", _fifo_hit_requeued),
    SpecMutant("fifo-evicts-newest", "FIFO-EVICT-1", "the newest evicted", FIFO_MODULE, "access", _fifo_evicts_newest),
    SpecMutant("fifo-admits-at-head", "FIFO-ADMIT-1", "a new hash at the head", FIFO_MODULE, "access", _fifo_admits_at_head),
    SpecMutant("budget-unchecked", "BEN-CONF-1", "a negative probation_byte_budget accepted",
               BENEFIT_CONFIG, "check_config", _budget_unchecked),
    SpecMutant("threshold-zero-accepted", "BEN-CONF-2", "a persistence_hit_threshold of 0 accepted",
               BENEFIT_CONFIG, "check_config", _threshold_zero_accepted),
    SpecMutant("reuse-floor-above-one", "BEN-CONF-3", "a min_reuse_probability above 1 accepted",
               BENEFIT_CONFIG, "check_config", _reuse_floor_above_one),
    SpecMutant("decay-one-accepted", "BEN-CONF-4", "a decay_factor of 1 accepted", BENEFIT_CONFIG, "check_config", _decay_one_accepted),
    SpecMutant("grace-unchecked", "BEN-CONF-5", "a negative grace_observations accepted", BENEFIT_CONFIG, "check_config", _grace_unchecked),
    SpecMutant("ghost-capacity-unchecked", "BEN-CONF-6", "a negative ghost_capacity accepted",
               BENEFIT_CONFIG, "check_config", _ghost_capacity_unchecked),
    SpecMutant("ghost-age-unchecked", "BEN-CONF-7", "a negative ghost_max_age_observations accepted",
               BENEFIT_CONFIG, "check_config", _ghost_age_unchecked),
    SpecMutant("negative-key-accepted", "BEN-KEY-1", "a key read as a signed 64-bit integer",
               BENEFIT_CONFIG, "check_id", _negative_key_accepted),
    SpecMutant("repeated-segment-counted-twice", "BEN-KEY-2", "a segment offered twice counted twice", BENEFIT_LEDGER, "new_bytes",
               _repeated_segment_counted_twice),
    SpecMutant("later-size-wins", "BEN-LEDGER-1", "the latest registration sets a segment's size",
               BENEFIT_LEDGER, "register", _later_size_wins),
    SpecMutant("empty-segment-kept", "BEN-LEDGER-2", "a segment without references kept", BENEFIT_LEDGER, "release", _empty_segment_kept),
)

BY_ATTRIBUTE = {mutant.attribute: mutant for mutant in MUTANTS}


def copy_of(module_name: str, name: str) -> ModuleType:
    """A fresh copy of a reference module, known as ``name``: its own functions, classes and
    contracts, the reference untouched (as conformance/hunt/seed_rules.py makes its copy). It is
    in sys.modules, with a spec, as CrossHair looks a function's module up there."""
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.loader is not None and spec.origin is not None
    copy = ModuleType(name)
    copy.__file__, copy.__package__ = spec.origin, spec.parent  # the rules' lines are the reference's own
    copy.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=spec.origin)
    sys.modules[name] = copy
    exec(compile(spec.loader.get_source(module_name) or "", spec.origin, "exec"), vars(copy))  # noqa: S102
    return copy


def with_contracts_of(original: Callable[..., Any], rule: Callable[..., Any]) -> Callable[..., Any]:
    """``rule`` under the contracts of ``original`` (none when none are installed: KVSPEC_CONTRACTS)."""
    if not hasattr(original, "__postconditions__") and not hasattr(original, "__preconditions__"):
        return rule
    import icontract

    for contract in getattr(original, "__postconditions__", []):  # icontract puts each one it adds last
        rule = icontract.ensure(contract.condition, contract.description, error=contract.error)(rule)
    for capture in getattr(original, "__postcondition_snapshots__", []):
        rule = icontract.snapshot(capture.capture, name=capture.name)(rule)
    for contract in [c for group in getattr(original, "__preconditions__", []) for c in group]:  # and each precondition first
        rule = icontract.require(contract.condition, contract.description, error=contract.error)(rule)
    return rule


def planted(mutant: SpecMutant) -> ModuleType:
    """The copy of the mutant's module with its rule in place of the reference's, contracts and all;
    a class attribute that was the replaced function (S3FIFO.access) is the mutant too."""
    copy = copy_of(mutant.module, f"{__name__}.{mutant.attribute}")
    *path, attribute = mutant.replaces.split(".")
    holder: Any = copy
    for part in path:
        holder = getattr(holder, part)
    described = vars(holder)[attribute]
    original = getattr(described, "__func__", described)
    rule = FunctionType(mutant.rule.__code__, vars(copy), attribute, mutant.rule.__defaults__, mutant.rule.__closure__)
    rule.__qualname__, rule.__module__, rule.__doc__ = mutant.replaces, copy.__name__, mutant.rule.__doc__
    rule.__annotations__, rule.__kwdefaults__ = dict(mutant.rule.__annotations__), mutant.rule.__kwdefaults__  # the types CrossHair builds
    replacement = with_contracts_of(original, rule)
    setattr(holder, attribute, classmethod(replacement) if isinstance(described, classmethod) else replacement)
    for cls in [value for value in vars(copy).values() if isinstance(value, type) and value.__module__ == copy.__name__]:
        for key, value in list(vars(cls).items()):
            if value is original:
                setattr(cls, key, replacement)
    return copy


def __getattr__(name: str) -> ModuleType:
    """Each mutant's copy of the reference, made once, when first asked for."""
    if name not in BY_ATTRIBUTE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = copy = planted(BY_ATTRIBUTE[name])
    return copy
