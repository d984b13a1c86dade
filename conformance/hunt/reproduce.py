"""Each counterexample CrossHair reported, run again concretely: ``python -m kvspec.conformance.hunt.reproduce``,
the process `kvspec hunt` starts after the search, with every contract installed and no CrossHair.

CrossHair's symbolic execution can break a condition that plain Python never breaks: its proxies
nest deep enough to raise RecursionError where the same call does not (`kvspec hunt check` met one
on admit_to_small), and a path can run out of time on a call that ends at once. A counterexample
counts only once the function, called on the same arguments outside CrossHair, breaks the same
condition: the same postcondition of the same function fails (icontract's ViolationError), the
same exception is raised, or the call does not end within ENDS_WITHIN seconds.

It reads a JSON list of {"function", "args", "expect"} on stdin and writes one JSON line for each,
{"reproduced": bool, "outcome": what the call did}.
"""

import inspect
import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType, TracebackType
from typing import Any

ENDS_WITHIN = 1.0  # seconds: a rule on a bounded input ends in microseconds


class Ended(BaseException):
    """The concrete call ran out of its time (a BaseException: no rule's `except Exception` catches it)."""


def rebuilt(text: str, namespace: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments CrossHair printed, ``S3FIFO(Caps(1, 1, 1, 1), {}, {3: 1}, {}), 2, 0``, evaluated
    where the function is defined, as CrossHair wrote them from its constructors' reprs."""
    return eval(f"(lambda *args, **kwargs: (args, kwargs))({text})", dict(namespace))  # noqa: S307


def violated(error: BaseException) -> tuple[Any, Any, str] | None:
    """The function whose contract ``error`` reports (the innermost icontract wrapper it came
    through: the function and its wrapper, which holds its contracts), and the message; None for an
    exception that is not a contract's."""
    if type(error).__name__ != "ViolationError":
        return None
    innermost: tuple[Any, Any] = (None, None)
    trace: TracebackType | None = error.__traceback__
    while trace is not None:
        frame: FrameType = trace.tb_frame
        if frame.f_code.co_name == "wrapper" and "func" in frame.f_locals and "icontract" in frame.f_code.co_filename:
            innermost = frame.f_locals["func"], frame.f_locals.get("wrapper")
        trace = trace.tb_next
    return *innermost, str(error)


def outcome(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any, str]:
    """What the call did: ("returned", None, ""), ("raised", the exception, its message) or ("did not end", None, "")."""
    def expire(signum: int, frame: object) -> None:
        raise Ended

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, ENDS_WITHIN)
    try:
        function(*args, **kwargs)
    except Ended:
        return "did not end", None, ""
    except Exception as error:  # the rule's own failure: what is compared
        return "raised", error, f"{type(error).__name__}: {error}".splitlines()[0]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return "returned", None, ""


def preconditions_only(function: Any) -> Any:
    """A rule the target calls, checked as CrossHair's search checks it (conformance/hunt/runner.py):
    its preconditions, not its postconditions, which are its own search's to break."""
    import icontract

    plain = inspect.unwrap(function)
    checked = plain
    for contract in reversed([c for group in getattr(function, "__preconditions__", []) for c in group]):
        checked = icontract.require(contract.condition, contract.description, error=contract.error)(checked)
    return checked


@contextmanager
def called_rules_checked_as_in_the_search(module: ModuleType | None, target: Any) -> Iterator[None]:
    """The module's other rules, for the time of the call, checked as CrossHair's search checks them."""
    if module is None:
        yield
        return
    rules = {name: value for name, value in vars(module).items()
             if callable(value) and hasattr(value, "__postconditions__") and inspect.unwrap(value) is not inspect.unwrap(target)}
    try:
        vars(module).update({name: preconditions_only(rule) for name, rule in rules.items()})
        yield
    finally:
        vars(module).update(rules)


def reproduce(name: str, text: str, expect: dict[str, str]) -> dict[str, object]:
    """``expect``: {"kind": "postcondition"} (one of the function's own) | {"kind": "raises", "exception": type name}
    | {"kind": "did not end"}."""
    from kvspec.conformance.hunt.targets import module_of, plain, resolve

    try:
        holder, function = resolve(name)
        args, kwargs = rebuilt(text, vars(module_of(holder)) if holder is not None else {})
    except Exception as error:  # arguments that do not evaluate: nothing to run
        return {"reproduced": False, "outcome": f"its arguments do not rebuild: {type(error).__name__}: {error}".splitlines()[0]}
    if isinstance(holder, type) and isinstance(vars(holder).get(name.rsplit(".", 1)[1]), classmethod):
        function, args = getattr(holder, name.rsplit(".", 1)[1]), args[1:]  # CrossHair writes the class as the first argument
    with called_rules_checked_as_in_the_search(module_of(holder) if holder is not None else None, function):
        what, error, message = outcome(function, args, kwargs)
    if what != "raised":
        return {"reproduced": what == expect["kind"], "outcome": f"it {what}"}
    contract = violated(error) if error is not None else None
    own = contract is not None and contract[0] is plain(function)
    posts = getattr(function, "__postconditions__", []) if own else []
    condition = next((c.description for c in posts if f"{c.description}: " in contract[2]), None)
    if expect["kind"] == "postcondition":
        same = condition is not None
    elif expect["exception"] == "PreconditionFailed":  # CrossHair's name for a called rule's precondition that fails
        same, condition = called_rule_refused(contract, expect.get("message", ""))
    else:
        same = type(error).__name__ == expect["exception"].rsplit(".", 1)[-1]
    return {"reproduced": same, "outcome": f"it raised {message}", "condition": condition}


def called_rule_refused(contract: tuple[Any, Any, str] | None, crosshair: str) -> tuple[bool, str | None]:
    """Whether the concrete violation is the precondition CrossHair reported broken
    (``Precondition "TEXT" was not satisfied before calling "NAME"``), and that precondition's description."""
    if contract is None or contract[0] is None:
        return False, None
    function, wrapper, message = contract
    for group in getattr(wrapper, "__preconditions__", None) or []:
        for precondition in group:
            if f"{precondition.description}: " in message and f'before calling "{function.__name__}"' in crosshair:
                return True, f"{function.__name__}'s precondition {precondition.description}"
    return False, None


def main() -> int:
    for request in json.load(sys.stdin):
        print(json.dumps(reproduce(request["function"], request["args"], request["expect"])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
