"""Every link of README.md, docs/ and spec/ resolves: the file it names exists in the checkout, and
the anchor it names is a heading of that file (as GitHub makes anchors of headings) or an explicit
id. Links out of the checkout (http, https, mailto) are not followed: the tests run without a network."""

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted(path for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "spec").rglob("*.md"),
                                      *(ROOT / "bench").rglob("*.md"), *(ROOT / "examples").rglob("*.md")]
                   if "node_modules" not in path.parts)  # an npm install's (docs/certifications/lru-cache), not the checkout's
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\((?P<target>[^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$", re.MULTILINE)
EXPLICIT = re.compile(r"<a\s+(?:id|name)=\"(?P<id>[^\"]+)\"")


def prose(text: str) -> str:
    """The text without its code: a link written in a code block or span is an example, not a link."""
    return CODE.sub("", FENCE.sub("", text))


def slug(title: str) -> str:
    """GitHub's anchor of a heading: its text lowercased, without the markup and the punctuation but
    for hyphens and underscores, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a document: its headings' (the second of two alike gets -1, and so on) and its explicit ids."""
    text = path.read_text(encoding="utf-8")
    seen: Counter[str] = Counter()
    found = set(EXPLICIT.findall(text))
    for match in HEADING.finditer(FENCE.sub("", text)):
        base = slug(match["title"])
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return frozenset(found)


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken(document: Path) -> list[str]:
    problems = []
    for match in LINK.finditer(prose(document.read_text(encoding="utf-8"))):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists():
            problems.append(f"{target}: no {shown(path)}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"{target}: {shown(path)} has no heading or id whose anchor is #{anchor}")
    return problems


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_link_and_anchor_resolves(document: Path) -> None:
    assert broken(document) == []


def test_the_checker_sees_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    """It would fail if the rules were wrong: the issue's `#5-its-dialect`, and a file that is not there."""
    (tmp_path / "a.md").write_text("# Title\n## 5. Its dialect, `named`\n[x](#5-its-dialect-named) [y](#5-its-dialect) [z](b.md)\n"
                                   "`[code](nowhere.md)`\n", encoding="utf-8")
    assert [problem.split(":")[0] for problem in broken(tmp_path / "a.md")] == ["#5-its-dialect", "b.md"]
