"""The ``kvspec`` command line."""

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from kvspec.reference import POLICIES, KvspecError, ReplayConfig, ReplayResult, TraceFile, bundled_trace_path, replay
from kvspec.reference.trace import TraceRecord

from .progress import Progress


def typed(convert: Callable[[str], object], clause: str, what: str) -> Callable[[str], object]:
    """An argparse type whose error names the clause the value must satisfy."""

    def parse(text: str) -> object:
        try:
            return convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{clause}: {what}, not {text!r}") from None

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kvspec", description="The executable specification of KV-cache prefix-cache policies.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "replay",
        help="replay a Mooncake trace against one policy (spec/replay.md)",
        description="Replay a Mooncake trace (JSON lines, plain or gzip) with longest-prefix hits and print the result as JSON.",
    )
    run.add_argument("trace", nargs="?", type=Path, help="the trace; default: the bundled Mooncake conversation trace")
    run.add_argument("--policy", choices=POLICIES, default="s3fifo", help="eviction policy (default: s3fifo)")
    run.add_argument("--capacity", type=typed(int, "REPLAY-CONF-1", "capacity must be an integer"), default=4096, help="cache capacity in blocks (default: 4096)")
    run.add_argument("--block-size", type=typed(int, "REPLAY-CONF-2", "block size must be an integer"), default=512, help="tokens per block (default: 512)")
    run.add_argument("--small-ratio", type=typed(float, "S3-CONF-1", "small_ratio must be a number"), default=0.1, help="S3FIFO: share of the capacity for the small queue (default: 0.1)")
    run.add_argument("--max-freq", type=typed(int, "S3-CONF-6", "max_freq must be an integer"), default=3, help="S3FIFO: frequency ceiling (default: 3)")
    run.add_argument("--per-request", action="store_true", help="include hit_tokens and prompt_tokens for every request")
    run.add_argument("--output", type=Path, help="write the JSON here instead of stdout (written whole or not at all)")
    return parser


def with_progress(trace: TraceFile, records: Iterator[tuple[int, TraceRecord]]) -> Iterator[tuple[int, TraceRecord]]:
    progress = Progress(f"replaying {Path(trace.path).name}", trace.fraction_read)
    try:
        for count, item in enumerate(records, start=1):
            progress.update(f"{count:,} requests")
            yield item
    finally:
        progress.close()


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path``, then rename: never a partial file."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def summary(result: ReplayResult) -> str:
    rate = result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0
    return (
        f"{result.policy}, {result.cache_capacity_blocks:,} blocks of {result.block_size} tokens: "
        f"{result.requests:,} requests, {result.total_hit_tokens:,} of {result.total_prompt_tokens:,} prompt tokens hit "
        f"({rate:.2%}); {result.final_cache_blocks:,} blocks resident at the end"
    )


def run_replay(args: argparse.Namespace) -> None:
    config = ReplayConfig(
        policy=args.policy, capacity=args.capacity, block_size=args.block_size, small_ratio=args.small_ratio, max_freq=args.max_freq
    )
    trace = TraceFile(args.trace if args.trace is not None else bundled_trace_path())
    result = replay(with_progress(trace, trace.records()), config, path=trace.path, per_request=args.per_request)
    text = result.model_dump_json(indent=2, exclude_none=True) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        write_atomically(args.output, text)
    if sys.stderr.isatty():
        print(summary(result), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run_replay(args)
    except KvspecError as error:
        print(f"kvspec: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"kvspec: error: {error.filename or ''}: {error.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
