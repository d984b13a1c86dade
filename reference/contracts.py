"""The switch that installs the reference's contracts, and the decorators that cite clauses.

Every contract names the clause it enforces in its description, so a violation reads
``S3-ADMIT-S-4: ...``. KVSPEC_CONTRACTS is read once, at import:

- unset, empty or ``0``: no contract is installed; the rules run as plain functions at full speed.
- ``1``: the contracts that cost O(1) a call are installed, and the per-request state
  invariants (O(cache size) once a request) run in the replay.
- ``all`` (in any case): also the O(cache size) contracts on every block access, which CrossHair needs to
  state the queue invariants and which only small caches can afford.

The test suite sets ``all`` (tests/conftest.py); `crosshair check` runs with ``all``.
With no contract installed, icontract is not even imported: it would double the time `kvspec
replay` takes to start, for decorators that return each function as it is.
"""

import os
from collections.abc import Callable
from typing import Any, TypeVar

LEVELS = ("0", "1", "all")
LEVEL = os.environ.get("KVSPEC_CONTRACTS", "").strip().lower() or "0"  # set but empty, as unset: a shell's `VAR= cmd`
if LEVEL not in LEVELS:
    raise ImportError(f"KVSPEC_CONTRACTS={os.environ['KVSPEC_CONTRACTS']!r}: must be 0 (or unset or empty), 1 or all")

CHEAP = LEVEL in ("1", "all")
STATE = LEVEL == "all"

if CHEAP:
    import icontract

F = TypeVar("F", bound=Callable[..., Any])


def uninstalled(function: F) -> F:
    """What icontract's decorators do when not enabled: the function, unchanged."""
    return function


def installed(per_access_state: bool) -> bool:
    return STATE if per_access_state else CHEAP


def require(condition: Callable[..., Any], clause: str, *, per_access_state: bool = False) -> Callable[[F], F]:
    """A precondition citing ``clause``; ``per_access_state`` marks an O(cache size) one."""
    return icontract.require(condition, clause, enabled=True) if installed(per_access_state) else uninstalled


def ensure(condition: Callable[..., Any], clause: str, *, per_access_state: bool = False) -> Callable[[F], F]:
    """A postcondition citing ``clause``; ``per_access_state`` marks an O(cache size) one."""
    return icontract.ensure(condition, clause, enabled=True) if installed(per_access_state) else uninstalled


def snapshot(capture: Callable[..., Any], name: str, *, per_access_state: bool = False) -> Callable[[F], F]:
    """Capture a value before the call, for postconditions that read it as ``OLD.<name>``."""
    return icontract.snapshot(capture, name=name, enabled=True) if installed(per_access_state) else uninstalled
