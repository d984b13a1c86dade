"""The annotated spec: a copy of each spec document whose clauses kvspec.reference cites, each clause
followed by the reference code that cites it and the tests that name it (docs/annotated-spec/).

Generated, never edited, and not normative: spec/ is. A maintainer regenerates it with
`kvspec spec annotate` from the checkout's root, and tests/test_annotated_spec.py fails until the
committed copy matches.

Citations are read as the clause tracer reads them (kvspec.conformance.core.citations), with
what the tracer leaves out because it does not run as the computation (contracts, the docstrings
of modules and classes): a function or class whose docstring cites a clause is shown whole, once
per document (later clauses point back to it); a line or a contract that cites one is shown
alone, under its function. Under a dialect's clause, the canonical rule its override rebinds
(reference/dialects/s3fifo.py OVERRIDES) comes first, then the override. A test names a clause as
tests/test_spec.py has it: the id appears in the test's file (underscores read as hyphens); it is
listed as the test function that holds the id, or as the file where the id is at module level.
Only the reference is shown: adapters/ and conformance/ cite the policy clauses to say which
rule a message carries or a mutant breaks, not to implement it.

A file it reads that Python cannot (a test not in its encoding, not Python, or nested deeper than
Python's parser goes; a spec document not in UTF-8) ends the run with one line naming it, and
nothing written: an annotated spec that silently left a file's tests out would be wrong, and a
checkout whose tests do not parse is one pytest refuses as well.
"""

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kvspec.conformance.core.citations import CLAUSE_LINE, REFERENCE, citations, cited, python_source
from kvspec.conformance.core.output import written_whole
from kvspec.reference import KvspecError
from kvspec.reference.dialects import VARIATIONS
from kvspec.reference.dialects.s3fifo import OVERRIDES

# tests about the spec as a whole, which cite ids as data, name no clause
NOT_CLAUSE_TESTS = {"test_spec.py", "test_annotated_spec.py"}
LINK = re.compile(r"\]\((?![a-z]+:|#)([^)#\s]+)")


@dataclass(frozen=True)
class Shown:
    """Reference code shown under a clause: a function or class whole, or the lines of one that cite it."""

    file: str  # relative to the reference package, as "s3fifo.py"
    name: str  # a qualified name, or "" for module level
    lines: tuple[int, ...]
    kind: str  # "whole", or which lines: "lines", "contracts" or "docstring"; or "replaced", a canonical rule a dialect overrides


WHAT = {"whole": "", "lines": ", the lines that cite it", "contracts": ", the contracts that cite it", "docstring": ", its docstring",
        "replaced": ", the canonical rule the override below replaces"}


@cache
def annotated_documents(checkout: Path) -> list[str]:
    """The spec documents (file stems) annotated: those with clauses, all of which the citation
    grammar reads (documents of other ids, such as PROTO-n and FIX-n, are left out)."""
    names = []
    for path in sorted((checkout / "spec").glob("*.md")):
        ids = CLAUSE_LINE.findall(spec_text(path, checkout))
        if ids and all(cited(clause) == {clause} for clause in ids):
            names.append(path.stem)
    return names


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def definitions(tree: ast.Module) -> Iterator[tuple[str, Definition]]:
    """Every function and class of a module with its qualified name, outermost first."""
    stack: list[tuple[str, ast.AST]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, Definition):
                yield f"{prefix}{child.name}", child
                stack.append((f"{prefix}{child.name}.", child))


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    return ((name, node) for name, node in definitions(tree) if not isinstance(node, ast.ClassDef))


def first_line(node: Definition) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def enclosing(spans: list[tuple[int, int, str]], line: int) -> str:
    """The innermost of ``spans`` (first, last, name) that holds ``line``, or ""."""
    inside = [(last - first, name) for first, last, name in spans if first <= line <= last]
    return min(inside)[1] if inside else ""


def span(node: ast.AST) -> tuple[int, ...]:
    first = first_line(node) if isinstance(node, Definition) else node.lineno
    return tuple(range(first, (node.end_lineno or node.lineno) + 1))


def read_only_citations(tree: ast.Module) -> Iterator[tuple[str, str, tuple[int, ...], set[str]]]:
    """(name, kind, lines, clauses) for the citations the clause tracer leaves out because they are
    not the computation: a module's docstring, a class's docstring (the class is shown whole) and
    the contracts (decorators) of a function or class."""
    if (docstring := ast.get_docstring(tree, clean=False)) and cited(docstring):
        yield "", "docstring", span(tree.body[0]), cited(docstring)
    for name, node in definitions(tree):
        if isinstance(node, ast.ClassDef) and (docstring := ast.get_docstring(node, clean=False)) and cited(docstring):
            yield name, "whole", span(node), cited(docstring)
        for decorator in node.decorator_list:
            yield name, "contracts", span(decorator), cited(ast.unparse(decorator))


def replaced_rules(tree: ast.Module) -> set[tuple[str, str, tuple[int, ...]]]:
    """(clause, name, lines) for each rule of reference/s3fifo.py (``tree``) that a dialect's
    override rebinds (reference/dialects/s3fifo.py OVERRIDES), to be shown under the override's
    clause before the override, as a fork of consensus-specs shows what it modifies."""
    nodes: dict[str, ast.AST] = dict(definitions(tree))
    assigned = (node for node in tree.body if isinstance(node, ast.Assign))
    nodes |= {target.id: node for node in assigned for target in node.targets if isinstance(target, ast.Name)}
    replaced = ((VARIATIONS[override.variation].clause, name) for override in OVERRIDES for name in override.binds)
    return {(clause, name, span(nodes[name])) for clause, name in replaced if name in nodes}


@cache
def reference_code() -> tuple[dict[str, list[Shown]], dict[str, list[str]]]:
    """Clause id -> the reference code that cites it, in file and line order; and file -> its lines."""
    shown: dict[str, list[Shown]] = {}
    sources: dict[str, list[str]] = {}
    for path in sorted(REFERENCE.rglob("*.py")):
        file = path.relative_to(REFERENCE).as_posix()
        source, tree = python_source(path, str(path))
        sources[file] = source.splitlines()
        lines, calls = citations(str(path))
        spans = [(first_line(node), node.end_lineno or node.lineno, name) for name, node in functions(tree)]
        by_start = {first: name for first, _, name in spans}
        parts: dict[tuple[str, str, str], list[int]] = {}  # (clause, name, kind) -> lines
        for first, clauses in calls.items():
            for clause in clauses:
                parts.setdefault((clause, by_start[first], "whole"), []).extend(span(dict(functions(tree))[by_start[first]]))
        for line, clauses in lines.items():
            for clause in clauses:
                parts.setdefault((clause, enclosing(spans, line), "lines"), []).append(line)
        for name, kind, numbers, clauses in read_only_citations(tree):
            for clause in clauses:
                parts.setdefault((clause, name, kind), []).extend(numbers)
        for (clause, name, kind), numbers in parts.items():
            if kind == "whole" or (clause, name, "whole") not in parts:
                shown.setdefault(clause, []).append(Shown(file, name, tuple(sorted(set(numbers))), kind))
        if file == "s3fifo.py":
            for clause, name, numbers in sorted(replaced_rules(tree)):
                shown.setdefault(clause, []).append(Shown(file, name, numbers, "replaced"))
    for entries in shown.values():
        entries.sort(key=lambda s: ("/" in s.file, s.file, s.lines, s.kind))  # the canonical rule first, then a dialect's
    return shown, sources


@cache
def naming_tests(checkout: Path) -> dict[str, list[str]]:
    """Clause id -> the tests that name it, as pytest node ids (or a file, where the id is at module level)."""
    folder = checkout / "tests"
    named: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        if path.name in NOT_CLAUSE_TESTS:
            continue
        file = "tests/" + path.relative_to(folder).as_posix()
        source, tree = python_source(path, file)
        spans = [
            (first_line(node), node.end_lineno or node.lineno, f"{file}::{name.replace('.', '::')}")
            for name, node in functions(tree)
            if node.name.startswith("test")
        ]
        for number, text in enumerate(source.splitlines(), 1):
            for clause in cited(text.replace("_", "-")):
                named.setdefault(clause, set()).add(enclosing(spans, number) or file)
    return {clause: sorted(names) for clause, names in named.items()}


def code_block(lines: list[str], numbers: tuple[int, ...]) -> list[str]:
    """The given lines, dedented together, a `...` line where lines are skipped."""
    picked: list[str] = []
    for previous, number in zip((None, *numbers), numbers, strict=False):
        if previous is not None and number != previous + 1:
            picked.append("...")
        picked.append(lines[number - 1])
    return ["```python", *textwrap.dedent("\n".join(picked)).splitlines(), "```"]


def annotation(clause: str, code: list[Shown], sources: dict[str, list[str]], tests: list[str], seen: dict[Shown, str]) -> list[str]:
    """The block that follows one clause."""
    out = [""]
    for entry in code:
        where = f"[reference/{entry.file}](../../reference/{entry.file})"
        what = f"`{entry.name}`" if entry.name else "module level"
        if entry.kind in ("whole", "replaced") and entry in seen:
            out += [f"{where} {what}{WHAT[entry.kind]}, shown whole under {seen[entry]}", ""]
            continue
        if entry.kind in ("whole", "replaced"):
            seen[entry] = clause
        out += [
            f"{where} {what}{WHAT[entry.kind]}:",
            "",
            *code_block(sources[entry.file], entry.lines),
            "",
        ]
    if not code:
        out += ["No line of the reference cites it.", ""]
    out += ["Tests that name it:" if tests else "No test names it.", ""]
    out += [f"- `{test}`" for test in tests]
    return [*out, ""] if tests else out


def annotated(name: str, checkout: Path = Path()) -> str:
    """The annotated copy of spec/``name``.md in ``checkout``: its text, each clause followed by the
    reference code that cites it (from the installed kvspec.reference) and the tests that name it."""
    checkout = checkout.resolve()
    ours = set(annotated_documents(checkout))
    shown, sources = reference_code()
    named = naming_tests(checkout)
    text = spec_text(checkout / "spec" / f"{name}.md", checkout)

    def relink(match: re.Match[str]) -> str:
        target = match[1]
        return f"]({target}" if Path(target).stem in ours and target.endswith(".md") else f"](../../spec/{target}"

    head = [
        f"<!-- Generated from spec/{name}.md, kvspec/reference/ and tests/ by kvspec spec annotate; do not edit. -->",
        "",
        f"> An annotated copy of [spec/{name}.md](../../spec/{name}.md), which is the normative text: each clause is",
        "> followed by the reference code that cites it and the tests that name it. See [README.md](README.md).",
        "",
    ]
    out = list(head)
    seen: dict[Shown, str] = {}
    pending: str | None = None
    for line in text.splitlines():
        if pending and not line.startswith("  "):
            out += annotation(pending, shown.get(pending, []), sources, named.get(pending, []), seen)
            pending = None
            if line == "":
                continue
        clause = CLAUSE_LINE.match(line)
        if clause:
            pending = clause[1]
        out.append(LINK.sub(relink, line))
    if pending:
        out += annotation(pending, shown.get(pending, []), sources, named.get(pending, []), seen)
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def index(names: list[str]) -> str:
    """docs/annotated-spec/README.md: what these files are."""
    listed = "\n".join(f"- [{name}.md]({name}.md), from [spec/{name}.md](../../spec/{name}.md)" for name in names)
    return f"""# The annotated spec

Generated, not normative: the spec is [spec/](../../spec/). Each file here is a copy of one spec
document in which every clause is followed by the code of the reference (reference/) that cites
it and the tests that name it, so that a reader sees each rule and its code together.

- A function or class whose docstring cites a clause is shown whole, the first time (later
  clauses point back to it); a line or a contract that cites a clause is shown alone, under the
  function that holds it; a module's docstring that cites one is shown alone. Citations are read
  as the clause tracer reads them (conformance/core/citations.py), contracts and docstrings of modules
  and classes added: they say where a rule is checked or described, not where it runs.
- The canonical rule comes first: under a clause of spec/dialects.md, the rule of
  reference/s3fifo.py that the dialect's override rebinds is shown before the override.
- A test names a clause when its file holds the id (underscores read as hyphens), as
  tests/test_spec.py checks; it is listed as the test function that holds it, or as its file.
- Only documents whose clauses the reference cites are annotated.

Regenerate from the checkout's root with
`kvspec spec annotate`;
tests/test_annotated_spec.py fails while the copy here is out of date.

{listed}
"""


def spec_text(path: Path, checkout: Path) -> str:
    """A spec document's text; or a KvspecError naming it where it is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise KvspecError(f"{path.relative_to(checkout)}: byte {error.start} is not UTF-8 ({error.reason}): a spec document is UTF-8 text") from None


def write(folder: str | Path, checkout: Path = Path()) -> None:
    """Write every annotated document of ``checkout`` and the index into ``folder``, each file
    whole, once every one is made: a file the annotation cannot read (a test that is not Python)
    ends it with nothing written."""
    target = Path(folder)
    names = annotated_documents(checkout.resolve())
    texts = {f"{name}.md": annotated(name, checkout) for name in names} | {"README.md": index(names)}
    target.mkdir(parents=True, exist_ok=True)
    for file, text in sorted(texts.items()):
        with written_whole(target / file) as temporary:
            temporary.write_bytes(text.encode("utf-8"))
