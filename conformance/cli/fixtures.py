"""`kvspec fixtures verify`: a corpus of golden fixtures replayed through an implementation
(spec/fixtures.md section 3); the maintainers' `fixtures generate` and `fixtures collect` are in
maintainers.py."""

import argparse
import json
from pathlib import Path
from typing import Any

from kvspec.conformance.cli import maintainers
from kvspec.conformance.cli.arguments import ADAPTER_FORMS, add_adapter, add_output, subcommand, typed
from kvspec.conformance.cli.interruption import unless_interrupted
from kvspec.conformance.cli.progress import Progress
from kvspec.reference import ALL_POLICIES, KvspecError


def add(commands: Any) -> None:
    vectors = subcommand(commands, "fixtures", "done", "verify: a case failed",
                         help="golden fixtures: generate the corpus, or verify an implementation against it (spec/fixtures.md)")
    actions = vectors.add_subparsers(dest="action", required=True)
    maintainers.add_fixtures_actions(actions)
    replay_all = subcommand(actions, "verify", "every case passes (or fails as --known-failures expects)",
                            "a case failed, or passed against --known-failures", help="replay every case through an implementation and report each failure (FIX-12)")
    replay_all.add_argument("directory", nargs="?", metavar="CORPUS", type=Path,
                            help="a corpus folder, or one case's file (default: the corpus installed with kvspec)")
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
    from kvspec.conformance.fixtures.corpus import bundled_corpus
    from kvspec.conformance.fixtures.runner import verify

    directory = args.directory or bundled_corpus()
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
        progress.update(f"{done:,} of {total:,} cases")

    implementation = Implementation(args.adapter, args.reply_timeout, args.start_timeout)
    try:
        results = verify(directory, implementation, known, advance, args.policies or (), (args.max_capacity, args.max_block_size))
        unless_interrupted()
    finally:
        progress.close()
    if args.output is not None:
        with written_whole(args.output, "--output") as temporary:
            temporary.write_text(json.dumps([vars(r) for r in results], indent=1) + "\n", encoding="utf-8")
    cases = [result for result in results if result.id != "implementation"]
    counts = {verdict: sum(r.verdict == verdict for r in cases) for verdict in ("pass", "fail", "skip", "known-failure", "unexpected-pass")}
    failed = any(result.verdict in ("fail", "unexpected-pass") for result in results)
    of = f" of {', '.join(args.policies)}" if args.policies else ""
    print(f"{args.adapter}: {'DOES NOT CONFORM' if failed else 'conforms'}: {len(cases)} cases{of} in {directory}"
          + "".join(f", {n} {verdict}" for verdict, n in counts.items() if n))
    for result in results:
        if result.id == "implementation":
            print(f"  FAIL at {result.title}: {result.detail}")
        elif result.verdict in ("fail", "unexpected-pass"):
            print(f"  {result.verdict.upper()} {result.id} ({result.policy}: {result.title}): {result.detail}")
    return 3 if failed else 0
