"""`kvspec sweep`: hit rate against capacity for several policies (spec/replay.md), in a dialect or
not (spec/dialects.md), as JSON and a plot; with --ablate, the effect of each S3FIFO variation
point alone and of each known dialect whole."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kvspec.conformance.cli.arguments import (
    BUNDLED,
    add_capacity,
    add_config,
    add_dialect,
    add_jobs,
    add_output,
    add_plot,
    add_trace,
    base_config,
    dialect_of,
    fitting_policies,
    open_trace,
    read_once_only,
    subcommand,
    summary,
    write_json,
)
from kvspec.conformance.cli.serve import add_service, check_alone, served_summary, service_of
from kvspec.reference import POLICIES, KvspecError, TraceFile, bundled_trace_path
from kvspec.reference.constants import DEFAULT_CAPACITIES
from kvspec.reference.dialects import KNOWN_DIALECTS

if TYPE_CHECKING:
    from kvspec.conformance.measurement.sweep import Ablation


def add(commands: Any) -> None:
    many = subcommand(
        commands, "sweep", "the results are written",
        help="hit rate against capacity, for several policies, as JSON and a plot; or the ablation of S3FIFO's variation points",
        description="Replay a trace once per policy and capacity; print every result, the offline optimum at each capacity (Belady's "
                    "MIN over the block accesses) and the hit rate of a cache that never evicts. "
                    "With --ablate, replay S3FIFO once per variation point and known dialect instead, beside the canonical policy.",
    )
    add_trace(many, False, "default: the bundled conversation trace (with --ablate: both bundled traces)")
    many.add_argument("--policy", dest="policies", action="append", choices=POLICIES,
                      help="a policy to replay (repeatable; default: all three, or those --dialect and --variation apply to)")
    add_capacity(many, True, f"a cache capacity in blocks (repeatable; default: {', '.join(map(str, DEFAULT_CAPACITIES))})")
    add_config(many)
    add_dialect(many, "replay every policy in")
    many.add_argument("--beside", metavar="DIALECT", action="append", choices=sorted(KNOWN_DIALECTS), default=[],
                      help="also replay each policy of this known dialect, beside the others (repeatable; e.g. the engines: vllm, "
                           "sglang, lmcache)")
    many.add_argument("--ablate", action="store_true",
                      help="replay S3FIFO with each variation point of spec/dialects.md alone (with those it requires) and in each known "
                           "implementation's dialect, beside the canonical policy (no --policy, --dialect or --variation)")
    add_output(many, "write the JSON here instead of stdout")
    add_plot(many, "hit rate against capacity (with --ablate: each dialect's difference from the canonical hit rate)")
    add_jobs(many, "the replays")
    add_service(many)
    many.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> None:
    from kvspec.conformance.measurement.sweep import plot, sweep

    check_alone(args, [(args.ablate, "--ablate")])
    if args.ablate:
        run_ablation(args)
        return
    read_once_only(args.trace, "sweep")
    trace = open_trace(args.trace)
    policies = args.policies or default_policies(args)
    dialects = {policy: dialect_of(args, policy) for policy in policies}  # DIALECT-2 to DIALECT-5, before any replay
    from kvspec.conformance.cli.jobs import job_workers, trace_records

    with job_workers(args) as workers:
        result = sweep(
            trace_records(trace, workers),
            trace.path,
            base_config(args),
            policies,
            args.capacities or list(DEFAULT_CAPACITIES),
            dialects=dialects,
            dialect=args.dialect,
            variations=args.variation,
            beside=args.beside,
            service=service_of(args) if args.serve else None,
            run=workers.run,
        )
    if args.plot is not None:
        plot(result, args.plot)
    write_json(result, args.output)
    if sys.stderr.isatty():
        for point in result.points:
            print(summary(point.result), file=sys.stderr)
        for served in result.served or []:
            print(served_summary(served.result), file=sys.stderr)
        for optimum in result.offline_optimum:
            print(f"the offline optimum (Belady's MIN over blocks), {optimum.cache_capacity_blocks:,} blocks: {optimum.hit_rate:.2%}", file=sys.stderr)
        print(f"a cache that never evicts: {result.unbounded_hit_rate:.2%}", file=sys.stderr)


def default_policies(args: argparse.Namespace) -> list[str]:
    """Without --policy, every policy that --dialect's implementation has and every --variation
    applies to; all three if none is (dialect_of then says why for the first)."""
    return fitting_policies(args.dialect, args.variation)


def ablated_traces(given: str | None) -> list[TraceFile]:
    """TRACE, or both bundled traces: which variation points matter is a question of more than one workload."""
    if given is not None:
        return [open_trace(given)]
    return [TraceFile(bundled_trace_path(f"{name}_trace.jsonl.gz")) for name in BUNDLED]


def run_ablation(args: argparse.Namespace) -> None:
    from kvspec.conformance.measurement.sweep import ablate, plot_ablation

    options = (("--policy", args.policies), ("--dialect", args.dialect), ("--variation", args.variation), ("--beside", args.beside))
    given = [option for option, value in options if value]
    if given:
        raise KvspecError(f"--ablate replays every S3FIFO variation point and known dialect on its own; it takes no {given[0]}")
    read_once_only(args.trace, "sweep --ablate")
    traces = ablated_traces(args.trace)
    from kvspec.conformance.cli.jobs import job_workers, trace_records

    with job_workers(args) as workers:
        result = ablate([(trace.path, trace_records(trace, workers)) for trace in traces], base_config(args),
                        args.capacities or list(DEFAULT_CAPACITIES), workers.run)
    if args.plot is not None:
        plot_ablation(result, args.plot)
    write_json(result, args.output)
    if sys.stderr.isatty():
        print(ablation_summary(result), file=sys.stderr)


def ablation_summary(result: Ablation) -> str:
    """Per trace, each row's difference from the canonical hit rate at every capacity, in percentage points."""
    lines = []
    for trace in result.traces:
        capacities = ", ".join(f"{c:,}" for c in result.capacities)
        lines.append(f"{trace.trace}: hit rate minus the canonical S3FIFO's, in percentage points, at {capacities} blocks")
        for row in trace.rows[1:]:
            cells = ["refused" if p.difference is None else f"{100 * p.difference:+.2f}" for p in row.points]
            lines.append(f"  {row.name}{' (+ ' + ', '.join(row.required) + ')' if row.required else ''}: {'  '.join(cells)}")
    return "\n".join(lines)
