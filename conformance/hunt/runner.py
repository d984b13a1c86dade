"""`crosshair check` of the hunt's targets, within a budget: ``python -m kvspec.conformance.hunt.runner``,
the process `kvspec hunt check` and `kvspec hunt as-written` start, with every contract installed.

It is CrossHair's own check (crosshair-tool 0.0.113: one search for each postcondition of each
target, its findings as `crosshair check` reports them), with two differences:

- The budget is shared out as the search goes: each condition gets at most --per-condition
  seconds, and no more than an equal share of what is left of --seconds, so that the run ends
  within its budget whatever the machine's load (CrossHair counts a condition's time on the
  process's CPU clock; the share is given on that clock, scaled by the CPU the process has had).
- A call that does not end is a finding with its input. CrossHair gives up a path whose time runs
  out (its per-path time: the square root of the condition's, above 1 s) by raising PathTimeout,
  which it counts as "not confirmed" and never reports: a rule that loops for ever on some input
  passed as "0 counterexamples". Here, when the time runs out inside the target's body, the path
  raises DidNotEnd instead, an exception of the body, which CrossHair reports as it reports any
  other, with the input it realizes.

It writes one JSON line first, the plan ({"plan": [[function, conditions, parameters], ...]}), then one for
each condition once its search has ended ({"function", "condition", "state", "message", "path",
"line", "seconds"}), flushed at once, so that whatever ran before a kill is known. A selection
that names nothing to explore is one line on stderr, with status 2.
"""

import argparse
import dataclasses
import inspect
import json
import sys
import time
from types import CodeType, FrameType
from typing import Any

STARTED = time.monotonic()


class DidNotEnd(Exception):
    """The target's body still ran when its path's time ran out."""


BODY: list[CodeType] = []  # the code of the body of the target being searched


def running_body(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code in BODY:
            return True
        frame = frame.f_back
    return False


def install_did_not_end() -> None:
    """StateSpace.check_timeout raises DidNotEnd in place of PathTimeout while the target's body runs
    (CrossHair checks the time only where the path branches anew)."""
    from crosshair.statespace import StateSpace

    check_timeout = StateSpace.check_timeout

    def did_not_end(space: Any) -> None:
        if time.process_time() > space.execution_deadline and not space.is_detached and running_body(sys._getframe(1)):
            raise DidNotEnd("the call had not ended when its path's time ran out")
        check_timeout(space)

    StateSpace.check_timeout = did_not_end  # type: ignore[method-assign]


def emit(record: object) -> None:
    print(json.dumps(record), flush=True)


BOUND = 8  # the integers an input holds lie in [-BOUND, BOUND]
SIZE = 4  # and its lists, tuples, sets and dicts hold at most SIZE entries


def bounded(value: object) -> bool:
    """The hunt's bound on an input: small integers and collections, through dataclasses' fields.
    CrossHair explores small inputs far better (../shared/DESIGN.md: a planted S3FIFO bug found in
    5.5 s with lengths <= 4), and every rule's mistakes of the gallery show within it. Loops, not
    all() over a generator: under CrossHair that never held over a dataclass's fields (measured)."""
    if isinstance(value, bool) or isinstance(value, (float, str, bytes)):
        return True
    if isinstance(value, int):
        return -BOUND <= value <= BOUND
    parts: list[object] = []
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        if len(value) > SIZE:
            return False
        parts = [part for pair in value.items() for part in pair] if isinstance(value, dict) else list(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [getattr(value, field.name) for field in dataclasses.fields(value)]
    for part in parts:
        if not bounded(part):
            return False
    return True


def one_search(checkables: list[Any]) -> Any:
    """One search of all a target's postconditions at once, on bounded inputs: CrossHair would
    explore the same paths of the body again for each postcondition (the first that fails ends it).
    A KvspecError is a rule's answer to an input it refuses (a ConfigError citing its clause), not a fault."""
    from crosshair.condition_parser import POSTCONDITION, PRECONDITION, ConditionExpr
    from crosshair.core import ConditionCheckable

    from kvspec.reference import KvspecError

    first = checkables[0]
    if not hasattr(first, "conditions"):  # a condition CrossHair could not read: its report says so
        return first
    conditions = first.conditions
    posts = [checkable.conditions.post[0] for checkable in checkables]

    def all_hold(values: Any) -> bool:
        for post in posts:
            if not post.evaluate(values):
                return False
        return True

    where = (conditions.src_fn.__code__.co_filename, conditions.src_fn.__code__.co_firstlineno)
    bound = ConditionExpr(PRECONDITION, lambda values: bounded([v for k, v in values.items() if k != "__old__"]), *where, "bounded")
    post = ConditionExpr(POSTCONDITION, all_hold, *where, " and ".join(p.expr_source for p in posts))
    return ConditionCheckable(first.ctxfn, first.options, dataclasses.replace(conditions, pre=[bound, *conditions.pre], post=[post],
                                                                              raises=conditions.raises | {KvspecError}))


def cpu_share() -> float:
    """The share of a core this process has had so far: CrossHair's timeouts count CPU time."""
    elapsed = time.monotonic() - STARTED
    return min(max(time.process_time() / elapsed, 0.1), 1.0) if elapsed > 0 else 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvspec.conformance.hunt.runner")
    parser.add_argument("--seconds", type=float, required=True, help="the time the whole search may take, from this process's start")
    parser.add_argument("--per-condition", type=float, required=True, help="the most seconds one condition's search may take")
    parser.add_argument("--search", choices=["check", "as-written"], default="check")
    parser.add_argument("--function", action="append", default=[], help="a function to explore, with its callers")
    parser.add_argument("--clause", action="append", default=[], help="the functions that cite a clause, with their callers")
    args = parser.parse_args(argv)

    from crosshair.auditwall import engage_auditwall
    from crosshair.core_and_libs import analyze_function
    from crosshair.fnutil import FunctionInfo
    from crosshair.options import DEFAULT_OPTIONS, AnalysisOptionSet
    from crosshair.statespace import MessageType

    from kvspec.conformance.hunt import targets as hunt_targets
    from kvspec.reference import contracts

    if contracts.LEVEL != "all":
        print("the hunt needs every contract installed: KVSPEC_CONTRACTS=all", file=sys.stderr)
        return 2
    try:
        chosen = ([t for name in args.function for t in hunt_targets.by_function(name)]
                  + [t for clause in args.clause for t in hunt_targets.by_clause(clause)])
        if not (args.function or args.clause):
            chosen = hunt_targets.scope_targets(hunt_targets.SCOPE if args.search == "check" else hunt_targets.AS_WRITTEN)
    except hunt_targets.SelectionError as error:
        print(error, file=sys.stderr)
        return 2
    unique = list({target.name: target for target in chosen}.values())
    options = AnalysisOptionSet(per_condition_timeout=args.per_condition, report_all=True)
    plan = [(target, analyze_function(FunctionInfo(target.holder, target.attribute, vars(target.holder)[target.attribute]), options))
            for target in unique]
    emit({"plan": [[target.name, len(checkables), list(inspect.signature(hunt_targets.plain(target.function)).parameters)]
                   for target, checkables in plan]})
    searches = [(target, one_search(checkables)) for target, checkables in plan if checkables]
    if not searches:
        print("WARNING: Targets found, but contain no checkable functions.", file=sys.stderr)
        return 2
    install_did_not_end()
    engage_auditwall()
    for done, (target, checkable) in enumerate(searches):
        left = args.seconds - (time.monotonic() - STARTED)
        seconds = min(args.per_condition, left / (len(searches) - done)) * cpu_share()
        if hasattr(checkable, "conditions"):  # not a condition CrossHair could not read
            checkable.options = dataclasses.replace(checkable.options, per_condition_timeout=max(seconds, 1e-3))
            BODY[:] = [checkable.conditions.fn.__code__]
        began = time.monotonic()
        for message in list(checkable.analyze()) or [None]:
            emit({"function": target.name, "seconds": round(time.monotonic() - began, 2),
                  "state": message.state.value if message else MessageType.CANNOT_CONFIRM.value,
                  "message": message.message if message else "", "path": message.filename if message else "",
                  "line": message.line if message else 0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
