"""What an implementation does wrong besides answering differently (spec/adapter-protocol.md
section 3): a failure (a crash, a hang, an exception, a reply out of shape or of the wrong type)
located at the request or operation it happened at, and a configure that does not reset.

A certification machine sees its implementation through ``Located``, which turns each
AdapterFailure into a ``Fault``: a Divergence naming the protocol clause broken, the request and
the configuration, with the trace so far, so that it is reported, saved and shrunk like any other
finding. A fault that took a deadline to show ends the run at once (``Unshrinkable``): each
replay would wait the deadline out again.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvspec.adapters import BENEFIT_METHODS, LIFECYCLE_METHODS, REPLAY_METHODS
from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused
from kvspec.adapters.protocol import to_double
from kvspec.adapters.wire import lifecycle_reply_json, lifecycle_state_json, reply_json, state_json
from kvspec.conformance.certification.findings.divergence import Divergence, Unshrinkable, configuration_text, shown
from kvspec.reference.benefit import BenefitConfig, CostSample


@dataclass(frozen=True)
class Location:
    """Where a machine is: its words for it ("request 5"), the number a report gives it, the
    configuration and the trace (or the benefit policy's operations) that lead there."""

    label: str
    request: int = 0
    config: AdapterConfig | None = None
    trace: list[tuple[list[int], int]] = field(default_factory=list)
    benefit: dict[str, Any] | None = None
    lifecycle: list[tuple[Any, ...]] | None = None  # requests in flight: the operations up to this one


class Fault(Divergence):
    """The implementation failed at a request (or operation, or its configuration, or its start)."""

    def __init__(self, failure: AdapterFailure, at: Location) -> None:
        super().__init__([failure.clause], f"{at.label}: {failure}", request=at.request, expected=None, actual=None, config=at.config,
                         trace=at.trace, benefit=at.benefit, lifecycle=at.lifecycle)
        self.expected = self.actual = ""  # no reply to compare: the message says what happened
        self.timed_out = failure.timed_out


def located(failure: AdapterFailure, at: Location) -> Fault | Unshrinkable:
    fault = Fault(failure, at)
    return Unshrinkable(fault) if failure.timed_out else fault


class Located:
    """``adapter`` as a machine sees it: every AdapterFailure raised as a Fault at ``where()``."""

    def __init__(self, adapter: Any, where: Callable[[], Location]) -> None:
        self._adapter = adapter
        self._where = where
        self.identity = adapter.identity
        self.level = adapter.level
        self.policies = adapter.policies
        self.lifecycle = adapter.lifecycle


def forwarded(name: str) -> Callable[..., Any]:
    def call(self: Located, *args: Any, **keywords: Any) -> Any:
        try:
            return getattr(self._adapter, name)(*args, **keywords)  # access's input_length is a keyword (PROTO-10)
        except AdapterFailure as failure:
            raise located(failure, self._where()) from None

    call.__name__ = call.__qualname__ = name
    return call


for _name in (*REPLAY_METHODS, *BENEFIT_METHODS, *LIFECYCLE_METHODS, "close"):
    setattr(Located, _name, forwarded(_name))


# A configure that does not reset (PROTO-7, PROTO-20) ------------------------------------------

RESET_REQUESTS = ([1, 2, 3], [1, 2], [4, 5, 6, 7], [1], [8, 9, 2], [4, 1, 10, 11, 12], [2, 3], [1, 2, 3, 13], [5, 6])
COST = CostSample(100.0, 30.0)
RESET_OPERATIONS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("consider_admission", (1, 8, [(1, 4)], COST, frozenset())), ("consider_admission", (2, 8, [(1, 4)], COST, frozenset())),
    ("record_hit", (1, COST)), ("record_hit", (2, COST)), ("record_miss", (3,)), ("observe_pressure", (0.5,)),
    ("consider_admission", (3, 16, [], CostSample(60.0, 10.0), frozenset())), ("choose_victims", (10, frozenset())),
    ("remove", (1, frozenset())), ("consider_admission", (1, 8, [], COST, frozenset())), ("select_probation_cap_victims", (frozenset(),)),
    ("choose_victims", (40, frozenset({2}))),
)


# Requests in flight (PROTO-37 to PROTO-44): two requests sharing a prefix, one preempted and resumed.
RESET_LIFECYCLE = (("arrive", 1, [1, 2, 3], 3), ("lookup", 1), ("allocate", 1), ("compute", 1, 2), ("arrive", 2, [1, 2, 4], 3),
                   ("lookup", 2), ("allocate", 2), ("preempt", 1), ("compute", 2, 3), ("finish", 2), ("lookup", 1), ("allocate", 1),
                   ("compute", 1, 3), ("finish", 1))


def in_flight_observations(adapter: Any, config: AdapterConfig) -> list[dict[str, object]] | None:
    """Configure, then fixed lifecycle operations: each reply, and the pool after it at the state
    level; None if the implementation refuses the configuration."""
    try:
        adapter.configure(config)
    except ConfigRefused:
        return None
    seen: list[dict[str, object]] = []
    for op, rid, *args in RESET_LIFECYCLE:
        reply = lifecycle_reply_json(op, getattr(adapter, op)(rid, *args))
        seen.append({**reply, "state": lifecycle_state_json(adapter.lifecycle_state())} if adapter.level == "state" else reply)
    return seen


def observations(adapter: Any, config: AdapterConfig | BenefitConfig) -> list[dict[str, object]] | None:
    """Configure, then fixed requests (one-token blocks) or operations: what the implementation
    answers after each, its state too at the state level, as the protocol's replies carry them;
    None if it refuses the configuration."""
    benefit = isinstance(config, BenefitConfig)
    try:
        adapter.configure_benefit(config) if benefit else adapter.configure(config)
    except ConfigRefused:
        return None
    state_level = adapter.level == "state"
    seen: list[dict[str, object]] = []
    if benefit:
        for name, args in RESET_OPERATIONS:
            reply = reply_json(name, getattr(adapter, name)(*args))
            seen.append({**reply, "benefit_state": state_json(adapter.benefit_state())} if state_level else reply)
        return seen
    for hash_ids in RESET_REQUESTS:
        hit = adapter.hit_tokens(hash_ids, len(hash_ids))
        adapter.access(hash_ids)
        answers: dict[str, object] = {"hit_tokens": hit, "resident_count": adapter.resident_count()}
        seen.append({**answers, "snapshot": json.loads(shown(adapter.snapshot()))} if state_level else answers)
    return seen


def configuration_json(config: AdapterConfig | BenefitConfig) -> str:
    """PROTO-7's or PROTO-20's configuration, as the configure request carries it."""
    if isinstance(config, AdapterConfig):
        return configuration_text(config)
    return json.dumps({knob: to_double(v) if isinstance(v, float) else v for knob, v in vars(config).items()})


def reset_difference(adapter: Any, config: AdapterConfig | BenefitConfig, in_flight: bool = False) -> Divergence | None:
    """PROTO-7, PROTO-20: configured twice alike, one implementation must answer the same requests
    (``in_flight``: the same lifecycle operations, PROTO-35) alike; the first answer that differs the
    second time, or None. AdapterFailure propagates."""
    observe = in_flight_observations if in_flight else observations
    first = observe(adapter, config)  # type: ignore[arg-type]
    second = observe(adapter, config) if first is not None else None  # type: ignore[arg-type]
    if first is None or second is None or first == second:
        return None
    number, (was, now) = next((n, pair) for n, pair in enumerate(zip(first, second, strict=True), start=1) if pair[0] != pair[1])
    benefit = isinstance(config, BenefitConfig)
    clause, what = ("PROTO-20", "operation") if benefit else ("PROTO-7", "operation" if in_flight else "request")
    detail = (f"configure does not reset the implementation: configured twice with {configuration_json(config)} and sent the same "
              f"{what}s, it answered {what} {number} with {shown(now)} the second time and {shown(was)} the first")
    return Divergence([clause], detail, request=0, expected=was, actual=now, config=None if benefit else config, trace=[])
