"""`kvspec certify`: an implementation driven beside the reference by the certification machines,
with a report (conformance/certification/)."""

from __future__ import annotations

import argparse
from typing import Any

from kvspec.conformance.cli.arguments import ADAPTER_FORMS, add_adapter, add_dialect, folder_path, subcommand, typed
from kvspec.conformance.core.interruption import unless_interrupted
from kvspec.reference import ALL_POLICIES
from kvspec.reference.constants import CERTIFY_PROFILES as PROFILES


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
    from kvspec.conformance.certification.job import Certification, verdict_of
    from kvspec.conformance.certification.verdict.rendering import console_text, write_report
    from kvspec.conformance.core.workloads import Pins

    pins = Pins(args.small_ratio, args.max_freq, args.max_capacity, args.max_block_size, args.fitting_requests)
    pins.check()
    certification = Certification(args.adapter, tuple(args.policies or ()), args.profile, args.seed, pins, args.dialect,
                                  tuple(args.variation), args.find_dialect, args.reply_timeout, args.start_timeout)
    certified = certification()
    unless_interrupted()
    verdict = verdict_of(certification, certified, args.report)
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        write_report(verdict, args.report)
    print(console_text(verdict), end="")
    return 0 if verdict.report.conforms else 3
