"""A canonical rule rebuilt over other names: the function of reference/s3fifo.py run with some of
the names it calls bound to modified rules, the canonical module unchanged (the dialects,
spec/dialects.md section 2, and the blocks in use, spec/lifecycle.md section 3)."""

import inspect
from types import FunctionType
from typing import Any


def rebuilt(function: FunctionType, names: dict[str, Any]) -> FunctionType:
    """``function`` without its contracts, reading its global names from ``names``."""
    plain = inspect.unwrap(function)
    return FunctionType(plain.__code__, names, plain.__name__, plain.__defaults__, plain.__closure__)
