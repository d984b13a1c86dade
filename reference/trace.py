"""Mooncake traces (spec/replay.md, REPLAY-TRACE-1 to REPLAY-TRACE-7): the record model and
a streaming reader of plain or gzip-compressed JSON lines."""

import gzip
import os
import zlib
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import IO, Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import KvspecError, TraceError
from .validation import INT64_MAX, INT64_MIN

GZIP_MAGIC = b"\x1f\x8b"

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


def parse_line(path: str, line_number: int, line: bytes) -> TraceRecord:
    """REPLAY-TRACE-1, REPLAY-TRACE-2: one line, or a TraceError naming its first bad field."""
    if not line.strip():
        raise TraceError(path, line_number, "(line)", "REPLAY-TRACE-1", "a blank line is not a request")
    try:
        return TraceRecord.model_validate_json(line)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        clause = "REPLAY-TRACE-1" if first["type"] in ("json_invalid", "json_type", "model_type", "missing", "extra_forbidden") else "REPLAY-TRACE-2"
        raise TraceError(path, line_number, field_name(tuple(first["loc"])), clause, first["msg"]) from None


class TraceFile:
    """A trace on disk, read as a stream so that memory does not grow with its length."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._raw: IO[bytes] | None = None
        try:
            self.size = os.path.getsize(self.path)
        except OSError as error:
            raise KvspecError(f"{self.path}: cannot read the trace: {error.strerror}") from None

    def fraction_read(self) -> float:
        """How far into the file (compressed bytes, for gzip) the reader has got."""
        if self._raw is None or self._raw.closed or self.size == 0:
            return 0.0
        return min(self._raw.tell() / self.size, 1.0)

    def records(self) -> Iterator[tuple[int, TraceRecord]]:
        """REPLAY-TRACE-5: (line number, record) in file order; REPLAY-TRACE-6: gzip or plain."""
        line_number = 0
        try:
            with open(self.path, "rb") as raw:
                self._raw = raw
                compressed = raw.read(2) == GZIP_MAGIC
                raw.seek(0)
                lines: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
                with lines:
                    for line_number, line in enumerate(lines, start=1):
                        yield line_number, parse_line(self.path, line_number, line)
        except (OSError, EOFError, zlib.error) as error:
            raise TraceError(self.path, line_number + 1, "(file)", "REPLAY-TRACE-6", f"cannot read: {error}") from None


def bundled_trace_path(name: str = "conversation_trace.jsonl.gz") -> Path:
    """The path of a vendored Mooncake trace (reference/traces/NOTICE.md)."""
    return Path(str(BUNDLED_TRACES / name))
