"""`kvspec campaign`: many certifications, side by side (several implementations, each against
several dialects at several seeds), with one report (conformance/certification/campaign.py)."""

import argparse
from pathlib import Path
from typing import Any

from kvspec.conformance.cli.arguments import add_jobs, folder_path, subcommand


def add(commands: Any) -> None:
    many = subcommand(
        commands, "campaign", "every certification conforms",
        "one or more does not conform (every report is written either way)",
        help="certify several implementations, against several dialects at several seeds, side by side, with one report",
        description="Run each certification a campaign file names, as `kvspec certify` would, and write each one's report and the "
                    "campaign's (campaign.json and campaign.md) to --report. The campaign file (TOML, or JSON if it ends in .json) "
                    "names each implementation as [[implementations]] with its name and adapter, and may set its policies, dialects, "
                    "seeds, profile and find_dialect (or set them for all at the top), and certify's other options by their names "
                    "(small_ratio, max_freq, max_capacity, max_block_size, fitting_requests, variations, reply_timeout, start_timeout); "
                    "docs/scaling.md has an example.",
    )
    many.add_argument("campaign", metavar="FILE", type=Path, help="the campaign file")
    many.add_argument("--report", metavar="FOLDER", type=folder_path, required=True,
                      help="write campaign.json, campaign.md and each certification's report to FOLDER/NAME/DIALECT/seed-SEED/")
    add_jobs(many, "the certifications")
    many.set_defaults(handler=run_campaign, folders={"report": "--report"})


def run_campaign(args: argparse.Namespace) -> int:
    from kvspec.conformance.certification.campaign import read_campaign, staged, without_policies, write_campaign
    from kvspec.conformance.core.interruption import unless_interrupted
    from kvspec.conformance.cli.jobs import job_workers

    planned = read_campaign(args.campaign)
    with staged(args.report, planned) as staging:  # every report's folder, checked and made before the first certification
        with job_workers(args, tell_in_process=True) as workers:
            found = workers.run([each.certification for each in planned])
        unless_interrupted()
        campaign = write_campaign(args.campaign, planned, found, args.report, staging)
    for entry in campaign.certifications:
        report = entry.report
        policies = ", ".join(f"{p.policy}{' in flight' if p.in_flight else ''} {'conforms' if p.conforms else 'DOES NOT CONFORM'}" for p in report.policies)
        print(f"{entry.implementation}, {entry.dialect}, seed {entry.seed}: {'conforms' if report.conforms else 'DOES NOT CONFORM'}"
              f" ({policies or without_policies(report)})")
    print(f"the report: {args.report / 'campaign.md'}")
    return 0 if campaign.conforms else 3
