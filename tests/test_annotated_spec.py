"""docs/annotated-spec/ is current: regenerating it from spec/, the reference and tests/ gives the
committed files byte for byte, and what it shows under a clause is the code and tests that cite it."""

import ast
import re
from pathlib import Path

import pytest

import kvspec.reference
from kvspec.conformance.core.annotated_spec import annotated_documents, write

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs" / "annotated-spec"
REGENERATE = "kvspec spec annotate"
FILES = [f"{name}.md" for name in annotated_documents(ROOT)] + ["README.md"]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("annotated-spec")
    write(folder, ROOT)
    return folder


@pytest.mark.parametrize("file", FILES)
def test_the_committed_annotated_spec_is_current(regenerated: Path, file: str) -> None:
    committed = COMMITTED / file
    assert committed.exists() and committed.read_bytes() == (regenerated / file).read_bytes(), (
        f"docs/annotated-spec/{file} is out of date: run {REGENERATE} from the checkout's root"
    )


def test_no_stale_file_is_left_in_the_annotated_spec(regenerated: Path) -> None:
    assert sorted(p.name for p in COMMITTED.iterdir()) == sorted(p.name for p in regenerated.iterdir()), (
        f"remove the files docs/annotated-spec/ no longer has, and run {REGENERATE}"
    )


def section(text: str, clause: str) -> str:
    """The annotated text from ``clause``'s line to the next clause or heading."""
    start = text.index(f"- **{clause}**")
    following = re.compile(r"^(- \*\*|#)", re.MULTILINE).search(text, start + 1)
    return text[start : following.start() if following else len(text)]


def test_each_s3fifo_rule_is_shown_under_the_clauses_its_docstring_names(regenerated: Path) -> None:
    """Read independently of the generator: every function of reference/s3fifo.py whose docstring
    names an S3FIFO clause literally is under that clause, whole or as a pointer to where it is."""
    spec = (ROOT / "spec" / "s3fifo.md").read_text(encoding="utf-8")
    clauses = re.findall(r"^- \*\*(S3-[A-Z0-9-]+)\*\*", spec, re.MULTILINE)
    source = (Path(kvspec.reference.__file__).parent / "s3fifo.py").read_text(encoding="utf-8")
    text = (regenerated / "s3fifo.md").read_text(encoding="utf-8")
    checked = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (doc := ast.get_docstring(node)):
            for clause in clauses:
                if re.search(rf"\b{clause}\b", doc):
                    shown = section(text, clause)
                    whole = re.search(rf"`(\w+\.)?{node.name}`:\n\n```python\n[^`]*^def {node.name}\(", shown, re.MULTILINE)
                    pointer = re.search(rf"`(\w+\.)?{node.name}`, shown whole under S3-", shown)
                    assert whole or pointer, (clause, node.name)
                    checked += 1
    assert checked >= 10


def test_each_test_named_after_an_s3fifo_clause_is_listed_under_it(regenerated: Path) -> None:
    tree = ast.parse((ROOT / "tests" / "test_s3fifo.py").read_text(encoding="utf-8"))
    text = (regenerated / "s3fifo.md").read_text(encoding="utf-8")
    tests = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    named = [(name, match[1]) for name in tests if (match := re.match(r"test_(S3(?:_[A-Z]+)*_\d+)_", name))]
    assert len(named) >= 10
    for name, clause in named:
        assert f"`tests/test_s3fifo.py::{name}`" in section(text, clause.replace("_", "-")), name
