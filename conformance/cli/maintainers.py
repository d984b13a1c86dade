"""The maintainers' commands, run in a kvspec checkout to regenerate what it commits:
`fixtures generate` (the corpus), `fixtures collect` (certification counterexamples for it),
`spec schemas` (every JSON Schema) and `spec annotate` (the annotated spec)."""

import argparse
import json
from pathlib import Path, PurePosixPath
from typing import Any

from kvspec.conformance.cli.arguments import add_dialect, dialect_of, folder_path, subcommand
from kvspec.reference import POLICIES, KvspecError
from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS, in_catalogue_order


def add(commands: Any) -> None:
    derived = subcommand(commands, "spec", "the files are written",
                         help="maintainers: regenerate the files a checkout derives from the code (the JSON Schemas, the annotated spec, "
                         "the certifications' matrix)")
    actions = derived.add_subparsers(dest="action", required=True)
    schemas = subcommand(actions, "schemas", "the schemas are written",
                         help="write every JSON Schema (the adapter protocol's messages, the fixture format, the certification "
                         "report and its badge) and manifest.json, their list; remove only the schemas an earlier manifest lists that "
                         "are gone")
    schemas.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("spec/schemas"), help="default: spec/schemas")
    schemas.set_defaults(handler=run_schemas, folders={"directory": ""})
    annotate = subcommand(actions, "annotate", "the annotated spec is written",
                          help="write each spec document with, under every clause, the reference code that cites it and the tests that "
                          "name it (run in a checkout: it reads spec/ and tests/)")
    annotate.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("docs/annotated-spec"), help="default: docs/annotated-spec")
    annotate.set_defaults(handler=run_annotate, folders={"directory": ""})
    certified = subcommand(actions, "matrix", "the matrix is written",
                           help="write docs/certifications/README.md, the matrix of every certified implementation, and the part of each "
                           "one's README that states its dialect, from the reports in its folder (run in a checkout: it reads spec/dialects.md)")
    certified.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("docs/certifications"),
                           help="default: docs/certifications")
    certified.add_argument("--html", metavar="FOLDER", type=folder_path,
                           help="also write the matrix as a static page, FOLDER/index.html, with a copy of each report beside it "
                           "(no script, nothing fetched from the network; PROTO-33)")
    certified.set_defaults(handler=run_matrix, folders={"directory": "", "html": "--html"})


def add_fixtures_actions(actions: Any) -> None:
    """`fixtures generate` and `fixtures collect`, beside the users' `fixtures verify`."""
    make = subcommand(actions, "generate", "the corpus is written",
                      help="write the corpus and its manifest, byte for byte the same on every run (FIX-5)")
    make.add_argument("directory", nargs="?", metavar="FOLDER", type=folder_path, default=Path("spec/fixtures"),
                      help="default: spec/fixtures (with --dialect or --variation, a folder must be given)")
    add_dialect(make, "write the replay cases of")
    make.set_defaults(handler=run_fixtures_generate, folders={"directory": ""})
    gather = subcommand(actions, "collect", "the counterexamples are kept",
                        help="keep the shrunk counterexamples of certification reports, for the corpus (run in a checkout)")
    gather.add_argument("reports", nargs="+", metavar="REPORT", type=Path, help="folders written by kvspec certify --report")
    gather.set_defaults(handler=run_fixtures_collect)


def run_fixtures_generate(args: argparse.Namespace) -> None:
    """FIX-5; DIALECT-9: with a dialect, its replay cases alone, for the policies it names."""
    from kvspec.conformance.core.output import plural
    from kvspec.conformance.fixtures.corpus import generate, previous_corpus
    from kvspec.conformance.fixtures.replay_cases import replay_cases

    if args.dialect is None and not args.variation:
        entries = generate(args.directory)
    else:
        full = previous_corpus(args.directory) if args.directory.is_dir() else set()
        if args.directory == Path("spec/fixtures") or any(not path.startswith("replay/") for path in full):
            raise KvspecError(f"DIALECT-9: a dialect's corpus goes to a folder of its own, and {args.directory} holds a corpus with "
                              "cases of other kinds (kvspec's own?): give another FOLDER")
        if args.dialect is not None:
            policies = list(KNOWN_DIALECTS[args.dialect])
        else:
            policies = [p for p in POLICIES if all(p in VARIATIONS[v].policies for v in args.variation)]
        if not policies:
            raise KvspecError(f"DIALECT-2: no policy has every variation point of {', '.join(args.variation)}")
        dialects = {policy: dialect_of(args, policy) for policy in policies}
        label = " + ".join([*([args.dialect] if args.dialect else []), *in_catalogue_order(frozenset(args.variation))])
        entries = generate(args.directory, list(replay_cases(dialects, f"{label} dialect")))
    print(f"{plural(len(entries), 'case')} and manifest.json in {args.directory}")


def run_fixtures_collect(args: argparse.Namespace) -> None:
    from kvspec.conformance.core.output import plural
    from kvspec.conformance.fixtures.recorded import collect

    print(f"{plural(collect(args.reports), 'new counterexample')} in conformance/counterexamples.json (kvspec fixtures generate makes them "
          "fixtures)")


def schema_texts() -> dict[str, str]:
    """Every JSON Schema kvspec publishes, by its path under spec/schemas/ (each written by
    adapters/protocol.py's schema_text)."""
    from kvspec.adapters import protocol
    from kvspec.conformance.certification import campaign
    from kvspec.conformance.certification.block import keep_going
    from kvspec.conformance.certification.verdict import badge, report
    from kvspec.conformance.fixtures import format as fixture_format

    return {**{f"adapter/{name}": text for name, text in protocol.schema_texts().items()}, **fixture_format.schema_texts(), **report.schema_texts(),
            **keep_going.schema_texts(), **campaign.schema_texts(), **badge.schema_texts()}


SCHEMAS_MANIFEST = "manifest.json"
SCHEMAS_FORMAT = "kvspec-schemas/1"


def run_schemas(args: argparse.Namespace) -> None:
    """Write every schema whole, and the manifest that lists them; remove the schemas an earlier
    run's manifest lists that this run does not write (of messages or formats that are gone), and
    nothing else: a file kvspec did not write is not kvspec's to remove."""
    from kvspec.conformance.core.output import write_text, written_whole

    written_before = schemas_written_before(args.directory)  # a manifest not this command's refused first
    texts = schema_texts()
    for retired in sorted(written_before - texts.keys()):
        (args.directory / retired).unlink(missing_ok=True)
    for name, text in texts.items():
        (args.directory / name).parent.mkdir(parents=True, exist_ok=True)
        with written_whole(args.directory / name) as temporary:
            write_text(temporary, text)
    with written_whole(args.directory / SCHEMAS_MANIFEST) as temporary:
        write_text(temporary, json.dumps({"format": SCHEMAS_FORMAT, "schemas": sorted(texts)}, indent=1) + "\n")
    print(f"{len(texts)} schemas and {SCHEMAS_MANIFEST} in {args.directory}")


def schemas_written_before(directory: Path) -> set[str]:
    """The schemas the manifest in ``directory`` lists; none without one. A manifest.json that is
    not this command's (another format, or a path outside the folder) is refused before anything
    is written or removed."""
    path = directory / SCHEMAS_MANIFEST
    if not path.exists():
        return set()
    try:
        manifest = json.loads(path.read_bytes())
    except ValueError as error:
        raise KvspecError(f"{path}: not the manifest kvspec spec schemas writes (not JSON: {error}): give another FOLDER") from None
    listed = manifest.get("schemas") if isinstance(manifest, dict) else None
    if not (isinstance(manifest, dict) and manifest.get("format") == SCHEMAS_FORMAT and isinstance(listed, list)):
        raise KvspecError(f"{path}: not the manifest kvspec spec schemas writes (one whose format is {SCHEMAS_FORMAT}): give another FOLDER")
    outside = [name for name in listed if not inside(name)]
    if outside:
        raise KvspecError(f"{path}: lists {outside[0]!r}, which is no schema file inside {directory}: nothing is removed by it")
    return set(listed)


def inside(name: object) -> bool:
    """Whether ``name`` is a manifest's path of a schema under its folder: relative, without `..`."""
    if not isinstance(name, str):
        return False
    path = PurePosixPath(name)
    return name.endswith(".schema.json") and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def run_matrix(args: argparse.Namespace) -> None:
    from kvspec.conformance.certification.verdict import matrix
    from kvspec.conformance.core.output import plural

    spec = Path("spec/dialects.md")
    if not spec.is_file():
        raise KvspecError("spec matrix reads spec/dialects.md: run it from a kvspec checkout")
    readmes, page = matrix.regenerate(args.directory, spec, args.html)
    print(f"{plural(len(readmes), 'file')} written in {args.directory}")
    if args.html is not None:
        print(f"the page: {args.html / 'index.html'}, and beside it a copy of each report with its counterexamples "
              f"({plural(len(page) - 1, 'file')})")


def run_annotate(args: argparse.Namespace) -> None:
    from kvspec.conformance.core import annotated_spec

    if not (Path("spec").is_dir() and Path("tests").is_dir()):
        raise KvspecError("spec annotate reads spec/ and tests/: run it from a kvspec checkout")
    annotated_spec.write(args.directory)
    print(f"the annotated spec in {args.directory}")
