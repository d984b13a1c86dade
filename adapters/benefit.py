"""What the benefit-policy conformance suite asks of an implementation (spec/benefit.md).

The operations are the spec's, by name; results use the reference's shapes (Decision,
CapRepair, Victims from kvspec.reference.benefit). At the ``state`` level the adapter also
reports BenefitState after every operation: the clock, every entry with its accounting and
score, every ghost, and the probation charge.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kvspec.reference import SPEC_VERSION, ConfigError, KvspecError
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CapRepair, CostSample, Decision, Victims
from kvspec.reference.benefit.score import score

from .interface import ConfigRefused, Identity, Level


@dataclass(frozen=True)
class EntryView:
    """One entry as BEN-ENTRY-1 describes it, with its score (None: no score, BEN-SCORE-1 to BEN-SCORE-4)."""

    key: int
    state: str
    hits: int
    misses: int
    rw: float
    ow: float
    last_observation: int
    score: float | None


@dataclass(frozen=True)
class BenefitState:
    """The whole observable state, entries and ghosts in ascending key order."""

    clock: int
    entries: tuple[EntryView, ...]
    ghosts: tuple[tuple[int, int, float, float, int], ...]  # (key, hits, rw, ow, last_observation)
    probation_charge: int


class BenefitAdapter(Protocol):
    """A benefit-policy implementation under test. Every method may raise AdapterFailure."""

    identity: Identity
    level: Level
    policies: tuple[str, ...]  # PROTO-6: "benefit" among them

    def configure_benefit(self, config: BenefitConfig) -> None:
        """An empty policy for ``config`` (replacing any earlier one), or ConfigRefused (BEN-CONF-8)."""

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision: ...

    def record_hit(self, key: int, cost: CostSample) -> Decision | None: ...

    def record_miss(self, key: int) -> None: ...

    def observe_pressure(self, pressure: float) -> None: ...

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims: ...

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair: ...

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        """BEN-REMOVE-1: the fresh cap repair, or None when the key was not resident."""

    def benefit_state(self) -> BenefitState:
        """The state (``state`` level only)."""

    def close(self) -> None: ...


def state_of(policy: BenefitPolicy) -> BenefitState:
    """The reference's state in the adapter's shape."""
    floor = policy.config.min_reuse_probability
    entries = tuple(
        EntryView(key, e.state, e.hits, e.misses, e.rw, e.ow, e.last_observation, score(policy.ledger, key, e, floor))
        for key, e in sorted(policy.entries.items())
    )
    ghosts = tuple((key, g.hits, g.rw, g.ow, g.last_observation) for key, g in sorted(policy.ghosts.items()))
    return BenefitState(policy.clock, entries, ghosts, policy.probation_charge())


class ReferenceBenefitAdapter:
    """kvspec.reference.benefit behind the BenefitAdapter interface, at the state level; or the
    policy ``policy_factory`` builds, which has BenefitPolicy's operations."""

    identity = Identity(name="kvspec-reference", language="python", version=SPEC_VERSION)
    level: Level = "state"
    policies = ("benefit",)

    def __init__(self, policy_factory: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> None:
        self._policy_factory = policy_factory
        self._benefit: BenefitPolicy | None = None

    @property
    def policy(self) -> BenefitPolicy:
        if self._benefit is None:
            raise KvspecError("PROTO-20: no benefit policy is configured (configure_benefit first, or the last one was refused)")
        return self._benefit

    def configure_benefit(self, config: BenefitConfig) -> None:
        self._benefit = None  # PROTO-20: refused or not, the earlier policy is gone
        try:
            self._benefit = self._policy_factory(config)
        except ConfigError as error:
            raise ConfigRefused(str(error)) from error

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        return self.policy.consider_admission(key, exclusive_bytes, shared, cost, pinned)

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        return self.policy.record_hit(key, cost)

    def record_miss(self, key: int) -> None:
        self.policy.record_miss(key)

    def observe_pressure(self, pressure: float) -> None:
        self.policy.observe_pressure(pressure)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        return self.policy.choose_victims(bytes_to_free, pinned)

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        return self.policy.select_probation_cap_victims(pinned)

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        removed = self.policy.remove(key, pinned)
        return None if removed is None else removed[1]

    def benefit_state(self) -> BenefitState:
        return state_of(self.policy)

    def close(self) -> None:
        self._benefit = None
