"""`kvspec replay --per-request` in bounded memory: each request's line (REPLAY-RESULT-2) goes to
an unnamed temporary file as the replay makes it, and the result's JSON is written around the
spooled lines, copied in chunks. The JSON is byte for byte what pydantic writes for the whole
result (``model_dump_json(indent=2, exclude_none=True)``): the fixtures, the tests and the users'
scripts read that. `kvspec replay --keep-going` spools its divergences alike."""

import shutil
import tempfile
import textwrap
from types import TracebackType
from typing import Self, TextIO

from pydantic import BaseModel

from kvspec.reference import RequestResult


class Spool:
    """The items of a model's last field, a list (``field``: the per-request lines by default), in
    trace order, in a temporary file that the system deletes when it is closed or the process ends;
    and the running sums of per-request lines (a RequestSink)."""

    def __init__(self, field: str = "per_request") -> None:
        self.field = field
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by __exit__: a Spool is the context manager)
        self.count = self.hit_tokens = self.prompt_tokens = 0

    def add(self, line: RequestResult) -> None:
        self.write(f'    {{\n      "hit_tokens": {line.hit_tokens},\n      "prompt_tokens": {line.prompt_tokens}\n    }}')
        self.hit_tokens += line.hit_tokens
        self.prompt_tokens += line.prompt_tokens

    def append(self, item: BaseModel) -> None:
        """Any model, as pydantic writes it as an item of a list field."""
        self.write(textwrap.indent(item.model_dump_json(indent=2), "    "))

    def write(self, item: str) -> None:
        self.file.write(f",\n{item}" if self.count else item)
        self.count += 1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        self.file.close()


def write_result(model: BaseModel, spool: Spool | None, stream: TextIO) -> None:
    """The JSON of ``model`` to ``stream``; with a spool, ``model`` is without the items of the
    spool's field, its last, and they are copied from the spool."""
    if spool is None:
        stream.write(model.model_dump_json(indent=2, exclude_none=True) + "\n")
        return
    empty = f'"{spool.field}": []'
    head, tail = model.model_copy(update={spool.field: []}).model_dump_json(indent=2, exclude_none=True).rsplit(empty, 1)
    stream.write(head + f'"{spool.field}": [')
    if spool.count:
        stream.write("\n")
        spool.file.seek(0)
        shutil.copyfileobj(spool.file, stream)  # in chunks of 64 KiB, never the whole spool in memory
        stream.write("\n  ")
    stream.write("]" + tail + "\n")
