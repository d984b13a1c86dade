"""The published certification of the PyPI package s3fifo-cache 0.1.1 (docs/certifications/s3fifo-cache/),
its dialect (reference/dialects, KNOWN_DIALECTS["s3fifo-cache"]) replayed in lockstep with it, and
each fact its README states about the package, checked on the version installed.

s3fifo-cache installs a package named ``s3fifo``, as PyPI's s3fifo (the `test` extra) does, so it
lives in a folder of its own, .venv/s3fifo-cache (``pip install --no-deps --target``; .ci/run
installs it), and the adapter runs in a process of its own (python -m kvspec.adapters.serve), which
imports it from there. Without that folder these tests skip, unless the environment variable
KVSPEC_REQUIRE_S3FIFO_CACHE (which .ci/run sets) or CI is set: then they fail, so that CI never
passes without having run them.
"""

import os
import random
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.process import ProcessAdapter
from kvspec.conformance.certification.certify import certify_policy
from kvspec.reference import ConfigError, ReplayConfig, make_policy
from kvspec.reference.dialects import DialectS3FIFO, dialect_for
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks

from certifications import CERTIFICATIONS, published_report_replays, readme_cites_only, reproduced_by_its_dialect

PACKAGE_DIR = Path(sys.prefix) / "s3fifo-cache"  # where the adapter imports the package from (its PACKAGE_DIR)
INSTALL = f"{sys.executable} -m pip install --no-deps --target {PACKAGE_DIR} s3fifo-cache==0.1.1"
INSTALLED = (PACKAGE_DIR / "s3fifo").is_dir()
REQUIRED = bool(os.environ.get("KVSPEC_REQUIRE_S3FIFO_CACHE") or os.environ.get("CI"))
SERVE = [sys.executable, "-m", "kvspec.adapters.serve", f"python:{CERTIFICATIONS / 's3fifo-cache' / 'adapter.py'}:adapter"]
DIALECT = dialect_for("s3fifo", "s3fifo-cache")

pytestmark = pytest.mark.skipif(not INSTALLED and not REQUIRED, reason=f"s3fifo-cache is not installed in its own folder: {INSTALL}")


@pytest.fixture(scope="module")
def installed() -> Path:
    """The package's own folder, or the test fails (it skips only where neither variable is set)."""
    if not INSTALLED:
        pytest.fail(f"KVSPEC_REQUIRE_S3FIFO_CACHE or CI is set and s3fifo-cache is not installed: {INSTALL} (.ci/run does)")
    return PACKAGE_DIR


@pytest.fixture(scope="module")
def package(installed: Path) -> Iterator[ProcessAdapter]:
    """The package behind its adapter, in a process of its own, started once for the module."""
    with ProcessAdapter(SERVE) as adapter:
        yield adapter


def test_the_published_report_is_for_the_installed_version_and_its_counterexamples_replay(installed: Path) -> None:
    published_report_replays("s3fifo-cache", "s3fifo-cache", installed)


def test_a_quick_certification_through_the_published_adapter_fails(installed: Path) -> None:
    outcome = certify_policy(Implementation(f"cmd:{shlex.join(SERVE)}"), "s3fifo")
    assert not outcome.conforms and all(finding.divergence is not None for finding in outcome.findings), outcome.message


def test_a_quick_certification_against_its_dialect_conforms(installed: Path) -> None:
    """DIALECT-7: through the published adapter, in its own process, as `kvspec certify --dialect s3fifo-cache` runs it."""
    outcome = certify_policy(Implementation(f"cmd:{shlex.join(SERVE)}"), "s3fifo", dialect=DIALECT)
    assert outcome.conforms, outcome.message


def test_the_published_readme_cites_only_facts_these_tests_check() -> None:
    readme_cites_only("s3fifo-cache", {name for name in globals() if name.startswith("test_")})


def queues(cache: DialectS3FIFO) -> Snapshot:
    return Snapshot(small=tuple(cache.small.items()), main=tuple(cache.main.items()), ghost=tuple(cache.ghost))


def in_lockstep(package: ProcessAdapter, config: AdapterConfig, requests: list[tuple[list[int], int]]) -> None:
    """The dialect and the package agree on the configuration (both build it or both refuse it)
    and, request by request, on the hit tokens, S, M (with freqs), G and the resident count."""
    dialect = ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq, DIALECT)
    try:
        reference = make_policy(dialect)
    except ConfigError:
        with pytest.raises(ConfigRefused):
            package.configure(config)
        return
    package.configure(config)
    for n, (hash_ids, input_length) in enumerate(requests, 1):
        expected = hit_tokens(prefix_hit_blocks(hash_ids, reference.is_resident), config.block_size, input_length)
        assert package.hit_tokens(hash_ids, input_length) == expected, (config, n)
        for h in hash_ids:
            reference.access(h)
        package.access(hash_ids)
        assert package.snapshot() == queues(reference), (config, n)
        assert package.resident_count() == reference.resident_count(), (config, n)


# small_ratio at and beside the ends of the open interval the package takes, and in between
RATIOS = (0.0, 5e-324, 1e-12, 0.1, 0.2, 1 / 3, 0.5, 0.9, 1 - 1e-12, 0.9999999999999999, 1.0)


def random_requests(draw: random.Random, capacity: int) -> list[tuple[list[int], int]]:
    """Up to 20 requests over a universe of up to 4 × capacity + 4 hashes, often extending the
    previous request's prefix (so that prefix hits, ghost hits and promotions all happen)."""
    universe = draw.randint(1, 4 * capacity + 4)
    requests: list[tuple[list[int], int]] = []
    previous: list[int] = []
    for _ in range(draw.randint(0, 20)):
        shared = previous[: draw.randint(1, len(previous))] if previous and draw.random() < 0.4 else []
        hash_ids = shared + [draw.randrange(universe) for _ in range(draw.randint(0 if shared else 1, 4))]
        requests.append((hash_ids, draw.randint(2 * len(hash_ids) - 1, 2 * len(hash_ids) + 1)))
        previous = hash_ids
    return requests


def test_s3fifo_cache_agrees_with_its_dialect_on_random_examples(package: ProcessAdapter) -> None:
    """DIALECT-5: capacities 1 to 40, small_ratio at the interval's ends and anywhere, max_freq 0 to 5."""
    draw = random.Random(15)
    for _ in range(200):
        capacity = draw.randint(1, 40)
        ratio = draw.choice(RATIOS) if draw.random() < 0.5 else draw.random()
        in_lockstep(package, AdapterConfig("s3fifo", capacity, 2, ratio, draw.randint(0, 5)), random_requests(draw, capacity))


def test_s3fifo_cache_agrees_with_its_dialect_on_the_mooncake_traces(installed: Path) -> None:
    """DIALECT-5: the whole of each bundled trace, through the published adapter in its own process,
    queue by queue (`kvspec replay --dialect s3fifo-cache --adapter ...`), at capacities 64 and 256."""
    reproduced_by_its_dialect("s3fifo-cache", "s3fifo-cache", "s3fifo", (64, 256), adapter=f"cmd:{shlex.join(SERVE)}",
                              certify=False)  # test_a_quick_certification_against_its_dialect_conforms does, with the same seed


def queues_after(package: ProcessAdapter, capacity: int, small_ratio: float, requests: list[list[int]]) -> Snapshot:
    """The package's S, M (with freqs) and G, head first, after ``requests`` on a fresh cache (max_freq 3)."""
    package.configure(AdapterConfig("s3fifo", capacity, 1, small_ratio, 3))
    for hash_ids in requests:
        package.access(hash_ids)
    return package.snapshot()


def test_s3fifo_cache_truncates_small_cap_and_keeps_it_at_least_1(package: ProcessAdapter) -> None:
    """S3-CONF-2, S3-CONF-5: round(15 × 0.1) = 2 and round(26 × 1e-12) = 0 (refused); the package
    takes max(1, int(·)) = 1 for both, so a second new block pushes the first out of S."""
    for capacity, small_ratio in [(15, 0.1), (26, 1e-12)]:
        assert queues_after(package, capacity, small_ratio, [[1], [2]]) == Snapshot(small=((2, 0),), ghost=(1,))


def test_s3fifo_cache_refuses_small_ratio_0_and_1_itself(package: ProcessAdapter) -> None:
    """S3-CONF-1 takes [0, 1] (and S3-CONF-5 then refuses both ends); the package refuses them as
    outside the open interval (0, 1), before it computes any size."""
    for small_ratio in (0.0, 1.0):
        with pytest.raises(ConfigRefused, match=r"small_ratio must be in the open interval \(0, 1\)"):
            package.configure(AdapterConfig("s3fifo", 100, 1, small_ratio, 3))


def test_s3fifo_cache_accepts_capacity_1_and_drops_what_it_promotes(package: ProcessAdapter) -> None:
    """S3-CONF-5, S3-ADMIT-M-4: capacity 1 gives small_cap 1 and main_cap 0, which the package
    accepts; 1, hit once, is promoted out of S when 2 arrives, and kept neither in M nor in G."""
    assert queues_after(package, 1, 0.5, [[1], [1], [2]]) == Snapshot(small=((2, 0),))


def test_s3fifo_cache_keeps_a_ghost_as_large_as_the_capacity(package: ProcessAdapter) -> None:
    """S3-CONF-4: ghost_cap = main_cap = 3 at capacity 4, small_ratio 0.25; the package's ghost_ratio
    1.0 gives ghost_cap = capacity = 4, so five blocks passed through S leave four in G."""
    assert queues_after(package, 4, 0.25, [[1], [2], [3], [4], [5], [6]]) == Snapshot(small=((6, 0),), ghost=(2, 3, 4, 5))


def test_s3fifo_cache_lowers_freq_on_promotion(package: ProcessAdapter) -> None:
    """S3-ADMIT-S-2: a block promoted from S keeps its freq; the package lowers it by 1 (2 reaches
    freq 3 in S and enters M with 2)."""
    snapshot = queues_after(package, 10, 0.2, [[2], [2], [2], [2], [3], [4]])
    assert snapshot == Snapshot(small=((3, 0), (4, 0)), main=((2, 2),))


def test_s3fifo_cache_forgets_main_victims(package: ProcessAdapter) -> None:
    """S3-ADMIT-M-3: a block evicted from M goes to G; the package forgets it. Capacity 4,
    small_ratio 0.5: 1 and 2 are promoted with freq 0 and fill M; promoting 3 evicts 1."""
    snapshot = queues_after(package, 4, 0.5, [[1], [1], [2], [2], [3], [4], [3], [5]])
    assert snapshot == Snapshot(small=((4, 0), (5, 0)), main=((2, 0), (3, 0)))
