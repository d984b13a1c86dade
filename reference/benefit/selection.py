"""spec/benefit.md sections 12 and 13: the probation cap and victim selection. Both only
select; the caller removes what they select (BEN-REMOVE-1)."""

import math
from collections.abc import Callable
from typing import Literal, NamedTuple

from ..contracts import ensure
from .config import BenefitConfig
from .ledger import Ledger, Segment, fractional_bytes, release
from .score import Entry, score


class CapRepair(NamedTuple):
    """BEN-CAP-4: satisfied with its victims, or deferred with its victims and the exact shortfall."""

    status: Literal["satisfied", "deferred"]
    victims: tuple[int, ...] = ()
    shortfall: int = 0


class Victims(NamedTuple):
    """BEN-VICTIM-4: the keys chosen, in order, and the physical bytes their removal releases."""

    keys: tuple[int, ...]
    freed: int


# The three measures selection takes as functions, the spec's by default, so that a variant of the
# spec with one of its rules broken (conformance/certification/benefit_variants.py) replaces one.
Ranking = Callable[[list[tuple[float, int]]], list[tuple[float, int]]]  # the scored (score, key) in order: by_score_then_key
Freed = Callable[[dict[int, Entry], Ledger, list[int]], int]  # the bytes victims free: physical_release
Charge = Callable[[dict[int, Entry], Ledger, frozenset[int]], int]  # the probation charge without ``leaving``: probation_charge


def probation_charge(entries: dict[int, Entry], ledger: Ledger, leaving: frozenset[int] = frozenset()) -> int:
    """BEN-LEDGER-5, BEN-ARITH-3: one ceiling of the sum over probation entries in key order
    (BEN-ENTRY-3, BEN-ARITH-2)."""
    total = 0.0
    for key in sorted(entries):
        entry = entries[key]
        if entry.state == "probation" and key not in leaving:
            total += float(entry.exclusive_bytes) + fractional_bytes(ledger, key, entry.segments)
    return math.ceil(total)


def by_age(entries: dict[int, Entry], keys: list[int]) -> list[int]:
    """Oldest observation first, then key: the order of BEN-CAP-2 and BEN-VICTIM-2."""
    return sorted(keys, key=lambda key: (entries[key].last_observation, key))


def cap_candidates(entries: dict[int, Entry], pinned: frozenset[int]) -> list[int]:
    """BEN-CAP-2: unpinned probation entries, those without hits first; grace does not apply (BEN-GRACE-2)."""
    probation = [key for key, entry in entries.items() if entry.state == "probation" and key not in pinned]
    return by_age(entries, [k for k in probation if entries[k].hits == 0]) + by_age(entries, [k for k in probation if entries[k].hits > 0])


@ensure(lambda pinned, result: not set(result.victims) & pinned, "BEN-CAP-5: a pinned entry is never a cap victim")
@ensure(lambda result: len(set(result.victims)) == len(result.victims), "BEN-CAP-5: no victim twice")
@ensure(
    lambda entries, ledger, config, result: (result.status == "satisfied") == (result.shortfall == 0)
    and (result.status == "deferred") == (result.shortfall > 0),
    "BEN-CAP-4: deferred exactly when there is a shortfall",
)
@ensure(
    lambda entries, ledger, config, result: result.shortfall == max(charge_after(entries, ledger, result.victims) - config.probation_byte_budget, 0),
    "BEN-CAP-4: within budget after the repair, or deferred with the exact shortfall",
    per_access_state=True,
)
def select_probation_cap_victims(entries: dict[int, Entry], ledger: Ledger, config: BenefitConfig, pinned: frozenset[int],
                                 charged: Charge = probation_charge) -> CapRepair:
    """BEN-CAP-1 to BEN-CAP-5, the probation charge as the spec rounds it (probation_charge)
    unless a variant of the spec says otherwise."""
    budget = config.probation_byte_budget
    charge = charged(entries, ledger, frozenset())
    if charge <= budget:
        return CapRepair("satisfied")  # BEN-CAP-1
    scratch = copy_ledger(ledger)
    victims: list[int] = []
    for key in cap_candidates(entries, pinned):
        release(scratch, key, entries[key].segments)  # BEN-CAP-3: co-referenced shares rise
        victims.append(key)
        charge = charged(entries, scratch, frozenset(victims))
        if charge <= budget:
            return CapRepair("satisfied", tuple(victims))
    return CapRepair("deferred", tuple(victims), charge - budget)


def copy_ledger(ledger: Ledger) -> Ledger:
    return {segment_id: Segment(segment.size, dict(segment.refs)) for segment_id, segment in ledger.items()}


def charge_after(entries: dict[int, Entry], ledger: Ledger, victims: tuple[int, ...]) -> int:
    """The probation charge once ``victims`` are gone (for the contracts)."""
    scratch = copy_ledger(ledger)
    for key in victims:
        release(scratch, key, entries[key].segments)
    return probation_charge(entries, scratch, frozenset(victims))


def physical_release(entries: dict[int, Entry], ledger: Ledger, victims: list[int] | tuple[int, ...]) -> int:
    """BEN-VICTIM-4: the victims' exclusive bytes plus every segment all of whose references are victims."""
    chosen = set(victims)
    segments = {segment_id for key in victims for segment_id in entries[key].segments}
    whole = sum(ledger[s].size for s in sorted(segments) if s in ledger and set(ledger[s].refs) <= chosen)
    return sum(entries[key].exclusive_bytes for key in victims) + whole


@ensure(lambda entry, clock, grace_observations, result:
        result == (clock - entry.last_observation < grace_observations if clock >= entry.last_observation else grace_observations > 0),
        "BEN-GRACE-1: fewer than grace_observations since its last observation", per_access_state=True)
def in_grace(entry: Entry, clock: int, grace_observations: int) -> bool:
    """BEN-GRACE-1."""
    return max(clock - entry.last_observation, 0) < grace_observations


def by_score_then_key(scored: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """BEN-VICTIM-2: the scored entries, each a (score, key), by score and then key."""
    return sorted(scored)


def victim_order(entries: dict[int, Entry], ledger: Ledger, config: BenefitConfig, pinned: frozenset[int],
                 ranked: Ranking = by_score_then_key) -> list[int]:
    """BEN-VICTIM-2: no-hit probationers by age, then the scored entries ``ranked`` (by_score_then_key)."""
    unpinned = [key for key in entries if key not in pinned]
    order = by_age(entries, [k for k in unpinned if entries[k].state == "probation" and entries[k].hits == 0])
    scored = []
    for key in unpinned:
        value = score(ledger, key, entries[key], config.min_reuse_probability)
        if value is not None:
            scored.append((value, key))
    listed = set(order)
    order += [key for _, key in ranked(scored) if key not in listed]
    return order


@ensure(lambda pinned, result: not set(result.keys) & pinned, "BEN-VICTIM-5: a pinned entry is never a victim")
@ensure(lambda result: len(set(result.keys)) == len(result.keys), "BEN-VICTIM-5: no victim twice")
@ensure(lambda entries, ledger, result: result.freed == physical_release(entries, ledger, result.keys), "BEN-VICTIM-4: the bytes actually released")
def choose_victims(entries: dict[int, Entry], ledger: Ledger, config: BenefitConfig, clock: int, bytes_to_free: int,
                   pinned: frozenset[int], ranked: Ranking = by_score_then_key,
                   released: Freed = physical_release) -> Victims:
    """BEN-VICTIM-1 to BEN-VICTIM-5, the scored entries ``ranked`` as in victim_order, the bytes
    freed as the spec counts them (physical_release) unless a variant of the spec says otherwise."""
    if bytes_to_free == 0:
        return Victims((), 0)  # BEN-VICTIM-1
    order = victim_order(entries, ledger, config, pinned, ranked)
    chosen: list[int] = []
    freed = 0
    for honour_grace in (True, False):  # BEN-VICTIM-3, BEN-GRACE-2
        for key in order:
            if freed >= bytes_to_free:
                return Victims(tuple(chosen), freed)
            if key in chosen or (honour_grace and in_grace(entries[key], clock, config.grace_observations)):
                continue
            chosen.append(key)
            freed = released(entries, ledger, chosen)
    return Victims(tuple(chosen), freed)  # BEN-VICTIM-5: it may fall short
