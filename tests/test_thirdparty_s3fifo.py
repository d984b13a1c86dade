"""The published certification of the PyPI package s3fifo 0.0.1 (docs/certifications/s3fifo-pypi/),
and each fact its README states about the package's source, checked on the version installed."""

import random

import pytest

from certifications import published_report_replays, quick_certification_fails, readme_cites_only, reproduced_by_its_dialect

s3fifo = pytest.importorskip("s3fifo", reason="pip install '.[test]' (s3fifo 0.0.1)")


def test_the_published_report_is_for_the_installed_version_and_its_counterexamples_replay() -> None:
    published_report_replays("s3fifo-pypi", "s3fifo")


def test_a_quick_certification_through_the_published_adapter_fails() -> None:
    quick_certification_fails("s3fifo-pypi")


def test_its_dialect_s3fifo_pypi_reproduces_it_on_both_mooncake_traces() -> None:
    """DIALECT-5: spec/dialects.md's s3fifo-pypi dialect is the package, request by request, queue by queue."""
    reproduced_by_its_dialect("s3fifo-pypi", "s3fifo-pypi", "s3fifo", (64, 256))


def test_the_published_readme_cites_only_facts_these_tests_check() -> None:
    readme_cites_only("s3fifo-pypi", {name for name in globals() if name.startswith("test_")})


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


def test_s3fifo_sizes_its_ghost_at_90_percent_and_promotes_at_the_second_hit_by_default() -> None:
    """S3-CONF-4, S3-ADMIT-S-2: ghost_size_ratio 0.9 and move_to_main_threshold 2 unless told
    otherwise; a block hit once in S goes to G, not M (capacity 10, small 2)."""
    cache = s3fifo.S3FIFOCache(10, small_size_ratio=0.2)
    assert cache._ghost_cap == 9 and cache._main_cap == 8
    cache_aside(cache, [*range(1, 11), 1, 11])
    assert 1 in cache._ghost and 1 not in cache._main


def test_s3fifo_forgets_main_victims() -> None:
    """S3-ADMIT-M-3: an entry of M with freq 0 is dropped, never put in G (capacity 4, small 2: 3
    and 4 reach M by the first puts' shortcut; 1 and 2, hit twice, are promoted for 5, which
    empties S and evicts M's head, 3)."""
    cache = s3fifo.S3FIFOCache(4, small_size_ratio=0.5)
    cache_aside(cache, [1, 2, 3, 4, 1, 1, 2, 2, 5])
    assert (list(cache._small), list(cache._main), list(cache._ghost)) == ([5], [4, 1, 2], [])
