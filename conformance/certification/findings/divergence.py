"""What a certification finds, whatever found it (the lockstep, the machines, the faults, the
dialect search) and whatever reads it (the report, its rendering): a Divergence of the
implementation from the reference, a Finding (one shrunk failure), and a policy's Outcome."""

import json
from dataclasses import asdict, dataclass
from typing import Any

from kvspec.adapters.benefit import BenefitState
from kvspec.adapters.interface import AdapterConfig, Snapshot
from kvspec.adapters.protocol import to_double
from kvspec.adapters.wire import cap_json, decision_json, state_json
from kvspec.reference.benefit import CapRepair, Decision, Victims
from kvspec.reference.dialects import CANONICAL, Dialect

Knobs = tuple[tuple[str, object], ...]  # (knob, value) pairs, in the configuration's field order


class Divergence(AssertionError):
    """The implementation and the reference disagree. The message starts with the clauses (the
    diagnosis first); the fields carry what a report needs: the request (1-based; 0 for the
    configuration), expected and actual values, the configuration, and the trace up to and
    including that request. ``consistent_with`` holds those of ``clauses`` that the evidence is
    only consistent with (a break of each would explain the difference, and the implementation's
    own state does not single one out); the others are shown broken on it."""

    def __init__(self, clauses: list[str], detail: str, *, request: int, expected: object, actual: object,
                 config: AdapterConfig | None, trace: list[tuple[list[int], int]], benefit: dict[str, Any] | None = None,
                 consistent_with: tuple[str, ...] = (), lifecycle: list[tuple[Any, ...]] | None = None) -> None:
        super().__init__(f"{', '.join(clauses)}: {qualifier(clauses, consistent_with)}{detail}")
        self.clauses = tuple(clauses)
        self.consistent_with = tuple(c for c in clauses if c in consistent_with)
        self.request = request
        self.expected = shown(expected)
        self.actual = shown(actual)
        self.config = config
        self.trace = list(trace)
        self.benefit = benefit  # the benefit policy's: its config and operations, as protocol messages (PROTO-20 to PROTO-27)
        self.lifecycle = lifecycle  # requests in flight: the lifecycle's operations up to this one (PROTO-37 to PROTO-43), as FIX-18 lists them


class Unshrinkable(BaseException):
    """A fault whose every replay would wait out a deadline: ends the Hypothesis run unshrunk.
    A BaseException, so that Hypothesis lets it through instead of shrinking it (faults.py)."""

    def __init__(self, fault: Divergence) -> None:
        super().__init__(str(fault))
        self.fault = fault


def configuration_fields(config: AdapterConfig) -> dict[str, str | int | float]:
    """PROTO-7's fields; a ratio JSON has no number for (in-process only) as PROTO-19's strings."""
    return {**asdict(config), "small_ratio": to_double(config.small_ratio)}


def configuration_text(config: AdapterConfig) -> str:
    """The configuration as the configure request carries it (PROTO-7)."""
    return json.dumps(configuration_fields(config))


def shown(value: object) -> str:
    """A value as the protocol's JSON writes it (spec/adapter-protocol.md): a configuration, a
    snapshot, a benefit reply or state, a count; a tuple of them as a list."""
    if isinstance(value, AdapterConfig):
        return configuration_text(value)
    if isinstance(value, Snapshot):
        return json.dumps({"small": [list(e) for e in value.small], "main": [list(e) for e in value.main], "ghost": list(value.ghost)})
    if isinstance(value, BenefitState):
        return json.dumps(state_json(value))
    if isinstance(value, Decision):
        return json.dumps(decision_json(value))
    if isinstance(value, CapRepair):
        return json.dumps(cap_json(value))
    if isinstance(value, Victims):
        return json.dumps({"keys": list(value.keys), "freed": value.freed})
    if isinstance(value, tuple | list):
        return f"[{', '.join(map(shown, value))}]"
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def alternatives(clauses: list[str]) -> str:
    return clauses[0] if len(clauses) == 1 else f"{', '.join(clauses[:-1])} or {clauses[-1]}"


def qualifier(clauses: list[str], consistent_with: tuple[str, ...]) -> str:
    """How sure the diagnosis is, after the clauses: nothing when each is shown broken."""
    shown = [c for c in clauses if c not in consistent_with]
    only = [c for c in clauses if c in consistent_with]
    if not only:
        return ""
    if not shown:
        return f"consistent with {'it' if len(only) == 1 else 'either' if len(only) == 2 else 'any'}; "
    return f"{', '.join(shown)} broken, consistent with {alternatives(only)}; "


@dataclass(frozen=True)
class Finding:
    """One shrunk failure: a Divergence (a Fault, when the implementation failed rather than
    answered differently), or the implementation breaking the protocol outside any example."""

    message: str
    steps: str
    divergence: Divergence | None
    configuration: bool = False  # a configuration finding (configurations.py): the behaviour was certified on the others


@dataclass(frozen=True)
class Outcome:
    """One policy's verdict against a dialect (DIALECT-7; the canonical spec when empty): a shrunk
    failure for each check that failed, the earliest first."""

    policy: str
    examples_per_second: float
    findings: tuple[Finding, ...] = ()
    dialect: Dialect = CANONICAL
    examples: int = 0  # how many the machine ran (the probes apart)
    accepted: int = 0  # how many configurations both accepted: the behaviour was certified on them
    failed_at: tuple[Knobs, ...] = ()  # the whole-domain knob values it failed at configure with, not offered again
    in_flight: bool = False  # requests in flight: the lifecycle machine's verdict (spec/lifecycle.md), not the one-at-a-time replay's
    searched: bool = False  # requests in flight against a dialect --find-dialect found (DIALECT-8)

    @property
    def conforms(self) -> bool:
        return not self.findings

    @property
    def behaviour_failed(self) -> bool:
        """Whether a finding is about the behaviour (or a fault), not a configuration alone."""
        return any(not finding.configuration for finding in self.findings)

    @property
    def message(self) -> str:
        return "\n".join(finding.message for finding in self.findings)
