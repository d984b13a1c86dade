"""Which clauses a computation of the reference exercised: the lines of kvspec.reference that ran,
mapped to the clause ids cited on them (spec/fixtures.md FIX-4).

A clause id cited on a line of code or in a comment belongs to that line; one cited in a
function's docstring belongs to the function, and counts when it is called. Citations inside
decorators (the contracts) are left out, so that the answer does not depend on which contracts
are installed.
"""

import ast
import io
import re
import sys
import tokenize
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import kvspec.reference
from kvspec.reference.contracts import CHEAP

PREFIXES = "BEN|REPLAY|S3|LRU|FIFO"
CITATION = re.compile(rf"\b((?:{PREFIXES})(?:-[A-Z]+)*)-(\d+)(?:\.\.(\d+)| to (?:{PREFIXES})(?:-[A-Z]+)*-(\d+))?")
CLAUSE_LINE = re.compile(r"^- \*\*([A-Z][A-Z0-9]*(?:-[A-Z]+)*-\d+)\*\*", re.MULTILINE)  # a clause of spec/*.md
REFERENCE = Path(kvspec.reference.__file__).parent


def cited(text: str) -> set[str]:
    """The clause ids ``text`` cites; `X-1..3` and `X-1 to X-3` cite 1, 2 and 3."""
    ids = set()
    for prefix, first, last_dots, last_to in CITATION.findall(text):
        ids.update(f"{prefix}-{n}" for n in range(int(first), int(last_dots or last_to or first) + 1))
    return ids


@cache
def citations(path: str) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """For one source file: line -> clauses cited on it, and a function's first line (its first
    decorator's, as its code object has it) -> clauses its docstring cites."""
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source)
    skipped: set[int] = set()
    calls: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                skipped.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    calls[first] = cited(body[0].value.value)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                skipped.update(range(decorator.lineno, (decorator.end_lineno or decorator.lineno) + 1))
    lines: dict[int, set[str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        row = token.start[0]
        if row not in skipped and token.type in (tokenize.COMMENT, tokenize.STRING, tokenize.NAME, tokenize.OP):
            found = cited(token.string)
            if found:
                lines.setdefault(row, set()).update(found)
    return lines, calls


@contextmanager
def exercised() -> Iterator[set[str]]:
    """Collect, into the set it yields, the clauses whose lines of kvspec.reference run inside the block."""
    found: set[str] = set()
    root = str(REFERENCE)

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            found.update(citations(frame.f_code.co_filename)[0].get(frame.f_lineno, ()))
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(root):
            return None
        if CHEAP and any(part.startswith("icontract") for part in _callers(frame)):
            return None  # a contract at work: its clauses are not the computation's
        lines, calls = citations(code.co_filename)
        found.update(calls.get(code.co_firstlineno, ()))
        unseen = [n for n in cited_lines(code) if not lines[n] <= found]
        return local if unseen else None  # line events only where they can still add a clause

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield found
    finally:
        sys.settrace(previous)


@cache
def cited_lines(code: CodeType) -> tuple[int, ...]:
    """The lines of ``code`` that cite a clause."""
    lines = citations(code.co_filename)[0]
    return tuple(sorted({n for _, _, n in code.co_lines() if n is not None and n in lines}))


def _callers(frame: FrameType) -> Iterator[str]:
    caller = frame.f_back
    while caller is not None:
        yield Path(caller.f_code.co_filename).parent.name
        caller = caller.f_back
