"""Mooncake traces (spec/replay.md, REPLAY-TRACE-1 to REPLAY-TRACE-8): the record model and
a streaming reader of plain or gzip-compressed JSON lines, from a file or standard input."""

import gzip
import io
import json
import os
import re
import sys
import zlib
from collections.abc import Iterator
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import IO, Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import KvspecError, TraceError
from .validation import INT64_MAX, INT64_MIN

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
# REPLAY-TRACE-8: generous, since the bundled traces' longest line is 2.7 KB and 16 MiB holds over
# 760,000 hash ids of 20 digits; bounded, so that a file without line feeds (/dev/zero, a small
# gzip file holding one endless line) is refused once 16 MiB are read, not when memory runs out.
MAX_LINE_BYTES = 16 * 2**20
STDIN = "-"
JSON_POSITION = re.compile(r" at line (\d+) column (\d+)$")

BUNDLED_TRACES = files("kvspec.reference") / "traces"

HashId = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]


class TraceRecord(BaseModel):
    """REPLAY-TRACE-1, REPLAY-TRACE-2: one request, exactly as a Mooncake line carries it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    timestamp: int = Field(ge=0, le=INT64_MAX)
    input_length: int = Field(ge=1, le=INT64_MAX)
    output_length: int = Field(ge=0, le=INT64_MAX)
    hash_ids: list[HashId] = Field(min_length=1)


def field_name(location: tuple[int | str, ...]) -> str:
    """('hash_ids', 3) -> 'hash_ids[3]'; the whole line when pydantic names no field."""
    if not location:
        return "(line)"
    name = str(location[0])
    for part in location[1:]:
        name += f"[{part}]" if isinstance(part, int) else f".{part}"
    return name


def without_position(message: str) -> str:
    """pydantic's `at line 1 column K` as `at column K`: an error names one line, the trace's (the
    JSON's line 2 starts past the line feed, at the end of the trace's line)."""
    position = JSON_POSITION.search(message)
    if position is None:
        return message
    return message[: position.start()] + (f" at column {position[2]}" if position[1] == "1" else " at the end of the line")


def repeated_key(line: bytes) -> str | None:
    """The first key a JSON object line gives twice, escapes decoded (pydantic keeps the last one)."""
    keys = json.loads(line, object_pairs_hook=lambda pairs: [key for key, _ in pairs])
    return next((key for index, key in enumerate(keys) if key in keys[:index]), None)


def parse_line(path: str, line_number: int, line: bytes) -> TraceRecord:
    """REPLAY-TRACE-1, REPLAY-TRACE-2: one line, or a TraceError naming its first bad field."""
    if not line.strip():
        raise TraceError(path, line_number, "(line)", "REPLAY-TRACE-1", "a blank line is not a request")
    try:
        record = TraceRecord.model_validate_json(line)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        clause = "REPLAY-TRACE-1" if first["type"] in ("json_invalid", "json_type", "model_type", "missing", "extra_forbidden") else "REPLAY-TRACE-2"
        raise TraceError(path, line_number, field_name(tuple(first["loc"])), clause, without_position(first["msg"])) from None
    # REPLAY-TRACE-1: exactly four fields. Every string of a line pydantic accepted is one of the four
    # keys (the values are integers, and no field name holds a quote), so it has 8 quotes unless a
    # key repeats: a count at C speed, and only a line with more quotes is parsed again.
    if line.count(b'"') != 8 and (key := repeated_key(line)) is not None:
        raise TraceError(path, line_number, key, "REPLAY-TRACE-1", "duplicate key")
    return record


class TraceFile:
    """A trace on disk, or on standard input (``-``), read as a stream so that memory does not
    grow with its length."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        given = str(path)
        self.stdin = given == STDIN
        self.path = "<stdin>" if self.stdin else given
        self._raw: io.BufferedReader | None = None
        self.size = 0 if self.stdin else size_of(given)

    def fraction_read(self) -> float | None:
        """How far into the file (compressed bytes, for gzip) the reader has got; None for standard input, whose length is unknown."""
        if self.stdin:
            return None
        if self._raw is None or self._raw.closed or self.size == 0:
            return 0.0
        return min(self._raw.tell() / self.size, 1.0)

    def stream(self) -> io.BufferedReader:
        if not self.stdin:
            return open(self.path, "rb")
        if self._raw is not None:
            raise KvspecError(f"{STDIN}: standard input can be read once, and this command reads the trace more than once; save it to a file")
        return open(sys.stdin.fileno(), "rb", closefd=False)  # closing it leaves standard input open

    def records(self) -> Iterator[tuple[int, TraceRecord]]:
        """REPLAY-TRACE-5: (line number, record) in file order; REPLAY-TRACE-6: gzip or plain."""
        line_number = 0
        try:
            with self.stream() as raw:
                self._raw = raw
                # peek, not read and seek back: a pipe cannot seek
                lines: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == GZIP_MAGIC else raw
                with lines:
                    bounded = iter(partial(lines.readline, MAX_LINE_BYTES + 1), b"")  # REPLAY-TRACE-8: never more of a line in memory
                    for line_number, line in enumerate(bounded, start=1):
                        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                            raise TraceError(self.path, line_number, "(line)", "REPLAY-TRACE-8", f"line longer than {MAX_LINE_BYTES:,} bytes")
                        # REPLAY-TRACE-1: a byte order mark starts the file, not its first line
                        yield line_number, parse_line(self.path, line_number, line.removeprefix(UTF8_BOM) if line_number == 1 else line)
        except (OSError, EOFError, zlib.error) as error:
            raise TraceError(self.path, line_number + 1, "(file)", "REPLAY-TRACE-6", f"cannot read: {error}") from None


def size_of(path: str) -> int:
    """The size of a trace file, for the progress line; a folder or a missing file is refused here, before any work."""
    if os.path.isdir(path):
        raise KvspecError(f"{path}: is a folder, not a trace file")
    try:
        return os.path.getsize(path)
    except OSError as error:
        raise KvspecError(f"{path}: cannot read the trace: {error.strerror}") from None


def bundled_trace_path(name: str = "conversation_trace.jsonl.gz") -> Path:
    """The path of a vendored Mooncake trace (reference/traces/NOTICE.md)."""
    return Path(str(BUNDLED_TRACES / name))
