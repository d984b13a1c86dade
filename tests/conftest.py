"""Every test runs the reference with all its contracts installed (reference/contracts.py).

The variable must be set before kvspec.reference is first imported, which is why it is set
here, at collection, and why tests/test_contracts.py checks that it took effect.

typeguard checks every kvspec call of every test, except in the tests marked ``untyped``: those
whose rule is a verdict (a certification that catches a mistaken implementation, or draws what it
must) and which run certifications over and over, where typeguard makes a run about four times
slower and checks what the typed certifications of the reference already check (the reference
conforms in process and over the protocol, every policy: tests/test_certify.py,
tests/test_benefit_certify.py). A mistaken implementation of the galleries is kvspec code too:
untyped, it is caught by what certify checks, never by typeguard refusing one of its values.
"""

import os

import pytest
from typeguard import suppress_type_checks

os.environ.setdefault("KVSPEC_CONTRACTS", "all")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    if item.get_closest_marker("untyped") is None:
        return (yield)
    with suppress_type_checks():
        return (yield)
