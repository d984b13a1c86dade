"""`kvspec replay`: a Mooncake trace through one policy of the reference (spec/replay.md), or through
an implementation in lockstep with it. The replay alone loads neither pydantic nor the adapters."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kvspec.conformance.cli.arguments import (
    ADAPTER_FORMS,
    DEFAULTS,
    add_adapter,
    add_capacity,
    add_config,
    add_dialect,
    add_output,
    add_trace,
    base_config,
    dialect_of,
    only_policy,
    open_trace,
    subcommand,
    summary,
    with_progress,
    write_json,
)
from kvspec.conformance.core.interruption import unless_interrupted
from kvspec.conformance.cli.serve import add_service, check_alone, run_served
from kvspec.conformance.cli.spool import Spool
from kvspec.reference import POLICIES, KvspecError, ReplayConfig, TraceFile, make_policy
from kvspec.reference.caches import replayed
from kvspec.reference.dialects import in_catalogue_order
from kvspec.reference.replay import Replayed

if TYPE_CHECKING:
    from kvspec.adapters import Implementation
    from kvspec.adapters.interface import Adapter, AdapterConfig, AdapterFailure
    from kvspec.conformance.certification.block.keep_going import DivergenceReport, DivergentRequest, Totals
    from kvspec.conformance.certification.block.lockstep import Lockstep
    from kvspec.conformance.certification.findings.divergence import Divergence
    from kvspec.reference.trace import Request

    Divergent = Callable[[DivergentRequest], None]  # a name: typeguard would take Callable[[a name imported here], None] for Callable[[], None]
    LockstepOf = Callable[[Adapter, AdapterConfig, Callable[[], int]], Lockstep]  # the same

SHOWN = 20  # the divergences --keep-going prints; the JSON has every one


def add(commands: Any) -> None:
    run = subcommand(
        commands, "replay", "the result is written",
        "with --adapter, the implementation disagreed with the reference or failed (one line on stderr: the trace line and the clause; "
        "with --keep-going, the report is written, and stderr gives the first divergences and both caches' totals)",
        help="replay a Mooncake trace against one policy (spec/replay.md)",
        description="Replay a Mooncake trace (JSON lines, plain or gzip) with longest-prefix hits and print the result as JSON.",
    )
    add_trace(run, True, "default: the bundled conversation trace")
    run.add_argument("--policy", choices=POLICIES, help=f"eviction policy (default: {DEFAULTS.policy}, or the only policy --dialect's "
                     "implementation has)")
    add_capacity(run, False, f"cache capacity in blocks (default: {DEFAULTS.capacity})")
    add_config(run)
    add_dialect(run, "replay")
    add_output(run, "write the JSON here instead of stdout")
    run.add_argument("--per-request", action="store_true", help="include hit_tokens and prompt_tokens for every request")
    add_adapter(run, False, f"replay through this implementation ({ADAPTER_FORMS}) in lockstep with the reference; exit 3 at the "
                "first request on which they disagree, or where it fails")
    run.add_argument("--keep-going", action="store_true",
                     help="with --adapter: go on past every divergence to the end of the trace, each cache replaying from its own state "
                     "(the implementation is never reset to the reference's), and write every divergence and both caches' own totals "
                     "as JSON (docs/certification.md); exit 3 if any request diverged or the implementation failed")
    add_service(run)
    run.set_defaults(handler=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    if args.keep_going and args.adapter is None:
        raise KvspecError("--keep-going goes on past an implementation's divergences from the reference: it needs --adapter")
    if args.keep_going and args.per_request:
        raise KvspecError("--keep-going writes the requests on which the two differ, not every request's line: leave out --per-request")
    check_alone(args, [(args.adapter, "--adapter: an implementation takes no requests in flight yet (issue 32)"),
                       (args.keep_going, "--keep-going, which goes with --adapter")])
    trace = open_trace(args.trace)
    policy = args.policy or only_policy(args.dialect)
    config = base_config(args, policy, args.capacity, dialect_of(args, policy))
    if args.serve:
        return run_served(args, trace, config)
    if args.keep_going:
        return run_keep_going(args, trace, config)
    records = with_progress(trace, trace.requests(), f"replaying {Path(trace.path).name}")
    with Spool() if args.per_request else nullcontext() as spool:
        if args.adapter is None:
            result = replayed(records, config, path=trace.path, sink=spool)
        else:
            from kvspec.adapters import Implementation

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


@dataclass
class Through:
    """A replay through an implementation in lockstep with the reference, as it ended: its result,
    or where it stopped (its start, the configuration, a request, its stop) and the fault there,
    its clauses (a divergence's, the diagnosis first, or the protocol clause a failure broke) and
    its message, which starts with them."""

    lockstep: Lockstep | None  # None when the implementation did not start
    result: Replayed | None = None
    at: Literal["start", "configuration", "request", "stop"] | None = None
    clauses: list[str] = field(default_factory=list)
    message: str = ""
    request: int = 0  # at a request: its 1-based number and its line in the trace
    line: int = 0


def fault(error: AdapterFailure | Divergence) -> dict[str, Any]:
    """A Through's clauses and message for a failure of the implementation or a divergence."""
    from kvspec.adapters.interface import AdapterFailure

    if isinstance(error, AdapterFailure):
        return {"clauses": [error.clause], "message": f"{error.clause}: {error}"}
    return {"clauses": list(error.clauses), "message": str(error)}


def replay_through(implementation: Implementation, records: Iterator[tuple[int, Request]], config: ReplayConfig, path: str,
                   lockstep_of: LockstepOf, sink: Spool | None = None) -> Through:
    """The replay through an implementation, each request to it and the reference in the Lockstep
    (or KeepGoing) that ``lockstep_of`` makes of the started adapter, its configuration and the
    line of the request being replayed; to the end and the implementation's stop, or to the first
    fault: a failure of the implementation, or a divergence the lockstep raises."""
    from kvspec.adapters.interface import AdapterFailure
    from kvspec.conformance.certification.findings.divergence import Divergence

    make_policy(config)  # a configuration the spec refuses is an error, whatever the implementation says
    read = [0, 0]  # requests read, and the line of the last: the lockstep stops on the request it was sent last

    def numbered() -> Iterator[tuple[int, Request]]:
        for line_number, record in records:
            read[:] = [read[0] + 1, line_number]
            yield line_number, record

    try:
        adapter = implementation.start()
    except AdapterFailure as failure:
        return Through(None, at="start", **fault(failure))
    lockstep = lockstep_of(adapter, given_config(config), lambda: read[1])
    try:
        lockstep.configure()
        result = replayed(numbered(), config, path=path, server=lockstep, sink=sink)
    except (Divergence, AdapterFailure) as error:
        stop_quietly(implementation)
        return Through(lockstep, at="request" if read[0] else "configuration", **fault(error), request=read[0], line=read[1])
    try:
        implementation.close()
    except AdapterFailure as failure:
        return Through(lockstep, result, at="stop", **fault(failure))
    return Through(lockstep, result)


def replay_in_lockstep(implementation: Implementation, records: Iterator[tuple[int, Request]], config: ReplayConfig, path: str,
                       sink: Spool | None) -> Replayed | str:
    """The replay through an implementation, checked against the reference after every request;
    or, at the first disagreement or failure (at its start and stop too), what it was and where."""
    from kvspec.conformance.certification.block.lockstep import Lockstep

    through = replay_through(implementation, records, config, path, lambda adapter, given, line: Lockstep(adapter, given, config.dialect), sink)
    if through.at is None:
        assert through.result is not None
        return through.result
    name = through.lockstep.adapter.identity.name if through.lockstep is not None else implementation.spec
    where = {"start": "its start", "stop": "its stop", "configuration": "the configuration"}.get(
        through.at, f"line {through.line} of {path} (request {through.request})")
    return f"kvspec: {name} does not conform, at {where}: {through.message}"


def given_config(config: ReplayConfig) -> AdapterConfig:
    """The configuration an implementation is given (PROTO-7): the replay's, but for its dialect, which is the reference's alone."""
    from kvspec.adapters.interface import AdapterConfig

    return AdapterConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq)


def stop_quietly(implementation: Implementation) -> None:
    """Once the verdict is made: the implementation's process, if it has one, ends before kvspec
    does, whatever it answers to stop."""
    from kvspec.adapters.interface import AdapterFailure

    try:
        implementation.close()
    except AdapterFailure:
        pass


def run_keep_going(args: argparse.Namespace, trace: TraceFile, config: ReplayConfig) -> int:
    """--keep-going: every divergence to the JSON, through a spool (their number grows with the
    trace; memory holds the first SHOWN, to print), the report's text to stderr."""
    from kvspec.adapters import Implementation

    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    shown: list[DivergentRequest] = []
    with Spool("divergences") as spool:

        def divergent(request: DivergentRequest) -> None:
            spool.append(request)
            if len(shown) < SHOWN:
                shown.append(request)

        records = with_progress(trace, trace.requests(), f"replaying {Path(trace.path).name}",
                                lambda: f", {spool.count:,} diverged" if spool.count else "")
        report = replay_keeping_going(implementation, records, config, trace.path, divergent)
        unless_interrupted()
        write_json(report, args.output, spool)
    if not report.conforms or sys.stderr.isatty():
        print(keep_going_text(report, shown), file=sys.stderr)
    return 0 if report.conforms else 3


def replay_keeping_going(implementation: Implementation, records: Iterator[tuple[int, Request]], config: ReplayConfig, path: str,
                         divergent: Divergent) -> DivergenceReport:
    """The replay through an implementation in lockstep with the reference up to their first
    divergence, and each from its own state past it, to the end of the trace or to where the
    implementation fails (at its start and stop too)."""
    from kvspec.conformance.certification.block.keep_going import DivergenceReport, KeepGoing, Running, Stopped

    through = replay_through(implementation, records, config, path,
                             lambda adapter, given, line: KeepGoing(adapter, given, config.dialect, line, divergent))
    stopped = None
    if through.at is not None:  # past the configuration, a KeepGoing raises no divergence: the fault is a failure, or a refusal
        where = {"request": through.request, "line": through.line} if through.at == "request" else {}
        stopped = Stopped(at=through.at, **where, clauses=through.clauses, message=through.message)
    report = DivergenceReport(adapter=implementation.spec, name=implementation.spec, trace=path, config=asdict(given_config(config)),
                              dialect=in_catalogue_order(config.dialect), conforms=False, requests=0, diverged_requests=0,
                              reference=Running().totals(), implementation=Running().totals(), divergences=[], stopped=stopped)
    lockstep = through.lockstep
    if lockstep is None:
        return report
    assert isinstance(lockstep, KeepGoing)
    return report.model_copy(update={
        "name": lockstep.adapter.identity.name, "conforms": stopped is None and lockstep.first is None, "requests": lockstep.requests,
        "diverged_requests": lockstep.diverged_requests, "reference": lockstep.spec.totals(), "implementation": lockstep.own.totals(),
        "first_divergence": lockstep.first})


def keep_going_text(report: DivergenceReport, shown: list[DivergentRequest]) -> str:
    """The report for a reader: the verdict, the first divergences, where it stopped, both caches' totals."""
    name, path = report.name, report.trace
    first = report.first_divergence
    lines = [f"{name} agrees with the reference on all {report.requests:,} requests"] if report.conforms else []
    if first is not None:
        verdict = f"{report.diverged_requests:,} of {report.requests:,} requests diverged"
        lines += [f"kvspec: {name} does not conform: {verdict}, the first at line {first.line} of {path} (request {first.request}): {first.message}",
                  "  past the first divergence each cache replayed from its own state (the implementation is never reset to the reference's);",
                  "  the reference's against the implementation's, on each request that diverged:"]
        lines += [f"  line {d.line} (request {d.request}): {difference(d)}" for d in shown]
        if report.diverged_requests > len(shown):
            lines.append(f"  and {report.diverged_requests - len(shown):,} more (the JSON has every one)")
    if report.stopped is not None:
        stop = report.stopped
        where = {"request": f"line {stop.line} of {path} (request {stop.request})", "configuration": "the configuration"}.get(stop.at, f"its {stop.at}")
        before = f" (the totals are those of the {report.requests:,} requests before)" if stop.at == "request" else ""
        lines.append(f"kvspec: {name} does not conform, at {where}: {stop.message}{before}")
    lines += [f"  reference:      {totals_text(report.requests, report.reference)}",
              f"  implementation: {totals_text(report.requests, report.implementation)}"]
    return "\n".join(lines)


def difference(request: DivergentRequest) -> str:
    """What differs on a divergent request: its hit tokens, the resident count after it, or (the first divergence) neither."""
    parts = [f"{what} {pair.reference:,} against {pair.implementation:,}" for what, pair in
             (("hit tokens", request.hit_tokens), ("resident count", request.resident_count)) if pair.reference != pair.implementation]
    return "; ".join(parts) or "the same hit tokens and resident count (the first divergence, above)"


def totals_text(requests: int, totals: Totals) -> str:
    return (f"{requests:,} requests, {totals.total_hit_tokens:,} of {totals.total_prompt_tokens:,} prompt tokens hit ({totals.hit_rate:.2%}); "
            f"{totals.final_cache_blocks:,} blocks resident at the end")
