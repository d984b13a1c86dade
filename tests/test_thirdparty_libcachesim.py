"""The published certification of libCacheSim's S3FIFO through the PyPI package libcachesim 0.3.5
(docs/certifications/libcachesim/), and each fact its README states about the binding, checked on
the version installed. libcachesim is heavy (native libraries, numpy, boto3): it is in the
`thirdparty` extra, and these tests skip without it."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import AdapterConfig, ConfigRefused
from kvspec.reference.dialects import dialect_for

from certifications import (
    adapter_of,
    agrees_in_dialect,
    published_report_replays,
    quick_certification_fails,
    random_requests,
    readme_cites_only,
    reproduced_by_its_dialect,
)

libcachesim = pytest.importorskip("libcachesim", reason="pip install '.[thirdparty]' (libcachesim 0.3.5)")


def test_the_published_report_is_for_the_installed_version_and_its_counterexamples_replay() -> None:
    published_report_replays("libcachesim", "libcachesim")


def test_a_quick_certification_through_the_published_adapter_fails() -> None:
    quick_certification_fails("libcachesim")


def test_its_dialect_libcachesim_reproduces_its_s3fifo_on_both_mooncake_traces() -> None:
    """DIALECT-5: spec/dialects.md's libcachesim dialect is S3FIFO.c, request by request."""
    reproduced_by_its_dialect("libcachesim", "libcachesim", "s3fifo", (64, 256, 4096))


def test_the_published_readme_cites_only_facts_these_tests_check() -> None:
    readme_cites_only("libcachesim", {name for name in globals() if name.startswith("test_")})


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
    adapter = load_adapter(adapter_of("libcachesim", "in-process"))
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
                          adapter_of("libcachesim"), "--policy", "s3fifo", "--capacity", "7",
                          "--block-size", "1", "--small-ratio", "0.75", "--max-freq", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "(request 5)" in run.stderr and "expected 0 hit tokens, got 2" in run.stderr, run.stderr


# Hash ids at the edges of kvspec's signed 64-bit range, which the adapter maps one to one onto libCacheSim's unsigned obj_id.
WIDE = [-(2**63), -1, 0, 2**63 - 1, 2**62, -(2**62)]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_libcachesim_lru_and_fifo_agree_with_their_dialect_in_lockstep(policy: str) -> None:
    """The dialect libcachesim of LRU and FIFO (capacity-0-empty), request by request: hit tokens
    and resident count, at capacities 0 to 8, block sizes 1, 3 and 16, chained and arbitrary ids,
    a quarter of them at the edges of the id range."""
    draw = random.Random(15)
    adapter = load_adapter(adapter_of("libcachesim", "in-process"))
    dialect = dialect_for(policy, "libcachesim")
    for example in range(200):
        block_size = draw.choice([1, 3, 16])
        requests = random_requests(draw, chained=example % 2 == 0, block_size=block_size)
        if example % 4 == 1:
            requests = [([WIDE[h % len(WIDE)] for h in hash_ids], input_length) for hash_ids, input_length in requests]
        agrees_in_dialect(adapter, AdapterConfig(policy, draw.randint(0, 8), block_size), dialect, requests)


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_libcachesim_lru_and_fifo_refuse_a_negative_capacity_themselves(policy: str) -> None:
    """REPLAY-CONF-1, REPLAY-DIALECT-1: the binding raises ValueError for cache_size -1, which the
    adapter passes on as a refusal; at 0 it builds a cache that admits nothing."""
    adapter = load_adapter(adapter_of("libcachesim", "in-process"))
    with pytest.raises(ConfigRefused, match="non-negative"):
        adapter.configure(AdapterConfig(policy, -1, 1))
    adapter.configure(AdapterConfig(policy, 0, 1))
    adapter.access([1, 1, 2])
    assert (adapter.hit_tokens([1], 1), adapter.resident_count()) == (0, 0)
