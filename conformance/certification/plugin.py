"""`kvspec certify` inside an implementer's own test suite: a pytest plugin (entry point pytest11).

    pytest --kvspec-adapter=SPEC [--kvspec-policy=P ...] [--kvspec-profile=quick|thorough] [--kvspec-seed=N]

adds one test item a policy, ``kvspec-certify[P]``, that fails with the verdict (the clause) and
the shrunk steps when the implementation does not conform, or fails at its start or stop. The
adapter spec is resolved once a session; each item starts the implementation and stops it at its
end. Without --kvspec-adapter the plugin does nothing.

Every pytest run imports this module, before any conftest.py: it must not import kvspec.reference
(nor kvspec.adapters or kvspec.conformance.certification.certify, which import it) at module level, or the
reference would be imported before a conftest could set KVSPEC_CONTRACTS, and before typeguard's
import hook is installed. They are imported inside the hooks.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kvspec.adapters import Implementation
    from kvspec.conformance.certification.findings.divergence import Outcome


class Session:
    """The implementation of a pytest session: resolved on first use, started by each item, stopped at its end."""

    def __init__(self, spec: str, policies: list[str], profile: str, seed: int) -> None:
        self.spec = spec
        self.policies = policies
        self.profile = profile
        self.seed = seed
        self._implementation: Implementation | None = None

    def implementation(self) -> Implementation:
        if self._implementation is None:
            from kvspec.adapters import Implementation
            from kvspec.reference import KvspecError

            try:
                self._implementation = Implementation(self.spec)
            except KvspecError as error:
                raise CertifyError(f"kvspec: cannot load adapter {self.spec!r}: {error}") from None
        return self._implementation

    def close(self) -> None:
        if self._implementation is not None:
            from kvspec.adapters.interface import AdapterFailure

            try:
                self._implementation.close()
            except AdapterFailure:
                pass  # each item has stopped it and reported how; only an item's failure leaves it running


SESSION_KEY = pytest.StashKey[Session]()


class CertifyError(Exception):
    """A verdict or a load failure, reported as its text alone (no traceback into the plugin)."""


class NonConformance(CertifyError):
    def __init__(self, outcome: Outcome, header: str, adapter_spec: str) -> None:
        from kvspec.conformance.certification.verdict.rendering import nonconformance_text

        self.outcome = outcome
        super().__init__(nonconformance_text(outcome, header, adapter_spec))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kvspec", "kvspec certification (kvspec certify as test items)")
    group.addoption(
        "--kvspec-adapter",
        metavar="SPEC",
        help="certify this implementation: reference | python:MODULE:FACTORY | in-process:MODULE:FACTORY | 'cmd:PROGRAM ARGS' "
        "(spec/adapter-protocol.md, PROTO-18)",  # kvspec.conformance.cli.arguments.ADAPTER_FORMS: not imported here (above)
    )
    group.addoption(
        "--kvspec-policy",
        dest="kvspec_policies",
        action="append",
        metavar="POLICY",
        help="a policy to certify (repeatable; default: all the adapter offers)",
    )
    group.addoption(
        "--kvspec-profile", metavar="PROFILE", default="quick", help="a profile of kvspec certify --profile (default quick)"
    )
    group.addoption("--kvspec-seed", type=int, default=0, help="the Hypothesis seed; the same seed replays the same run (default 0)")


@pytest.hookimpl(tryfirst=True)  # before typeguard's pytest_configure
def pytest_configure(config: pytest.Config) -> None:
    # pytest imports this module before typeguard's pytest_configure runs, which puts the namespace
    # package kvspec in sys.modules, so `--typeguard-packages=kvspec` would warn that it cannot check
    # kvspec. It can: its import hook still instruments every kvspec module imported after it (the
    # reference, the adapters, the certification); only this module and conformance/__init__.py
    # escape. The filter lasts as long as pytest's configuration-time warnings context.
    warnings.filterwarnings("ignore", message=r"typeguard cannot check these packages because they are already imported: kvspec$")
    spec = config.getoption("kvspec_adapter")
    if not spec:
        return
    from kvspec.conformance.certification.certify import PROFILES
    from kvspec.reference import ALL_POLICIES

    policies = config.getoption("kvspec_policies") or []
    unknown = [policy for policy in policies if policy not in ALL_POLICIES]
    if unknown:
        raise pytest.UsageError(f"--kvspec-policy {', '.join(unknown)}: not one of {', '.join(ALL_POLICIES)}")
    if config.getoption("kvspec_profile") not in PROFILES:
        raise pytest.UsageError(f"--kvspec-profile {config.getoption('kvspec_profile')}: not one of {', '.join(PROFILES)}")
    config.stash[SESSION_KEY] = Session(
        spec, list(dict.fromkeys(policies)), config.getoption("kvspec_profile"), config.getoption("kvspec_seed")
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.close()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """The items join the session's own collection, so they are counted, listed, -k'd and -m'd like any other."""
    report = yield
    certification = collector.config.stash.get(SESSION_KEY, None)
    if certification is None or not isinstance(collector, pytest.Session) or not report.passed:
        return report
    policies = certification.policies
    if not policies:
        from kvspec.adapters.interface import AdapterFailure
        from kvspec.reference import ALL_POLICIES

        try:
            offered = certification.implementation().current().policies
        except CertifyError as error:
            raise pytest.UsageError(str(error)) from None
        except AdapterFailure:
            offered = ("start",)  # one item, which fails with how the implementation failed at its start
        policies = [policy for policy in (*ALL_POLICIES, "start") if policy in offered]
    report.result.extend(
        CertifyItem.from_parent(collector, name=f"kvspec-certify[{policy}]", nodeid=f"kvspec-certify[{policy}]", policy=policy)
        for policy in policies
    )
    return report


class CertifyItem(pytest.Item):
    """One policy's certification: certify_policy against the session's adapter."""

    def __init__(self, *, policy: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.policy = policy

    def runtest(self) -> None:
        from kvspec.adapters.interface import AdapterFailure
        from kvspec.conformance.certification.certify import certify_policy

        certification = self.config.stash[SESSION_KEY]
        implementation = certification.implementation()
        try:
            adapter = implementation.current()
        except AdapterFailure as failure:
            raise CertifyError(f"{self.policy}: DOES NOT CONFORM\n{failure.clause}: at its start: {failure}") from None
        if self.policy == "start":
            return  # it started this time: the items of its policies certify it
        outcome = certify_policy(implementation, self.policy, certification.profile, certification.seed)
        identity = adapter.identity
        header = (
            f"{identity.name} {identity.version} ({identity.language}), level {adapter.level}, "
            f"profile {certification.profile}, seed {certification.seed}: {outcome.examples_per_second:.1f} examples/s"
        )
        try:
            implementation.close()
        except AdapterFailure as failure:
            raise CertifyError(f"{self.policy}: DOES NOT CONFORM\n{header}\n{failure.clause}: at its stop: {failure}") from None
        if not outcome.conforms:
            raise NonConformance(outcome, header, certification.spec)
        self.add_report_section("call", "kvspec", header)  # shown by -rP

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, CertifyError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name
