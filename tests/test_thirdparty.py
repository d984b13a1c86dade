"""The published certifications of third-party S3FIFO implementations (docs/certifications/):
each report names the installed version, and every shrunk counterexample in it still replays to
the same divergence; and each fact that a certification's README states about the
implementation's source holds for the version installed (pyproject.toml pins it)."""

import json
import os
import random
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.report import Report

s3fifo = pytest.importorskip("s3fifo")
libcachesim = pytest.importorskip("libcachesim")

ROOT = Path(__file__).resolve().parent.parent
CERTIFICATIONS = ROOT / "docs" / "certifications"
PACKAGES = {"s3fifo-pypi": "s3fifo", "libcachesim": "libcachesim"}


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_the_published_report_is_for_the_installed_version_and_its_counterexamples_replay(name: str) -> None:
    report = Report.model_validate_json((CERTIFICATIONS / name / "report.json").read_text())
    assert report.implementation["version"] == version(PACKAGES[name]) and not report.conforms
    (verdict,) = report.policies
    assert verdict.failures and all(failure.clauses for failure in verdict.failures)
    for failure in verdict.failures:
        if failure.replay_command is None:
            assert failure.request == 0  # a configuration: no trace to replay
            continue
        command = shlex.split(failure.replay_command)
        run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *command[1:]], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "1"})
        assert run.returncode == 3, run.stderr
        assert f"(request {failure.request}): {', '.join(failure.clauses)}: " in run.stderr


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_a_quick_certification_through_the_published_adapter_fails(name: str) -> None:
    outcome = certify_policy(load_adapter(f"python:{CERTIFICATIONS / name / 'adapter.py'}:adapter"), "s3fifo")
    assert not outcome.conforms and all(finding.divergence is not None for finding in outcome.findings), outcome.message


def cache_aside(cache: "s3fifo.S3FIFOCache[bool]", keys: list[int]) -> None:
    for key in keys:
        if cache.get(key) is None:
            cache.put(key, True)


def test_s3fifo_truncates_small_cap_keeps_it_at_least_1_and_gives_main_everything_at_capacity_1() -> None:
    """S3-CONF-2, S3-CONF-5: round(15 * 0.1) = 2, not 1; capacity 1 must be refused."""
    assert s3fifo.S3FIFOCache(15, small_size_ratio=0.1)._small_cap == 1
    tiny = s3fifo.S3FIFOCache(1)
    assert (tiny._small_cap, tiny._main_cap) == (0, 1)


def test_s3fifo_never_recognises_a_ghost_hit() -> None:
    """S3-ACCESS-3: its ghost maps keys to None, and put() asks ``ghost.pop(key, None) is not None``."""
    cache = s3fifo.S3FIFOCache(4, small_size_ratio=0.25, ghost_size_ratio=0.75, move_to_main_threshold=1)
    cache_aside(cache, [1, 2, 3, 4, 5])
    assert list(cache._ghost) == [1]
    cache_aside(cache, [1])
    assert 1 in cache._small and 1 not in cache._main  # the spec admits a ghost hit to M


def test_s3fifo_does_not_saturate_freq() -> None:
    """S3-FREQ-2: freq += 1 on every hit; it is clamped to 3 only when M requeues the entry."""
    cache = s3fifo.S3FIFOCache(10, move_to_main_threshold=1)
    cache_aside(cache, [1] * 11)
    assert cache._small[1].freq == 10


def test_s3fifo_lets_main_grow_past_main_cap() -> None:
    """S3-INV-2, S3-ADMIT-M-1: promotions from S do not drain M first; only the total is bounded."""
    cache = s3fifo.S3FIFOCache(4, small_size_ratio=0.5, ghost_size_ratio=0.5, move_to_main_threshold=1)
    draw = random.Random(1)
    largest = 0
    for _ in range(2000):
        cache_aside(cache, [draw.randint(1, 8)])
        largest = max(largest, len(cache._main))
        assert len(cache) <= 4
    assert largest > cache._main_cap == 2


def test_libcachesim_aborts_the_process_when_the_small_fifo_has_0_bytes() -> None:
    """S3-CONF-2, S3-CONF-5: int(5 * 0.1) = 0 bytes, and S3FIFO_init aborts rather than refuse."""
    run = subprocess.run([sys.executable, "-c", "import libcachesim; libcachesim.S3FIFO(cache_size=5); print('alive')"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0 and "alive" not in run.stdout
    assert "small_fifo=0 bytes" in run.stdout + run.stderr


@pytest.mark.parametrize("capacity", [10, 15, 19])
def test_libcachesim_admits_nothing_when_the_small_fifo_holds_one_block(capacity: int) -> None:
    """S3-ACCESS-4, S3-ADMIT-S-4: S3FIFO_insert refuses an object as large as the small FIFO, so
    with one-block objects and int(capacity * 0.1) = 1 byte, every access misses."""
    cache = libcachesim.S3FIFO(cache_size=capacity, hashpower=10)
    hits = [cache.get(libcachesim.Request(obj_size=1, obj_id=key)) for key in [1, 2, 1, 2, 1]]
    assert hits == [False] * 5 and cache.get_n_obj() == 0


def test_libcachesim_has_no_max_freq_so_its_adapter_accepts_minus_1() -> None:
    """S3-CONF-6: max_freq -1 must be refused; the binding has no such knob to refuse it."""
    adapter = load_adapter(f"python:{CERTIFICATIONS / 'libcachesim' / 'adapter.py'}:adapter")
    adapter.configure(AdapterConfig("s3fifo", 6, 1, 0.5, -1))
    adapter.access([1])
    assert adapter.resident_count() == 1


def test_libcachesim_promotes_into_m_without_draining_it(tmp_path: Path) -> None:
    """S3-ADMIT-M-1, S3-INV-2: capacity 7, small_ratio 0.75 (small 5, main 2). While S is full,
    6 and 7 go to M (S3-ACCESS-4's variant); 1 and 2 are promoted into M on top of them, and the
    next evictions take 6 and 7 from M where the spec drains 3, 4 and 5 from S: at request 5 the
    scan finds a 2-block prefix [4, 5] resident that the spec has evicted."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 0, "input_length": len(ids), "output_length": 0, "hash_ids": ids}) + "\n"
                             for ids in ([1], [1, 2], [1, 2, 3], [4, 5, 6, 7, 8, 9, 10], [4, 5, 6, 7, 8, 9, 10, 11])))
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "replay", str(trace), "--adapter",
                          f"python:{CERTIFICATIONS / 'libcachesim' / 'adapter.py'}:adapter", "--policy", "s3fifo", "--capacity", "7",
                          "--block-size", "1", "--small-ratio", "0.75", "--max-freq", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "(request 5)" in run.stderr and "expected 0 hit tokens, got 2" in run.stderr, run.stderr


def test_the_published_readmes_cite_only_facts_these_tests_check() -> None:
    """Each README's table of causes names the test that checks each row."""
    tests = {name for name in globals() if name.startswith("test_")}
    for name in PACKAGES:
        readme = (CERTIFICATIONS / name / "README.md").read_text()
        cited = {word.strip("`") for word in readme.split() if word.strip("`").startswith("test_")}
        assert cited and cited <= tests, cited - tests
        assert json.loads((CERTIFICATIONS / name / "report.json").read_text())["adapter"] in readme
