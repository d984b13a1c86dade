"""`kvspec badge`: a certification report's verdict as a shields.io endpoint badge (PROTO-32;
conformance/certification/verdict/badge.py)."""

import argparse
import sys
from pathlib import Path
from typing import Any

from kvspec.conformance.cli.arguments import add_output, subcommand


def add(commands: Any) -> None:
    shown = subcommand(commands, "badge", "the badge is written",
                       help="write a certification report's verdict as a shields.io endpoint badge, to commit beside the implementation",
                       description="Write the shields.io endpoint JSON (https://shields.io/badges/endpoint-badge) of a report of "
                                   "`kvspec certify --report`: label kvspec, each policy's verdict as the message (\"s3fifo, lru "
                                   "conform\", \"lru: dialect vllm\", \"s3fifo: does not conform\"), brightgreen, yellow (a dialect) or "
                                   "red. Committed to a repository, https://img.shields.io/endpoint?url=URL draws it from the file's raw "
                                   "URL (spec/adapter-protocol.md, PROTO-32).")
    shown.add_argument("report", metavar="REPORT", type=Path, help="a folder written by kvspec certify --report, or its report.json")
    add_output(shown, "write the badge's JSON to this file, not to standard output")
    shown.set_defaults(handler=run_badge)


def run_badge(args: argparse.Namespace) -> None:
    from kvspec.conformance.certification.verdict.badge import badge, read_report
    from kvspec.conformance.core.output import model_json, write_text, written_whole

    text = model_json(badge(read_report(args.report)), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return
    with written_whole(args.output, "--output") as temporary:
        write_text(temporary, text)
