"""What every command shares: one rule for bad input and exit statuses (Parser, EXIT_STATUS), the
argument types that name the clause a value must satisfy, the trace, configuration and adapter
arguments, and the replay's JSON written to standard output or whole to a file. Building the
parser loads none of the code the commands run: each command imports it when it runs."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

from kvspec.conformance.cli.progress import Progress
from kvspec.conformance.cli.spool import Spool, write_result
from kvspec.reference import POLICIES, ConfigError, KvspecError, ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.constants import REPLY_TIMEOUT, START_TIMEOUT
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS, Dialect, dialect_for
from kvspec.reference.replay import Replayed
from kvspec.reference.trace import STDIN

if TYPE_CHECKING:
    from kvspec.conformance.certification.block.keep_going import DivergenceReport
    from kvspec.conformance.measurement.sweep import Ablation, Sweep
    from kvspec.reference import ReplayResult
    from kvspec.reference.service import Served

Line = TypeVar("Line")  # a trace's line, as a TraceRecord or a Request (reference/trace.py)

# PROTO-18's adapter specs, as a shell takes them: python: served in a process of its own, in-process: inside kvspec's.
ADAPTER_FORMS = "reference | python:MODULE:FACTORY | in-process:MODULE:FACTORY | 'cmd:PROGRAM ARGS' (spec/adapter-protocol.md, PROTO-18)"
DEFAULTS = ReplayConfig()  # REPLAY-CONF-1 to REPLAY-CONF-3, S3-CONF-1, S3-CONF-6
EXIT_STATUS = ("exit status: 0 {done}; 1 bad input or a failure to run, said in one line on stderr (a command line argparse "
               "refuses included); {finding}130 or 143 after SIGINT or SIGTERM, with nothing written.")


class Parser(argparse.ArgumentParser):
    """One rule for every bad input: one line on stderr, exit 1 (a usage error included). No
    abbreviations: --capacity must not be taken for compare's --capacity-bytes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message} ({self.prog} --help shows the usage)\n")

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        """argparse's, without its silence: a --help or --version that standard output refuses
        (closed, full) is a failure to say, and flushed here, not at exit, where it could not be."""
        if message:
            stream = file or sys.stderr
            stream.write(message)
            stream.flush()


def subcommand(parent: Any, name: str, done: str, finding: str = "", **texts: str) -> Parser:
    """A subcommand whose --help starts with what it does (its help line in the list of commands,
    unless it has a description of its own) and ends with its exit statuses."""
    texts.setdefault("description", texts["help"])
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


BUNDLED = ("conversation", "synthetic")  # reference/traces/NOTICE.md
TRACE_HELP = ("a Mooncake trace: a file, plain or gzip (told apart by content), or conversation or synthetic for a bundled one "
              "(a file of that name comes first){stdin}")


def add_trace(command: argparse.ArgumentParser, stdin: bool, without: str) -> None:
    """The trace, given the same way to every command that reads one: TRACE, the one positional argument."""
    command.add_argument("trace", nargs="?", metavar="TRACE", help=TRACE_HELP.format(stdin=", or - for standard input" if stdin else "")
                         + f"; {without}")


def add_config(command: argparse.ArgumentParser) -> None:
    command.add_argument("--block-size", metavar="TOKENS", type=typed(int, "REPLAY-CONF-2", "block size must be an integer"),
                         default=DEFAULTS.block_size, help=f"tokens per block (default: {DEFAULTS.block_size})")
    command.add_argument("--small-ratio", metavar="RATIO", type=typed(float, "S3-CONF-1", "small_ratio must be a number"),
                         default=DEFAULTS.small_ratio, help=f"S3FIFO: share of the capacity for the small queue (default: {DEFAULTS.small_ratio})")
    command.add_argument("--max-freq", metavar="COUNT", type=typed(int, "S3-CONF-6", "max_freq must be an integer"), default=DEFAULTS.max_freq,
                         help=f"S3FIFO: frequency ceiling (default: {DEFAULTS.max_freq})")


def variation_ids(text: str) -> tuple[str, ...]:
    """--variation's comma-separated ids, each a variation point of spec/dialects.md (DIALECT-2)."""
    ids = tuple(v.strip() for v in text.split(","))
    if "" in ids:
        raise argparse.ArgumentTypeError(f"DIALECT-2: {text!r} names an empty variation point; give ids separated by commas")
    unknown = [v for v in ids if v not in VARIATIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"DIALECT-2: unknown variation point {unknown[0]!r}; known: {', '.join(VARIATIONS)}")
    return ids


def add_dialect(command: argparse.ArgumentParser, what: str, repeatable: bool = False, served: str = "") -> None:
    """--dialect and --variation (spec/dialects.md): the reference as a known implementation runs it, or any set of variation
    points; ``served`` says what --serve does with a dialect, where it serves one."""
    command.add_argument("--dialect", metavar="NAME", choices=tuple(KNOWN_DIALECTS), action="append" if repeatable else "store",
                         help=f"{what} the dialect of a known implementation ({', '.join(KNOWN_DIALECTS)}; spec/dialects.md)"
                              + ("; repeatable" if repeatable else "") + served)
    command.add_argument("--variation", metavar="V1,V2", type=variation_ids, action="extend", default=[],
                         help=f"{what} these variation points of spec/dialects.md, alone or on top of --dialect")


def dialect_of(args: argparse.Namespace, policy: str) -> Dialect:
    """The dialect --dialect and --variation name for ``policy`` (DIALECT-2 to DIALECT-5); where
    ``policy`` has none, the error names the policies that have one, as --policy options, or says
    that none has."""
    try:
        return dialect_for(policy, args.dialect, tuple(args.variation))
    except ConfigError as error:
        others = dialect_policies(args.dialect, args.variation)
        if not others:
            asked = ", ".join([*([args.dialect] if args.dialect else []), *args.variation])
            raise KvspecError(f"{error}, and no policy has a dialect of {asked}") from None
        if policy not in others:
            raise KvspecError(f"{error}: give {' or '.join(f'--policy {other}' for other in others)}") from None
        raise


def check_dialects(args: argparse.Namespace) -> None:
    """Before any work: the dialect asked for, against each policy the command line names (certify
    asks for it only once the implementation has started)."""
    named = getattr(args, "policies", None) or [getattr(args, "policy", None)]
    if getattr(args, "dialect", None) is None and not getattr(args, "variation", None):
        return
    for policy in named:
        if policy is not None:
            dialect_of(args, policy)


def only_policy(dialect: str | None) -> str:
    """The policy a replay takes without --policy: the one policy of ``dialect``'s implementation,
    where it has one (an engine's), else the default."""
    if dialect is not None and dialect in KNOWN_DIALECTS and len(KNOWN_DIALECTS[dialect]) == 1:
        return next(iter(KNOWN_DIALECTS[dialect]))
    return DEFAULTS.policy


def dialect_policies(dialect: str | None, variations: list[str]) -> list[str]:
    """Every policy that ``dialect``'s implementation has and every variation point applies to."""
    return [policy for policy in POLICIES
            if (dialect is None or policy in KNOWN_DIALECTS[dialect]) and all(policy in VARIATIONS[v].policies for v in variations)]


def fitting_policies(dialect: str | None, variations: list[str]) -> list[str]:
    """dialect_policies; all three if none is (dialect_for then says why for the first)."""
    return dialect_policies(dialect, variations) or list(POLICIES)


def add_capacity(command: argparse.ArgumentParser, repeatable: bool, help: str) -> None:
    """--capacity, in blocks wherever it is given (a byte budget is --capacity-bytes)."""
    command.add_argument("--capacity", dest="capacities" if repeatable else "capacity", metavar="BLOCKS",
                         action="append" if repeatable else "store", type=typed(int, "REPLAY-CONF-1", "capacity must be an integer"),
                         default=None if repeatable else DEFAULTS.capacity, help=help)


def add_output(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument("--output", metavar="FILE", type=file_path, help=f"{what} (written whole or not at all)")


def add_plot(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument("--plot", metavar="FILE", type=file_path, help=f"also draw {what} to this file (.png, .svg or .pdf; needs kvspec[plot])")


def timeout_seconds(text: str) -> float:
    seconds = float(text)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(text)
    return seconds


def add_adapter(command: argparse.ArgumentParser, required: bool, help: str) -> None:
    """--adapter and the deadlines it is held to (PROTO-15, PROTO-29)."""
    command.add_argument("--adapter", metavar="ADAPTER", required=required, help=help)
    seconds = typed(timeout_seconds, "PROTO-15", "a timeout must be a finite, positive number of seconds")
    command.add_argument("--reply-timeout", metavar="SECONDS", type=seconds, default=REPLY_TIMEOUT,
                         help=f"seconds the implementation has to answer a request (default {REPLY_TIMEOUT:g})")
    command.add_argument("--start-timeout", metavar="SECONDS", type=seconds, default=START_TIMEOUT,
                         help=f"seconds it has to answer start, or an in-process factory to return (default {START_TIMEOUT:g})")


def job_count(text: str) -> int | None:
    """--jobs: a positive number of processes, or auto (None: one per processor)."""
    if text == "auto":
        return None
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a positive integer or auto, not {text!r}")
    return count


def add_jobs(command: argparse.ArgumentParser, what: str) -> None:
    """--jobs and --scheduler: where a command's independent jobs run (conformance/core/parallel.py).
    Either way the output is the same as one after another."""
    where = command.add_mutually_exclusive_group()
    where.add_argument("--jobs", metavar="N", type=job_count, default=1,
                       help=f"run {what} in N local processes side by side (auto: one per processor; default 1: one after another, "
                            "in this process); the results are the same")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help=f"run {what} as tasks of the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT: "
                            "plain TCP only, not tls://; needs kvspec[cluster]); every worker must run this kvspec and see each file at the path given (docs/scaling.md)")


def with_progress(trace: TraceFile, records: Iterator[tuple[int, Line]], label: str,
                  more: Callable[[], str] = lambda: "") -> Iterator[tuple[int, Line]]:
    """The records, with a progress line: the requests read, and ``more`` after them."""
    progress = Progress(label, trace.fraction_read)
    if not progress.enabled:  # no terminal: the records themselves, without a line to format or a generator to resume for each
        return records
    return progressing(progress, records, more)


def progressing(progress: Progress, records: Iterator[tuple[int, Line]], more: Callable[[], str]) -> Iterator[tuple[int, Line]]:
    try:
        for count, item in enumerate(records, start=1):
            progress.update(f"{count:,} requests{more()}")
            yield item
    finally:
        progress.close()


def write_json(model: Replayed | Served | Sweep | Ablation | DivergenceReport, output: Path | None, spool: Spool | None = None) -> None:
    """REPLAY-TRACE-7: to stdout, or whole to ``output``; never a partial file. A spool's
    per-request lines are copied in chunks, never held in memory."""
    if output is None:
        write_result(model, spool, sys.stdout)
        return
    from kvspec.conformance.core.output import written_whole

    with written_whole(output, "--output") as temporary, temporary.open("w", encoding="utf-8") as stream:
        write_result(model, spool, stream)


def summary(result: Replayed | ReplayResult) -> str:
    rate = result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0
    return (
        f"{result.policy}, {result.cache_capacity_blocks:,} blocks of {result.block_size} tokens: "
        f"{result.requests:,} requests, {result.total_hit_tokens:,} of {result.total_prompt_tokens:,} prompt tokens hit "
        f"({rate:.2%}); {result.final_cache_blocks:,} blocks resident at the end"
    )


def base_config(args: argparse.Namespace, policy: str = DEFAULTS.policy, capacity: int = DEFAULTS.capacity,
                dialect: Dialect = CANONICAL) -> ReplayConfig:
    return ReplayConfig(policy=policy, capacity=capacity, block_size=args.block_size, small_ratio=args.small_ratio,  # type: ignore[arg-type]
                        max_freq=args.max_freq, dialect=dialect)



def open_trace(given: str | None) -> TraceFile:
    """TRACE as add_trace takes it; without it, the bundled conversation trace."""
    if given is None:
        return TraceFile(bundled_trace_path())
    if given in BUNDLED and not Path(given).exists():
        return TraceFile(bundled_trace_path(f"{given}_trace.jsonl.gz"))
    return TraceFile(given)


def read_once_only(given: object, command: str) -> None:
    """Before any work: sweep and compare read the trace once for each replay, standard input once."""
    if str(given) == STDIN:
        raise KvspecError(f"{STDIN}: standard input can be read once, and {command} reads the trace once for each replay; save it to a file")
