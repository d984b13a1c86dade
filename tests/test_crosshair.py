"""`kvspec hunt check` explores the reference's contracts and finds no counterexample.

The search is the hunt's own (conformance/hunt/search.py): CrossHair's check of every rule of
spec/s3fifo.md, lru.md, fifo.md, benefit.md and lifecycle.md that the reference states in contracts (conformance/hunt/targets.py),
within one budget that the rules share (conformance/hunt/runner.py), then each counterexample run
again concretely. A run that analysed nothing must not pass. The rules are plain functions over
dicts and small dataclasses because that is what CrossHair explores well (see ../shared/DESIGN.md
and reference/queues.py).
"""

import pytest

from kvspec.conformance.hunt.search import Hunted, hunt
from kvspec.conformance.hunt.targets import SCOPE, scope_targets

# seconds for the whole search, within which every rule is analysed: 27 of 27 in 38 s on an idle machine, but at 45 s
# S3FIFO's state-taking rules (access, insert_to_ghost) met no precondition within their share in two of three whole
# suite runs beside the other xdist worker (issue 30); 75 s for those 27, and 86 s since the four rules of the blocks in
# use joined them (31 rules: the same share each, about 2.7 s); 120 s since, on a machine half as fast as usual
# (2026-12-03: 19 minutes for the suite), S3FIFO's insert_to_ghost and admit_to_main in one run, and the LRU's and
# FIFO's accesses in use in another, met no precondition within 2.7 s; `kvspec hunt check` spends 300
BUDGET = 120.0


@pytest.fixture(scope="module")
def hunted() -> Hunted:
    return hunt("check", BUDGET, 10.0)


def test_crosshair_finds_no_counterexample_in_the_reference(hunted: Hunted) -> None:
    assert hunted.found == [], hunted.found
    # a counterexample only CrossHair finds ends that rule's search early: only CrossHair's own nondeterminism is let through
    assert [c for c in hunted.unreproduced if not c.found.startswith("NotDeterministic")] == [], hunted.unreproduced


def test_crosshair_analysed_every_rule(hunted: Hunted) -> None:
    """Every function that states a rule was searched, on some input that met its preconditions."""
    tried = {record["function"] for record in hunted.searched if record["state"] != "pre_unsat"}
    assert {target.name for target in scope_targets(SCOPE)} <= tried


def test_the_whole_search_keeps_within_its_budget(hunted: Hunted) -> None:
    assert hunted.seconds <= BUDGET
