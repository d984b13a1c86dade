"""`kvspec certify`: an implementation driven beside the reference by the certification machines,
with a report (conformance/certification/)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kvspec.conformance.cli.arguments import ADAPTER_FORMS, add_adapter, add_dialect, folder_path, subcommand, typed
from kvspec.conformance.cli.interruption import unless_interrupted
from kvspec.reference import ALL_POLICIES
from kvspec.reference.constants import CERTIFY_PROFILES as PROFILES

if TYPE_CHECKING:
    from pathlib import Path

    from kvspec.conformance.certification.campaign import Certification, Certified


def add(commands: Any) -> None:
    check = subcommand(
        commands, "certify", "the implementation conforms",
        "it does not conform: it answered differently or failed (the report is written either way)",
        help="certify an implementation against the spec through an adapter",
        description="Drive an implementation and the reference side by side with a stateful Hypothesis machine; exit 0 only if it conforms.",
    )
    add_adapter(check, True, ADAPTER_FORMS)
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
    from kvspec.conformance.certification.campaign import Certification, report_of
    from kvspec.conformance.certification.report import write_report
    from kvspec.conformance.core.workloads import Pins

    pins = Pins(args.small_ratio, args.max_freq, args.max_capacity, args.max_block_size, args.fitting_requests)
    pins.check()
    certification = Certification(args.adapter, tuple(args.policies or ()), args.profile, args.seed, pins, args.dialect,
                                  tuple(args.variation), args.find_dialect, args.reply_timeout, args.start_timeout)
    certified = certification()
    unless_interrupted()
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        write_report(report_of(certification, certified, args.report), args.report)
    print(certified_text(certification, certified, args.report), end="")
    return 0 if certified.conforms else 3


def certified_text(certification: Certification, certified: Certified, report: Path | None) -> str:
    """The verdict, each policy's, and each shrunk counterexample, ready to paste (saved in ``report``, if given)."""
    from kvspec.conformance.certification.dialect_search import described
    from kvspec.conformance.certification.report import (
        Reproduction,
        counterexample,
        counterexample_file,
        found_dialect,
        found_line,
        hints,
        parts_of,
    )

    held = "".join(f", {knob} {value}" for knob, value in vars(certification.pins).items() if value not in (None, False))
    identity = certified.identity
    who = certification.adapter if identity is None else f"{identity.name} {identity.version} ({identity.language})"
    level = "" if identity is None else f", level {certified.level}"
    verdict = "conforms" if certified.conforms else "DOES NOT CONFORM"
    lines = [f"{who}: {verdict} (profile {certification.profile}, seed {certification.seed}{level}{held})\n"]
    lines += [f"  {fault.message}\n" for fault in certified.faults]
    for outcome in certified.outcomes:
        verdict = "conforms" if outcome.conforms else "DOES NOT CONFORM"
        against = f" to the dialect {described(outcome.dialect)}" if outcome.dialect else ""
        lines.append(f"  {outcome.policy}: {verdict}{against}{parts_of(outcome)} ({outcome.examples_per_second:.1f} examples/s)\n")
        for number, finding in enumerate(outcome.findings, start=1):
            lines.append(f"    {finding.message}\n")
            saved = None if report is None or finding.divergence is None else counterexample_file(report, outcome.policy, number, finding.divergence)
            reached = Reproduction(certification.adapter, outcome.dialect, certification.reply_timeout, certification.start_timeout)
            lines.append(counterexample(reached, finding, saved))
        if outcome.policy in certified.searches:
            lines.append(f"    {found_line(found_dialect(certified.searches[outcome.policy]))}\n".replace("**", ""))
        lines += [f"    {hint}\n" for hint in hints(outcome) if not (certification.find_dialect and "--find-dialect" in hint)]
    return "".join(lines)
