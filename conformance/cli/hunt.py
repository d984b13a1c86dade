"""`kvspec hunt`: CrossHair searches of the spec's own rules (conformance/hunt/)."""

import argparse
import math
from typing import Any

from kvspec.conformance.cli.arguments import subcommand, typed
from kvspec.reference import KvspecError


def add(commands: Any) -> None:
    search = subcommand(
        commands, "hunt", "the search ended within the budget and found no counterexample (not a proof)", "a counterexample was found",
        help="search the spec's own rules for holes with CrossHair (check, as-written, diff)",
        description="check: crosshair check of the reference's rules (expect nothing). as-written: the seed's rules with the spec's "
        "resolution of findings F-1 and F-2 switched off (expect the degenerate sizes). diff: crosshair diffbehavior between a rule "
        "and a mistake of the mutant gallery. A search that does not run, or does not end within the budget, is an error.",
    )
    search.add_argument("search", choices=["check", "as-written", "diff"], help="which search")
    search.add_argument("--budget", metavar="SECONDS", type=typed(float, "hunt", "the budget must be a number of seconds"), default=300.0,
                        help="seconds for the whole search (default 300)")
    search.add_argument("--per-condition", metavar="SECONDS", type=typed(float, "hunt", "the time must be a number of seconds"), default=10.0,
                        help="seconds CrossHair spends on each condition (default 10)")
    search.add_argument("--pair", nargs=2, metavar=("SPEC_FUNCTION", "OTHER_FUNCTION"),
                        help="diff: the two fully qualified functions to compare (default: REPLAY-HIT-1 against the no-min-clamp mutant)")
    search.add_argument("--record", action="store_true", help="add new counterexamples to conformance/hunted.json, for the fixtures")
    search.set_defaults(handler=run_hunt)


def run_hunt(args: argparse.Namespace) -> int:
    from kvspec.conformance.hunt.search import DIFFS, MAX_SECONDS, hunt, record

    for option, value in (("--budget", args.budget), ("--per-condition", args.per_condition)):
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise KvspecError(f"hunt: {option} {value:g}: must be a finite number of seconds > 0 and <= {MAX_SECONDS}")
    if args.pair and args.search != "diff":
        raise KvspecError("hunt: --pair names the two functions of a diff")
    found, seconds, command = hunt(args.search, args.budget, args.per_condition, tuple(args.pair or DIFFS["no-min-clamp"]))
    recorded = record(found) if args.record and found else None  # before any output: a refusal leaves stdout empty
    print(f"{command}: {len(found)} counterexample{'s' if len(found) != 1 else ''} in {seconds:.1f} s")
    for counterexample in found:
        call = ", ".join(f"{name}={value!r}" for name, value in counterexample.args.items())
        print(f"  {counterexample.function}({call}): {counterexample.found}")
    if recorded is not None:
        print(f"  {recorded} new, recorded in conformance/hunted.json (kvspec fixtures generate makes them fixtures)")
    return 3 if found else 0
