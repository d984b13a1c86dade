"""The clause ids a source file cites, and where (spec/fixtures.md FIX-4; the annotated spec).

A clause id cited on a line of code or in a comment belongs to that line; one cited in a
function's docstring belongs to the function. Citations inside decorators (the contracts) are
left out, so that what a computation exercised does not depend on which contracts are installed.
"""

import ast
import importlib.util
import io
import re
import tokenize
from functools import cache
from pathlib import Path

import kvspec.reference
from kvspec.reference import KvspecError

PREFIXES = "BEN|REPLAY|S3|LRU|FIFO|DIALECT|LIFE"
CITATION = re.compile(rf"\b((?:{PREFIXES})(?:-[A-Z]+)*)-(\d+)(?:\.\.(\d+)| to (?:{PREFIXES})(?:-[A-Z]+)*-(\d+))?")
CLAUSE_LINE = re.compile(r"^- \*\*([A-Z][A-Z0-9]*(?:-[A-Z]+)*-\d+)\*\*", re.MULTILINE)  # a clause of spec/*.md
REFERENCE = Path(kvspec.reference.__file__).parent


def cited(text: str) -> set[str]:
    """The clause ids ``text`` cites; `X-1..3` and `X-1 to X-3` cite 1, 2 and 3."""
    ids = set()
    for prefix, first, last_dots, last_to in CITATION.findall(text):
        ids.update(f"{prefix}-{n}" for n in range(int(first), int(last_dots or last_to or first) + 1))
    return ids


def python_source(path: Path, shown: str) -> tuple[str, ast.Module]:
    """The text of a Python file and its syntax tree; or a KvspecError naming it as ``shown`` where
    Python could not read it: not in its encoding (UTF-8, or the one its coding line names), not
    Python, or nested deeper than Python's parser goes."""
    data = path.read_bytes()
    try:
        source = importlib.util.decode_source(data)
        return source, ast.parse(source)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise KvspecError(f"{shown}:{line}: cannot be read as Python: not {error.encoding} ({error.reason})") from None
    except SyntaxError as error:  # a bad coding line too
        raise KvspecError(f"{shown}:{error.lineno or 1}: cannot be read as Python: {error.msg}") from None
    except ValueError as error:  # a NUL byte
        raise KvspecError(f"{shown}: cannot be read as Python: {error}") from None
    except (RecursionError, MemoryError):  # what CPython's parser raises past its depth, not memory exhausted
        raise KvspecError(f"{shown}: cannot be read as Python: nested deeper than Python's parser goes") from None


@cache
def citations(path: str) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    """For one source file: line -> clauses cited on it, and a function's first line (its first
    decorator's, as its code object has it) -> clauses its docstring cites."""
    source, tree = python_source(Path(path), path)
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
