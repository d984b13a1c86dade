"""`kvspec replay`: a Mooncake trace through one policy of the reference (spec/replay.md), or through
an implementation in lockstep with it."""

import argparse
import sys
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.conformance.certification.lockstep import Divergence, Lockstep
from kvspec.conformance.cli.arguments import (
    DEFAULTS,
    add_adapter,
    add_capacity,
    add_config,
    add_dialect,
    add_output,
    add_trace,
    base_config,
    dialect_of,
    open_trace,
    subcommand,
    summary,
    with_progress,
    write_json,
)
from kvspec.conformance.cli.interruption import unless_interrupted
from kvspec.conformance.cli.spool import Spool
from kvspec.reference import POLICIES, ReplayConfig, ReplayResult, make_policy, replay
from kvspec.reference.trace import TraceRecord


def add(commands: Any) -> None:
    run = subcommand(
        commands, "replay", "the result is written",
        "with --adapter, the implementation disagreed with the reference or failed (one line on stderr: the trace line and the clause)",
        help="replay a Mooncake trace against one policy (spec/replay.md)",
        description="Replay a Mooncake trace (JSON lines, plain or gzip) with longest-prefix hits and print the result as JSON.",
    )
    add_trace(run, True, "default: the bundled conversation trace")
    run.add_argument("--policy", choices=POLICIES, default=DEFAULTS.policy, help=f"eviction policy (default: {DEFAULTS.policy})")
    add_capacity(run, False, f"cache capacity in blocks (default: {DEFAULTS.capacity})")
    add_config(run)
    add_dialect(run, "replay")
    add_output(run, "write the JSON here instead of stdout")
    run.add_argument("--per-request", action="store_true", help="include hit_tokens and prompt_tokens for every request")
    add_adapter(run, False, "replay through this implementation (reference | python:module:factory | cmd:'program args') in lockstep "
                "with the reference; exit 3 at the first request on which they disagree, or where it fails")
    run.set_defaults(handler=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    trace = open_trace(args.trace)
    records = with_progress(trace, trace.records(), f"replaying {Path(trace.path).name}")
    config = base_config(args, args.policy, args.capacity, dialect_of(args, args.policy))
    with Spool() if args.per_request else nullcontext() as spool:
        if args.adapter is None:
            result = replay(records, config, path=trace.path, sink=spool)
        else:
            implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
            outcome = replay_in_lockstep(implementation, records, config, trace.path, spool)
            unless_interrupted()
            if isinstance(outcome, str):
                print(outcome, file=sys.stderr)
                return 3
            result = outcome
        write_json(result, args.output, spool)
    if sys.stderr.isatty():
        print(summary(result), file=sys.stderr)
    return 0


def replay_in_lockstep(implementation: Implementation, records: Iterator[tuple[int, TraceRecord]], config: ReplayConfig, path: str,
                       sink: Spool | None) -> ReplayResult | str:
    """The replay through an implementation, checked against the reference after every request;
    or, at the first disagreement or failure (at its start and stop too), what it was and where."""
    make_policy(config)  # a configuration the spec refuses is an error, whatever the implementation says
    read = [0, 0]  # requests read, and the line of the last: the lockstep stops on the request it was sent last

    def numbered() -> Iterator[tuple[int, TraceRecord]]:
        for line_number, record in records:
            read[:] = [read[0] + 1, line_number]
            yield line_number, record

    def at(number: int) -> str:
        return f"line {read[1]} of {path} (request {number})" if number else "the configuration"

    try:
        adapter = implementation.start()
    except AdapterFailure as failure:
        return f"kvspec: {implementation.spec} does not conform, at its start: {failure.clause}: {failure}"
    name = adapter.identity.name
    try:
        lockstep = Lockstep(adapter, AdapterConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq),
                            config.dialect)
        lockstep.configure()
        result = replay(numbered(), config, path=path, server=lockstep, sink=sink)
    except Divergence as divergence:
        return f"kvspec: {name} does not conform, at {at(divergence.request)}: {divergence}"
    except AdapterFailure as failure:
        return f"kvspec: {name} does not conform, at {at(read[0])}: {failure.clause}: {failure}"
    try:
        implementation.close()
    except AdapterFailure as failure:
        return f"kvspec: {name} does not conform, at its stop: {failure.clause}: {failure}"
    return result
