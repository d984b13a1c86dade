"""Every output the documents show is what the command prints today (issue 29): each indented line
`$ ...` of README.md, docs/ and spec/ is run, as a user would run it in a folder of their own
(the checkout's files at hand, the contracts off), and what it prints (standard output, then
standard error) is compared with the lines shown under it. Only times and rates are masked, and
the path of the corpus installed with kvspec; a shown `...` stands for text left out, within a line
or as a line of its own (any number of lines). The commands of one document run in order in one
folder, so that a replay can follow the certification that wrote its counterexample."""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ("docs/annotated-spec/", "docs/certifications/")  # written by `kvspec spec` from what is tested elsewhere
DOCUMENTS = [path for path in sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "spec").rglob("*.md")])
             if not str(path.relative_to(ROOT)).startswith(GENERATED)]
MASKS = ((re.compile(r"\b\d[\d,]*(?:\.\d+)? s\b"), "TIME s"), (re.compile(r"\b\d[\d,]*(?:\.\d+)? examples/s\b"), "RATE examples/s"),
         (re.compile(r"\S*kvspec/fixtures\b"), "CORPUS"))


@dataclass(frozen=True)
class Shown:
    document: Path
    line: int
    command: str
    output: tuple[str, ...]


def shown_runs(document: Path) -> list[Shown]:
    """Each `$` line of an indented block (indented 4 spaces or more: a block in a list item too), with
    the lines under it, at its indent, up to the next `$` or the block's end."""
    lines = document.read_text(encoding="utf-8").splitlines()
    runs: list[Shown] = []
    i = 0
    while i < len(lines):
        prompt = re.match(r"( {4,})\$ ", lines[i])
        if prompt is None:
            i += 1
            continue
        indent = prompt.group(1)
        start, command, output = i + 1, lines[i][prompt.end():], []
        i += 1
        while i < len(lines) and (lines[i].startswith(indent) or not lines[i].strip()) and not lines[i].startswith(f"{indent}$ "):
            output.append(lines[i][len(indent):])
            i += 1
        while output and not output[-1].strip():
            output.pop()
        runs.append(Shown(document, start, command, tuple(output)))
    return runs


def masked(text: str) -> str:
    for pattern, mask in MASKS:
        text = pattern.sub(mask, text)
    return text


def matches(shown: tuple[str, ...], printed: list[str]) -> bool:
    """Whether the printed lines are the shown ones, a `...` line standing for any lines, a `...` within a line for any text."""
    parts = []
    for line in shown:
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(piece) for piece in masked(line).rstrip().split("...")) + r"\n")
    return re.fullmatch("".join(parts), "".join(masked(line).rstrip() + "\n" for line in printed)) is not None


def run_in(folder: Path, command: str) -> list[str]:
    bin_folder = str(Path(sys.executable).parent)
    env = {**os.environ, "KVSPEC_CONTRACTS": "0", "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "80"}
    run = subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=300, env=env)
    return (run.stdout + run.stderr).rstrip("\n").splitlines()  # an indented block cannot show the blank lines that end it


def a_folder_of_their_own(tmp_path: Path) -> Path:
    """A folder with the checkout's files at hand (examples/, spec/, ...), as in a user's clone, and nothing the commands write."""
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in ("build", "out"):
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


@pytest.mark.parametrize("document", [d for d in DOCUMENTS if shown_runs(d)], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_output_a_document_shows_is_what_its_command_prints(document: Path, tmp_path: Path) -> None:
    folder = a_folder_of_their_own(tmp_path)
    for run in shown_runs(document):
        printed = run_in(folder, run.command)
        assert matches(run.output, printed), f"{run.document.name}:{run.line}: $ {run.command}\nprints:\n" + "\n".join(printed)


def test_the_comparison_masks_times_and_rates_and_sees_any_other_difference() -> None:
    assert matches(("done in 3.5 s (12.0 examples/s)", "..."), ["done in 27.1 s (130.4 examples/s)", "more", "lines"])
    assert matches(("a, ..., z",), ["a, b, c, z"])
    assert not matches(("2 counterexamples in 3.5 s",), ["1 counterexample in 3.5 s"])
    assert not matches(("a", "b"), ["a"])


def test_the_readme_starts_with_what_to_type() -> None:
    """Issue 29: the README's first screen has the two set-up commands and a certification, and the README is short."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    first = "\n".join(lines[:40])
    assert "pip install -q . && .venv/bin/kvspec replay" in first and ".venv/bin/python -m pytest" in first
    assert "$ kvspec certify" in first and len(lines) <= 150
