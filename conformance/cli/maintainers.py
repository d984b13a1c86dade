"""The maintainers' commands, run in a kvspec checkout to regenerate what it commits:
`fixtures generate` (the corpus), `fixtures collect` (certification counterexamples for it),
`spec schemas` (every JSON Schema) and `spec annotate` (the annotated spec)."""

import argparse
from pathlib import Path
from typing import Any

from kvspec.adapters import protocol
from kvspec.conformance.certification import report
from kvspec.conformance.cli.arguments import folder_path, subcommand
from kvspec.conformance.core import annotated_spec
from kvspec.conformance.core.output import written_whole
from kvspec.conformance.fixtures import format as fixture_format
from kvspec.conformance.fixtures.corpus import generate
from kvspec.conformance.fixtures.recorded import collect
from kvspec.reference import KvspecError


def add(commands: Any) -> None:
    derived = subcommand(commands, "spec", "the files are written",
                         help="maintainers: regenerate the files a checkout derives from the code (the JSON Schemas, the annotated spec)")
    actions = derived.add_subparsers(dest="action", required=True)
    schemas = subcommand(actions, "schemas", "the schemas are written",
                         help="write every JSON Schema: the adapter protocol's messages, the fixture format and the certification report")
    schemas.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("spec/schemas"), help="default: spec/schemas")
    schemas.set_defaults(handler=run_schemas, folders={"directory": ""})
    annotate = subcommand(actions, "annotate", "the annotated spec is written",
                          help="write each spec document with, under every clause, the reference code that cites it and the tests that "
                          "name it (run in a checkout: it reads spec/ and tests/)")
    annotate.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("docs/annotated-spec"), help="default: docs/annotated-spec")
    annotate.set_defaults(handler=run_annotate, folders={"directory": ""})


def add_fixtures_actions(actions: Any) -> None:
    """`fixtures generate` and `fixtures collect`, beside the users' `fixtures verify`."""
    make = subcommand(actions, "generate", "the corpus is written",
                      help="write the corpus and its manifest, byte for byte the same on every run (FIX-5)")
    make.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("spec/fixtures"), help="default: spec/fixtures")
    make.set_defaults(handler=run_fixtures_generate, folders={"directory": ""})
    gather = subcommand(actions, "collect", "the counterexamples are kept",
                        help="keep the shrunk counterexamples of certification reports, for the corpus (run in a checkout)")
    gather.add_argument("reports", nargs="+", metavar="REPORT", type=Path, help="folders written by kvspec certify --report")
    gather.set_defaults(handler=run_fixtures_collect)


def run_fixtures_generate(args: argparse.Namespace) -> None:
    entries = generate(args.directory)
    print(f"{len(entries)} cases and manifest.json in {args.directory}")


def run_fixtures_collect(args: argparse.Namespace) -> None:
    print(f"{collect(args.reports)} new counterexamples in conformance/counterexamples.json (kvspec fixtures generate makes them fixtures)")


def schema_texts() -> dict[str, str]:
    """Every JSON Schema kvspec publishes, by its path under spec/schemas/ (each written by
    adapters/protocol.py's schema_text)."""
    return {**{f"adapter/{name}": text for name, text in protocol.schema_texts().items()}, **fixture_format.schema_texts(), **report.schema_texts()}


def run_schemas(args: argparse.Namespace) -> None:
    """Write every schema whole, and remove the schemas of messages or formats that are gone."""
    texts = schema_texts()
    for stale in [*args.directory.glob("*.schema.json"), *args.directory.glob("*/*.schema.json")]:
        if stale.relative_to(args.directory).as_posix() not in texts:
            stale.unlink()
    for name, text in texts.items():
        (args.directory / name).parent.mkdir(parents=True, exist_ok=True)
        with written_whole(args.directory / name) as temporary:
            temporary.write_text(text, encoding="utf-8")
    print(f"{len(texts)} schemas in {args.directory}")


def run_annotate(args: argparse.Namespace) -> None:
    if not (Path("spec").is_dir() and Path("tests").is_dir()):
        raise KvspecError("spec annotate reads spec/ and tests/: run it from a kvspec checkout")
    annotated_spec.write(args.directory)
    print(f"the annotated spec in {args.directory}")
