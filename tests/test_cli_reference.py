"""docs/cli.md is the command reference, checked against the parser (issue 29): the synopsis of
every command (its indented lines that start `kvspec COMMAND`, and the lines that continue them)
names each option its --help lists, and no option it does not have."""

import argparse
import re
from pathlib import Path

import pytest

from kvspec.conformance import cli
from kvspec.reference.dialects.catalogue import KNOWN_DIALECTS

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "cli.md"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def leaf_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command that runs (``kvspec fixtures verify``, not ``kvspec fixtures``), by its name."""
    children = [child for action in (parser._subparsers._group_actions if parser._subparsers else [])
                for child in action.choices.values()]
    if not children:
        return {parser.prog: parser}
    return {name: leaf for child in children for name, leaf in leaf_parsers(child).items()}


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings if option.startswith("--") and option != "--help"}


def synopsis_options(text: str, command: str) -> set[str] | None:
    """The options the synopsis lines of ``command`` name, or None when the page has none."""
    lines = text.splitlines()
    found: set[str] | None = None
    for i, line in enumerate(lines):
        if not re.match(rf"    {re.escape(command)}( |$)", line):
            continue
        block = [line.split("  #", 1)[0]]
        for more in lines[i + 1:]:  # the lines that continue it, indented past its own
            if not more.startswith("      ") or more.lstrip().startswith(("kvspec ", "{", "pytest ")):
                break
            block.append(more)
        found = (found or set()) | {o for part in block for o in OPTION.findall(part)}
    return found


PARSERS = leaf_parsers(cli.build_parser())


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_the_reference_names_every_option_of_each_command_and_no_other(command: str) -> None:
    named = synopsis_options(REFERENCE.read_text(encoding="utf-8"), command)
    assert named is not None, f"docs/cli.md has no synopsis of {command}"
    assert sorted(options_of(PARSERS[command]) - named) == [], "in --help, not in docs/cli.md"
    assert sorted(named - options_of(PARSERS[command])) == [], "in docs/cli.md, not in --help"


def test_the_check_sees_a_missing_and_an_unknown_option() -> None:
    page = "    kvspec replay [--policy P] [--nosuch]\n                  [--capacity N]\n    kvspec certify --adapter A\n"
    assert synopsis_options(page, "kvspec replay") == {"--policy", "--nosuch", "--capacity"}
    assert synopsis_options(page, "kvspec sweep") is None


def test_the_reference_names_every_known_dialect() -> None:
    """Issue 29: the README's replay section named 4 of the 14 dialects `--dialect` takes."""
    page = REFERENCE.read_text(encoding="utf-8")
    assert sorted(name for name in KNOWN_DIALECTS if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", page)) == []
