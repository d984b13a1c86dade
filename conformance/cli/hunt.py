"""`kvspec hunt`: CrossHair searches of the spec's own rules (conformance/hunt/)."""

import argparse
import math
from typing import Any

from kvspec.conformance.cli.arguments import subcommand, typed
from kvspec.reference import KvspecError


def add(commands: Any) -> None:
    search = subcommand(
        commands, "hunt", "the search ended within the budget and found no counterexample that reproduces (not a proof)",
        "a counterexample was found, and the function run concretely on it breaks the same condition",
        help="search the spec's own rules for holes with CrossHair (check, as-written, diff)",
        description="check: CrossHair's check of the reference's rules (expect nothing), all of them or one --function or --clause "
        "with what calls it. as-written: the seed's rules with the spec's resolution of findings F-1 and F-2 switched off (expect the "
        "degenerate sizes). diff: crosshair diffbehavior between a rule and a mistake of the mutant gallery. A counterexample counts "
        "once the function run concretely on it, outside CrossHair, breaks the same condition; the others are listed as not "
        "reproduced. A search that does not run, or does not end within the budget, is an error.",
    )
    search.add_argument("search", choices=["check", "as-written", "diff"], help="which search")
    search.add_argument("--function", action="append", default=[], metavar="FUNCTION",
                        help="check: this fully qualified function and the functions of its module that call it (repeatable)")
    search.add_argument("--clause", action="append", default=[], metavar="CLAUSE",
                        help="check: the functions of the reference that state or cite this clause, and their callers (repeatable)")
    search.add_argument("--budget", metavar="SECONDS", type=typed(float, "hunt", "the budget must be a number of seconds"),
                        help="seconds for the whole search, its conditions sharing what is left (default 300, or 30 with --function or "
                        "--clause)")
    search.add_argument("--per-condition", metavar="SECONDS", type=typed(float, "hunt", "the time must be a number of seconds"),
                        help="the most seconds CrossHair spends on the search of one function, all its conditions at once (default: its "
                        "share of the budget; diff: 10, on each condition)")
    search.add_argument("--pair", nargs=2, metavar=("SPEC_FUNCTION", "OTHER_FUNCTION"),
                        help="diff: the two fully qualified functions to compare (default: REPLAY-HIT-1 against the no-min-clamp mutant)")
    search.add_argument("--record", action="store_true", help="add new counterexamples to conformance/hunted.json, for the fixtures")
    search.set_defaults(handler=run_hunt)


def run_hunt(args: argparse.Namespace) -> int:
    from kvspec.conformance.core.output import plural
    from kvspec.conformance.hunt.search import BUDGET, DIFFS, MAX_SECONDS, hunt, record, shown_call

    targeted = bool(args.function or args.clause)
    budget = args.budget if args.budget is not None else BUDGET["targeted" if targeted else "all"]
    for option, value in (("--budget", budget), ("--per-condition", args.per_condition)):
        if value is not None and not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise KvspecError(f"hunt: {option} {value:g}: must be a finite number of seconds > 0 and <= {MAX_SECONDS}")
    if args.pair and args.search != "diff":
        raise KvspecError("hunt: --pair names the two functions of a diff")
    if targeted and args.search != "check":
        raise KvspecError(f"hunt: {'--function' if args.function else '--clause'} chooses what a check explores")
    hunted = hunt(args.search, budget, args.per_condition, tuple(args.pair or DIFFS["no-min-clamp"]), tuple(args.function),
                  tuple(args.clause))
    recorded = record(hunted.found) if args.record and hunted.found else None  # before any output: a refusal leaves stdout empty
    searched = f" ({plural(hunted.functions, 'function')}, {plural(hunted.conditions, 'condition')})" if hunted.functions else ""
    print(f"{hunted.command}{searched}: {plural(len(hunted.found), 'counterexample')} in {hunted.seconds:.1f} s")
    for counterexample in hunted.found:
        print(f"  {shown_call(counterexample)}: {counterexample.found}")
    if hunted.unreproduced:
        print(f"{plural(len(hunted.unreproduced), 'counterexample')} of CrossHair's not reproduced outside it (the function run concretely "
              "on the same arguments does not break the same condition; they do not change the exit status):")
        for counterexample in hunted.unreproduced:
            print(f"  {shown_call(counterexample)}: {counterexample.found} (concretely, {counterexample.concretely})")
    if recorded is not None:
        print(f"  {recorded} new, recorded in conformance/hunted.json (kvspec fixtures generate makes them fixtures)")
    return 3 if hunted.found else 0
