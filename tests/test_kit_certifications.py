"""The libraries certified through the adapter kits (docs/certifications/cachetools, lru-dict and
lru-cache, docs/wrap-a-library.md): certified again at the quick profile, seed 0, each gives the
verdict of its committed thorough report (for each policy: whether it conforms, the behaviour's
verdict, the clauses of its findings, the dialect found), and the facts its README and adapter cite
hold in the version pinned.

Each certification runs as the report's command line says, at the quick profile, with the
reference's contracts off, but for one change: a `python:` adapter is run `in-process:` (its
verdict is the same, in a third of the time). npm lru-cache needs `npm ci` in its folder: without
the install its tests skip, and fail when KVSPEC_REQUIRE_LRU_CACHE (which .ci/run sets) is set.
"""

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.certification.verdict.report import Report

ROOT = Path(__file__).resolve().parent.parent
CERTIFIED = ROOT / "docs" / "certifications"
LRU_CACHE = CERTIFIED / "lru-cache"
REQUIRED = bool(os.environ.get("KVSPEC_REQUIRE_LRU_CACHE"))


def verdicts(report: Report) -> dict[str, dict[str, Any]]:
    """What a certification concludes, policy by policy, leaving out what a longer run may find more of (the examples, the rates)."""
    return {v.policy: {"conforms": v.conforms, "behaviour": v.behaviour, "clauses": sorted({c for f in v.failures for c in f.clauses}),
                       "dialect found": None if v.found is None else v.found.dialect} for v in report.policies}


def committed(name: str) -> Report:
    return Report.model_validate_json((CERTIFIED / name / "report.json").read_text())


def certified_again(report: Report, tmp_path: Path) -> tuple[int, Report]:
    """``report``'s certification at the quick profile: its adapter (``python:`` as ``in-process:``), seed and pins."""
    assert report.profile == "thorough" and set(report.pins) <= {"max_capacity"}, report.pins
    adapter = report.adapter.replace("python:", "in-process:", 1) if report.adapter.startswith("python:") else report.adapter
    pins = [option for name, value in report.pins.items() for option in (f"--{name.replace('_', '-')}", str(value))]
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", adapter, "--seed", str(report.seed),
                          "--find-dialect", *pins, "--report", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode in (0, 3), run.stderr
    return run.returncode, Report.model_validate_json((tmp_path / "report.json").read_text())


def lru_cache_installed() -> None:
    if shutil.which("node") and (LRU_CACHE / "node_modules" / "lru-cache" / "package.json").exists():
        return
    install = "`node` on PATH and `npm ci` in docs/certifications/lru-cache"
    if REQUIRED:
        pytest.fail(f"KVSPEC_REQUIRE_LRU_CACHE is set and npm lru-cache is not installed: {install} (.ci/run does)")
    pytest.skip(f"npm lru-cache is not installed: {install}")


@pytest.mark.untyped
@pytest.mark.parametrize("name", ["cachetools", "lru-dict", "lru-cache"])
def test_each_kit_certification_gives_its_committed_verdict_at_the_quick_profile(name: str, tmp_path: Path) -> None:
    if name == "lru-cache":
        lru_cache_installed()
    report = committed(name)
    status, again = certified_again(report, tmp_path)
    assert verdicts(again) == verdicts(report)
    assert status == (0 if report.conforms else 3) and again.implementation == report.implementation and again.level == report.level


def test_the_kit_certifications_are_of_the_versions_pinned() -> None:
    """pyproject.toml's test extra pins the PyPI libraries; package.json and its lock pin npm lru-cache."""
    extra = (ROOT / "pyproject.toml").read_text()
    for name, pinned in (("cachetools", "8.0.0"), ("lru-dict", "1.4.1")):
        assert f'"{name}=={pinned}"' in extra and version(name) == pinned == committed(name).implementation["version"]
    lock = json.loads((LRU_CACHE / "package-lock.json").read_text())["packages"]
    assert json.loads((LRU_CACHE / "package.json").read_text())["dependencies"] == {"lru-cache": "11.5.3"} == lock[""]["dependencies"]
    assert lock["node_modules/lru-cache"]["version"] == "11.5.3" == committed("lru-cache").implementation["version"]


def test_the_cachetools_lines_its_readme_cites_hold_in_the_version_pinned() -> None:
    """Those tests/test_adapter_kit.py does not check already."""
    import cachetools

    lines = Path(cachetools.__file__).read_text().splitlines()
    cited = {37: 'raise ValueError("maxsize must be non-negative")', 113: "def __len__(self):", 114: "return len(self.__data)",
             183: "if key in self.__order:", 184: "self.__order.move_to_end(key)"}
    assert {number: lines[number - 1].strip() for number in cited} == cited


def test_lru_dict_does_what_its_readme_cites_of_its_source() -> None:
    """docs/certifications/lru-dict/README.md cites src/lru/_lru.c, which the wheel does not ship: each fact, run."""
    from lru import LRU

    cache = LRU(2)
    cache[1], cache[2] = True, True
    assert 1 in cache
    cache[3] = True  # `in` moved nothing (237-241): 1 is still the least recent
    assert list(cache.keys()) == [3, 2] and len(cache) == 2
    cache.get(2)  # a hit's use (254-258)
    cache[4] = True
    assert list(cache.keys()) == [4, 2]  # most recent first (342-360); 3 went (315-321)
    for size in (0, -1):
        with pytest.raises(ValueError, match="^Size should be a positive number$"):  # 663-665
            LRU(size)
    unbounded = LRU(2**63 - 1)  # a Py_ssize_t (650), nothing allocated for it (667)
    unbounded[1] = True
    assert len(unbounded) == 1 and LRU(2**32).get_size() == 0  # the C int of 576


def test_the_lru_cache_lines_cited_hold_in_the_version_pinned() -> None:
    """adapter.js, README.md and docs/wrap-a-library.md cite src/index.ts, which the package ships in its source map."""
    lru_cache_installed()
    source_map = json.loads((LRU_CACHE / "node_modules" / "lru-cache" / "dist" / "commonjs" / "index.js.map").read_text())
    assert source_map["sources"] == ["../../src/index.ts"]
    lines = source_map["sourcesContent"][0].splitlines()
    cited = {60: "const getUintArray = (max: number) =>", 65: ": max <= Number.MAX_SAFE_INTEGER ? ZeroArray", 1394: "get size(): LRUCache.Count {",
             1465: "if (max !== 0 && !isPosInt(max)) {", 1466: "throw new TypeError('max option must be a nonnegative integer')",
             1469: "const UintArray = max ? getUintArray(max) : Array", 1471: "throw new Error('invalid max value: ' + max)",
             1500: "this.#keyMap = new Map()", 1501: "this.#keyList = Array.from({ length: max }).fill(undefined) as (",
             1505: "this.#valList = Array.from({ length: max }).fill(undefined) as (", 1509: "this.#next = new UintArray(max)",
             1510: "this.#prev = new UintArray(max)", 1513: "this.#free = Stack.create(max)",
             1574: "if (this.#max === 0 && this.ttl === 0 && this.#maxSize === 0) {", 1576: "'At least one of max, maxSize, or ttl is required',",
             1905: "*rkeys() {", 2195: "if (v === undefined) {", 2197: "this.delete(k)", 2228: ": this.#size === this.#max ? this.#evict(false)",
             2350: "const head = this.#head", 2407: "has(k: K, hasOptions: LRUCache.HasOptions<K, V, FC> = {}) {",
             2419: "#has(k: K, hasOptions: LRUCache.HasOptions<K, V, FC> = {}) {", 3007: "get(k: K, getOptions: LRUCache.GetOptions<K, V, FC> = {}) {",
             3065: "this.#moveToTail(index)"}
    assert {number: lines[number - 1].strip() for number in cited} == cited
    assert "moveToTail" not in "\n".join(lines[2406:2436])  # has() and #has() move nothing


def test_the_page_shows_the_published_node_adapter_as_it_is() -> None:
    """docs/wrap-a-library.md's Node adapter is the code of docs/certifications/lru-cache/adapter.js, its opening comment apart."""
    adapter = (LRU_CACHE / "adapter.js").read_text()
    code = adapter[adapter.index("const { LRUCache }"):]
    assert f"```js\n{code}```\n" in (ROOT / "docs" / "wrap-a-library.md").read_text()
