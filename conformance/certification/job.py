"""One certification as `kvspec certify` runs it, as a job that a worker runs and sends back
(conformance/core/parallel.py): every policy asked for certified against its dialect, with the
dialect search where asked, and what it found made a verdict (report.py)."""

import copyreg
import threading
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from kvspec.adapters import REPLY_TIMEOUT, START_TIMEOUT, Implementation, Started
from kvspec.adapters.interface import AdapterFailure, Identity
from kvspec.conformance.certification.block.dialect_search import Search, find_dialect
from kvspec.conformance.certification.certify import certify_in_flight, certify_policy
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Outcome
from kvspec.conformance.certification.findings.faults import Fault, Location
from kvspec.conformance.certification.verdict.report import CertificationVerdict, build_verdict
from kvspec.conformance.certification.verdict.reproduction import Reproduction
from kvspec.conformance.core.workloads import Pins
from kvspec.reference import ALL_POLICIES, ConfigError, KvspecError, ReplayConfig
from kvspec.reference.caches import pool_for
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS, Dialect, dialect_for


def rebuilt(kind: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """A finding's exception, as a worker sent it."""
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


def exception_state(error: BaseException) -> tuple[Any, ...]:
    return rebuilt, (type(error), error.args, vars(error))


# A finding's Divergence (or Fault) takes other arguments than pickle gives it back (its message):
# a worker sends it as its fields.
for kind in (Divergence, Fault):
    copyreg.pickle(kind, exception_state)  # type: ignore[arg-type]

# Hypothesis's engine and global_constants_only are not for threads side by side: a worker with
# several threads (a Dask worker's) runs its certifications one at a time.
ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Certified:
    """What one certification found: who the implementation said it is (None where it failed at its
    start), each policy's outcome, the faults outside them and the dialect found for each policy
    that did not conform (--find-dialect)."""

    identity: Identity | None
    level: str
    outcomes: tuple[Outcome, ...]
    faults: tuple[Finding, ...]
    searches: dict[str, Search]


@dataclass(frozen=True)
class Certification:
    """`kvspec certify` with these arguments, as a job: the adapter started where it runs."""

    adapter: str
    policies: tuple[str, ...] = ()  # none: every policy the adapter offers (that the dialect has)
    profile: str = "quick"
    seed: int = 0
    pins: Pins = Pins()
    dialect: str | None = None
    variations: tuple[str, ...] = ()
    find_dialect: bool = False
    reply_timeout: float = REPLY_TIMEOUT
    start_timeout: float = START_TIMEOUT
    label: str = ""
    refused_as_fault: bool = False  # a campaign's: the policies asked for not offered, a fault in its report, not kvspec's error

    def __call__(self) -> Certified:
        with ONE_AT_A_TIME:
            try:
                return self.run()
            except KvspecError as error:  # in a campaign, which of its certifications
                raise KvspecError(f"{self.label}: {error}" if self.label else str(error)) from None

    def died(self, how: str) -> Certified | None:
        """Its worker process ended (``how``) before it was done (--jobs N, --scheduler): the doing of
        an implementation that ran in that process, and its finding (PROTO-29: as one in a process
        of its own that exits before replying, PROTO-15); else None, kvspec's error."""
        if not Implementation(self.adapter, self.reply_timeout, self.start_timeout).in_process:
            return None
        failure = AdapterFailure(f"{self.adapter}: the worker process that called it in-process ended ({how}) before it replied "
                                 "(as a process of its own that exits before replying fails PROTO-15)", clause="PROTO-29")
        return Certified(None, "unknown", (), (process_fault(failure, DURING),), {})

    def run(self) -> Certified:
        implementation = Implementation(self.adapter, self.reply_timeout, self.start_timeout)
        try:
            adapter = implementation.start()
        except AdapterFailure as failure:
            return Certified(None, "unknown", (), (process_fault(failure, AT_START),), {})
        try:
            outcomes, searches = self.certify(implementation, adapter)
        except Refused as refusal:
            if not self.refused_as_fault:
                raise
            return Certified(adapter.identity, adapter.level, (), (Finding(str(refusal), "", None),), {})
        faults = []
        try:
            implementation.close()
        except AdapterFailure as failure:
            faults.append(process_fault(failure, "its stop"))
        return Certified(adapter.identity, adapter.level, tuple(outcomes), tuple(faults), searches)

    def certify(self, implementation: Implementation, adapter: Started) -> tuple[list[Outcome], dict[str, Search]]:
        """Each policy asked for (PROTO-6), against its dialect (DIALECT-7), and with --find-dialect
        the dialect of each that does not conform (DIALECT-8)."""
        offered = adapter.policies
        unoffered = [policy for policy in self.policies if policy not in offered]
        policies = list(self.policies) or [p for p in ALL_POLICIES if p in offered and self.has_dialect(p)]
        try:
            if unoffered:
                raise Refused(f"{self.adapter} implements {', '.join(offered)}, not {', '.join(unoffered)}")
            if not policies:
                raise Refused(f"{self.adapter} implements {', '.join(offered)}, and the dialect asked for has none of them")
            dialects = self.dialects(policies)
        except KvspecError:
            close_quietly(implementation)
            raise
        outcomes, searches = [], {}
        for policy in policies:
            outcome = certify_policy(implementation, policy, self.profile, self.seed, self.pins, dialects[policy])
            outcomes.append(outcome)
            if self.find_dialect and not outcome.conforms and policy != "benefit":
                again = partial(certify_policy, implementation, policy, self.profile, self.seed, self.pins)  # (dialect, failed_at)
                searches[policy] = find_dialect(implementation, policy, outcome, again)
            if adapter.lifecycle and policy != "benefit" and in_flight_specified(policy, dialects[policy]):  # PROTO-35
                outcomes += self.in_flight(implementation, policy, dialects[policy], searches.get(policy))
        return outcomes, searches

    def in_flight(self, implementation: Implementation, policy: str, dialect: Dialect, search: Search | None) -> list[Outcome]:
        """Its requests in flight against ``dialect``; with --find-dialect, where they do not conform, against
        each dialect with a lifecycle (DIALECT-8: the engines' pools in flight, spec/dialects.md section 9,
        the one the replay's search found first), until one conforms."""
        outcome = certify_in_flight(implementation, policy, self.profile, self.seed, self.pins, dialect)
        if not self.find_dialect or outcome.conforms:
            return [outcome]
        for candidate in lifecycle_dialects(policy, None if search is None else search.dialect):
            found = certify_in_flight(implementation, policy, self.profile, self.seed, self.pins, candidate)
            if found.conforms:
                return [outcome, replace(found, searched=True)]
        return [outcome]

    def dialects(self, policies: list[str]) -> dict[str, Dialect]:
        """Each policy's dialect; DIALECT-2, DIALECT-5: a ConfigError for a policy the dialect asked for does not have."""
        given = self.dialect is not None or bool(self.variations)
        return {policy: dialect_for(policy, self.dialect, self.variations) if given else CANONICAL for policy in policies}

    def check_dialects(self) -> None:
        """What is known of the dialects before the implementation starts: each policy named has
        the dialect asked for; without policies named, the dialect has one."""
        policies = list(self.policies) or [p for p in ALL_POLICIES if self.has_dialect(p)]
        if not policies:
            raise KvspecError("DIALECT-2: the dialect asked for has no policy")
        self.dialects(policies)

    def has_dialect(self, policy: str) -> bool:
        """Whether the dialect asked for has ``policy``: without policies named, those certified are
        those it has (as `kvspec sweep` sweeps them)."""
        if self.dialect is not None and policy not in KNOWN_DIALECTS[self.dialect]:
            return False
        return all(policy in VARIATIONS[v].policies for v in self.variations)


AT_START, DURING = "its start", "its certification"  # where a failure outside every example happened


class Refused(KvspecError):
    """The implementation does not offer the policies asked for (PROTO-6): known once it has started."""


def process_fault(failure: AdapterFailure, when: str) -> Finding:
    """A failure outside every example: at the implementation's start or stop (PROTO-13, PROTO-15)."""
    fault = Fault(failure, Location(f"at {when}"))
    return Finding(str(fault), "", fault)


def in_flight_specified(policy: str, dialect: Dialect) -> bool:
    """Whether the lifecycle's operations reach ``policy`` in ``dialect`` (reference/caches.py pool_for):
    the canonical policies' pools, not yet an engine dialect's."""
    try:
        pool_for(ReplayConfig(policy, dialect=dialect))  # type: ignore[arg-type]
    except ConfigError:
        return False
    return True


def lifecycle_dialects(policy: str, found: Dialect | None) -> list[Dialect]:
    """The engines' dialects of ``policy`` whose pool in flight the lifecycle's operations reach, ``found`` first."""
    known = list(dict.fromkeys(dialect_for(policy, name) for name, dialects in KNOWN_DIALECTS.items() if policy in dialects))
    return sorted((d for d in known if d and in_flight_specified(policy, d)), key=lambda d: d != found)


def close_quietly(implementation: Implementation) -> None:
    """Stop the implementation when kvspec gives up for a reason of its own."""
    try:
        implementation.close()
    except AdapterFailure:
        pass


def verdict_of(certification: Certification, certified: Certified, directory: Path | None) -> CertificationVerdict:
    """The certification's verdict, its report and counterexamples to go in ``directory``, if anywhere."""
    reproduction = Reproduction(certification.adapter, CANONICAL, certification.reply_timeout, certification.start_timeout)
    return build_verdict(reproduction, certified.identity, certified.level, certification.profile, certification.seed, certification.pins,
                         certified.outcomes, certified.faults, certified.searches, directory)
