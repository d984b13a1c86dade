"""`kvspec compare`: the benefit policy against LRU on the seeded traces, or as a prefix cache beside
S3FIFO, LRU and FIFO on a Mooncake trace (spec/benefit.md sections 17 to 20), and beside them in
the dialects asked for (spec/dialects.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kvspec.conformance.cli.arguments import (
    add_dialect,
    add_jobs,
    add_output,
    add_plot,
    add_trace,
    fitting_policies,
    open_trace,
    read_once_only,
    subcommand,
    typed,
)
from kvspec.conformance.cli.serve import add_service, check_alone, service_of
from kvspec.reference import KvspecError
from kvspec.reference.dialects import dialect_for
from kvspec.reference.validation import INT64_MAX

if TYPE_CHECKING:
    from kvspec.conformance.measurement import comparison

UNITS = {"": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def byte_count(text: str) -> int:
    """An integer number of bytes, with an optional binary unit: 4096, 64MiB, 16 GiB."""
    number = text.rstrip("KMGTiB ")
    unit = text[len(number):].strip()
    if unit not in UNITS:
        raise ValueError(text)
    return int(number) * UNITS[unit]


def add(commands: Any) -> None:
    versus = subcommand(
        commands, "compare", "the comparison is printed and written",
        help="the benefit policy against LRU on the seeded traces, or as a prefix cache on a Mooncake trace (spec/benefit.md)",
        description="Without TRACE, replay the seeded traces of spec/benefit.md section 17 through the benefit policy and the LRU "
        "byte-budget baseline at the same capacity; print saved cold-prefill cost and bytes written for each, and plot them.",
    )
    add_trace(versus, False, "without it, the seeded traces; with it, the benefit policy as its prefix cache beside S3FIFO, LRU and "
              "FIFO at the same byte capacities (spec/benefit.md section 20), under the offline optimum and a cache that never evicts")
    versus.add_argument("--capacity-bytes", dest="capacity_bytes", metavar="BYTES", action="append",
                        type=typed(byte_count, "BEN-CMP-1", "capacity must be a number of bytes"),
                        help="the byte capacity of both sides: bytes, or with KiB, MiB, GiB or TiB (repeatable with TRACE; default: 64 MiB, "
                        "and 256 MiB for the two mixed-size traces; with TRACE, 16, 64 and 256 GiB)")
    add_dialect(versus, "with TRACE: replay S3FIFO, LRU and FIFO also in", repeatable=True,
                served="; with --serve, served too, over the engine's own pool (vllm, sglang, sglang-unified, lmcache and their -lru and -fifo "
                       "forms: spec/dialects.md section 9; the others, and --variation, are refused)")
    add_plot(versus, "the comparison")
    add_output(versus, "also write the rows as JSON here")
    add_jobs(versus, "the replays of TRACE")
    add_service(versus)
    versus.set_defaults(handler=run_compare)


def run_compare(args: argparse.Namespace) -> None:
    from kvspec.conformance.core.output import model_json, write_text, written_whole
    from kvspec.conformance.measurement import comparison

    check_alone(args, [])  # every --dialect served too, where its lifecycle is specified (server_for: spec/dialects.md section 9)
    if args.serve and args.trace is None:
        raise KvspecError("--serve serves a Mooncake trace's requests at their timestamps: give a TRACE (the seeded traces have none)")
    capacities = args.capacity_bytes or []
    for capacity in capacities:
        if not 1 <= capacity <= INT64_MAX:  # the policy's byte budgets are 64-bit counts (BEN-CONF-1)
            raise KvspecError(f"--capacity-bytes {capacity}: BEN-CMP-1: a capacity is an integer in [1, 2**63 - 1] bytes")
    if args.trace is not None:
        dialects = dialect_policies(args)  # DIALECT-2 to DIALECT-5, before any replay
        read_once_only(args.trace, "compare")
        trace = open_trace(args.trace)
        from kvspec.conformance.cli.jobs import job_workers, trace_records

        with job_workers(args) as workers:
            result: comparison.Comparison | comparison.TraceComparison = comparison.run_trace(
                trace_records(trace, workers), trace.path, capacities or list(comparison.DEFAULT_TRACE_CAPACITIES), dialects=dialects,
                run=workers.run, service=service_of(args) if args.serve else None)
        print(comparison.trace_table(result))
        if result.served is not None:
            print(comparison.served_table(result))
    else:
        if args.dialect or args.variation:
            raise KvspecError("--dialect and --variation replay a Mooncake trace's block policies in a dialect; they need a TRACE")
        if len(capacities) > 1:
            raise KvspecError("BEN-CMP-1: the seeded traces take one --capacity-bytes (several need a TRACE)")
        if args.jobs != 1 or args.scheduler:
            raise KvspecError("--jobs and --scheduler run a Mooncake trace's replays side by side; they need a TRACE")
        result = comparison.run(capacities[0] if capacities else None)
        print(comparison.table(result))
    if args.output is not None:
        with written_whole(args.output, "--output") as temporary:
            write_text(temporary, model_json(result, indent=2) + "\n")
    if args.plot is not None:
        if isinstance(result, comparison.TraceComparison):
            comparison.plot_trace(result, args.plot)
        else:
            comparison.plot(result, args.plot)
        print(f"plot: {args.plot}")


def dialect_policies(args: argparse.Namespace) -> list[comparison.DialectPolicies]:
    """Each --dialect (or, without one, the canonical spec) with every --variation on top, as
    `kvspec sweep` takes them: the dialect of each policy it has and every variation applies to."""
    names = args.dialect or ([None] if args.variation else [])
    added = f"+ {', '.join(args.variation)}" if args.variation else ""
    return [(" ".join(filter(None, [name, added])),
             {policy: dialect_for(policy, name, tuple(args.variation)) for policy in fitting_policies(name, args.variation)})
            for name in dict.fromkeys(names)]
