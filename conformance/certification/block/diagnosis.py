"""Which clause a divergence points at: the diagnosis a report leads with.

A diagnosis names a clause only when its broken rule explains the symptom on the implementation's
own state, and says "consistent with" where more than one rule would, or where the state cannot
be seen. The evidence, strongest first:

1. At the state level, the implementation's own queues against every invariant, by the
   reference's own checks of a state (S3-INV-1 to S3-INV-3, S3-QUEUE-2, S3-FREQ-1; LRU-CAP-1,
   FIFO-CAP-1) and the snapshot's REPLAY-QUEUE-1: a broken one leads.
2. Variants of the spec with one rule broken (variants.py: the reference with one step replaced): at the
   state level each starts from the implementation's own queues before the request, and is named
   when it gives exactly the implementation's queues after it; at the results level each replays
   the whole trace, and the diagnosis is consistent with every variant that gives every answer
   the implementation gave.
3. At the state level, each block whose place differs is traced to the rule the spec applied to
   it during the request (S to M is S3-ADMIT-S-2, M to G is S3-ADMIT-M-3, ...): placement.py,
   which reads a queue difference by 1 to 3.
4. At the results level, the implementation's own prefix scan is asked, block by block, which
   blocks it holds (the scan changes nothing, REPLAY-PREFIX-3): a hit-token difference is read
   against those blocks, not against the reference's.
5. A valid configuration the implementation refuses: it is asked to configure a typical cache
   with one knob of that configuration at a time, and the knob it refuses names the clause.

Clauses are the policy's own: an LRU or FIFO difference never cites an S3 clause.
"""

import json
import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from kvspec.adapters.interface import Adapter, AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.wire import config_json
from kvspec.conformance.certification.block.variants import VARIANTS, Variant
from kvspec.conformance.certification.findings.clauses import own as own_prefix
from kvspec.conformance.core.citations import cited
from kvspec.conformance.core.output import plural
from kvspec.conformance.core.workloads import Request
from kvspec.reference import FIFO, LRU, S3FIFO, ConfigError, ReplayConfig, make_policy
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks
from kvspec.reference.s3fifo import Caps, derive_caps, freqs_in_range, queues_are_disjoint, within_caps


@dataclass(frozen=True)
class Diagnosis:
    """``named``: clauses shown broken on the implementation's own state, the leading one first;
    ``consistent``: clauses a break of each of which would explain the difference, none singled
    out; ``evidence``: what shows it, for the message."""

    named: tuple[str, ...] = ()
    consistent: tuple[str, ...] = ()
    evidence: str = ""

    @property
    def clauses(self) -> list[str]:
        return list(dict.fromkeys(self.named + self.consistent))

    @property
    def consistent_with(self) -> tuple[str, ...]:
        return tuple(c for c in self.clauses if c not in self.named)


def named(*clauses: str, evidence: str = "") -> Diagnosis:
    return Diagnosis(named=clauses, evidence=evidence)


def consistent(*clauses: str, evidence: str = "") -> Diagnosis:
    return Diagnosis(consistent=clauses, evidence=evidence)


def own(policy: str, clauses: Iterable[str]) -> list[str]:
    """The clauses a policy's verdict may cite: the replay's and its own."""
    return [c for c in clauses if c.startswith(("REPLAY-", own_prefix(policy)))]


class OneQueue(NamedTuple):
    """The rules of a policy of one queue (spec/lru.md, spec/fifo.md) that a diagnosis names."""

    cap: str
    evict: str
    hit: str
    admit: str


ONE_QUEUE = {"lru": OneQueue("LRU-CAP-1", "LRU-EVICT-1", "LRU-ACCESS-1", "LRU-ADMIT-1"),
             "fifo": OneQueue("FIFO-CAP-1", "FIFO-EVICT-1", "FIFO-ACCESS-1", "FIFO-ADMIT-1")}


def eviction_clauses(policy: str) -> tuple[str, ...]:
    """What decides which blocks stay resident, for a residency difference nothing narrows down."""
    if policy == "s3fifo":
        return ("S3-ACCESS-4", "S3-ADMIT-S-4", "S3-ADMIT-S-1", "S3-ADMIT-S-2", "S3-ADMIT-S-3", "S3-ADMIT-M-1", "S3-ADMIT-M-2",
                "S3-ADMIT-M-3", "S3-ACCESS-3", "S3-GHOST-2", "S3-CONF-2", "S3-CONF-4")
    rules = ONE_QUEUE[policy]
    return (rules.evict, rules.hit, rules.admit)


def count_clauses(policy: str) -> tuple[str, ...]:
    """The clause that makes the resident count the number of resident blocks."""
    return ("S3-FINAL-1",) if policy == "s3fifo" else (ONE_QUEUE[policy].cap,)


# -- the configuration ----------------------------------------------------------------------------

KNOB_CLAUSES = {"capacity": "REPLAY-CONF-1", "block_size": "REPLAY-CONF-2", "small_ratio": "S3-CONF-1", "max_freq": "S3-CONF-6"}


def knob_clause(policy: str, knob: str) -> str:
    """The clause that decides a knob of ``policy``'s configuration: an LRU or FIFO ignores S3FIFO's (REPLAY-CONF-3)."""
    return KNOB_CLAUSES[knob] if policy == "s3fifo" or knob in ("capacity", "block_size") else "REPLAY-CONF-3"


def refusing_clause(config: AdapterConfig, dialect: frozenset[str] = frozenset()) -> str | None:
    """The clause by which the spec (in ``dialect``) refuses ``config``, or None if it accepts it."""
    try:
        make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq, dialect))
    except ConfigError as error:
        return error.clause
    return None


def spec_accepts(config: AdapterConfig, dialect: frozenset[str] = frozenset()) -> bool:
    """Whether the spec (in ``dialect``) accepts ``config``."""
    return refusing_clause(config, dialect) is None


def accepted_wrongly(config: AdapterConfig, refused_by: str) -> Diagnosis:
    """The spec refuses ``config`` by ``refused_by``, and the implementation accepted it."""
    if refused_by != "S3-CONF-5" or config.capacity < 2:
        return named(refused_by)  # at capacity 1, no small_cap gives both queues an entry
    # The implementation's small_cap is not visible: another one (S3-CONF-2) or no check (S3-CONF-5).
    product = config.capacity * config.small_ratio
    if math.floor(product) != math.ceil(product):  # another rounding of the product gives both queues an entry
        return consistent("S3-CONF-2", "S3-CONF-5", evidence=f"; {config.capacity} × {config.small_ratio} = {product!r} rounds to "
                          f"{round(product)} (S3-CONF-2), and rounded the other way it gives both queues an entry")
    return consistent("S3-CONF-5", "S3-CONF-2", evidence=f"; {config.capacity} × {config.small_ratio} = {product!r} leaves a queue "
                      "without an entry unless small_cap is moved off it")


def refused_wrongly(adapter: Adapter, config: AdapterConfig) -> Diagnosis:
    """The spec accepts ``config`` and the implementation refused it: which knob it refuses,
    found by asking it to configure a typical cache with that one knob changed."""
    typical = AdapterConfig(config.policy, 100, 16, 0.5, 3)
    if accepts(adapter, typical) is not True:
        return consistent(*refusal_group(config), evidence=f"; it does not accept {config_json(typical)} either")
    refused = {}
    for knob in KNOB_CLAUSES:
        probe = AdapterConfig(**{**vars(typical), knob: getattr(config, knob)})
        if spec_accepts(probe) and accepts(adapter, probe) is False:
            refused[knob] = knob_clause(config.policy, knob)
    if refused:
        changed = " or ".join(f"{knob} {json.dumps(getattr(config, knob))}" for knob in refused)
        return named(*dict.fromkeys(refused.values()), evidence=f"; it accepts {config_json(typical)}, and refuses it with {changed} alone")
    if config.policy == "s3fifo" and int(config.capacity * config.small_ratio) < 1:
        return named("S3-CONF-2", "S3-CONF-5", evidence=f"; int({config.capacity} × {config.small_ratio}) is 0 where round() gives 1 (S3-CONF-2)")
    return consistent(*refusal_group(config))


def refusal_group(config: AdapterConfig) -> tuple[str, ...]:
    if config.policy == "s3fifo":
        return ("S3-CONF-2", "S3-CONF-5", "S3-CONF-3", "S3-CONF-6", "REPLAY-CONF-1", "REPLAY-CONF-2")
    return ("REPLAY-CONF-1", "REPLAY-CONF-2", "REPLAY-CONF-3")


def accepts(adapter: Adapter, config: AdapterConfig) -> bool | None:
    """Whether the implementation accepts ``config``; None when it fails to answer (untrusted code:
    any exception is no evidence, and the divergence already found is the finding)."""
    try:
        adapter.configure(config)
    except ConfigRefused:
        return False
    except Exception:  # noqa: BLE001
        return None
    return True


# -- the implementation's own state: invariants ---------------------------------------------------


def invariant_diagnosis(config: AdapterConfig, hash_ids: list[int], state: Snapshot) -> Diagnosis | None:
    """Every invariant of the policy, checked on the implementation's own queues by the
    reference's own checks (reference/s3fifo.py, lru.py, fifo.py); None if all hold."""
    queues = {"small": [h for h, _ in state.small], "main": [h for h, _ in state.main], "ghost": list(state.ghost)}
    found = [("REPLAY-QUEUE-1", f"{name} holds a hash twice") for name, hashes in queues.items() if len(set(hashes)) != len(hashes)]
    explained: list[str] = []
    if config.policy == "s3fifo":
        caps = derive_caps(config.capacity, config.small_ratio, config.max_freq)
        found += freq_breaks(caps, hash_ids, state) + overlaps(caps, state)
        for clause, why, explains in sizes_over_caps(caps, state):
            found.append((clause, why))
            explained += explains
    else:
        found += one_queue_breaks(config, state)
    if not found:
        return None
    return Diagnosis(named=tuple(dict.fromkeys(c for c, _ in found)), consistent=tuple(explained),
                     evidence="; " + "; ".join(why for _, why in found if why))


def one_queue_breaks(config: AdapterConfig, state: Snapshot) -> list[tuple[str, str]]:
    """LRU-CAP-1, FIFO-CAP-1: one queue (PROTO-12: in main), within capacity by the reference's own check."""
    clause, found = ONE_QUEUE[config.policy].cap, []
    if state.small or state.ghost:
        found.append((clause, "it reports a queue besides its one queue"))
    queue = OrderedDict.fromkeys((h for h, _ in state.main), True)
    if not (LRU(config.capacity, queue) if config.policy == "lru" else FIFO(config.capacity, queue)).state_invariants_hold():
        found.append((clause, f"its queue holds {len(state.main)} hashes, above capacity {config.capacity}"))
    return found


def s3fifo_cache(caps: Caps, small: Iterable[tuple[int, int]] = (), main: Iterable[tuple[int, int]] = (), ghost: Iterable[int] = ()) -> S3FIFO:
    """Queues of an implementation as the reference's cache, for the reference's checks of a state."""
    return S3FIFO(caps, OrderedDict(small), OrderedDict(main), OrderedDict.fromkeys(ghost, True))


def freq_breaks(caps: Caps, hash_ids: list[int], state: Snapshot) -> list[tuple[str, str]]:
    """S3-FREQ-1 by the reference's freqs_in_range, entry by entry; S3-FREQ-2 where a freq above
    max_freq is one the request raised (only an increment raises a freq, and it saturates)."""
    out = [(h, f) for h, f in state.small + state.main if type(f) is not int or not freqs_in_range(s3fifo_cache(caps, small=[(h, f)]))]
    too_high = [(h, f) for h, f in out if type(f) is int and f > 0]
    if not out:
        return []
    h, f = ([e for e in out if e not in too_high] + too_high)[0]
    freq_1 = ("S3-FREQ-1", f"freq {f!r} of {h} is not an integer in [0, {caps.max_freq}]")
    return [("S3-FREQ-2", ""), freq_1] if any(h in hash_ids for h, _ in too_high) else [freq_1]


def overlaps(caps: Caps, state: Snapshot) -> list[tuple[str, str]]:
    """S3-QUEUE-2 by the reference's queues_are_disjoint, queue pair by queue pair."""
    queues = {"S": ("small", state.small, {h for h, _ in state.small}), "M": ("main", state.main, {h for h, _ in state.main}),
              "G": ("ghost", state.ghost, set(state.ghost))}
    found = []
    for a, b in (("S", "M"), ("S", "G"), ("M", "G")):
        (one, entries_a, hashes_a), (other, entries_b, hashes_b) = queues[a], queues[b]
        if not queues_are_disjoint(s3fifo_cache(caps, **{one: entries_a, other: entries_b})):
            found.append(("S3-QUEUE-2", f"{sorted(hashes_a & hashes_b, key=repr)[0]!r} is in {a} and in {b}"))
    return found


def sizes_over_caps(caps: Caps, state: Snapshot) -> list[tuple[str, str, tuple[str, ...]]]:
    """S3-INV-1 to S3-INV-3 by the reference's within_caps, queue by queue, each with the rules
    that would explain the queue above its size."""
    found = []
    for name, clause, queue, size, why in (("S", "S3-INV-1", {"small": state.small}, caps.small_cap, ("S3-ADMIT-S-1", "S3-CONF-2")),
                                           ("M", "S3-INV-2", {"main": state.main}, caps.main_cap, ("S3-ADMIT-M-1", "S3-ADMIT-M-3", "S3-CONF-3")),
                                           ("G", "S3-INV-3", {"ghost": state.ghost}, caps.ghost_cap, ("S3-GHOST-2", "S3-CONF-4"))):
        if not within_caps(s3fifo_cache(caps, **queue)):
            found.append((clause, f"{name} holds {len(next(iter(queue.values())))} entries, above its size {size}", why))
    return found


def resident_count_diagnosis(config: AdapterConfig, state: Snapshot, got: int) -> Diagnosis:
    """A resident count that differs from the implementation's own queues (state level)."""
    resident = len(state.small) + len(state.main)
    evidence = f"; its own queues hold {resident} resident blocks"
    if config.policy == "s3fifo" and state.ghost and got == resident + len(state.ghost):
        evidence += f", and G {len(state.ghost)} more: the ghost counted"
    return named(*count_clauses(config.policy), evidence=evidence)


# -- the implementation's own state: a hit-token difference --------------------------------------


def hit_token_diagnosis(config: AdapterConfig, request: Request, resident: set[int], ghost: Iterable[int], actual: int) -> Diagnosis | None:
    """Hit tokens read against ``resident``, the blocks the implementation held when the request
    arrived (its own queues, or what its own scan says of each block); None when its answer is the
    right one for those blocks, so that the difference is in which blocks it holds."""
    hash_ids, input_length = request
    block_size = config.block_size
    k = prefix_hit_blocks(hash_ids, resident.__contains__)
    if actual == hit_tokens(k, block_size, input_length):
        return None
    found = []
    if actual == k * block_size:
        found.append("REPLAY-HIT-1")  # k × block_size without the min() clamp
    with_ghost = resident | set(ghost)
    with_ghost_k = prefix_hit_blocks(hash_ids, with_ghost.__contains__)
    if config.policy == "s3fifo" and with_ghost != resident and actual == hit_tokens(with_ghost_k, block_size, input_length):
        found.append("S3-QUEUE-3")  # a ghost entry counted as resident
    anywhere = len(set(hash_ids) & resident)
    if anywhere != k and actual == hit_tokens(anywhere, block_size, input_length):
        found.append("REPLAY-PREFIX-2")  # resident blocks counted past the first miss
    evidence = f"; the longest resident prefix is {plural(k, 'block')}"
    if len(found) == 1:
        return named(*found, evidence=evidence)
    return consistent(*(found or own(config.policy, ["REPLAY-PREFIX-1", "REPLAY-PREFIX-2", "REPLAY-HIT-1", "S3-QUEUE-3"])), evidence=evidence)


# -- the results level: the state is not visible --------------------------------------------------


def held_blocks(adapter: Adapter | Variant, blocks: Iterable[int]) -> frozenset[int] | None:
    """The blocks the implementation's own prefix scan finds resident, asked one block at a time
    (one block of one token: 1 if resident); None if it fails to answer."""
    try:
        return frozenset(h for h in blocks if adapter.hit_tokens([h], 1) != 0)
    except Exception:  # noqa: BLE001 -- untrusted code; the divergence already found is the finding
        return None


def results_diagnosis(adapter: Adapter, config: AdapterConfig, trace: list[Request], hit: int | None, count: int | None) -> Diagnosis:
    """A difference at the results level, in the hit tokens of the trace's last request (``hit``)
    or in the resident count after it (``count``)."""
    blocks = list(dict.fromkeys(h for hash_ids, _ in trace for h in hash_ids))
    held = held_blocks(adapter, blocks)
    found: Diagnosis | None = None
    evidence = ""
    if hit is not None and held is not None:
        found = hit_token_diagnosis(config, trace[-1], set(held), (), hit)
        if found is None:
            evidence = f"; its own scan finds {sorted(held)!r} resident, and its answer is right for those: it holds other blocks than the spec"
    if count is not None and held is not None and count != len(held):
        found = consistent(*count_clauses(config.policy), evidence=f"; its own scan finds {len(held)} of the blocks ever requested resident")
    variants = [clauses for variant, clauses in variants_for(config.policy) if replays_alike(variant(), config, trace, hit, count, held, blocks)]
    if variants:
        clauses = list(dict.fromkeys([*(found.clauses if found else []), *(c for group in variants for c in group)]))
        rules = "this rule" if len(set(variants)) == 1 else "one of these rules"
        return consistent(*clauses, evidence=(found.evidence if found else evidence) + f"; the spec with {rules} broken gives every "
                          "answer the implementation gave (its state is not visible at the results level)")
    if found is not None:
        return consistent(*found.clauses, evidence=found.evidence + " (its state is not visible at the results level)")
    if held is not None:
        return consistent(*eviction_clauses(config.policy), evidence=evidence or f"; its own scan finds {sorted(held)!r} resident")
    return consistent(*eviction_clauses(config.policy))


def replays_alike(variant: Variant, config: AdapterConfig, trace: list[Request], hit: int | None, count: int | None,
                  held: frozenset[int] | None, blocks: list[int]) -> bool:
    """Whether ``variant`` gives the answers the implementation gave: the reference's up to the
    last request, then ``hit`` (or the reference's hit tokens and ``count``), and ``held``."""
    reference = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq))
    try:
        variant.configure(config)
    except ConfigRefused:
        return False
    for number, (hash_ids, input_length) in enumerate(trace, start=1):
        last = number == len(trace)
        want = hit_tokens(prefix_hit_blocks(hash_ids, reference.is_resident), config.block_size, input_length)
        if variant.hit_tokens(hash_ids, input_length) != (hit if last and hit is not None else want):
            return False
        if last and hit is not None:
            break
        for h in hash_ids:
            reference.access(h)
        variant.access(hash_ids)
        if variant.resident_count() != (count if last else reference.resident_count()):
            return False
    return held is None or held_blocks(variant, blocks) == held


# -- variants of the spec with one rule broken ----------------------------------------------------


def variants_for(policy: str) -> list[tuple[type[Variant], tuple[str, ...]]]:
    """The variants that break one rule of ``policy`` or of the replay, with the clauses each breaks."""
    found = []
    for variant in VARIANTS:
        clauses = sorted(cited(variant.breaks), key=lambda c: (c.rsplit("-", 1)[0], int(c.rsplit("-", 1)[1])))
        if clauses and own(policy, clauses) == clauses:
            found.append((variant, tuple(clauses)))
    return found


def from_state(variant: Variant, config: AdapterConfig, before: Snapshot, request: Request) -> Snapshot | None:
    """The queues ``variant`` leaves after ``request``, started from the queues ``before``."""
    try:
        variant.configure(config)
    except ConfigRefused:
        return None
    if not variant.start_from(before):
        return None  # a state no rule of the spec leads to: no one broken rule explains what follows it
    variant.hit_tokens(*request)  # the suite's order: the scan, then the accesses
    variant.access(request[0])
    return variant.snapshot()
