"""`kvspec sweep`: hit rate against capacity for several policies (spec/replay.md), as JSON and a plot."""

import argparse
import sys
from typing import Any

from kvspec.conformance.cli.arguments import (
    add_capacity,
    add_config,
    add_output,
    add_plot,
    add_trace,
    base_config,
    open_trace,
    read_once_only,
    subcommand,
    summary,
    with_progress,
    write_json,
)
from kvspec.conformance.measurement.sweep import DEFAULT_CAPACITIES, plot, sweep
from kvspec.reference import POLICIES


def add(commands: Any) -> None:
    many = subcommand(
        commands, "sweep", "the results are written",
        help="hit rate against capacity, for several policies, as JSON and a plot",
        description="Replay a trace once per policy and capacity; print every result and the hit rate of a cache that never evicts.",
    )
    add_trace(many, False, "default: the bundled conversation trace")
    many.add_argument("--policy", dest="policies", action="append", choices=POLICIES, help="a policy to replay (repeatable; default: all three)")
    add_capacity(many, True, f"a cache capacity in blocks (repeatable; default: {', '.join(map(str, DEFAULT_CAPACITIES))})")
    add_config(many)
    add_output(many, "write the JSON here instead of stdout")
    add_plot(many, "hit rate against capacity")
    many.set_defaults(handler=run_sweep)


def run_sweep(args: argparse.Namespace) -> None:
    read_once_only(args.trace, "sweep")
    trace = open_trace(args.trace)
    result = sweep(
        lambda label: with_progress(trace, trace.records(), label),
        trace.path,
        base_config(args),
        args.policies or list(POLICIES),
        args.capacities or list(DEFAULT_CAPACITIES),
    )
    if args.plot is not None:
        plot(result, args.plot)
    write_json(result, args.output)
    if sys.stderr.isatty():
        for point in result.points:
            print(summary(point.result), file=sys.stderr)
        print(f"a cache that never evicts: {result.unbounded_hit_rate:.2%}", file=sys.stderr)
