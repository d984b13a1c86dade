"""The ``kvspec`` command line."""

import argparse
import importlib.util
import json
import math
import os
import shlex
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from importlib.metadata import version
from pathlib import Path
from typing import Any, NoReturn

from kvspec.adapters import REPLY_TIMEOUT, START_TIMEOUT, Implementation, Started
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.adapters.process import kill_all
from kvspec.reference import (
    ALL_POLICIES,
    POLICIES,
    SPEC_VERSION,
    KvspecError,
    ReplayConfig,
    ReplayResult,
    TraceFile,
    bundled_trace_path,
    make_policy,
    replay,
)
from kvspec.reference.trace import STDIN, TraceRecord
from kvspec.reference.validation import INT64_MAX

from .certify import PROFILES, Finding, Outcome, certify_policy
from .faults import Fault, Location
from .lockstep import Divergence, Lockstep
from .machine import Pins
from .output import check_folder, check_output, written_whole
from .progress import Progress
from .report import build_report, write_report
from .spool import Spool, write_result
from .sweep import DEFAULT_CAPACITIES, Sweep, plot, sweep



EXIT_STATUS = ("exit status: 0 {done}; 1 bad input or a failure to run, said in one line on stderr (a command line argparse "
               "refuses included); {finding}130 or 143 after SIGINT or SIGTERM, with nothing written.")


class Parser(argparse.ArgumentParser):
    """One rule for every bad input: one line on stderr, exit 1 (a usage error included)."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")


def subcommand(parent: Any, name: str, done: str, finding: str = "", **texts: str) -> Parser:
    """A subcommand whose --help ends with its exit statuses."""
    return parent.add_parser(name, epilog=EXIT_STATUS.format(done=done, finding=f"3 {finding}; " if finding else ""), **texts)


def folder_path(text: str) -> Path:
    """A folder to write in; an empty path names none (Path("") would be the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no folder")
    return Path(text)


def file_path(text: str) -> Path:
    """A file to write, named as given: Path("out/") would drop the slash that makes it a folder."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path names no file")
    if text.endswith(os.sep):
        raise argparse.ArgumentTypeError(f"{text}: ends in {os.sep}, so it names a folder, not a file")
    return Path(text)


def typed(convert: Callable[[str], object], clause: str, what: str) -> Callable[[str], object]:
    """An argparse type whose error names the clause the value must satisfy."""

    def parse(text: str) -> object:
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{clause}: {what}, not {text!r}") from None

    return parse


UNITS = {"": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def byte_count(text: str) -> int:
    """An integer number of bytes, with an optional binary unit: 4096, 64MiB, 16 GiB."""
    number = text.rstrip("KMGTiB ")
    unit = text[len(number):].strip()
    if unit not in UNITS:
        raise ValueError(text)
    return int(number) * UNITS[unit]


def capacity_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def add_trace_and_config(command: argparse.ArgumentParser) -> None:
    command.add_argument("trace", nargs="?", type=Path, help="the trace, plain or gzip (told apart by content), or - for standard input "
                         "(replay only: sweep reads the trace once per configuration); default: the bundled Mooncake conversation trace")
    command.add_argument("--block-size", type=typed(int, "REPLAY-CONF-2", "block size must be an integer"), default=512, help="tokens per block (default: 512)")
    command.add_argument("--small-ratio", type=typed(float, "S3-CONF-1", "small_ratio must be a number"), default=0.1, help="S3FIFO: share of the capacity for the small queue (default: 0.1)")
    command.add_argument("--max-freq", type=typed(int, "S3-CONF-6", "max_freq must be an integer"), default=3, help="S3FIFO: frequency ceiling (default: 3)")
    command.add_argument("--output", type=file_path, help="write the JSON here instead of stdout (written whole or not at all)")


def timeout_seconds(text: str) -> float:
    seconds = float(text)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(text)
    return seconds


def add_adapter(command: argparse.ArgumentParser, required: bool, help: str) -> None:
    """--adapter and the deadlines it is held to (PROTO-15, PROTO-29)."""
    command.add_argument("--adapter", required=required, help=help)
    seconds = typed(timeout_seconds, "PROTO-15", "a timeout must be a finite, positive number of seconds")
    command.add_argument("--reply-timeout", type=seconds, default=REPLY_TIMEOUT,
                         help=f"seconds the implementation has to answer a request (default {REPLY_TIMEOUT:g})")
    command.add_argument("--start-timeout", type=seconds, default=START_TIMEOUT,
                         help=f"seconds it has to answer start, or an in-process factory to return (default {START_TIMEOUT:g})")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="kvspec", description="The executable specification of KV-cache prefix-cache policies.",
                    epilog=EXIT_STATUS.format(done="done", finding="3 a finding (a command's --help says which); "))
    parser.add_argument("--version", action="version", version=f"kvspec {version('kvspec')} (spec {SPEC_VERSION})")
    commands = parser.add_subparsers(dest="command", required=True)
    run = subcommand(
        commands, "replay", "the result is written",
        "with --adapter, the implementation disagreed with the reference or failed (one line on stderr: the trace line and the clause)",
        help="replay a Mooncake trace against one policy (spec/replay.md)",
        description="Replay a Mooncake trace (JSON lines, plain or gzip) with longest-prefix hits and print the result as JSON.",
    )
    add_trace_and_config(run)
    run.add_argument("--policy", choices=POLICIES, default="s3fifo", help="eviction policy (default: s3fifo)")
    run.add_argument("--capacity", type=typed(int, "REPLAY-CONF-1", "capacity must be an integer"), default=4096, help="cache capacity in blocks (default: 4096)")
    run.add_argument("--per-request", action="store_true", help="include hit_tokens and prompt_tokens for every request")
    add_adapter(run, False, "replay through this implementation (reference | python:module:factory | cmd:'program args') in lockstep "
                "with the reference; exit 3 at the first request on which they disagree, or where it fails")
    run.set_defaults(handler=run_replay)
    many = subcommand(
        commands, "sweep", "the results are written",
        help="hit rate against capacity, for several policies, as JSON and a plot",
        description="Replay a trace once per policy and capacity; print every result and the hit rate of a cache that never evicts.",
    )
    add_trace_and_config(many)
    many.add_argument("--policy", dest="policies", action="append", choices=POLICIES, help="a policy to replay (repeatable; default: all three)")
    many.add_argument(
        "--capacities",
        type=typed(capacity_list, "REPLAY-CONF-1", "capacities must be integers separated by commas"),
        default=list(DEFAULT_CAPACITIES),
        help=f"capacities in blocks (default: {','.join(map(str, DEFAULT_CAPACITIES))})",
    )
    many.add_argument("--plot", type=file_path,
                      help="also draw hit rate against capacity to this file (.png, .svg or .pdf; needs kvspec[plot])")
    many.set_defaults(handler=run_sweep)
    versus = subcommand(
        commands, "compare", "the comparison is printed and written",
        help="the benefit policy against LRU on the seeded traces (spec/benefit.md)",
        description="Replay the seeded traces of spec/benefit.md section 17 through the benefit policy and the LRU "
        "byte-budget baseline at the same capacity; print saved cold-prefill cost and bytes written for each, and plot them.",
    )
    versus.add_argument("--trace", help="a Mooncake trace (a file, or conversation or synthetic for a bundled one): replay the benefit "
                        "policy as its prefix cache beside S3FIFO, LRU and FIFO at the same byte capacities (spec/benefit.md section 20)")
    versus.add_argument("--capacity", dest="capacities", action="append", type=typed(byte_count, "BEN-CMP-1", "capacity must be a number of bytes"),
                        help="bytes, or with KiB, MiB, GiB or TiB (repeatable with --trace; default: 64 MiB, and 256 MiB for the two "
                        "mixed-size traces; with --trace, 16, 64 and 256 GiB)")
    versus.add_argument("--plot", type=file_path, help="also draw the comparison to this file (.png, .svg or .pdf; needs kvspec[plot])")
    versus.add_argument("--output", type=file_path, help="also write the rows as JSON here (written whole or not at all)")
    versus.set_defaults(handler=run_compare)
    check = subcommand(
        commands, "certify", "the implementation conforms",
        "it does not conform: it answered differently or failed (the report is written either way)",
        help="certify an implementation against the spec through an adapter",
        description="Drive an implementation and the reference side by side with a stateful Hypothesis machine; exit 0 only if it conforms.",
    )
    add_adapter(check, True, "reference | python:module:factory | cmd:'program args' (spec/adapter-protocol.md)")
    check.add_argument("--policy", dest="policies", action="append", choices=ALL_POLICIES,
                       help="a policy to certify (repeatable; default: all the adapter offers)")
    check.add_argument("--profile", choices=sorted(PROFILES), default="quick", help="quick (CI) or thorough (certification); default quick")
    check.add_argument("--seed", type=int, default=0, help="the Hypothesis seed; the same seed replays the same run (default 0)")
    check.add_argument("--report", type=folder_path, help="write report.json, report.md and each shrunk counterexample to this folder")
    check.add_argument("--small-ratio", type=typed(float, "S3-CONF-1", "small_ratio must be a number"),
                       help="S3FIFO: certify only configurations with this small_ratio (for an implementation without the knob)")
    check.add_argument("--max-freq", type=typed(int, "S3-CONF-6", "max_freq must be an integer"),
                       help="S3FIFO: certify only configurations with this max_freq (for an implementation without the knob)")
    check.set_defaults(handler=run_certify)
    vectors = subcommand(commands, "fixtures", "done", "verify: a case failed",
                         help="golden fixtures: generate the corpus, or verify an implementation against it (spec/fixtures.md)")
    actions = vectors.add_subparsers(dest="action", required=True)
    make = subcommand(actions, "generate", "the corpus is written",
                      help="write the corpus and its manifest, byte for byte the same on every run (FIX-5)")
    make.add_argument("directory", nargs="?", type=folder_path, default=Path("spec/fixtures"), help="default: spec/fixtures")
    make.set_defaults(handler=run_fixtures_generate)
    gather = subcommand(actions, "collect", "the counterexamples are kept",
                        help="keep the shrunk counterexamples of certification reports, for the corpus (run in a checkout)")
    gather.add_argument("reports", nargs="+", type=Path, help="folders written by kvspec certify --report")
    gather.set_defaults(handler=run_fixtures_collect)
    replay_all = subcommand(actions, "verify", "every case passes (or fails as --known-failures expects)",
                         "a case failed, or passed against --known-failures", help="replay every case through an implementation and report each failure (FIX-12)")
    replay_all.add_argument("directory", nargs="?", type=Path, help="a corpus (default: the one installed with kvspec)")
    add_adapter(replay_all, True, "reference | python:module:factory | cmd:'program args' (spec/adapter-protocol.md)")
    replay_all.add_argument("--known-failures", type=Path, help="a JSON object mapping case ids to why each is expected to fail (FIX-11)")
    replay_all.add_argument("--report", type=file_path, help="also write every case's verdict as JSON here (written whole)")
    replay_all.set_defaults(handler=run_fixtures_verify)
    search = subcommand(
        commands, "hunt", "the search ended within the budget and found no counterexample (not a proof)", "a counterexample was found",
        help="search the spec's own rules for holes with CrossHair (check, as-written, diff)",
        description="check: crosshair check of the reference's rules (expect nothing). as-written: the seed's rules with the spec's "
        "resolution of findings F-1 and F-2 switched off (expect the degenerate sizes). diff: crosshair diffbehavior between a rule "
        "and a mistake of the mutant gallery. A search that does not run, or does not end within the budget, is an error.",
    )
    search.add_argument("search", choices=["check", "as-written", "diff"], help="which search")
    search.add_argument("--budget", type=typed(float, "hunt", "the budget must be a number of seconds"), default=300.0,
                        help="seconds for the whole search (default 300)")
    search.add_argument("--per-condition", type=typed(float, "hunt", "the time must be a number of seconds"), default=10.0,
                        help="seconds CrossHair spends on each condition (default 10)")
    search.add_argument("--pair", nargs=2, metavar=("SPEC_FUNCTION", "OTHER_FUNCTION"),
                        help="diff: the two fully qualified functions to compare (default: REPLAY-HIT-1 against the no-min-clamp mutant)")
    search.add_argument("--record", action="store_true", help="add new counterexamples to conformance/hunted.json, for the fixtures")
    search.set_defaults(handler=run_hunt)
    return parser


def run_hunt(args: argparse.Namespace) -> int:
    from .hunt import DIFFS, MAX_SECONDS, hunt, record

    for option, value in (("--budget", args.budget), ("--per-condition", args.per_condition)):
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise KvspecError(f"hunt: {option} {value:g}: must be a finite number of seconds > 0 and <= {MAX_SECONDS}")
    if args.pair and args.search != "diff":
        raise KvspecError("hunt: --pair names the two functions of a diff")
    found, seconds, command = hunt(args.search, args.budget, args.per_condition, tuple(args.pair or DIFFS["no-min-clamp"]))
    recorded = record(found) if args.record and found else None  # before any output: a refusal leaves stdout empty
    print(f"{command}: {len(found)} counterexample{'s' if len(found) != 1 else ''} in {seconds:.1f} s")
    for counterexample in found:
        call = ", ".join(f"{name}={value!r}" for name, value in counterexample.args.items())
        print(f"  {counterexample.function}({call}): {counterexample.found}")
    if recorded is not None:
        print(f"  {recorded} new, recorded in conformance/hunted.json (kvspec fixtures generate makes them fixtures)")
    return 3 if found else 0


def run_fixtures_generate(args: argparse.Namespace) -> None:
    from .fixtures import generate

    entries = generate(args.directory)
    print(f"{len(entries)} cases and manifest.json in {args.directory}")


def run_fixtures_collect(args: argparse.Namespace) -> None:
    from .fixture_cases import collect

    print(f"{collect(args.reports)} new counterexamples in conformance/counterexamples.json (kvspec fixtures generate makes them fixtures)")


def run_fixtures_verify(args: argparse.Namespace) -> int:
    from .fixture_runner import verify
    from .fixtures import bundled_corpus

    directory = args.directory or bundled_corpus()
    known: dict[str, str] = {}
    if args.known_failures is not None:
        try:
            known = json.loads(args.known_failures.read_text(encoding="utf-8"))
        except ValueError as error:
            raise KvspecError(f"{args.known_failures}: not JSON: {error}") from None
        if not isinstance(known, dict) or not all(isinstance(v, str) for v in known.values()):
            raise KvspecError(f"{args.known_failures}: FIX-11: expected a JSON object mapping case ids to reasons")
    progress = Progress("verifying fixtures", lambda: counter[0] / max(counter[1], 1))
    counter = [0, 0]

    def advance(done: int, total: int) -> None:
        counter[:] = [done, total]
        progress.update(f"{done:,} of {total:,} cases")

    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    try:
        results = verify(directory, implementation, known, advance)
        unless_interrupted()
    finally:
        progress.close()
    if args.report is not None:
        with written_whole(args.report, "--report") as temporary:
            temporary.write_text(json.dumps([vars(r) for r in results], indent=1) + "\n", encoding="utf-8")
    cases = [result for result in results if result.id != "implementation"]
    counts = {verdict: sum(r.verdict == verdict for r in cases) for verdict in ("pass", "fail", "skip", "known-failure", "unexpected-pass")}
    failed = any(result.verdict in ("fail", "unexpected-pass") for result in results)
    print(f"{args.adapter}: {'DOES NOT CONFORM' if failed else 'conforms'}: {len(cases)} cases in {directory}"
          + "".join(f", {n} {verdict}" for verdict, n in counts.items() if n))
    for result in results:
        if result.id == "implementation":
            print(f"  FAIL at {result.title}: {result.detail}")
        elif result.verdict in ("fail", "unexpected-pass"):
            print(f"  {result.verdict.upper()} {result.id} ({result.title}): {result.detail}")
    return 3 if failed else 0


def with_progress(trace: TraceFile, records: Iterator[tuple[int, TraceRecord]], label: str) -> Iterator[tuple[int, TraceRecord]]:
    progress = Progress(label, trace.fraction_read)
    try:
        for count, item in enumerate(records, start=1):
            progress.update(f"{count:,} requests")
            yield item
    finally:
        progress.close()


def write_json(model: ReplayResult | Sweep, output: Path | None, spool: Spool | None = None) -> None:
    """REPLAY-TRACE-7: to stdout, or whole to ``output``; never a partial file. A spool's
    per-request lines are copied in chunks, never held in memory."""
    if output is None:
        write_result(model, spool, sys.stdout)
        return
    with written_whole(output, "--output") as temporary, temporary.open("w", encoding="utf-8") as stream:
        write_result(model, spool, stream)


def summary(result: ReplayResult) -> str:
    rate = result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0
    return (
        f"{result.policy}, {result.cache_capacity_blocks:,} blocks of {result.block_size} tokens: "
        f"{result.requests:,} requests, {result.total_hit_tokens:,} of {result.total_prompt_tokens:,} prompt tokens hit "
        f"({rate:.2%}); {result.final_cache_blocks:,} blocks resident at the end"
    )


def base_config(args: argparse.Namespace, policy: str = "s3fifo", capacity: int = 4096) -> ReplayConfig:
    return ReplayConfig(policy=policy, capacity=capacity, block_size=args.block_size, small_ratio=args.small_ratio, max_freq=args.max_freq)  # type: ignore[arg-type]


BUNDLED = ("conversation", "synthetic")  # reference/traces/NOTICE.md


def open_trace(args: argparse.Namespace) -> TraceFile:
    return TraceFile(args.trace if args.trace is not None else bundled_trace_path())


def run_replay(args: argparse.Namespace) -> int:
    trace = open_trace(args)
    records = with_progress(trace, trace.records(), f"replaying {Path(trace.path).name}")
    config = base_config(args, args.policy, args.capacity)
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
        lockstep = Lockstep(adapter, AdapterConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq))
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


def read_once_only(given: object, command: str) -> None:
    """Before any work: sweep and compare read the trace once for each replay, standard input once."""
    if str(given) == STDIN:
        raise KvspecError(f"{STDIN}: standard input can be read once, and {command} reads the trace once for each replay; save it to a file")


def run_sweep(args: argparse.Namespace) -> None:
    read_once_only(args.trace, "sweep")
    trace = open_trace(args)
    result = sweep(
        lambda label: with_progress(trace, trace.records(), label),
        trace.path,
        base_config(args),
        args.policies or list(POLICIES),
        args.capacities,
    )
    if args.plot is not None:
        plot(result, args.plot)
    write_json(result, args.output)
    if sys.stderr.isatty():
        for point in result.points:
            print(summary(point.result), file=sys.stderr)
        print(f"a cache that never evicts: {result.unbounded_hit_rate:.2%}", file=sys.stderr)


def run_compare(args: argparse.Namespace) -> None:
    from . import comparison

    capacities = args.capacities or []
    for capacity in capacities:
        if not 1 <= capacity <= INT64_MAX:  # the policy's byte budgets are 64-bit counts (BEN-CONF-1)
            raise KvspecError(f"--capacity {capacity}: BEN-CMP-1: a capacity is an integer in [1, 2**63 - 1] bytes")
    if args.trace is not None:
        read_once_only(args.trace, "compare")
        trace = TraceFile(bundled_trace_path(f"{args.trace}_trace.jsonl.gz") if args.trace in BUNDLED and not Path(args.trace).exists()
                          else args.trace)
        records = lambda label: with_progress(trace, trace.records(), label)  # noqa: E731
        result: comparison.Comparison | comparison.TraceComparison = comparison.run_trace(
            records, trace.path, capacities or list(comparison.DEFAULT_TRACE_CAPACITIES))
        print(comparison.trace_table(result))
    else:
        if len(capacities) > 1:
            raise KvspecError("BEN-CMP-1: the seeded traces take one --capacity (several need --trace)")
        result = comparison.run(capacities[0] if capacities else None)
        print(comparison.table(result))
    if args.output is not None:
        with written_whole(args.output, "--output") as temporary:
            temporary.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.plot is not None:
        if isinstance(result, comparison.TraceComparison):
            comparison.plot_trace(result, args.plot)
        else:
            comparison.plot(result, args.plot)
        print(f"plot: {args.plot}")


def run_certify(args: argparse.Namespace) -> int:
    pins = Pins(args.small_ratio, args.max_freq)
    pins.check()
    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    faults: list[Finding] = []
    outcomes: list[Outcome] = []
    try:
        adapter: Started | None = implementation.start()
    except AdapterFailure as failure:
        adapter = None
        faults.append(process_fault(failure, "its start"))
    if adapter is not None:
        offered = adapter.policies
        unoffered = [policy for policy in args.policies or [] if policy not in offered]
        if unoffered:  # PROTO-6
            close_quietly(implementation)
            raise KvspecError(f"{args.adapter} implements {', '.join(offered)}, not {', '.join(unoffered)}")
        policies = args.policies or [p for p in ALL_POLICIES if p in offered]
        outcomes = [certify_policy(implementation, policy, args.profile, args.seed, pins) for policy in policies]
        try:
            implementation.close()
        except AdapterFailure as failure:
            faults.append(process_fault(failure, "its stop"))
    unless_interrupted()
    if args.report is not None:
        args.report.mkdir(parents=True, exist_ok=True)
        write_report(build_report(args.adapter, adapter, args.profile, args.seed, pins, outcomes, faults, args.report), args.report)
    conforms = not faults and all(outcome.conforms for outcome in outcomes)
    held = "".join(f", {knob} {value}" for knob, value in vars(pins).items() if value is not None)
    who = args.adapter if adapter is None else f"{adapter.identity.name} {adapter.identity.version} ({adapter.identity.language})"
    level = "" if adapter is None else f", level {adapter.level}"
    print(f"{who}: {'conforms' if conforms else 'DOES NOT CONFORM'} (profile {args.profile}, seed {args.seed}{level}{held})")
    for fault in faults:
        print(f"  {fault.message}")
    for outcome in outcomes:
        verdict = "conforms" if outcome.conforms else "DOES NOT CONFORM"
        print(f"  {outcome.policy}: {verdict} ({outcome.examples_per_second:.1f} examples/s)")
        for finding in outcome.findings:
            print(f"    {finding.message}")
            if finding.steps:
                print("    shrunk steps:\n" + "\n".join(f"      {line}" for line in finding.steps.splitlines()))
    return 0 if conforms else 3


def process_fault(failure: AdapterFailure, when: str) -> Finding:
    """A failure outside every example: at the implementation's start or stop (PROTO-13, PROTO-15)."""
    fault = Fault(failure, Location(f"at {when}"))
    return Finding(str(fault), "", fault)


def close_quietly(implementation: Implementation) -> None:
    """Stop the implementation when kvspec gives up for a reason of its own."""
    try:
        implementation.close()
    except AdapterFailure:
        pass


RECEIVED: list[int] = []  # the signal that interrupted kvspec, once one has


def interrupted(signum: int, frame: object) -> None:
    """SIGINT, SIGTERM: end every implementation's process group first (none is left running),
    then unwind, so that no output file is left half written."""
    kill_all()
    RECEIVED.append(signum)
    raise Interrupted(128 + signum)


def unless_interrupted() -> None:
    """Before any output: an interruption whose unwinding something replaced with an exception of
    its own (a state machine's teardown, talking to the implementation just ended, raises in a
    finally) still ends the run as an interruption, not as the implementation's failure."""
    if RECEIVED:
        raise Interrupted(128 + RECEIVED[0])


class Interrupted(BaseException):
    """kvspec was told to stop; a BaseException, so that nothing on the way mistakes it for a failure."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def check_outputs(args: argparse.Namespace) -> None:
    """Every file the command will write, checked before any work: a run writes all its outputs or none."""
    plot = getattr(args, "plot", None)
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise KvspecError(f"--plot {shlex.quote(str(plot))}: the file name must end in .png, .svg or .pdf")
    if plot is not None and importlib.util.find_spec("matplotlib") is None:
        raise KvspecError("--plot needs matplotlib: pip install 'kvspec[plot]'")
    for option, path in (("--output", getattr(args, "output", None)), ("--plot", plot)):
        if path is not None:
            check_output(path, option)
    if getattr(args, "report", None) is not None:
        if args.handler is run_fixtures_verify:
            check_output(args.report, "--report")
        else:
            check_folder(args.report, "--report")
    if args.handler is run_fixtures_generate:
        check_folder(args.directory)


def failed_stream() -> str:
    """What an error that names no file failed on: standard output, the one stream kvspec writes
    that has no name (a full device, a pipe its reader closed; an adapter's pipes fail as
    AdapterFailure). Its writes now go nowhere, so that the flush at exit adds no second message."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return "standard output"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
    try:
        check_outputs(args)
        status = args.handler(args)
        sys.stdout.flush()
        if status:
            return status
    except KvspecError as error:
        print(f"kvspec: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"kvspec: error: {error.filename or failed_stream()}: {error.strerror}", file=sys.stderr)
        return 1
    except Interrupted as stop:  # its handler has ended every implementation's process group
        print("kvspec: interrupted", file=sys.stderr)
        return stop.status
    return 0


if __name__ == "__main__":
    sys.exit(main())
