"""What every published certification of a third-party implementation (docs/certifications/)
must still show, for the version installed (pyproject.toml pins it): its report names that
version, every shrunk counterexample in it replays to the same divergence, a quick certification
through its adapter fails, and its README cites only tests that check its rows. Each package's
tests (tests/test_thirdparty_*.py) run these on its own folder, and skip where the package is not
installed: the heavy ones are in the `thirdparty` extra, which CI does not install."""

import json
import os
import random
import shlex
import subprocess
import sys
from importlib.metadata import distributions, version
from pathlib import Path

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import Adapter, AdapterConfig
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.verdict.report import Report
from kvspec.reference import ReplayConfig, make_policy, replay_request
from kvspec.reference.dialects import Dialect

ROOT = Path(__file__).resolve().parent.parent
CERTIFICATIONS = ROOT / "docs" / "certifications"


def adapter_of(folder: str, spelling: str = "python") -> str:
    """The published spelling (``python:``, served, which each README shows), or ``in-process:``, where isolation is not the point."""
    return f"{spelling}:{CERTIFICATIONS / folder / 'adapter.py'}:adapter"


def published_report_replays(folder: str, package: str, installed_in: Path | None = None) -> None:
    """``installed_in``: the folder the package is installed in, where it is not on sys.path."""
    report = Report.model_validate_json((CERTIFICATIONS / folder / "report.json").read_text())
    installed = version(package) if installed_in is None else next(iter(distributions(name=package, path=[str(installed_in)]))).version
    assert report.implementation["version"] == installed and not report.conforms
    failures = [failure for verdict in report.policies for failure in verdict.failures]
    assert failures and all(failure.clauses for failure in failures)
    for failure in failures:
        if failure.replay_command is None:
            assert failure.request == 0  # a configuration: no trace to replay
            continue
        command = shlex.split(failure.replay_command)
        run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *command[1:]], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "1"})
        assert run.returncode == 3, run.stderr
        assert f"(request {failure.request}): {', '.join(failure.clauses)}: " in run.stderr


def quick_certification_fails(folder: str) -> None:
    outcome = certify_policy(load_adapter(adapter_of(folder, "in-process")), "s3fifo")
    assert not outcome.conforms and all(finding.divergence is not None for finding in outcome.findings), outcome.message


def readme_cites_only(folder: str, tests: set[str]) -> None:
    """The README's table of causes names, for each row it does not show by the report, a test of ``tests`` that checks it."""
    readme = (CERTIFICATIONS / folder / "README.md").read_text()
    cited = {word.strip("`") for word in readme.split() if word.strip("`").startswith("test_")}
    assert cited and cited <= tests, cited - tests
    assert json.loads((CERTIFICATIONS / folder / "report.json").read_text())["adapter"] in readme


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: a process of its own, the reference's cheap contracts on."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "1"})


def reproduced_by_its_dialect(folder: str, dialect: str, policy: str, capacities: tuple[int, ...], adapter: str | None = None, *,
                              certify: bool = True) -> None:
    """DIALECT-5, DIALECT-7: the package conforms to its named dialect (a quick certification,
    unless the package's tests ``certify`` it themselves), and replays the whole of both bundled
    Mooncake traces in lockstep with the reference in that dialect at each capacity: every
    request's hit tokens (and, at the state level, its queues) and the resident count after each."""
    adapter = adapter or adapter_of(folder, "in-process")
    if certify:
        certified = kvspec("certify", "--adapter", adapter, "--policy", policy, "--dialect", dialect)
        assert certified.returncode == 0, certified.stdout + certified.stderr
    for trace in ("conversation", "synthetic"):
        for capacity in capacities:
            replayed = kvspec("replay", trace, "--policy", policy, "--dialect", dialect, "--capacity", str(capacity), "--adapter", adapter)
            assert replayed.returncode == 0, (trace, capacity, replayed.stderr)
            assert json.loads(replayed.stdout)["requests"] > 3000


def agrees_in_dialect(adapter: Adapter, config: AdapterConfig, dialect: Dialect, requests: list[tuple[list[int], int]],
                      *, every_count: bool = True) -> list[int]:
    """The implementation and the reference in ``dialect``, in lockstep: each request's hit tokens
    (asked before its access) and the resident count after it (``every_count``), or after the last
    request only. The hit tokens, request by request."""
    reference = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, dialect=dialect))
    adapter.configure(config)
    hits = []
    for number, (hash_ids, input_length) in enumerate(requests, 1):
        actual = adapter.hit_tokens(hash_ids, input_length)
        adapter.access(hash_ids)
        expected = replay_request(reference, hash_ids, input_length, config.block_size)
        assert actual == expected, f"{config}, request {number} of {requests}: {actual} hit tokens, the dialect {expected}"
        if every_count or number == len(requests):
            assert adapter.resident_count() == reference.resident_count(), f"{config}, after request {number} of {requests}"
        hits.append(actual)
    return hits


def random_requests(draw: random.Random, *, chained: bool, block_size: int) -> list[tuple[list[int], int]]:
    """1 to 12 requests of 1 to 6 blocks, ids from a pool of 2 to 5: repeated within a request and
    found under other prefixes; or, ``chained``, each id naming its whole prefix, as in the Mooncake
    traces. Each input_length is one REPLAY-TRACE-3 accepts at ``block_size``."""
    pool = draw.randint(2, 5)
    raw = [[draw.randrange(pool) for _ in range(draw.randint(1, 6))] for _ in range(draw.randint(1, 12))]
    if chained:
        names: dict[tuple[int, ...], int] = {}
        raw = [[names.setdefault(tuple(ids[:i + 1]), len(names) + 1) for i in range(len(ids))] for ids in raw]
    return [(ids, draw.randint((len(ids) - 1) * block_size + 1, len(ids) * block_size)) for ids in raw]
