"""Run the certification machine against an adapter, reproducibly from a seed."""

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from kvspec.adapters.interface import Adapter, AdapterFailure

from .lockstep import Divergence
from .machine import Pins, machine_for

PROFILES = {
    # CI: a few seconds an adapter kind; catches every mutant of the gallery.
    "quick": settings(max_examples=150, stateful_step_count=25),
    # Certification: minutes; longer traces, more configurations.
    "thorough": settings(max_examples=2000, stateful_step_count=60),
}


@dataclass(frozen=True)
class Outcome:
    """One policy's verdict: the first divergence after shrinking, and the steps that reach it."""

    policy: str
    conforms: bool
    examples_per_second: float
    message: str = ""
    steps: str = ""
    divergence: Divergence | None = None


def certify_policy(adapter: Adapter, policy: str, profile: str = "quick", seed_value: int = 0, pins: Pins = Pins()) -> Outcome:
    """Certify ``adapter`` on ``policy``; any Divergence or AdapterFailure is the verdict."""
    machine = seed(seed_value)(machine_for(adapter, policy, pins))
    chosen = settings(
        PROFILES[profile],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )
    reported: list[str] = []
    started = time.perf_counter()
    try:
        with with_reporter(reported.append):
            run_state_machine_as_test(machine, settings=chosen)
    except (Divergence, AdapterFailure) as failure:
        rate = machine.examples / (time.perf_counter() - started)
        divergence = failure if isinstance(failure, Divergence) else None
        steps = [*getattr(failure, "__notes__", []), *reported]  # Hypothesis attaches the shrunk steps as notes
        return Outcome(policy, False, rate, str(failure), "\n".join(steps), divergence)
    return Outcome(policy, True, machine.examples / (time.perf_counter() - started))
