"""`kvspec replay --per-request` in bounded memory: each request's line (REPLAY-RESULT-2) goes to
an unnamed temporary file as the replay makes it, and the result's JSON is written around the
spooled lines, copied in chunks. The JSON is byte for byte what pydantic writes for the whole
result (``model_dump_json(indent=2, exclude_none=True)``): the fixtures, the tests and the users'
scripts read that. `kvspec replay --keep-going` spools its divergences alike. A replay's result
(Replayed) is written by the json module, without loading pydantic, wherever that gives the same bytes.
To a standard output whose encoding is not UTF-8 (an ASCII locale's), the JSON is written in ASCII,
each other character as its escape: the same JSON, where the locale's encoding would have mangled it."""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, is_dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Self, TextIO

from kvspec.reference import KvspecError
from kvspec.reference.replay import Replayed
from kvspec.reference.service import Served

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kvspec.reference import RequestResult


class Spool:
    """The items of a model's last field, a list (``field``: the per-request lines by default), in
    trace order, in a temporary file that the system deletes when it is closed or the process ends;
    and the running sums of per-request lines (a RequestSink). A failure to write or read it (a
    full TMPDIR) is a KvspecError that names the temporary folder, not what the JSON is written to."""

    def __init__(self, field: str = "per_request") -> None:
        import tempfile  # here, as shutil below: `kvspec replay` without --per-request loads neither

        self.field = field
        self.folder = tempfile.gettempdir()
        self.count = self.hit_tokens = self.prompt_tokens = 0
        try:
            # closed by __exit__: a Spool is the context manager
            self.file = tempfile.TemporaryFile("w+", encoding="utf-8", dir=self.folder)  # noqa: SIM115
        except OSError as error:
            raise self.failed(error) from None

    def failed(self, error: OSError) -> KvspecError:
        import shlex

        return KvspecError(f"the temporary folder {shlex.quote(self.folder)}: {error.strerror} (kvspec keeps the JSON's {self.field} "
                           "lines there until the end: give TMPDIR a folder with room)")

    def add(self, line: RequestResult) -> None:
        self.write(f'    {{\n      "hit_tokens": {line.hit_tokens},\n      "prompt_tokens": {line.prompt_tokens}\n    }}')
        self.hit_tokens += line.hit_tokens
        self.prompt_tokens += line.prompt_tokens

    def append(self, item: BaseModel) -> None:
        """Any model, as pydantic writes it as an item of a list field."""
        import textwrap  # only a list of models needs it, never a plain replay

        from kvspec.conformance.core.output import model_json

        self.write(textwrap.indent(model_json(item, indent=2), "    "))

    def write(self, item: str) -> None:
        try:
            self.file.write(f",\n{item}" if self.count else item)
        except OSError as error:
            raise self.failed(error) from None
        self.count += 1

    def chunks(self) -> Iterator[str]:
        """What the spool holds, from its start, in chunks of 64 KiB: never the whole of it in memory."""
        try:
            self.file.seek(0)  # which writes out what is buffered
            while chunk := self.file.read(2**16):
                yield chunk
        except OSError as error:
            raise self.failed(error) from None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        self.file.close()


def write_result(model: BaseModel | Replayed | Served, spool: Spool | None, stream: TextIO) -> None:
    """The JSON of ``model`` to ``stream``; with a spool, ``model`` is without the items of the
    spool's field, its last, and they are copied from the spool. A failure to write to ``stream``
    is its own (an OSError), not the spool's."""
    held = holds_unicode(stream)
    if spool is None:
        stream.write(as_held(json_text(model) + "\n", held))
        return
    empty = f'"{spool.field}": []'
    emptied = replace(model, **{spool.field: []}) if is_dataclass(model) else model.model_copy(update={spool.field: []})
    head, tail = json_text(emptied).rsplit(empty, 1)
    stream.write(as_held(head + f'"{spool.field}": [', held))
    if spool.count:
        stream.write("\n")
        for chunk in spool.chunks():
            stream.write(as_held(chunk, held))
        stream.write("\n  ")
    stream.write(as_held("]" + tail + "\n", held))


def holds_unicode(stream: TextIO) -> bool:
    """Whether ``stream`` writes any character (UTF-8), or only some (an ASCII locale's standard output)."""
    return codecs.lookup(getattr(stream, "encoding", None) or "utf-8").name == "utf-8"


def as_held(text: str, unicode: bool) -> str:
    """JSON text as a stream whose encoding is not UTF-8 holds it: each character outside ASCII as
    JSON's escape of it, which reads as the same string."""
    if unicode or text.isascii():
        return text
    return "".join(c if c.isascii() else json.dumps(c)[1:-1] for c in text)


def json_text(model: BaseModel | Replayed | Served) -> str:
    """``model_dump_json(indent=2, exclude_none=True)``; for a Replayed, that of its ReplayResult,
    written by the json module where it writes the same (tests/test_startup.py holds it to that)."""
    if isinstance(model, Served):  # its fields the json module writes: integers, ASCII names, floats rounded to the microsecond
        return json.dumps({name: value for name, value in asdict(model).items() if value is not None}, indent=2)
    if not isinstance(model, Replayed):
        from kvspec.conformance.core.output import model_json

        return model_json(model, indent=2, exclude_none=True)
    if not written_alike(model):
        from kvspec.reference import ReplayResult

        return ReplayResult(**vars(model)).model_dump_json(indent=2, exclude_none=True)
    return json.dumps({name: value for name, value in vars(model).items() if value is not None}, indent=2, ensure_ascii=False)


def written_alike(result: Replayed) -> bool:
    """Whether the json module writes ``result`` as pydantic does: without per-request lines (models
    of pydantic's own) and without a float Python writes with an exponent (1e-05, where pydantic
    writes 0.00001); its integers, and its names in ASCII, are written alike."""
    ratio = result.small_ratio
    return not result.per_request and (ratio is None or (math.isfinite(ratio) and "e" not in repr(ratio)))
