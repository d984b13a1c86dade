"""Small helpers the policy tests share."""

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import icontract
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from kvspec.adapters.interface import AdapterConfig
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.reference import FIFO, LRU, S3FIFO

SCHEMAS = Path(__file__).resolve().parent.parent / "spec" / "schemas"


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


def certify_report(adapter: str, policy: str, directory: Path) -> tuple[int, Any]:
    """`kvspec certify` (quick profile, seed 0) in a process of its own with the reference's
    contracts off, as a user runs it: the exit status and the report. The galleries' mutants are
    certified this way, so that their many shrinking runs do not pay for the O(state) checks the
    rest of the suite runs with."""
    from kvspec.conformance.certification.verdict.report import Report

    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", adapter, "--policy", policy,
                          "--report", str(directory)], capture_output=True, text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode in (0, 3), run.stderr
    return run.returncode, Report.model_validate_json((directory / "report.json").read_text())


def certified_apart(module: str, implementation: str, policy: str) -> tuple[bool, str]:
    """Whether ``implementation`` (an expression in ``module``, a test module) conforms on
    ``policy``, certified quick at seed 0 in a Python of its own: without typeguard's checks of
    every kvspec call, which make an in-process certification about six times slower (92 s against
    16 s) and do not change what the certifier draws or finds, and, as certify_report, with the
    reference's contracts off (a fifth of the time): they check the reference, which the
    certifications of the reference itself run under every contract (tests/test_certify.py)."""
    code = (f"from kvspec.conformance.certification.certify import certify_policy\nfrom {module} import *\n"
            f"outcome = certify_policy({implementation}, {policy!r}, 'quick', 0)\nprint(outcome.conforms)\nprint(outcome.message)")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    verdict, _, message = run.stdout.partition("\n")
    return verdict == "True", message.rstrip("\n")


class Recording(ReferenceAdapter):
    """The reference, recording what it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.configs: list[AdapterConfig] = []
        self.requests: list[list[int]] = []

    def configure(self, config: AdapterConfig) -> None:
        self.configs.append(config)
        super().configure(config)

    def access(self, hash_ids: list[int]) -> None:
        self.requests.append(list(hash_ids))
        super().access(hash_ids)


@functools.cache
def schema_registry() -> Registry:
    """Every schema of spec/schemas/ by its $id, so that a reference resolves without fetching anything."""
    schemas = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(SCHEMAS.rglob("*.schema.json"))]
    return Registry().with_resources((schema["$id"], DRAFT202012.create_resource(schema)) for schema in schemas)


@functools.cache
def schema_validator(path: str) -> Draft202012Validator:
    """jsonschema's validator of spec/schemas/``path``."""
    return Draft202012Validator(json.loads((SCHEMAS / path).read_text(encoding="utf-8")), registry=schema_registry())


def schema_errors(path: str, instance: object) -> list[str]:
    """Where ``instance`` breaks spec/schemas/``path``, a line a problem; none when it matches."""
    return [f"{path} at /{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}"
            for error in schema_validator(path).iter_errors(instance)]
