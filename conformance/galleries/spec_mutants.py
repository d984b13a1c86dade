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
copy's). The mutants are written by policy: spec_mutants_s3fifo.py, spec_mutants_baselines.py (LRU
and FIFO), spec_mutants_benefit.py and spec_mutants_lifecycle.py (the blocks in use).
"""

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any

from kvspec.conformance.galleries import spec_mutants_baselines as baselines
from kvspec.conformance.galleries import spec_mutants_benefit as benefit
from kvspec.conformance.galleries import spec_mutants_lifecycle as lifecycle
from kvspec.conformance.galleries import spec_mutants_s3fifo as s3fifo


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
IN_USE_MODULE = "kvspec.reference.in_use"


MUTANTS: tuple[SpecMutant, ...] = (
    SpecMutant("ratio-excludes-one", "S3-CONF-1", "small_ratio 1.0 refused", S3FIFO_MODULE, "ratio_is_valid", s3fifo.ratio_excludes_one),
    SpecMutant("small-cap-by-floor", "S3-CONF-2", "small_cap by floor", S3FIFO_MODULE, "small_cap_for", s3fifo.small_cap_by_floor),
    SpecMutant("main-cap-is-capacity", "S3-CONF-3", "main_cap = capacity", S3FIFO_MODULE, "derive_caps", s3fifo.main_cap_is_capacity),
    SpecMutant("ghost-cap-is-small-cap", "S3-CONF-4", "ghost_cap = small_cap", S3FIFO_MODULE, "derive_caps", s3fifo.ghost_cap_is_small_cap),
    SpecMutant("refused-only-when-both-zero", "S3-CONF-5", "a small_cap of 0 accepted",
               S3FIFO_MODULE, "caps_for", s3fifo.refused_only_when_both_zero),
    SpecMutant("max-freq-unchecked", "S3-CONF-6", "a negative max_freq accepted", S3FIFO_MODULE, "caps_for", s3fifo.max_freq_unchecked),
    SpecMutant("queues-share-one-dict", "S3-QUEUE-1", "S and M one queue", S3FIFO_MODULE, "S3FIFO.empty", s3fifo.queues_share_one_dict),
    SpecMutant("ghost-hit-left-in-ghost", "S3-QUEUE-2", "a ghost hit left in G", S3FIFO_MODULE, "access", s3fifo.ghost_hit_left_in_ghost),
    SpecMutant("ghost-is-resident", "S3-QUEUE-3", "is_resident true for a ghost entry",
               S3FIFO_MODULE, "is_resident", s3fifo.ghost_is_resident),
    SpecMutant("freq-above-max", "S3-FREQ-1", "freq saturated at max_freq + 1",
               S3FIFO_MODULE, "saturating_increment", s3fifo.freq_above_max),
    SpecMutant("freq-unsaturated", "S3-FREQ-2", "freq left unsaturated", S3FIFO_MODULE, "saturating_increment", s3fifo.freq_unsaturated),
    SpecMutant("hit-in-small-not-counted", "S3-ACCESS-1", "a hit in S not counted",
               S3FIFO_MODULE, "access", s3fifo.hit_in_small_not_counted),
    SpecMutant("hit-in-main-not-counted", "S3-ACCESS-2", "a hit in M not counted", S3FIFO_MODULE, "access", s3fifo.hit_in_main_not_counted),
    SpecMutant("hit-in-small-moves-to-tail", "S3-ACCESS-1", "a hit in S moved to its tail", S3FIFO_MODULE, "access",
               s3fifo.hit_in_small_moves_to_tail),
    SpecMutant("hit-in-main-moves-to-tail", "S3-ACCESS-2", "a hit in M moved to its tail",
               S3FIFO_MODULE, "access", s3fifo.hit_in_main_moves_to_tail),
    SpecMutant("ghost-hit-to-small", "S3-ACCESS-3", "a ghost hit admitted to S instead of M",
               S3FIFO_MODULE, "access", s3fifo.ghost_hit_to_small),
    SpecMutant("new-block-to-main", "S3-ACCESS-4", "a new hash admitted to M", S3FIFO_MODULE, "access", s3fifo.new_block_to_main),
    SpecMutant("drain-empties-small", "S3-ADMIT-S-1", "a full S emptied", S3FIFO_MODULE, "admit_to_small", s3fifo.drain_empties_small),
    SpecMutant("freq-reset-on-promotion", "S3-ADMIT-S-2", "freq reset on S → M promotion", S3FIFO_MODULE, "admit_to_small",
               s3fifo.freq_reset_on_promotion),
    SpecMutant("popped-entry-forgotten", "S3-ADMIT-S-3", "a popped freq-0 entry not inserted into G", S3FIFO_MODULE, "admit_to_small",
               s3fifo.popped_entry_forgotten),
    SpecMutant("admitted-with-freq-one", "S3-ADMIT-S-4", "a new entry with freq 1",
               S3FIFO_MODULE, "admit_to_small", s3fifo.admitted_with_freq_one),
    SpecMutant("main-examined-once", "S3-ADMIT-M-1", "M's head examined once (if for while)", S3FIFO_MODULE, "admit_to_main",
               s3fifo.main_examined_once),
    SpecMutant("m-drain-without-decrement", "S3-ADMIT-M-2", "an M drain that requeues without decrementing", S3FIFO_MODULE,
               "admit_to_main", s3fifo.m_drain_without_decrement),
    SpecMutant("m-drain-without-second-chance", "S3-ADMIT-M-2", "an M drain without the second chance", S3FIFO_MODULE, "admit_to_main",
               s3fifo.m_drain_without_second_chance),
    SpecMutant("evicted-from-main-forgotten", "S3-ADMIT-M-3", "the entry evicted from M not inserted into G", S3FIFO_MODULE,
               "admit_to_main", s3fifo.evicted_from_main_forgotten),
    SpecMutant("admitted-at-head-of-main", "S3-ADMIT-M-4", "(h, f) at the head of M", S3FIFO_MODULE, "admit_to_main",
               s3fifo.admitted_at_head_of_main),
    SpecMutant("ghost-not-refreshed", "S3-GHOST-1", "a hash already in G not refreshed",
               S3FIFO_MODULE, "insert_to_ghost", s3fifo.ghost_not_refreshed),
    SpecMutant("ghost-forgets-newest", "S3-GHOST-2", "a full G forgets its newest",
               S3FIFO_MODULE, "insert_to_ghost", s3fifo.ghost_forgets_newest),
    SpecMutant("ghost-appended-at-head", "S3-GHOST-3", "h at the head of G",
               S3FIFO_MODULE, "insert_to_ghost", s3fifo.ghost_appended_at_head),
    SpecMutant("resident-entry-to-ghost", "S3-GHOST-4", "M's victim inserted into G before it leaves M", S3FIFO_MODULE, "admit_to_main",
               s3fifo.resident_entry_to_ghost),
    SpecMutant("small-over-cap", "S3-INV-1", "S one over small_cap", S3FIFO_MODULE, "admit_to_small", s3fifo.small_over_cap),
    SpecMutant("main-over-cap", "S3-INV-2", "M one over main_cap", S3FIFO_MODULE, "admit_to_main", s3fifo.main_over_cap),
    SpecMutant("ghost-over-cap", "S3-INV-3", "G one over ghost_cap", S3FIFO_MODULE, "insert_to_ghost", s3fifo.ghost_over_cap),
    SpecMutant("resident-count-with-ghost", "S3-FINAL-1", "a resident count that includes the ghost",
               S3FIFO_MODULE, "S3FIFO.resident_count",
               s3fifo.resident_count_with_ghost),
    SpecMutant("lru-count-is-capacity", "LRU-CAP-1", "the resident count is the capacity", LRU_MODULE, "LRU.resident_count",
               baselines.lru_count_is_capacity),
    SpecMutant("lru-hit-not-requeued", "LRU-ACCESS-1", "a hit not requeued", LRU_MODULE, "access", baselines.lru_hit_not_requeued),
    SpecMutant("lru-evicts-most-recent", "LRU-EVICT-1", "the most recent evicted", LRU_MODULE, "access", baselines.lru_evicts_most_recent),
    SpecMutant("lru-admits-at-head", "LRU-ADMIT-1", "a new hash at the head", LRU_MODULE, "access", baselines.lru_admits_at_head),
    SpecMutant("fifo-over-capacity", "FIFO-CAP-1", "capacity + 1 hashes held", FIFO_MODULE, "access", baselines.fifo_over_capacity),
    SpecMutant("fifo-hit-requeued", "FIFO-ACCESS-1", "a hit requeued at the tail", FIFO_MODULE, "access", baselines.fifo_hit_requeued),
    SpecMutant("fifo-evicts-newest", "FIFO-EVICT-1", "the newest evicted", FIFO_MODULE, "access", baselines.fifo_evicts_newest),
    SpecMutant("fifo-admits-at-head", "FIFO-ADMIT-1", "a new hash at the head", FIFO_MODULE, "access", baselines.fifo_admits_at_head),
    SpecMutant("budget-unchecked", "BEN-CONF-1", "a negative probation_byte_budget accepted",
               BENEFIT_CONFIG, "check_config", benefit.budget_unchecked),
    SpecMutant("threshold-zero-accepted", "BEN-CONF-2", "a persistence_hit_threshold of 0 accepted",
               BENEFIT_CONFIG, "check_config", benefit.threshold_zero_accepted),
    SpecMutant("reuse-floor-above-one", "BEN-CONF-3", "a min_reuse_probability above 1 accepted",
               BENEFIT_CONFIG, "check_config", benefit.reuse_floor_above_one),
    SpecMutant("decay-one-accepted", "BEN-CONF-4", "a decay_factor of 1 accepted",
               BENEFIT_CONFIG, "check_config", benefit.decay_one_accepted),
    SpecMutant("grace-unchecked", "BEN-CONF-5", "a negative grace_observations accepted",
               BENEFIT_CONFIG, "check_config", benefit.grace_unchecked),
    SpecMutant("ghost-capacity-unchecked", "BEN-CONF-6", "a negative ghost_capacity accepted",
               BENEFIT_CONFIG, "check_config", benefit.ghost_capacity_unchecked),
    SpecMutant("ghost-age-unchecked", "BEN-CONF-7", "a negative ghost_max_age_observations accepted",
               BENEFIT_CONFIG, "check_config", benefit.ghost_age_unchecked),
    SpecMutant("negative-key-accepted", "BEN-KEY-1", "a key read as a signed 64-bit integer",
               BENEFIT_CONFIG, "check_id", benefit.negative_key_accepted),
    SpecMutant("repeated-segment-counted-twice", "BEN-KEY-2", "a segment offered twice counted twice", BENEFIT_LEDGER, "new_bytes",
               benefit.repeated_segment_counted_twice),
    SpecMutant("later-size-wins", "BEN-LEDGER-1", "the latest registration sets a segment's size",
               BENEFIT_LEDGER, "register", benefit.later_size_wins),
    SpecMutant("empty-segment-kept", "BEN-LEDGER-2", "a segment without references kept",
               BENEFIT_LEDGER, "release", benefit.empty_segment_kept),
    SpecMutant("referenced-head-evicted", "LIFE-EVICT-1", "the head evicted, referenced or not", IN_USE_MODULE, "evictable_nearest_head",
               lifecycle.referenced_head_evicted),
    SpecMutant("evictable-nearest-tail", "FIFO-LIFE-2", "the evictable hash nearest the tail evicted", IN_USE_MODULE,
               "evictable_nearest_head", lifecycle.evictable_nearest_tail),
    SpecMutant("free-slot-stops-at-referenced-head", "LRU-LIFE-2", "no slot freed when the head is referenced", IN_USE_MODULE,
               "free_queue_slot", lifecycle.free_slot_stops_at_referenced_head),
    SpecMutant("lru-hit-not-requeued-in-use", "LIFE-LIMIT-1", "in use, a hit not requeued", IN_USE_MODULE, "InUseLRU.access",
               lifecycle.lru_hit_not_requeued_in_use),
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
