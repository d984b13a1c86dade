"""`kvspec replay --serve`: a Mooncake trace served as a server runs it (spec/lifecycle.md section 6),
its requests arriving at their timestamps, through one pool of the reference's canonical policy."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from contextlib import nullcontext
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

from kvspec.conformance.cli.arguments import typed, with_progress, write_json
from kvspec.conformance.cli.spool import Spool
from kvspec.reference import KvspecError, ReplayConfig, TraceFile
from kvspec.reference.serve import served
from kvspec.reference.service import SERVICE_FIELDS, Served, ServedRequest, ServiceModel

if TYPE_CHECKING:
    from kvspec.reference.models import ServedResult

DEFAULTS = {f.name: f.default for f in fields(ServiceModel) if f.name in SERVICE_FIELDS}  # without making one: its model loads pydantic
SERVICE_HELP = {
    "max_running": "the most requests running at once (default: {}, vLLM 0.33.0's max_num_seqs on an H100)",
    "step_tokens": "the tokens a step computes, decoding and prefill together (default: {}, vLLM 0.33.0's max_num_batched_tokens on an H100)",
    "gpus": "the GPUs the server runs on, their rates summed (default: {}, a node)",
    "flops_per_second": "each GPU's FLOP rate (default: {:.3g}, BEN-MODEL-1's prefill rate)",
    "memory_bytes_per_second": "each GPU's memory bandwidth in bytes a second (default: {:.3g}, an H100 SXM's HBM3)",
}


def add_service(command: argparse.ArgumentParser) -> None:
    """--serve and the service model's options (LIFE-SERVE-1)."""
    command.add_argument("--serve", action="store_true",
                         help="serve the trace as a server runs it: requests arrive at their timestamps and share one pool, "
                              "with the service model below (spec/lifecycle.md section 6); reports waiting, preemptions, "
                              "recomputed tokens and peak referenced blocks too")
    for name in SERVICE_FIELDS:
        default = DEFAULTS[name]
        command.add_argument(f"--{name.replace('_', '-')}", metavar="N", dest=name,
                             type=typed(whole_number, "LIFE-SERVE-1", f"{name} must be a positive integer of at most 2**63 - 1"),
                             help="with --serve: " + SERVICE_HELP[name].format(default))


def whole_number(text: str) -> int:
    """An integer, written as one or in the exponent form of the defaults (4e14, 3.35e12), read exactly."""
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise ValueError(text) from None
    if not value.is_finite() or value.adjusted() > 18 or value != value.to_integral_value():
        raise ValueError(text)  # past 10**19, beyond 2**63 - 1, without building the integer (1e999999999 would take minutes)
    return int(value)


def check_alone(args: argparse.Namespace, refused: list[tuple[object, str]]) -> None:
    """What --serve does not take (each given value with why), and the service options given without it."""
    if args.serve:
        for given, why in refused:
            if given:
                raise KvspecError(f"--serve runs the reference alone, without {why}")
        return
    given = [f"--{name.replace('_', '-')}" for name in SERVICE_FIELDS if getattr(args, name) is not None]
    if given:
        raise KvspecError(f"{given[0]} sets the service model of a served replay: give --serve too")


def service_of(args: argparse.Namespace) -> ServiceModel:
    """LIFE-SERVE-1: the service model the options give."""
    return ServiceModel(**{name: DEFAULTS[name] if getattr(args, name) is None else getattr(args, name) for name in SERVICE_FIELDS})


def run_served(args: argparse.Namespace, trace: TraceFile, config: ReplayConfig) -> int:
    """The served replay's result, as JSON, to stdout or whole to --output; its lines through a spool."""
    service = service_of(args)
    from kvspec.reference.caches import make_policy, server_for

    make_policy(config)  # REPLAY-CONF-1 to REPLAY-CONF-3, and the policy's own parameters, before any request
    server = server_for(config)  # LIFE-VLLM-1: a dialect whose lifecycle is specified
    records = with_progress(trace, trace.requests(), f"serving {Path(trace.path).name}")
    with Spool() if args.per_request else nullcontext() as spool:
        add = (lambda line: spool.write(request_json(line))) if spool is not None else None
        result = served(records, config, service, path=trace.path, add=add, server=server)
        write_json(result, args.output, spool)
    if sys.stderr.isatty():
        print(served_summary(result), file=sys.stderr)
    return 0


def request_json(line: ServedRequest) -> str:
    return textwrap.indent(json.dumps(asdict(line), indent=2), "    ")


def served_summary(result: Served | ServedResult) -> str:
    rate = result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0
    return (f"{result.policy}, {result.cache_capacity_blocks:,} blocks of {result.block_size} tokens, served: {result.requests:,} requests, "
            f"{result.total_hit_tokens:,} of {result.total_prompt_tokens:,} prompt tokens hit ({rate:.2%}), "
            f"{result.total_recomputed_tokens:,} recomputed; {result.preemptions:,} preemptions; at most "
            f"{result.peak_referenced_blocks:,} blocks referenced and {result.peak_running:,} requests running; "
            f"waited {result.mean_waiting_ms:,.1f} ms on average, {result.max_waiting_ms:,.1f} at most; the last finished at "
            f"{result.served_ms / 1000:,.1f} s")
