"""Every test runs the reference with all its contracts installed (reference/contracts.py).

The variable must be set before kvspec.reference is first imported, which is why it is set
here, at collection, and why tests/test_contracts.py checks that it took effect.

typeguard checks every kvspec call of every test, but for the few functions marked ``no_type_check``
(each says why: the contracts' own state checks, called with what the typed rule was given, and
recursive walks of a JSON value), and except in the tests marked ``untyped``: those
whose rule is a verdict (a certification that catches a mistaken implementation, or draws what it
must) and which run certifications over and over, where typeguard makes a run about four times
slower and checks what the typed tests check already (the reference certified in process and over
the protocol, tests/test_certify.py and tests/test_benefit_certify.py, and the rules' own tests):
each function typeguard checks in these tests, it checks in a typed test too, with arguments of
the same types (but for which implementation's class goes where any is taken, and which mix of
operations a list holds). A mistaken implementation of the galleries is kvspec code too: untyped,
it is caught by what certify checks, never by typeguard refusing one of its values.

Under pytest-xdist (`-n auto`, `--dist load`), the modules of FIRST run first, in that order:
the first worker is sent the first quarter of its share of the tests (about 200) at once, so that
each of these modules runs whole on one worker, which builds its costly module fixture once
(CrossHair's run, the full-trace replays, the Go build), and the longest, CrossHair's run, starts
at once rather than deciding when the suite ends. (`--dist loadgroup` would say so with marks, but
pytest 9.2 ignores the group pytest-xdist 3.8 writes into each test's id: pytest-xdist issue 1386.)
"""

import os

import pytest
from typeguard import suppress_type_checks

os.environ.setdefault("KVSPEC_CONTRACTS", "all")

FIRST = ["test_crosshair.py", "test_mooncake.py", "test_go_example.py"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: FIRST.index(item.path.name) if item.path.name in FIRST else len(FIRST))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    if item.get_closest_marker("untyped") is None:
        return (yield)
    with suppress_type_checks():
        return (yield)
