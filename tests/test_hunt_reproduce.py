"""`kvspec hunt check` reports a counterexample only once the function, run concretely on the same
arguments outside CrossHair, breaks the same condition (conformance/hunt/reproduce.py), and a call
that does not end is a finding with its input (conformance/hunt/runner.py), against the functions
of tests/fakes/hunt_targets.py, built for it."""

import ast
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

FAKES = Path(__file__).resolve().parent / "fakes"
sys.path.insert(0, str(FAKES))
import hunt_targets  # noqa: E402

NOT_REPRODUCED = re.compile(r"^\d+ counterexamples? of CrossHair's not reproduced outside it .+:$")


def hunt(*functions: str, budget: str = "20") -> subprocess.CompletedProcess[str]:
    selection = [item for name in functions for item in ("--function", f"hunt_targets.{name}")]
    path = os.pathsep.join([str(FAKES), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "hunt", "check", *selection, "--budget", budget],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0", "PYTHONPATH": path})


def sections(stdout: str) -> tuple[list[str], list[str]]:
    """The counterexamples reported, and those listed apart as not reproduced."""
    lines = stdout.splitlines()
    apart = next((i for i, line in enumerate(lines) if NOT_REPRODUCED.match(line)), len(lines))
    return [line.strip() for line in lines[1:apart]], [line.strip() for line in lines[apart + 1:]]


def argument(line: str, name: str) -> int:
    value = re.search(rf"\b{name}=(-?\d+)", line)
    assert value, line
    return int(value[1])


def test_a_counterexample_only_crosshairs_search_meets_is_listed_apart_and_does_not_change_the_exit_status() -> None:
    """traced's postcondition breaks under CrossHair's tracer and holds in plain Python (about 3 s)."""
    run = hunt("traced")
    assert run.returncode == 0, run.stdout + run.stderr
    assert ": 0 counterexamples in " in run.stdout.splitlines()[0]
    reported, apart = sections(run.stdout)
    assert reported == [] and len(apart) == 1 and apart[0].startswith("traced(x=")
    assert apart[0].endswith(": false (concretely, it returned)"), apart
    assert hunt_targets.traced(argument(apart[0], "x"))  # and it does hold, here too


@pytest.mark.parametrize(("function", "call"), [
    ("kvspec.reference.s3fifo.derive_caps", "1, 0.0, 0"),
    ("kvspec.reference.s3fifo.admit_to_small", "S3FIFO(Caps(1, 2, 2, 1), {6: 1}, {}, {3: False, 4: False}), 5"),
])
def test_the_recursion_errors_crosshair_reported_on_the_reference_do_not_reproduce(function: str, call: str) -> None:
    """The two "counterexamples" `kvspec hunt check` reported before (issue 28): run concretely, each returns."""
    from kvspec.conformance.hunt.reproduce import reproduce

    assert reproduce(function, call, {"kind": "raises", "exception": "RecursionError"}) == {"reproduced": False, "outcome": "it returned"}


def test_a_counterexample_that_reproduces_is_reported_beside_one_that_does_not() -> None:
    """About 4 s."""
    run = hunt("traced", "wrong")
    assert run.returncode == 3, run.stdout + run.stderr
    reported, apart = sections(run.stdout)
    assert reported == ["wrong(x=3): breaks wrong: never 3"], reported
    assert [line.split("(", 1)[0] for line in apart] == ["traced"]


def ends_within(seconds: float, call: object) -> bool:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        call()  # type: ignore[operator]
    except TimeoutError:
        return False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return True


@pytest.mark.parametrize(("function", "never_ends"), [
    ("grows", lambda n: n > 0),  # every turn asks of its input anew: CrossHair's clock is looked at
    ("spins", lambda x: x > 7),  # the loop no longer branches: the CPU clock's signal catches it
])
def test_a_call_that_does_not_end_is_a_finding_with_its_input(function: str, never_ends: object) -> None:
    """Each about 4 s; before, CrossHair gave the path up as "not confirmed" (grows) or held the search
    past its budget (spins)."""
    run = hunt(function)
    assert run.returncode == 3, run.stdout + run.stderr
    reported, apart = sections(run.stdout)
    assert len(reported) == 1 and ": does not end: " in reported[0] and apart == [], run.stdout
    name = ast.parse(reported[0].split(")", 1)[0] + ")", mode="eval").body.keywords[0]  # type: ignore[attr-defined]
    value = ast.literal_eval(name.value)
    assert never_ends(value)  # type: ignore[operator]
    assert not ends_within(0.5, lambda: getattr(hunt_targets, function)(value))
