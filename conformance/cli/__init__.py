"""The ``kvspec`` command line: one module per command (replay, sweep, compare, certify, campaign,
badge, fixtures verify, hunt), the maintainers' commands apart (maintainers: fixtures generate and
collect, spec schemas and annotate), and what they share (arguments, jobs, progress, spool; the
interruption is conformance/core's, for a certification checks it too). Each command's module says
what its arguments are and calls the package that does the work, which it imports as it runs:
building the parser and printing help load none of it (tests/test_startup.py)."""

import argparse
import shlex
import signal
import sys
from importlib import import_module
from typing import Any

from kvspec.conformance.cli.arguments import EXIT_STATUS, Parser, check_dialects
from kvspec.conformance.core.interruption import Interrupted, delivered_again, interrupted, unless_interrupted
from kvspec.conformance.core.streams import stdout_failure
from kvspec.reference import SPEC_VERSION, KvspecError

# Each command and the module that adds it, in --help's order.
COMMANDS = {"replay": "replay", "sweep": "sweep", "compare": "compare", "certify": "certify", "campaign": "campaign",
            "badge": "badge", "fixtures": "fixtures", "hunt": "hunt", "spec": "maintainers"}


def build_parser(command: str | None = None) -> Parser:
    """The parser of every command; or, given one, of that command alone, which parses its
    arguments as the whole parser does (building all of them takes longer than a short replay)."""
    parser = Parser(prog="kvspec", description="The executable specification of KV-cache prefix-cache policies.",
                    epilog=EXIT_STATUS.format(done="done", finding="3 a finding (a command's --help says which); "))
    parser.add_argument("--version", action=Version)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        if command not in COMMANDS or command == name:
            import_module(f"kvspec.conformance.cli.{module}").add(commands)
    return parser


class Version(argparse._VersionAction):
    """argparse's version action, the version read from the installed package only when asked for:
    importlib.metadata takes longer to import than the rest of the parser takes to build."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        from importlib.metadata import version

        self.version = f"kvspec {version('kvspec')} (spec {SPEC_VERSION})"
        super().__call__(parser, namespace, values, option_string)


def check_outputs(args: argparse.Namespace) -> None:
    """Every file and folder the command will write, checked before any work: a run writes all its
    outputs or none. A command names its folders (``folders``, attribute -> option); the rest are files."""
    plot = getattr(args, "plot", None)
    if plot is not None and plot.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise KvspecError(f"--plot {shlex.quote(str(plot))}: the file name must end in .png, .svg or .pdf")
    if plot is not None:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            from kvspec.conformance.core.extras import install_hint

            raise KvspecError(f"--plot needs matplotlib: {install_hint('plot')}")
    folders = getattr(args, "folders", {})
    files = [name for name in ("output", "plot") if getattr(args, name, None) is not None and name not in folders]
    named = [name for name in folders if getattr(args, name) is not None]
    if not files and not named:
        return  # standard output alone: the checks' module, tempfile with it, is not loaded
    from kvspec.conformance.core.output import check_folder, check_output

    for name in files:
        check_output(getattr(args, name), f"--{name}")
    for name in named:
        check_folder(getattr(args, name), folders[name])


def failure(error: OSError) -> str:
    """What failed, for an OSError nothing on the way named: its file (standard output's names it:
    conformance/core/streams.py), else the working folder if it is gone (a path relative to it
    cannot be resolved), else the system's words alone."""
    if error.filename is not None:
        return f"{error.filename}: {error.strerror}"
    from kvspec.conformance.core.output import WORKING_FOLDER_GONE, working_folder_gone

    return WORKING_FOLDER_GONE if working_folder_gone() else error.strerror or str(error)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, interrupted)
    sys.unraisablehook = delivered_again
    try:
        try:
            args = build_parser(given[0] if given else None).parse_args(given)  # --help and --version write to standard output
            check_dialects(args)
            check_outputs(args)
            status = args.handler(args)
            sys.stdout.flush()
            swallowed = stdout_failure()  # a failed write that something on the way caught
            if swallowed is not None:
                raise swallowed
        except Exception:
            unless_interrupted()  # what the interruption's unwinding raised in its place (Hypothesis's engine may)
            raise
        if status:
            return status
    except KvspecError as error:
        print(f"kvspec: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"kvspec: error: {failure(error)}", file=sys.stderr)
        return 1
    except Interrupted as stop:  # its handler has ended every implementation's process group
        print("kvspec: interrupted", file=sys.stderr)
        return stop.status
    return 0
