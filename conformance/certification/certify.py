"""Run the certification machine against an implementation, reproducibly from a seed."""

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.errors import Flaky
from hypothesis.internal.conjecture import providers
from hypothesis.reporting import with_reporter
from hypothesis.stateful import run_state_machine_as_test

from kvspec.adapters import Implementation
from kvspec.adapters.benefit import BenefitAdapter
from kvspec.adapters.interface import Adapter, AdapterConfig, AdapterFailure
from kvspec.conformance.certification.benefit.machine import BenefitMachine, benefit_machine_for
from kvspec.conformance.certification.benefit.probes import probe_divergence as benefit_probe_divergence
from kvspec.conformance.certification.block.machine import CertificationMachine, machine_for, probe_divergence, started
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Knobs, Outcome
from kvspec.conformance.certification.findings.faults import Located, Location, Unshrinkable, reset_difference
from kvspec.conformance.certification.lifecycle.lockstep import InFlight, Operation
from kvspec.conformance.certification.lifecycle.machine import LifecycleMachine, lifecycle_machine_for
from kvspec.conformance.core.interruption import unless_interrupted
from kvspec.conformance.core.output import plural
from kvspec.conformance.core.workloads import Pins
from kvspec.reference import ConfigError, KvspecError, ReplayConfig, make_policy
from kvspec.reference.benefit import BenefitConfig
from kvspec.reference.constants import CERTIFY_PROFILES
from kvspec.reference.dialects import CANONICAL, Dialect

PROFILES = {name: settings(**budget) for name, budget in CERTIFY_PROFILES.items()}
PHASES = (Phase.generate, Phase.shrink)  # no database to reuse, no explicit examples: a seed alone names the examples
UNSHRUNK = "(not shrunk: every replay would wait out the deadline again; the counterexample is the example as it ran)"


def certify_policy(implementation: Implementation | Adapter | BenefitAdapter, policy: str, profile: str = "quick", seed_value: int = 0,
                   pins: Pins = Pins(), dialect: Dialect = CANONICAL, failed_at: tuple[Knobs, ...] = ()) -> Outcome:
    """Certify ``implementation`` on ``policy``. Each check that fails (a configuration, the hit
    tokens, the scan's side effects, the queues, the resident count, a fault: each raises from its
    own line) is shrunk on its own, as Hypothesis does for distinct failures.

    First, one implementation is configured twice alike and sent the same requests twice
    (PROTO-7); if it answers differently, that is a finding, and every example then gets a fresh
    implementation so that the other findings replay. A failing example is always replayed on a
    fresh implementation. An implementation that still fails one way and then another is a finding
    too, never an error of kvspec's. Where the machine found nothing, the probes it cannot be sure
    to meet (conformance/certification/block/machine.py) are sent last, every one, whatever the seed;
    where it found something, the probes' configurations still are, for the findings they make.
    DIALECT-7: the reference replays in ``dialect``. Configurations with the knob values of
    ``failed_at`` (where an earlier certification saw it fail) are not offered (configurations.py)."""
    implementation = Implementation.of(implementation)
    reset = reset_finding(implementation, policy, pins, dialect)
    fresh = reset is not None
    if policy == "benefit":
        machine = seed(seed_value)(benefit_machine_for(implementation, fresh))
    else:
        machine = seed(seed_value)(machine_for(implementation, policy, pins, fresh, dialect))
    machine.configurations.failed_at += failed_at
    found = ([reset] if reset is not None else []) + run(machine, profile)
    rate = machine.rate
    configurations = machine.configurations
    behaviour = not found  # the probes of the behaviour only where the machine found nothing; of the configurations, always
    probed = (benefit_probe_divergence(implementation, configurations, behaviour, fresh) if policy == "benefit"
              else probe_divergence(implementation, policy, pins, dialect, configurations, behaviour, fresh))
    if probed is not None:
        found.append(finding(probed, []))
    found += [Finding(str(each), "", each, configuration=True) for each in configurations.findings()]
    return Outcome(policy, rate, tuple(sorted(found, key=earliest)), dialect, machine.examples, machine.accepted,
                   tuple(configurations.failed_at))


def certify_in_flight(implementation: Implementation | Adapter, policy: str, profile: str = "quick", seed_value: int = 0, pins: Pins = Pins(),
                      dialect: Dialect = CANONICAL) -> Outcome:
    """Certify ``implementation``'s requests in flight on ``policy`` (spec/lifecycle.md sections 1 to 5,
    PROTO-35): the lifecycle machine (conformance/certification/lifecycle/machine.py), each failure
    shrunk on its own. First, configured twice alike and sent the same operations twice (PROTO-7); if
    it answers differently, that is a finding, and every example then gets a fresh implementation."""
    implementation = Implementation.of(implementation)
    reset = in_flight_reset_finding(implementation, policy, pins)
    machine = seed(seed_value)(lifecycle_machine_for(implementation, policy, pins, reset is not None, dialect))
    found = [each if each.divergence is None or each.divergence.lifecycle is None else fewest(implementation, each, dialect, reset is not None)
             for each in run(machine, profile)]
    found = ([reset] if reset is not None else []) + found
    return Outcome(policy, machine.rate, tuple(sorted(found, key=earliest)), dialect, machine.examples, machine.accepted, in_flight=True)


def fewest(implementation: Implementation, found: Finding, dialect: Dialect, fresh: bool) -> Finding:
    """A failure in flight shrunk on to the fewest operations: Hypothesis shrinks the machine's steps,
    each of which may send several operations (a scheduler's step sends one for each request in
    flight); each request's operations are then left out in turn, and then each operation, from the
    last, while the rest still fail with the same leading clause (the spec allowing them, PROTO-36).
    A fault that took a deadline is left as it ran."""
    divergence = found.divergence
    assert divergence is not None and divergence.lifecycle is not None and divergence.config is not None
    if getattr(divergence, "timed_out", False):
        return found
    operations, shrunk = list(divergence.lifecycle), divergence

    def without(fewer: list[Operation]) -> None:
        nonlocal operations, shrunk
        again = in_flight_failure(implementation, divergence.config, dialect, fewer, fresh)  # type: ignore[arg-type]
        if again is not None and again.clauses[:1] == divergence.clauses[:1] and type(again) is type(divergence):
            operations, shrunk = fewer, again

    for rid in dict.fromkeys(op[1] for op in operations[:-1]):  # first a whole request's operations, then each one
        if rid != operations[-1][1]:
            without([op for op in operations if op[1] != rid])
    for i in reversed(range(len(operations) - 1)):
        without(operations[:i] + operations[i + 1:])
    if shrunk is divergence:
        return found
    return Finding(str(shrunk), f"{found.steps}\n(then shrunk to {plural(len(operations), 'operation')}, a request's or one left out at a time)", shrunk)


def in_flight_failure(implementation: Implementation, config: AdapterConfig, dialect: Dialect, operations: list[Operation],
                      fresh: bool) -> Divergence | None:
    """The Divergence the operations end in, sent to the implementation configured anew; None if
    they agree, or if the spec does not allow them (an operation of a request that is not in the
    state it needs) or an operation is left after the one that diverged."""
    try:
        adapter = started(implementation, fresh)
        flight = InFlight(Located(adapter, lambda: Location("the shrinking", len(flight.operations), config, [], lifecycle=list(flight.operations))),
                          config, dialect)
        flight.adapter.configure(config)
        for operation in operations:
            flight.perform(operation)
    except KvspecError:
        return None
    except Unshrinkable:
        return None
    except Divergence as divergence:
        return divergence if divergence.request == len(operations) else None
    return None


def run(machine: type[CertificationMachine | BenefitMachine | LifecycleMachine], profile: str) -> list[Finding]:
    """The machine's run at ``profile``: each check that fails, shrunk on its own (``machine.rate``: the
    examples it ran a second)."""
    chosen = settings(
        PROFILES[profile],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=PHASES,
        report_multiple_bugs=True,
    )
    reported: list[str] = []
    found: list[Finding] = []
    started = time.perf_counter()
    try:
        with with_reporter(reported.append), global_constants_only(), interruption_kept():
            run_state_machine_as_test(machine, settings=chosen)  # type: ignore[arg-type]
    except Unshrinkable as stop:
        found.append(finding(stop.fault, [UNSHRUNK]))
    except Flaky:
        found.append(nondeterministic(machine.first_failure, reported))
    except (Divergence, ExceptionGroup) as failure:
        failures = failure.exceptions if isinstance(failure, ExceptionGroup) else (failure,)
        if not all(isinstance(each, Divergence) for each in failures):
            raise
        found += [finding(each, reported) for each in failures]
    machine.rate = machine.examples / (time.perf_counter() - started)
    return found


@contextmanager
def interruption_kept() -> Iterator[None]:
    """An interruption ends the run as an interruption (PROTO-30). A signal that cuts an example short
    in the middle of a draw leaves Hypothesis an example it cannot freeze: it raises
    FlakyStrategyDefinition in the place of the interruption, which would be a finding (PROTO-7) and
    the certification's next phase would run, to the end, before kvspec stopped."""
    try:
        yield
    finally:
        unless_interrupted()


@contextmanager
def global_constants_only() -> Iterator[None]:
    """A seed names the same examples however kvspec is installed and whatever implementation it
    certifies. Hypothesis draws a few of its integers and floats from the literals of "local"
    modules, those outside site-packages: kvspec's own under an editable install, an in-process
    adapter's module. So during a certification it sees no local module, as under a regular
    install certifying over the protocol. (Hypothesis has no setting for this: its provider's
    module function is replaced, and its cache of permitted constants emptied on both sides.)"""
    local_constants = providers._get_local_constants
    providers._get_local_constants = providers.Constants
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = local_constants
        providers.CONSTANTS_CACHE.cache.clear()


def finding(failure: BaseException, reported: list[str]) -> Finding:
    divergence = failure if isinstance(failure, Divergence) else None
    steps = [*getattr(failure, "__notes__", []), *reported]  # Hypothesis attaches the shrunk steps as notes
    return Finding(str(failure), "\n".join(steps), divergence)


def nondeterministic(first: Divergence | None, reported: list[str]) -> Finding:
    """PROTO-7: an example failed, and failed otherwise (or not at all) when replayed on a fresh
    implementation: its answers depend on more than its configuration and requests."""
    seen = f" ({first})" if first is not None else ""
    detail = f"the implementation is not deterministic: an example failed{seen}, and replayed on a fresh implementation it did not fail the same way"
    if first is None:
        return Finding(f"PROTO-7: {detail}", "\n".join(reported), None)
    divergence = Divergence(["PROTO-7", *first.clauses], detail, request=first.request, expected=None, actual=None,
                            config=first.config, trace=first.trace, benefit=first.benefit)
    divergence.expected, divergence.actual = first.expected, first.actual  # the protocol's JSON already
    return Finding(str(divergence), "\n".join(reported), divergence)


def reset_finding(implementation: Implementation, policy: str, pins: Pins, dialect: Dialect = CANONICAL) -> Finding | None:
    """PROTO-7, PROTO-20: a configure that does not reset, found by configuring twice alike. A
    fault on the way is left for the machine to find, shrink and report."""
    config = benefit_probe_config() if policy == "benefit" else replay_probe_config(policy, pins, dialect)
    try:
        difference = reset_difference(implementation.current(), config)
    except AdapterFailure:
        return None
    return None if difference is None else Finding(str(difference), "", difference)


def in_flight_reset_finding(implementation: Implementation, policy: str, pins: Pins) -> Finding | None:
    """PROTO-7: a configure that does not empty the pool of requests in flight, found by configuring
    twice alike; a fault on the way is left for the machine."""
    try:
        difference = reset_difference(implementation.current(), replay_probe_config(policy, pins), in_flight=True)
    except AdapterFailure:
        return None
    return None if difference is None else Finding(str(difference), "", difference)


def replay_probe_config(policy: str, pins: Pins, dialect: Dialect = CANONICAL) -> AdapterConfig:
    """The smallest cache from 6 blocks up that the spec (in ``dialect``) accepts with the pinned knobs."""
    ratio = 0.5 if pins.small_ratio is None else pins.small_ratio
    max_freq = 3 if pins.max_freq is None else pins.max_freq
    for capacity in itertools.chain(range(6, 64), (2**k for k in range(6, 63))):
        try:
            make_policy(ReplayConfig(policy, capacity, 1, ratio, max_freq, dialect))  # type: ignore[arg-type]
        except ConfigError:
            continue
        return AdapterConfig(policy, capacity, 1, ratio, max_freq)  # type: ignore[arg-type]
    raise AssertionError(f"no capacity is valid at small_ratio {ratio}")  # Pins.check refuses such a ratio


def benefit_probe_config() -> BenefitConfig:
    """Small enough that the fixed operations admit, promote, evict and remember ghosts."""
    return BenefitConfig(probation_byte_budget=20, persistence_hit_threshold=1, grace_observations=1, ghost_capacity=2,
                         ghost_max_age_observations=5)


def earliest(finding: Finding) -> tuple[int, int, str]:
    """Configuration first, then by request; a protocol failure last."""
    divergence = finding.divergence
    return (0, divergence.request, finding.message) if divergence is not None else (1, 0, finding.message)
