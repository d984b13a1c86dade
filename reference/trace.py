"""Mooncake traces (spec/replay.md, REPLAY-TRACE-1 to REPLAY-TRACE-8): a streaming reader of plain
or gzip-compressed JSON lines, from a file or standard input, that gives each line as a TraceRecord
(the pydantic model, models.py) or as a Request (its fields, read without pydantic)."""

from __future__ import annotations

import gzip
import io
import json
import os
import shlex
import sys
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple, TypeVar

from .errors import KvspecError, TraceError
from .validation import INT64_MAX, INT64_MIN

if TYPE_CHECKING:
    from .models import TraceRecord

T = TypeVar("T")

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
# REPLAY-TRACE-1: the other encodings of JSON text, told by the first four bytes of a line as RFC 4627
# section 3 tells them (a byte order mark, or where the zero bytes of an ASCII character fall); the
# longer marks first, as UTF-32 LE's begins with UTF-16 LE's.
FOREIGN_ENCODINGS = [
    (b"\x00\x00\xfe\xff", "UTF-32 (big-endian, with a byte order mark)", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32 (little-endian, with a byte order mark)", "UTF-32"),
    (b"\xfe\xff", "UTF-16 (big-endian, with a byte order mark)", "UTF-16"),
    (b"\xff\xfe", "UTF-16 (little-endian, with a byte order mark)", "UTF-16"),
]
ZERO_PATTERNS = {  # which of the first four bytes are zero
    (True, True, True, False): ("UTF-32 (big-endian)", "UTF-32BE"), (False, True, True, True): ("UTF-32 (little-endian)", "UTF-32LE"),
    (True, False, True, False): ("UTF-16 (big-endian)", "UTF-16BE"), (False, True, False, True): ("UTF-16 (little-endian)", "UTF-16LE"),
}
# REPLAY-TRACE-8: generous, since the bundled traces' longest line is 2.7 KB and 16 MiB holds over
# 760,000 hash ids of 20 digits; bounded, so that a file without line feeds (/dev/zero, a small
# gzip file holding one endless line) is refused once 16 MiB are read, not when memory runs out.
MAX_LINE_BYTES = 16 * 2**20
STDIN = "-"

BUNDLED_TRACES = Path(__file__).parent / "traces"  # installed as files (importlib.resources would add to every start what a zip would need)

FIELDS = {"timestamp", "input_length", "output_length", "hash_ids"}  # TraceRecord's (tests/test_startup.py holds them to it)
INTEGER = {int}
DECODER = json.JSONDecoder()


class Request(NamedTuple):
    """A TraceRecord's fields, read without pydantic (read_request)."""

    timestamp: int
    input_length: int
    output_length: int
    hash_ids: list[int]


def __getattr__(name: str) -> object:
    """TraceRecord and parse_line, loaded with pydantic when one is first asked for (models.py)."""
    if name in ("TraceRecord", "parse_line"):
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_request(path: str, line_number: int, line: bytes) -> Request:
    """REPLAY-TRACE-1, REPLAY-TRACE-2 as parse_line reads them, without pydantic where a line plainly
    keeps them; any other line goes to parse_line, which refuses it naming its first bad field (or
    reads it: a key written with an escape, say)."""
    request = plain_request(line)
    if request is None:
        from .models import parse_line

        request = Request(**parse_line(path, line_number, line).model_dump())
    return request


def plain_request(line: bytes) -> Request | None:
    """The Request of a line that plainly holds a TraceRecord, else None: one JSON object in UTF-8,
    with nothing after it but whitespace, of exactly TraceRecord's four fields, each an integer
    (never a bool or a float) in TraceRecord's bounds, hash_ids a list of at least one."""
    try:
        text = line.decode()  # strictly UTF-8, as pydantic reads a line (json.loads(bytes) would take UTF-16 too)
        fields, end = DECODER.raw_decode(text)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested deeper than the interpreter's stack
        return None
    # The four keys and no other string (8 quotes: a repeated key would add two), and JSON's whitespace after.
    if type(fields) is not dict or fields.keys() != FIELDS or line.count(b'"') != 8 or text[end:].strip(" \t\r\n"):
        return None
    timestamp, input_length, output_length, hash_ids = fields["timestamp"], fields["input_length"], fields["output_length"], fields["hash_ids"]
    if not (type(timestamp) is int and type(input_length) is int and type(output_length) is int and type(hash_ids) is list):
        return None
    if not (0 <= timestamp <= INT64_MAX and 1 <= input_length <= INT64_MAX and 0 <= output_length <= INT64_MAX):
        return None
    if not (hash_ids and {*map(type, hash_ids)} == INTEGER):
        return None
    ordered = sorted(hash_ids)  # the least and the greatest: a sort of ints alone compares them three times faster than min and max
    if not (INT64_MIN <= ordered[0] and ordered[-1] <= INT64_MAX):
        return None
    return Request(timestamp, input_length, output_length, hash_ids)


class TraceFile:
    """A trace on disk, or on standard input (``-``), read as a stream so that memory does not
    grow with its length."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        given = str(path)
        self.stdin = given == STDIN
        if self.stdin and sys.stdin is None:  # Python's standard input when kvspec was started with it closed (`<&-`)
            raise KvspecError(f"{STDIN}: standard input is closed (kvspec was started with it closed): give the trace as a file")
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
        """Each line as a TraceRecord (parse_line)."""
        from .models import parse_line

        return self.read(parse_line)

    def requests(self) -> Iterator[tuple[int, Request]]:
        """Each line as a Request, read without pydantic where it can be (read_request)."""
        return self.read(read_request)

    def read(self, parse: Callable[[str, int, bytes], T]) -> Iterator[tuple[int, T]]:
        """REPLAY-TRACE-5: (line number, parsed line) in file order; REPLAY-TRACE-6: gzip or plain."""
        line_number = 0
        try:
            with self.stream() as raw:
                self._raw = raw
                # peek, not read and seek back: a pipe cannot seek
                compressed = raw.peek(2)[:2] == GZIP_MAGIC
                lines: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
                with lines:
                    bounded = iter(partial(lines.readline, MAX_LINE_BYTES + 1), b"")  # REPLAY-TRACE-8: never more of a line in memory
                    for line_number, line in enumerate(bounded, start=1):
                        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                            raise TraceError(self.path, line_number, "(line)", "REPLAY-TRACE-8", f"line longer than {MAX_LINE_BYTES:,} bytes")
                        if line_number == 1:
                            self.refuse_foreign_encoding(line, compressed)
                        # REPLAY-TRACE-1: a byte order mark starts the file, not its first line
                        yield line_number, parse(self.path, line_number, line.removeprefix(UTF8_BOM) if line_number == 1 else line)
        except (OSError, EOFError, zlib.error) as error:
            raise TraceError(self.path, line_number + 1, "(file)", "REPLAY-TRACE-6", f"cannot read: {error}") from None

    def refuse_foreign_encoding(self, first: bytes, compressed: bool) -> None:
        """REPLAY-TRACE-1: a trace in UTF-16 or UTF-32 is refused naming its encoding, with the
        command that converts it (into a file of another name: `> same-name` would empty it first)."""
        found = next(((name, iconv) for mark, name, iconv in FOREIGN_ENCODINGS if first.startswith(mark)), None)
        if found is None and len(first) >= 4:
            found = ZERO_PATTERNS.get(tuple(byte == 0 for byte in first[:4]))  # type: ignore[call-overload]
        if found is None:
            return
        name, iconv = found
        given = "" if self.stdin else f" {shlex.quote(self.path)}"
        read = f"gzip -dc{given} | iconv -f {iconv} -t UTF-8" if compressed else f"iconv -f {iconv} -t UTF-8{given}"
        stem = "trace" if self.stdin else Path(self.path).name.removesuffix(".gz").removesuffix(".jsonl")
        raise TraceError(self.path, 1, "(file)", "REPLAY-TRACE-1",
                         f"the trace is in {name}, not UTF-8: convert it first ({read} > {shlex.quote(stem + '.utf8.jsonl')})")


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
    return BUNDLED_TRACES / name
