"""CrossHair's check of the hunt's targets, within a budget: ``python -m kvspec.conformance.hunt.runner``,
the process `kvspec hunt check` and `kvspec hunt as-written` start, with every contract installed.

It is CrossHair's own analysis (crosshair-tool 0.0.113, the functions `crosshair check` runs), with
these differences, each measured on the gallery of conformance/galleries/spec_mutants.py:

- One search for each target, of all its postconditions at once (CrossHair makes one for each
  postcondition, and explores the same paths of the body again for each), on bounded inputs
  (``bounded``), checking the target's conditions and the preconditions of what its body calls
  (``check_only_the_target``).
- The budget is shared out as the search goes: each target gets at most --per-condition seconds and
  its share of what is left of --seconds, a --function or --clause's own targets CHOSEN_WEIGHT shares
  to each caller's one. CrossHair counts a search's time on the process's CPU clock, which a loaded
  machine slows against the wall's; here a search also ends at its share of wall-clock time (before
  its next path: ``install_did_not_end``), so that the run ends within its budget whatever the load.
- A call that does not end is a finding with its input. CrossHair gives up a path whose time runs
  out (its per-path time, here at most PER_PATH seconds) by raising PathTimeout, which it counts as
  "not confirmed" and never reports: a rule that loops for ever on some input passed as "0
  counterexamples". Here the path raises DidNotEnd instead, an exception of the body, which
  CrossHair reports as it reports any other, with the input it realizes (``install_did_not_end``).
- A KvspecError (a ConfigError citing its clause) is a rule's answer to an input it refuses, not a
  fault.

It writes one JSON line first, the plan ({"plan": [[function, postconditions, parameters], ...]}),
then one for each target once its search has ended ({"function", "state", "message", "path",
"line", "seconds"}; state is CrossHair's MessageType, or crosshair_error when CrossHair itself
raised), flushed at once, so that whatever ran before a kill is known. A selection that names
nothing to explore is one line on stderr, with status 2.
"""

import argparse
import dataclasses
import inspect
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
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


SPACES: list[Any] = []  # the StateSpace of the path being run
SEARCH: list[Any] = []  # the options of the search being run, and the wall-clock time its share ends at
WATCH_AGAIN = 0.05  # CPU seconds: when the clock runs out outside the body's own code, look again this soon


def out_of_time(space: Any, frame: FrameType | None) -> bool:
    """The path has run past its time in the body of the target."""
    return time.process_time() > space.execution_deadline and not space.is_detached and running_body(frame)


def install_did_not_end() -> None:
    """A path that runs out of its time in the target's body raises DidNotEnd, where CrossHair
    looks at its clock (StateSpace.check_timeout, where the path branches anew) and, for a loop that
    branches no more, when the CPU clock's signal comes (SIGPROF, armed for each path) while the
    body's own code runs (never inside CrossHair's or z3's: it looks again WATCH_AGAIN later)."""
    import crosshair
    import z3
    from crosshair.statespace import StateSpace

    check_timeout, start = StateSpace.check_timeout, StateSpace.__init__
    library = tuple(str(Path(package.__file__ or "").parent) for package in (crosshair, z3))

    def did_not_end(space: Any) -> None:
        if out_of_time(space, sys._getframe(1)):
            raise DidNotEnd("the call had not ended when its path's time ran out")
        check_timeout(space)

    def watched(space: Any, *args: Any, **kwargs: Any) -> None:
        start(space, *args, **kwargs)
        SPACES[:] = [space]
        if SEARCH and time.monotonic() > SEARCH[1]:  # crosshair.core.analyze_calltree stops before the next path
            SEARCH[0].per_condition_timeout = -1.0
        signal.setitimer(signal.ITIMER_PROF, max(space.execution_deadline - time.process_time(), 0.0) + WATCH_AGAIN)

    def on_clock(signum: int, frame: FrameType | None) -> None:
        if SPACES and out_of_time(SPACES[0], frame) and frame is not None and not frame.f_code.co_filename.startswith(library):
            raise DidNotEnd("the call had not ended when its path's time ran out, in a loop that no longer branched")
        if SPACES and not SPACES[0].is_detached:
            signal.setitimer(signal.ITIMER_PROF, WATCH_AGAIN)

    StateSpace.check_timeout = did_not_end  # type: ignore[method-assign]
    StateSpace.__init__ = watched  # type: ignore[method-assign]
    signal.signal(signal.SIGPROF, on_clock)


class Everything(set):  # type: ignore[type-arg]
    """The set of every function: icontract skips the checks of a function it finds itself checking already."""

    def __contains__(self, item: object) -> bool:
        return True


def check_only_the_target() -> None:
    """CrossHair checks the target's conditions itself, and enforces the conditions of the functions
    they and the target call. Two of those checks are dropped, as each made a path of a rule such as
    access several times dearer (measured): icontract's own wrappers, which run every contract again
    (switched off as icontract switches off a function's checks while it checks them, icontract
    2.7.3 _checkers.py:792), and the postconditions of the rules the body calls, which each rule's
    own search states. The preconditions of the rules the body calls are still enforced (a caller
    that breaks one is at fault), and so is everything the target's conditions call: the
    postcondition of ratio_is_valid is what led CrossHair to S3-CONF-2's floats (not found in 20 s
    without it, in 4 s with it)."""
    import icontract._checkers
    from crosshair import enforce

    icontract._checkers._IN_PROGRESS.set(Everything())
    wrapper = enforce.EnforcementWrapper

    def body_calls_unchecked(fn: Any, conditions: Any, enforced: Any, first_arg: object) -> Any:
        called_by_the_body = running_body(sys._getframe(1))
        return wrapper(fn, dataclasses.replace(conditions, post=[]) if called_by_the_body else conditions, enforced, first_arg)

    enforce.EnforcementWrapper = body_calls_unchecked  # type: ignore[assignment]


def emit(record: object) -> None:
    print(json.dumps(record), flush=True)


CHOSEN_WEIGHT = 3  # a --function or --clause's own functions get three shares of the budget to each caller's one
PER_PATH = 2.0  # the most seconds of one path (CrossHair's own: the square root of the condition's): a loop is found sooner
BOUND = 4  # the integers an input holds lie in [-BOUND, BOUND]
SIZE = 3  # and its lists, tuples, sets and dicts hold at most SIZE entries


def bounded(value: object) -> bool:
    """The hunt's bound on an input: its lists, tuples, sets, dicts and dataclasses hold at most SIZE
    entries each, and the integers in them lie within [-BOUND, BOUND]. CrossHair explores small
    states far better (../shared/DESIGN.md: a planted S3FIFO bug found in 5.5 s with lengths <= 4).
    Loops, not all() over a generator: under CrossHair that never held over a dataclass's fields
    (measured)."""
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


def bounded_arguments(signature: inspect.Signature) -> Callable[[Any], bool] | None:
    """The bound on a call's arguments that are not plain numbers (``values``: CrossHair's mapping of
    them, with ``__old__``), or None when all are: a bound on a number is left to the rule's own
    preconditions (a bound on them slowed CrossHair's search of S3-CONF-2's floats from 2.5 s to
    past 20 s, measured; so did any precondition more)."""
    names = [name for name, parameter in signature.parameters.items() if parameter.annotation not in (int, float, bool, str)]
    if not names:
        return None

    def holds(values: Any) -> bool:
        for name in names:
            if not bounded(values[name]):
                return False
        return True

    return holds


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
    bound = bounded_arguments(conditions.sig)
    pre = [ConditionExpr(PRECONDITION, bound, *where, "bounded"), *conditions.pre] if bound else conditions.pre
    post = ConditionExpr(POSTCONDITION, all_hold, *where, " and ".join(p.expr_source for p in posts))
    return ConditionCheckable(first.ctxfn, first.options, dataclasses.replace(conditions, pre=pre, post=[post],
                                                                              raises=conditions.raises | {KvspecError}))


def chosen_targets(args: argparse.Namespace) -> list[Any]:
    """The targets of the selection, each once, as chosen rather than as a caller when it is both
    (a SelectionError when it names nothing to explore)."""
    from kvspec.conformance.hunt import targets

    chosen = [t for name in args.function for t in targets.by_function(name)]
    chosen += [t for clause in args.clause for t in targets.by_clause(clause)]
    if not (args.function or args.clause):
        chosen = targets.scope_targets(targets.SCOPE if args.search == "check" else targets.AS_WRITTEN)
    by_name: dict[str, Any] = {}
    for target in chosen:
        if target.name not in by_name or not target.caller:
            by_name[target.name] = target
    return list(by_name.values())


def search_each(searches: list[tuple[Any, Any]], seconds: float, per_condition: float) -> None:
    """Run each target's search with its share of the budget, and report it as soon as it ends."""
    weights = [CHOSEN_WEIGHT if not target.caller else 1 for target, _ in searches]
    for done, (target, checkable) in enumerate(searches):
        left = seconds - (time.monotonic() - STARTED) - PER_PATH  # a search's last path may run past its share
        share = max(min(per_condition, left * weights[done] / sum(weights[done:])), 1e-3)
        began = time.monotonic()
        if hasattr(checkable, "conditions"):  # not a condition CrossHair could not read
            checkable.options = dataclasses.replace(checkable.options, per_condition_timeout=share,
                                                    per_path_timeout=min(PER_PATH, share ** 0.5 if share > 1 else share))
            BODY[:] = [checkable.conditions.fn.__code__]
            SEARCH[:] = [checkable.options, began + share]
        try:
            found = [(message.state.value, message.message, message.filename, message.line) for message in checkable.analyze()]
        except Exception as error:  # CrossHair's own failure (a type it cannot build): this search did not run
            found = [("crosshair_error", f"{type(error).__name__}: {error}".splitlines()[0], "", 0)]
        signal.setitimer(signal.ITIMER_PROF, 0)
        SPACES.clear()
        SEARCH.clear()
        for state, message, path, line in found or [("cannot_confirm", "", "", 0)]:
            emit({"function": target.name, "seconds": round(time.monotonic() - began, 2), "state": state, "message": message, "path": path,
                  "line": line})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvspec.conformance.hunt.runner")
    parser.add_argument("--seconds", type=float, required=True, help="the time the whole search may take, from this process's start")
    parser.add_argument("--per-condition", type=float, required=True, help="the most seconds one target's search may take")
    parser.add_argument("--search", choices=["check", "as-written"], default="check")
    parser.add_argument("--function", action="append", default=[], help="a function to explore, with its callers")
    parser.add_argument("--clause", action="append", default=[], help="the functions that cite a clause, with their callers")
    args = parser.parse_args(argv)

    from crosshair.auditwall import engage_auditwall
    from crosshair.core_and_libs import analyze_function
    from crosshair.fnutil import FunctionInfo
    from crosshair.options import AnalysisOptionSet

    from kvspec.conformance.hunt.targets import SelectionError, plain
    from kvspec.reference import contracts

    if contracts.LEVEL != "all":
        print("the hunt needs every contract installed: KVSPEC_CONTRACTS=all", file=sys.stderr)
        return 2
    try:
        targets = chosen_targets(args)
    except SelectionError as error:
        print(error, file=sys.stderr)
        return 2
    options = AnalysisOptionSet(per_condition_timeout=args.per_condition, report_all=True)
    plan = [(target, analyze_function(FunctionInfo(target.holder, target.attribute, vars(target.holder)[target.attribute]), options))
            for target in targets]
    emit({"plan": [[target.name, len(checkables), list(inspect.signature(plain(target.function)).parameters)]
                   for target, checkables in plan]})
    searches = [(target, one_search(checkables)) for target, checkables in plan if checkables]
    if not searches:
        print("WARNING: Targets found, but contain no checkable functions.", file=sys.stderr)
        return 2
    install_did_not_end()
    check_only_the_target()
    engage_auditwall()
    search_each(searches, args.seconds, args.per_condition)
    return 0


if __name__ == "__main__":
    sys.exit(main())
