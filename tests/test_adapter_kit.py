"""The adapter kit (kvspec.adapters.kit, docs/wrap-a-library.md): what it does for every adapter
(configure's refusals, the prefix scan, the snapshot), proved on cachetools' LRUCache and
FIFOCache through the published adapter (docs/certifications/cachetools/adapter.py) and through
kit adapters of it with one thing changed (tests/fakes/kit_adapters.py). Each certification is
quick, seed 0, in a process of its own with the reference's contracts off (about 2 to 4 s)."""

import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Identity, Snapshot
from kvspec.adapters.kit import BlockCacheAdapter
from kvspec.conformance.certification.verdict.report import Report

from support import certify_report

cachetools = pytest.importorskip("cachetools", reason="pip install '.[test]' (cachetools 8.0.0)")

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED = f"in-process:{ROOT / 'docs' / 'certifications' / 'cachetools' / 'adapter.py'}:adapter"
FAKES = ROOT / "tests" / "fakes" / "kit_adapters.py"
PAGE = ROOT / "docs" / "wrap-a-library.md"
POLICIES = ("lru", "fifo")


class Recorded(BlockCacheAdapter):
    """cachetools' LRUCache through the kit's defaults, every make_cache and is_resident recorded."""

    identity = Identity(name="recorded", language="python", version="1")
    policies = ("lru",)

    def __init__(self) -> None:
        super().__init__()
        self.made: list[int] = []
        self.asked: list[int] = []

    def make_cache(self, policy: str, capacity: int) -> Any:
        self.made.append(capacity)
        return cachetools.LRUCache(maxsize=capacity)

    def is_resident(self, block: int) -> bool:
        self.asked.append(block)
        return super().is_resident(block)

    def queue(self) -> Any:
        return self.cache._LRUCache__order


def fake(name: str) -> str:
    return f"in-process:{FAKES}:{name}"


@pytest.mark.parametrize(("knob", "value", "clause"), [("block_size", 0, "REPLAY-CONF-2"), ("block_size", -1, "REPLAY-CONF-2"),
                                                       ("capacity", 0, "REPLAY-CONF-1"), ("capacity", -5, "REPLAY-CONF-1")])
def test_PROTO_8_the_kit_refuses_what_REPLAY_CONF_1_and_2_refuse_before_the_library_sees_it(knob: str, value: int, clause: str) -> None:
    adapter = Recorded()
    with pytest.raises(ConfigRefused, match=f"^{clause}: {knob} must be an integer in \\[1, "):
        adapter.configure(AdapterConfig("lru", **{"capacity": 4, "block_size": 16, knob: value}))
    assert adapter.made == []


def test_REPLAY_CONF_3_the_kit_ignores_the_knobs_of_s3fifo_and_refuses_a_policy_it_does_not_list() -> None:
    adapter = Recorded()
    adapter.configure(AdapterConfig("lru", 4, 16, small_ratio=float("nan"), max_freq=-1))
    assert adapter.made == [4]
    with pytest.raises(ConfigRefused, match="^PROTO-6: recorded implements lru, not 'fifo'"):
        adapter.configure(AdapterConfig("fifo", 4, 16))


def test_PROTO_7_a_refused_configuration_drops_the_earlier_cache() -> None:
    adapter = Recorded()
    adapter.configure(AdapterConfig("lru", 4, 16))
    adapter.access([1, 2])
    with pytest.raises(ConfigRefused):
        adapter.configure(AdapterConfig("lru", 0, 16))
    with pytest.raises(Exception, match="PROTO-7: no cache is configured"):
        adapter.resident_count()


def test_PROTO_8_an_exception_the_library_raises_at_its_constructor_is_a_refusal_with_its_message() -> None:
    """cachetools refuses a negative maxsize (cachetools/__init__.py:36); the published adapter gives it every capacity."""
    sys.path.insert(0, str(FAKES.parent))
    try:
        from kit_adapters import Cachetools, RefusesLargeCapacities
    finally:
        sys.path.remove(str(FAKES.parent))
    with pytest.raises(ConfigRefused, match="^the library refused capacity -1: ValueError: maxsize must be non-negative$"):
        Cachetools().configure(AdapterConfig("lru", -1, 16))
    with pytest.raises(ConfigRefused, match="^the library refused capacity 4294967296: MemoryError: cannot allocate a table of 4294967296"):
        RefusesLargeCapacities().configure(AdapterConfig("fifo", 2**32, 16))

    class Mistaken(Recorded):  # an exception outside ``refusals`` is the adapter's own mistake, a failure (PROTO-29)
        def make_cache(self, policy: str, capacity: int) -> Any:
            return cachetools.LRUCache(capacity=capacity)  # cachetools names it maxsize

    with pytest.raises(TypeError):
        Mistaken().configure(AdapterConfig("lru", 4, 16))


def test_PROTO_8_a_library_that_refuses_a_valid_capacity_is_a_configuration_finding_naming_max_capacity(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", fake("refuses_large_capacities"),
                          "--policy", "lru", "--report", str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    (verdict,) = Report.model_validate_json((tmp_path / "report.json").read_text()).policies
    (failure,) = verdict.failures
    assert run.returncode == 3 and failure.configuration and failure.clauses == ["REPLAY-CONF-1"], failure.message
    assert "is valid, and the implementation refused it" in failure.message and verdict.behaviour == "conforms"
    assert "--max-capacity N certifies it with at most N blocks" in run.stdout


def test_REPLAY_PREFIX_3_the_kit_scans_by_is_resident_to_the_first_miss_and_leaves_the_order_as_it_was() -> None:
    adapter = Recorded()
    adapter.configure(AdapterConfig("lru", 4, 16))
    adapter.access([1, 2, 3])
    before = adapter.snapshot()
    adapter.asked.clear()
    assert adapter.hit_tokens([1, 2, 9, 3], 60) == 32  # REPLAY-PREFIX-2: 3 after the miss does not count
    assert adapter.asked[:3] == [1, 2, 9] and 3 not in adapter.asked  # (the reference's contracts, where on, ask again)
    assert adapter.snapshot() == before == Snapshot(main=((1, 0), (2, 0), (3, 0)))
    assert adapter.hit_tokens([1, 2, 3], 40) == 40  # REPLAY-HIT-1: clamped to the input length


def test_REPLAY_PREFIX_3_a_kit_adapter_whose_scan_reorders_is_caught(tmp_path: Path) -> None:
    """The trap the kit's docs warn of (cachebox's ``in``): the scan asks LRU's ``get``, which counts as a use."""
    status, report = certify_report(fake("reordering_scan"), "lru", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and verdict.failures[0].clauses[0] == "REPLAY-PREFIX-3", verdict.failures[0].message
    assert "the hit-token check changed the cache" in verdict.failures[0].message


@pytest.mark.parametrize("policy", POLICIES)
def test_cachetools_through_the_kit_with_its_capacity_checked_conforms(policy: str, tmp_path: Path) -> None:
    status, report = certify_report(fake("capacity_checked"), policy, tmp_path)
    assert status == 0 and report.conforms and report.level == "state", report.policies[0].failures


@pytest.mark.parametrize("policy", POLICIES)
def test_REPLAY_CONF_1_cachetools_reads_capacity_0_as_a_cache_and_conforms_on_every_other(policy: str, tmp_path: Path) -> None:
    """The published adapter gives cachetools every capacity: it accepts maxsize 0 (cachetools/__init__.py:36 refuses
    only a negative one), which REPLAY-CONF-1 refuses; every other configuration's behaviour conforms."""
    status, report = certify_report(PUBLISHED, policy, tmp_path)
    (verdict,) = report.policies
    (failure,) = verdict.failures
    assert status == 3 and failure.configuration and failure.clauses == ["REPLAY-CONF-1"], failure.message
    assert failure.config is not None and failure.config["capacity"] == 0
    assert "must be refused, and the implementation accepted it" in failure.message
    assert verdict.behaviour == "conforms"


def test_PROTO_6_the_kit_serves_lru_and_fifo_and_its_level_follows_queue() -> None:
    with pytest.raises(TypeError, match="the adapter kit serves lru and fifo, not s3fifo"):
        type("S3fifoLibrary", (BlockCacheAdapter,), {"policies": ("s3fifo", "lru")})
    results = type("ResultsOnly", (BlockCacheAdapter,), {"make_cache": lambda self, policy, capacity: cachetools.FIFOCache(capacity)})
    assert results.level == "results" and Recorded.level == "state"


def test_the_cachetools_lines_cited_hold_in_the_version_pinned() -> None:
    """The adapter's docstring and docs/wrap-a-library.md cite cachetools/__init__.py by line; pyproject.toml pins its version."""
    assert '"cachetools==8.0.0"' in (ROOT / "pyproject.toml").read_text() and version("cachetools") == "8.0.0"
    lines = Path(cachetools.__file__).read_text().splitlines()
    cited = {36: "if maxsize < 0:", 65: "if maxsize < 1:", 66: 'raise ValueError("value too large")',
             70: "while self.__currsize + 1 > maxsize:",
             104: "def __contains__(self, key):", 105: "return key in self.__data", 122: "def get(self, key, default=None):",
             179: "self.__order = collections.OrderedDict()", 299: "self.__order = collections.OrderedDict()",
             301: "def __getitem__(self, key, cache_getitem=Cache.__getitem__):"}
    assert {number: lines[number - 1].strip() for number in cited} == cited


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_the_page_shows_the_published_adapter_as_it_is() -> None:
    """docs/wrap-a-library.md's complete example is the code of docs/certifications/cachetools/adapter.py, its docstring apart."""
    adapter = (ROOT / "docs" / "certifications" / "cachetools" / "adapter.py").read_text()
    code = adapter.split('"""', 2)[2].lstrip("\n")
    assert code in code_blocks(PAGE.read_text())
    assert len(code.splitlines()) <= 25
