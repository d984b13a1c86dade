"""`crosshair check` (`kvspec hunt check`) explores the reference's contracts and finds no counterexample.

CrossHair runs with every contract installed (KVSPEC_CONTRACTS=all), a bounded time for each
condition, and --report_all, so that the test also sees which conditions it analysed: a run that
analysed nothing must not pass. The rules are plain functions over dicts and a NamedTuple
because that is what CrossHair explores well (see ../shared/DESIGN.md and reference/queues.py).
"""

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.conformance.hunt.search import CHECK_TARGETS
from kvspec.reference import fifo, lru, s3fifo

replay = importlib.import_module("kvspec.reference.replay")  # the package's `replay` is the function

TARGETS = CHECK_TARGETS  # `kvspec hunt check` runs this very search
SECONDS_PER_CONDITION = "4"

# Each rule whose contracts must have been explored.
ANALYSED = [
    *((s3fifo, name) for name in ["small_cap_for", "derive_caps", "access", "admit_to_small", "admit_to_main", "insert_to_ghost"]),
    (lru, "access"),
    (fifo, "access"),
    (replay, "hit_tokens"),
    # The postconditions every S3FIFO rule takes from s3fifo_rule report on the lines of their functions.
    (s3fifo, "within_caps"),
    (s3fifo, "entries_are_valid"),
]


@pytest.fixture(scope="module")
def crosshair_report() -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KVSPEC_CONTRACTS": "all"}
    command = [sys.executable, "-m", "crosshair", "check", "--report_all", "--per_condition_timeout", SECONDS_PER_CONDITION, *TARGETS]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)


def test_crosshair_finds_no_counterexample_in_the_reference(crosshair_report: subprocess.CompletedProcess[str]) -> None:
    errors = [line for line in crosshair_report.stdout.splitlines() if ": error: " in line]
    assert errors == [], "\n".join(errors)
    assert crosshair_report.returncode == 0, crosshair_report.stderr[-3000:]


def test_crosshair_analysed_every_rule(crosshair_report: subprocess.CompletedProcess[str]) -> None:
    """Each rule has a condition that CrossHair reported on (a decorator line of that rule), and so has
    the shared postcondition of the S3FIFO rules (a line of the function that is the condition)."""
    reported = set(re.findall(r"^(.*):(\d+): info: ", crosshair_report.stdout, re.MULTILINE))
    for module, name in ANALYSED:
        function = inspect.unwrap(getattr(module, name))
        source, first = inspect.getsourcelines(function)  # from the first decorator to the body
        path = inspect.getsourcefile(function)
        decorators = {str(line) for line in range(first, first + len(source))}
        assert any(Path(file) == Path(path) and line in decorators for file, line in reported), f"{name}: nothing analysed"
