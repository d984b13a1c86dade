"""Functions for tests/test_hunt_reproduce.py to point `kvspec hunt check --function` at: one whose
condition only CrossHair's execution breaks, one that is wrong for real, and two that do not end on
some input (one while it branches on its symbolic input, one in a loop that no longer branches).
Each carries icontract's contracts directly, as the reference's do when installed."""

import sys

import icontract

@icontract.ensure(lambda result: result, "traced: no tracer is set")
def traced(x: int) -> bool:
    """Holds in plain Python, where no tracer is set; CrossHair's search runs every call under its
    own tracer (crosshair-tool 0.0.113), so there it always breaks."""
    return sys.gettrace() is None


@icontract.ensure(lambda x, result: result != 3, "wrong: never 3")
def wrong(x: int) -> int:
    """Breaks its postcondition for real, at x = 3."""
    return x


@icontract.ensure(lambda result: result <= 0, "grows: ends at once")
def grows(n: int) -> int:
    """Never ends for n > 0: each turn asks n > 0 of a larger n, anew."""
    while n > 0:
        n += 1
    return n


@icontract.ensure(lambda result: result >= 0, "spins: returns at once")
def spins(x: int) -> int:
    """Never ends for x > 7, in a loop that asks nothing of x again: CrossHair's own clock is never looked at."""
    if x > 7:
        while True:
            pass
    return 0
