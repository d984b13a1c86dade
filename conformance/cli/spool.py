"""`kvspec replay --per-request` in bounded memory: each request's line (REPLAY-RESULT-2) goes to
an unnamed temporary file as the replay makes it, and the result's JSON is written around the
spooled lines, copied in chunks. The JSON is byte for byte what pydantic writes for the whole
result (``model_dump_json(indent=2, exclude_none=True)``): the fixtures, the tests and the users'
scripts read that."""

import shutil
import tempfile
from types import TracebackType
from typing import Self, TextIO

from pydantic import BaseModel

from kvspec.reference import RequestResult

EMPTY = '"per_request": []'  # the last field of a ReplayResult, as pydantic writes it without lines


class Spool:
    """The per-request lines, in trace order, in a temporary file that the system deletes when it
    is closed or the process ends, and their running sums (a RequestSink)."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by __exit__: a Spool is the context manager)
        self.count = self.hit_tokens = self.prompt_tokens = 0

    def add(self, line: RequestResult) -> None:
        separator = ",\n" if self.count else ""
        self.file.write(f'{separator}    {{\n      "hit_tokens": {line.hit_tokens},\n      "prompt_tokens": {line.prompt_tokens}\n    }}')
        self.count += 1
        self.hit_tokens += line.hit_tokens
        self.prompt_tokens += line.prompt_tokens

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        self.file.close()


def write_result(model: BaseModel, spool: Spool | None, stream: TextIO) -> None:
    """The JSON of ``model`` to ``stream``; with a spool, ``model`` is a ReplayResult without its
    lines, and per_request is copied from the spool."""
    if spool is None:
        stream.write(model.model_dump_json(indent=2, exclude_none=True) + "\n")
        return
    head, tail = model.model_copy(update={"per_request": []}).model_dump_json(indent=2, exclude_none=True).rsplit(EMPTY, 1)
    stream.write(head + '"per_request": [')
    if spool.count:
        stream.write("\n")
        spool.file.seek(0)
        shutil.copyfileobj(spool.file, stream)  # in chunks of 64 KiB, never the whole spool in memory
        stream.write("\n  ")
    stream.write("]" + tail + "\n")
