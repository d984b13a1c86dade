"""Run the certification machine against an adapter, reproducibly from a seed."""

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from kvspec.adapters.benefit import BenefitAdapter
from kvspec.adapters.interface import Adapter, AdapterFailure

from .benefit_machine import benefit_machine_for
from .lockstep import Divergence
from .machine import Pins, machine_for

PROFILES = {
    # CI: a few seconds an adapter kind; catches every mutant of the gallery.
    "quick": settings(max_examples=150, stateful_step_count=25),
    # Certification: minutes; longer traces, more configurations.
    "thorough": settings(max_examples=2000, stateful_step_count=60),
}


@dataclass(frozen=True)
class Finding:
    """One shrunk failure: a Divergence, or the implementation breaking the protocol (no divergence)."""

    message: str
    steps: str
    divergence: Divergence | None


@dataclass(frozen=True)
class Outcome:
    """One policy's verdict: a shrunk failure for each check that failed, the earliest first."""

    policy: str
    examples_per_second: float
    findings: tuple[Finding, ...] = ()

    @property
    def conforms(self) -> bool:
        return not self.findings

    @property
    def message(self) -> str:
        return "\n".join(finding.message for finding in self.findings)


def certify_policy(adapter: Adapter | BenefitAdapter, policy: str, profile: str = "quick", seed_value: int = 0, pins: Pins = Pins()) -> Outcome:
    """Certify ``adapter`` on ``policy``. Each check that fails (a configuration, the hit tokens,
    the scan's side effects, the queues, the resident count: each raises from its own line of
    conformance/lockstep.py) is shrunk on its own, as Hypothesis does for distinct failures."""
    if policy == "benefit":
        machine = seed(seed_value)(benefit_machine_for(adapter))  # type: ignore[arg-type]
    else:
        machine = seed(seed_value)(machine_for(adapter, policy, pins))  # type: ignore[arg-type]
    chosen = settings(
        PROFILES[profile],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=True,
    )
    reported: list[str] = []
    started = time.perf_counter()
    try:
        with with_reporter(reported.append):
            run_state_machine_as_test(machine, settings=chosen)
    except (Divergence, AdapterFailure, ExceptionGroup) as failure:
        failures = failure.exceptions if isinstance(failure, ExceptionGroup) else (failure,)
        if not all(isinstance(each, Divergence | AdapterFailure) for each in failures):
            raise
        rate = machine.examples / (time.perf_counter() - started)
        return Outcome(policy, rate, tuple(sorted((finding(each, reported) for each in failures), key=earliest)))
    return Outcome(policy, machine.examples / (time.perf_counter() - started))


def finding(failure: BaseException, reported: list[str]) -> Finding:
    divergence = failure if isinstance(failure, Divergence) else None
    steps = [*getattr(failure, "__notes__", []), *reported]  # Hypothesis attaches the shrunk steps as notes
    return Finding(str(failure), "\n".join(steps), divergence)


def earliest(finding: Finding) -> tuple[int, int, str]:
    """Configuration first, then by request; a protocol failure last."""
    divergence = finding.divergence
    return (0, divergence.request, finding.message) if divergence is not None else (1, 0, finding.message)
