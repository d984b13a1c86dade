"""The spec's own discipline: every clause is implemented where it is cited, and tested by name.

A clause is a line `- **ID** text` in spec/*.md. The reference (and the CLI) must cite each id
of the replay, S3FIFO, LRU and FIFO specs, directly or in a range (`S3-INV-1..3`,
`S3-CONF-2 to S3-CONF-4`); the tests must name each one literally, in a name
(`test_S3_ADMIT_M_2_...`) or a docstring; and nothing may cite an id the spec does not have.
"""

from pathlib import Path

import pytest

from kvspec.conformance.core.citations import CITATION, CLAUSE_LINE, cited

ROOT = Path(__file__).resolve().parent.parent
SPECS = ["replay.md", "s3fifo.md", "lru.md", "fifo.md", "benefit.md", "dialects.md", "lifecycle.md"]


def spec_clauses(name: str) -> list[str]:
    return CLAUSE_LINE.findall((ROOT / "spec" / name).read_text())


def all_clauses() -> set[str]:
    return {clause for name in SPECS for clause in spec_clauses(name)}


def named(text: str) -> set[str]:
    """Clause ids a test names literally (underscores read as hyphens): a range names only its first."""
    return {f"{prefix}-{first}" for prefix, first, _, _ in CITATION.findall(text.replace("_", "-"))}


def text_of(folder: str, *, skip: str = "") -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / folder).rglob("*.py")) if p.name != skip)


def test_every_spec_file_has_clauses_and_no_id_twice() -> None:
    for name in SPECS:
        clauses = spec_clauses(name)
        assert clauses, name
        assert len(clauses) == len(set(clauses)), name


def test_every_clause_is_cited_by_the_code_that_implements_it() -> None:
    code = cited((text_of("reference") + text_of("conformance")).replace("_", "-"))
    assert sorted(all_clauses() - code) == []


def test_every_clause_is_named_by_a_test() -> None:
    tests = named(text_of("tests", skip="test_spec.py"))
    assert sorted(all_clauses() - tests) == []


@pytest.mark.parametrize("folder", ["reference", "conformance", "tests"])
def test_no_code_or_test_cites_a_clause_the_spec_does_not_have(folder: str) -> None:
    unknown = cited(text_of(folder, skip="test_spec.py").replace("_", "-")) - all_clauses()
    assert sorted(unknown) == []


def test_the_common_mistakes_table_names_real_clauses() -> None:
    """spec/s3fifo.md §8 maps every mistake of seed 000 to a clause that exists."""
    table = (ROOT / "spec" / "s3fifo.md").read_text().split("## 8.")[1]
    rows = [row for row in table.splitlines() if row.startswith("| ") and not row.startswith("| mistake")]
    assert len(rows) == 12
    for row in rows:
        assert cited(row.split("|")[2]) <= all_clauses(), row
        assert cited(row.split("|")[2]), row
