"""`kvspec fixtures verify`: a corpus of golden fixtures replayed through an implementation
(spec/fixtures.md section 3); the maintainers' `fixtures generate` and `fixtures collect` are in
maintainers.py."""

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvspec.conformance.cli import maintainers
from kvspec.conformance.cli.arguments import ADAPTER_FORMS, add_adapter, add_output, subcommand, typed
from kvspec.conformance.core.interruption import unless_interrupted
from kvspec.conformance.cli.progress import Progress
from kvspec.reference import ALL_POLICIES, KvspecError

if TYPE_CHECKING:
    from kvspec.conformance.fixtures.runner import CaseResult


def add(commands: Any) -> None:
    vectors = subcommand(commands, "fixtures", "done", "verify: a case failed",
                         help="golden fixtures: generate the corpus, or verify an implementation against it (spec/fixtures.md)")
    actions = vectors.add_subparsers(dest="action", required=True)
    maintainers.add_fixtures_actions(actions)
    replay_all = subcommand(actions, "verify", "every case passes (or fails as --known-failures expects)",
                            "a case failed, or passed against --known-failures", help="replay every case through an implementation and report each failure (FIX-12)")
    replay_all.add_argument("directory", nargs="?", metavar="CORPUS", type=Path,
                            help="a corpus folder, one case's file, or the id of a case of the corpus installed with kvspec "
                            "(default: that corpus, whole)")
    add_adapter(replay_all, True, ADAPTER_FORMS)
    replay_all.add_argument("--known-failures", metavar="FILE", type=Path, help="a JSON object mapping case ids to why each is expected to fail (FIX-11)")
    replay_all.add_argument("--policy", dest="policies", action="append", choices=ALL_POLICIES,
                            help="verify only the cases of this policy (repeatable; default: every case; FIX-12)")
    replay_all.add_argument("--max-capacity", metavar="COUNT", type=typed(int, "REPLAY-CONF-1", "the largest capacity must be an integer"),
                            help="skip the replay cases of a larger capacity, for an engine that builds its whole pool at once (FIX-12)")
    replay_all.add_argument("--max-block-size", metavar="COUNT", type=typed(int, "REPLAY-CONF-2", "the largest block_size must be an integer"),
                            help="skip the replay cases of a larger block size (FIX-12)")
    add_output(replay_all, "also write every case's verdict as JSON here")
    replay_all.set_defaults(handler=run_fixtures_verify)


def run_fixtures_verify(args: argparse.Namespace) -> int:
    from kvspec.adapters import Implementation
    from kvspec.conformance.core.output import written_whole
    from kvspec.conformance.core.workloads import Pins
    from kvspec.conformance.fixtures.corpus import bundled_corpus
    from kvspec.conformance.fixtures.runner import verify
    from kvspec.conformance.core.output import plural
    from kvspec.conformance.fixtures.verdicts import by_policy, shown, summary

    Pins(max_capacity=args.max_capacity, max_block_size=args.max_block_size).check()  # as certify refuses them (REPLAY-CONF-1, REPLAY-CONF-2)
    directory, only = corpus_of(args.directory)
    known: dict[str, str] = {}
    if args.known_failures is not None:
        try:
            known = json.loads(args.known_failures.read_text(encoding="utf-8"))
        except ValueError as error:
            raise KvspecError(f"{args.known_failures}: not JSON: {error}") from None
        if not isinstance(known, dict) or not all(isinstance(v, str) for v in known.values()):
            raise KvspecError(f"{args.known_failures}: FIX-11: expected a JSON object mapping case ids to reasons")
    progress = Progress("verifying fixtures", lambda: counter[0] / max(counter[1], 1))
    counter = [0, 0]

    def advance(done: int, total: int) -> None:
        counter[:] = [done, total]
        progress.update(f"{done:,} of {plural(total, 'case')}")

    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    try:
        results = verify(directory, implementation, known, advance, args.policies or (), (args.max_capacity, args.max_block_size), only)
        unless_interrupted()
    finally:
        progress.close()
    if args.output is not None:
        with written_whole(args.output, "--output") as temporary:
            temporary.write_text(json.dumps([{field: getattr(r, field) for field in OUTPUT_FIELDS} for r in results], indent=1) + "\n",
                                 encoding="utf-8")
    of = f" of {', '.join(args.policies)}" if args.policies else ""
    print(summary(args.adapter, results, f"{of} in {directory}"))
    if (policies := by_policy(results)) is not None:
        print(policies)
    for result in results:
        if result.id == "implementation":
            print(f"  FAIL at {result.title}: {result.detail}")
        elif result.verdict in ("fail", "unexpected-pass"):
            print("\n".join(shown(result, alone(args, result, installed=directory == bundled_corpus()))))
    return 3 if any(result.verdict in ("fail", "unexpected-pass") for result in results) else 0


OUTPUT_FIELDS = ("id", "title", "policy", "verdict", "detail")  # FIX-12


def corpus_of(given: Path | None) -> tuple[Path, str | None]:
    """FIX-12: the corpus CORPUS names, and the one case it selects: a folder or a case file as
    given; a case id, the case of that id in the corpus installed with kvspec; nothing, that corpus whole."""
    from kvspec.conformance.fixtures.corpus import bundled_corpus
    from kvspec.conformance.fixtures.format import ID_PATTERN

    if given is None or given.exists() or not re.fullmatch(ID_PATTERN, str(given)):
        return given or bundled_corpus(), None
    return bundled_corpus(), str(given)


def alone(args: argparse.Namespace, result: "CaseResult", installed: bool) -> str:
    """The command that verifies ``result``'s case alone, with the same adapter, timeouts and known
    failures (an unexpected pass is one against them): by its id when it is a case of the
    installed corpus, by its file otherwise."""
    from kvspec.conformance.core.commands import reaching, shell_command

    case = result.id if installed else str(result.file)
    known = ["--known-failures", str(args.known_failures)] if args.known_failures is not None and result.verdict == "unexpected-pass" else []
    return shell_command(["kvspec", "fixtures", "verify", case, *reaching(args.adapter, args.reply_timeout, args.start_timeout), *known])
