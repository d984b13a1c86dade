"""`kvspec certify`: an implementation driven beside the reference by the certification machines,
with a report (conformance/certification/)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kvspec.conformance.cli.arguments import add_adapter, add_dialect, dialect_of, folder_path, subcommand, typed
from kvspec.conformance.cli.interruption import unless_interrupted
from kvspec.reference import ALL_POLICIES, KvspecError
from kvspec.reference.constants import CERTIFY_PROFILES as PROFILES
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS

if TYPE_CHECKING:
    from kvspec.adapters import Implementation, Started
    from kvspec.adapters.interface import AdapterFailure
    from kvspec.conformance.certification.certify import Finding, Outcome
    from kvspec.conformance.certification.dialect_search import Search


def add(commands: Any) -> None:
    check = subcommand(
        commands, "certify", "the implementation conforms",
        "it does not conform: it answered differently or failed (the report is written either way)",
        help="certify an implementation against the spec through an adapter",
        description="Drive an implementation and the reference side by side with a stateful Hypothesis machine; exit 0 only if it conforms.",
    )
    add_adapter(check, True, "reference | python:module:factory | cmd:'program args' (spec/adapter-protocol.md)")
    check.add_argument("--policy", dest="policies", action="append", choices=ALL_POLICIES,
                       help="a policy to certify (repeatable; default: all the adapter offers)")
    check.add_argument("--profile", choices=sorted(PROFILES), default="quick", help="quick (CI) or thorough (certification); default quick")
    check.add_argument("--seed", metavar="INTEGER", type=int, default=0, help="the Hypothesis seed; the same seed replays the same run (default 0)")
    check.add_argument("--report", metavar="FOLDER", type=folder_path, help="write report.json, report.md and each shrunk counterexample to this folder")
    check.add_argument("--small-ratio", metavar="RATIO", type=typed(float, "S3-CONF-1", "small_ratio must be a number"),
                       help="S3FIFO: certify only configurations with this small_ratio (for an implementation without the knob)")
    check.add_argument("--max-freq", metavar="COUNT", type=typed(int, "S3-CONF-6", "max_freq must be an integer"),
                       help="S3FIFO: certify only configurations with this max_freq (for an implementation without the knob)")
    check.add_argument("--max-capacity", metavar="COUNT", type=typed(int, "REPLAY-CONF-1", "the largest capacity must be an integer"),
                       help="certify only capacities up to this, for an engine that builds its whole pool at once")
    check.add_argument("--max-block-size", metavar="COUNT", type=typed(int, "REPLAY-CONF-2", "the largest block_size must be an integer"),
                       help="certify only block sizes up to this")
    check.add_argument("--fitting-requests", action="store_true",
                       help="send only requests of at most capacity blocks, for an engine that cannot run a longer one")
    add_dialect(check, "certify against")
    check.add_argument("--find-dialect", action="store_true",
                       help="where a policy does not conform, search spec/dialects.md's variation points for a minimal set under which it "
                       "does, and report it (DIALECT-8)")
    check.set_defaults(handler=run_certify, folders={"report": "--report"})


def run_certify(args: argparse.Namespace) -> int:
    from kvspec.adapters import Implementation
    from kvspec.adapters.interface import AdapterFailure
    from kvspec.conformance.certification.certify import certify_policy
    from kvspec.conformance.certification.dialect_search import described, find_dialect
    from kvspec.conformance.certification.report import (
        build_report,
        counterexample,
        counterexample_file,
        found_dialect,
        found_line,
        write_report,
    )
    from kvspec.conformance.core.workloads import Pins

    pins = Pins(args.small_ratio, args.max_freq, args.max_capacity, args.max_block_size, args.fitting_requests)
    pins.check()
    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    faults: list[Finding] = []
    outcomes: list[Outcome] = []
    searches: dict[str, Search] = {}
    try:
        adapter: Started | None = implementation.start()
    except AdapterFailure as failure:
        adapter = None
        faults.append(process_fault(failure, "its start"))
    if adapter is not None:
        offered = adapter.policies
        unoffered = [policy for policy in args.policies or [] if policy not in offered]
        if unoffered:  # PROTO-6
            close_quietly(implementation)
            raise KvspecError(f"{args.adapter} implements {', '.join(offered)}, not {', '.join(unoffered)}")
        given = args.dialect is not None or bool(args.variation)
        policies = args.policies or [p for p in ALL_POLICIES if p in offered and (not given or has_dialect(args, p))]
        try:
            if not policies:
                raise KvspecError(f"{args.adapter} implements {', '.join(offered)}, and the dialect asked for has none of them")
            dialects = {policy: dialect_of(args, policy) if given else CANONICAL for policy in policies}
        except KvspecError:  # DIALECT-2, DIALECT-5: a policy asked for that the dialect does not have
            close_quietly(implementation)
            raise
        for policy in policies:
            outcome = certify_policy(implementation, policy, args.profile, args.seed, pins, dialects[policy])
            outcomes.append(outcome)
            if args.find_dialect and not outcome.conforms and policy != "benefit":
                searches[policy] = find_dialect(implementation, policy, outcome,
                                                lambda d, p=policy: certify_policy(implementation, p, args.profile, args.seed, pins, d))
        try:
            implementation.close()
        except AdapterFailure as failure:
            faults.append(process_fault(failure, "its stop"))
    unless_interrupted()
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        write_report(build_report(args.adapter, adapter, args.profile, args.seed, pins, outcomes, faults, args.report, searches), args.report)
    conforms = not faults and all(outcome.conforms for outcome in outcomes)
    held = "".join(f", {knob} {value}" for knob, value in vars(pins).items() if value not in (None, False))
    who = args.adapter if adapter is None else f"{adapter.identity.name} {adapter.identity.version} ({adapter.identity.language})"
    level = "" if adapter is None else f", level {adapter.level}"
    print(f"{who}: {'conforms' if conforms else 'DOES NOT CONFORM'} (profile {args.profile}, seed {args.seed}{level}{held})")
    for fault in faults:
        print(f"  {fault.message}")
    for outcome in outcomes:
        verdict = "conforms" if outcome.conforms else "DOES NOT CONFORM"
        against = f" to the dialect {described(outcome.dialect)}" if outcome.dialect else ""
        print(f"  {outcome.policy}: {verdict}{against} ({outcome.examples_per_second:.1f} examples/s)")
        for number, finding in enumerate(outcome.findings, start=1):
            print(f"    {finding.message}")
            saved = None if args.report is None or finding.divergence is None else counterexample_file(args.report, outcome.policy, number, finding.divergence)
            print(counterexample(args.adapter, finding, saved), end="")
        if outcome.policy in searches:
            print(f"    {found_line(found_dialect(searches[outcome.policy]))}".replace("**", ""))
        elif not outcome.conforms and outcome.policy != "benefit" and not args.find_dialect:
            print("    (--find-dialect searches spec/dialects.md for the variation points that would explain it)")
    return 0 if conforms else 3


def has_dialect(args: argparse.Namespace, policy: str) -> bool:
    """Whether the dialect --dialect and --variation name has ``policy``: without --policy, the
    policies certified are those it has (as `kvspec sweep` sweeps them)."""
    if args.dialect is not None and policy not in KNOWN_DIALECTS[args.dialect]:
        return False
    return all(policy in VARIATIONS[v].policies for v in args.variation)


def process_fault(failure: AdapterFailure, when: str) -> Finding:
    """A failure outside every example: at the implementation's start or stop (PROTO-13, PROTO-15)."""
    from kvspec.conformance.certification.certify import Finding
    from kvspec.conformance.certification.faults import Fault, Location

    fault = Fault(failure, Location(f"at {when}"))
    return Finding(str(fault), "", fault)


def close_quietly(implementation: Implementation) -> None:
    """Stop the implementation when kvspec gives up for a reason of its own."""
    from kvspec.adapters.interface import AdapterFailure

    try:
        implementation.close()
    except AdapterFailure:
        pass
