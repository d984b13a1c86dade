"""Small helpers the policy tests share."""

import re
from typing import Any

import icontract
import pytest

from kvspec.reference import FIFO, LRU, S3FIFO


def run(cache: Any, trace: list[int]) -> Any:
    """Access every hash of ``trace`` in order; the cache, for chaining."""
    for h in trace:
        cache.access(h)
    return cache


def violation(clause: str) -> Any:
    """Expect a contract violation whose message names ``clause``."""
    return pytest.raises(icontract.ViolationError, match=re.escape(clause))


def reference_state(policy: object) -> object:
    """A cache's queues, head first, in the shape tests/naive.py's state() returns them."""
    if isinstance(policy, S3FIFO):
        return list(policy.small.items()), list(policy.main.items()), list(policy.ghost)
    if isinstance(policy, LRU):
        return list(policy.recency)
    assert isinstance(policy, FIFO)
    return list(policy.arrival)
