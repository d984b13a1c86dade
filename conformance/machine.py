"""The certification machine: every request goes to the implementation and to the reference,
and they must agree after each one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

Requests are drawn as a tree of conversations (chained prefixes: fresh, extend, branch, repeat,
one-off scans), so that a shrunk counterexample is a short, realistic trace. Configurations are
drawn around every edge: the smallest valid S3FIFO caches, max_freq 0 and 1, small_ratio near 0
and 1, and configurations the spec refuses (S3-CONF-5), which the implementation must refuse too.
"""

import sys
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.reference import ConfigError
from kvspec.reference.s3fifo import ratio_is_valid
from kvspec.reference.validation import check_count

from .faults import Located, Location, located
from .lockstep import Divergence, Lockstep


@dataclass
class Conversations:
    """The requests so far, to draw the next one from (REPLAY-PREFIX-1 needs shared prefixes)."""

    requests: list[list[int]] = field(default_factory=list)
    next_id: int = 1

    def fresh(self, n: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids


@dataclass(frozen=True)
class Pins:
    """S3FIFO knobs held fixed, for an implementation that has no such knob (``kvspec certify
    --small-ratio``, ``--max-freq``); the verdict then covers only those configurations."""

    small_ratio: float | None = None
    max_freq: int | None = None

    def check(self) -> None:
        """S3-CONF-1, S3-CONF-6: a pinned knob must be a value the spec accepts."""
        if self.small_ratio is not None and not ratio_is_valid(self.small_ratio):
            raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {self.small_ratio!r}")
        if self.max_freq is not None:
            check_count(self.max_freq, 0, "S3-CONF-6", "max_freq")


def config_strategy(policy: str, pins: Pins = Pins()) -> st.SearchStrategy[AdapterConfig]:
    """Configurations around the edges, refused ones included."""
    ratios = st.sampled_from([0.1, 0.5, 0.01, 0.99, 0.25]) | st.floats(0.0, 1.0)
    freqs = st.sampled_from([0, 1, 3]) | st.integers(0, 5)
    if pins.small_ratio is not None:
        ratios = st.just(pins.small_ratio)
    if pins.max_freq is not None:
        freqs = st.just(pins.max_freq)
    capacities = st.sampled_from([1, 2, 3, 5, 6, 7, 10, 11, 15, 25]) | st.integers(1, 48)
    return st.builds(
        AdapterConfig,
        policy=st.just(policy),
        capacity=capacities,
        block_size=st.sampled_from([1, 4, 16, 512]),
        small_ratio=ratios if policy == "s3fifo" else st.just(0.1),
        max_freq=freqs if policy == "s3fifo" else st.just(3),
    )


class CertificationMachine(RuleBasedStateMachine):
    """Subclassed by ``machine_for`` with the implementation under test and the policy to certify."""

    implementation: Implementation
    policy: str
    pins: Pins = Pins()
    fresh_each_example: bool = False  # a new implementation for every example, not only after a failure
    examples: int = 0  # how many examples (one configuration and its requests) have started
    first_failure: Divergence | None = None

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.lockstep: Lockstep | None = None
        self.started: Lockstep | None = None  # the example's lockstep, from its configuration on
        self.conversations = Conversations()

    @initialize(data=st.data())
    def configure(self, data: st.DataObject) -> None:
        """Both accept the configuration, or both refuse it."""
        config = data.draw(config_strategy(self.policy, self.pins), label="config")
        self.started = lockstep = Lockstep(Located(started(self.implementation, self.fresh_each_example), self.where), config)
        if lockstep.configure():
            self.lockstep = lockstep

    def where(self) -> Location:
        """Where a fault happened: the configuration, or the request being sent (the trace ends with it)."""
        assert self.started is not None
        n = len(self.started.trace)
        return Location(f"request {n}" if n else "the configuration", n, self.started.config, list(self.started.trace))

    def teardown(self) -> None:
        """Keep the run's first failure: an implementation that fails otherwise on a replay leaves
        Hypothesis nothing else to report (PROTO-7)."""
        failure = sys.exc_info()[1]
        if isinstance(failure, Divergence) and type(self).first_failure is None:
            type(self).first_failure = failure

    @rule(
        kind=st.sampled_from(["extend", "fresh", "repeat", "branch", "scan"]),
        pick=st.integers(0, 7),
        blocks=st.integers(1, 4),
        keep=st.integers(0, 12),
        tokens=st.integers(0, 511),
    )
    def request(self, kind: str, pick: int, blocks: int, keep: int, tokens: int) -> None:
        """One request, sent to both (Lockstep.request checks everything they must agree on)."""
        if self.lockstep is None:
            return  # both refused the configuration: nothing more to compare
        hash_ids = self.draw_request(kind, pick, blocks, keep)
        block_size = self.lockstep.config.block_size
        self.lockstep.request(hash_ids, (len(hash_ids) - 1) * block_size + 1 + tokens % block_size)
        self.conversations.requests.append(hash_ids)

    def draw_request(self, kind: str, pick: int, blocks: int, keep: int) -> list[int]:
        earlier = self.conversations.requests
        if not earlier or kind == "fresh":
            return self.conversations.fresh(blocks)
        if kind == "scan":
            return self.conversations.fresh(blocks + 6)
        parent = earlier[-1 - pick % len(earlier)]
        if kind == "repeat":
            return list(parent)
        if kind == "extend":
            return parent + self.conversations.fresh(blocks)
        return parent[: keep % len(parent)] + self.conversations.fresh(blocks)


def started(implementation: Implementation, fresh: bool) -> object:
    """The implementation for the next example: the running one, unless it failed or ``fresh``
    (PROTO-4); a failure to start is a fault at its start."""
    try:
        return implementation.start() if fresh else implementation.current()
    except AdapterFailure as failure:
        raise located(failure, Location("at its start")) from None


def machine_for(implementation: Implementation, policy: str, pins: Pins = Pins(), fresh_each_example: bool = False) -> type[CertificationMachine]:
    """A machine class that certifies ``implementation`` on ``policy``, with ``pins`` held fixed."""
    return type(f"Certify{policy.upper()}", (CertificationMachine,),
                {"implementation": implementation, "policy": policy, "pins": pins, "fresh_each_example": fresh_each_example})
