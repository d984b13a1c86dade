"""spec/benefit.md section 18: the policy and the LRU baseline over one trace at one capacity."""

from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict

from .config import BenefitConfig, net_benefit
from .lru import LRUBaseline
from .policy import BenefitPolicy
from .traces import Access


class Side(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    saved: float
    bytes_written: int
    hits: int
    accesses: int


class ComparisonRow(BaseModel):
    """One trace: the policy and LRU at the same capacity."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str
    capacity_bytes: int
    policy: Side
    lru: Side


def replay_policy(accesses: Iterable[Access], capacity: int, config: BenefitConfig,
                  policy_class: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> Side:
    """BEN-CMP-2, through the reference's policy or another with its operations that ``policy_class`` builds."""
    policy = policy_class(config)
    saved, written, hits, count = 0.0, 0, 0, 0
    for key, cost, size in accesses:
        count += 1
        if key in policy.entries:
            hits += 1
            saved += net_benefit(cost)
            decision = policy.record_hit(key, cost)
            if decision is not None and decision.kind == "promote":
                written += policy.entries[key].exclusive_bytes
            continue
        decision = policy.consider_admission(key, size, [], cost)
        if decision.kind == "admit-persist":
            written += size
        for victim in decision.cap.victims if decision.cap is not None else ():
            policy.remove(victim)
        while (used := policy.used_bytes()) > capacity:
            victims = policy.choose_victims(used - capacity).keys
            if not victims:
                break
            for victim in victims:
                policy.remove(victim)
    return Side(saved=saved, bytes_written=written, hits=hits, accesses=count)


def replay_lru(accesses: Iterable[Access], capacity: int) -> Side:
    """BEN-CMP-3."""
    lru = LRUBaseline(capacity)
    for key, cost, size in accesses:
        lru.access(key, cost, size)
    return Side(saved=lru.saved, bytes_written=lru.bytes_written, hits=lru.hits, accesses=lru.hits + lru.misses)


def compare(name: str, accesses: list[Access], capacity: int, config: BenefitConfig | None = None,
            policy_class: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> ComparisonRow:
    """BEN-CMP-1: both sides, the same trace, the same capacity."""
    policy = replay_policy(accesses, capacity, config or BenefitConfig(), policy_class)
    return ComparisonRow(trace=name, capacity_bytes=capacity, policy=policy, lru=replay_lru(accesses, capacity))
