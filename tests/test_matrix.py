"""docs/certifications/: the matrix and each implementation's dialect, as `kvspec spec matrix`
writes them from the reports (conformance/certification/verdict/matrix.py), and what the reports show:
the search found each implementation's dialect, and each conforms to it (DIALECT-5, DIALECT-7,
DIALECT-8)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS

ROOT = Path(__file__).resolve().parent.parent
CERTIFICATIONS = ROOT / "docs" / "certifications"
FOLDERS = sorted(p.parent.name for p in CERTIFICATIONS.glob("*/report.json"))
# The libraries wrapped with the adapter kits (docs/wrap-a-library.md) have no dialect named after them.
WITH_DIALECT = [name for name in FOLDERS if name in KNOWN_DIALECTS]
# An engine's dialect of one policy is named by the policy too (sglang-lru, ...): no folder of its own.
ALIASES = {name for name in KNOWN_DIALECTS if name.rpartition("-")[0] in KNOWN_DIALECTS and name.rpartition("-")[2] in ("lru", "fifo")}
# SGLang's server default, checked against the real cache by docs/certifications/sglang/check_unified.py, has no adapter (F-21).
UNCERTIFIED = {"sglang-unified"}
# Where the greedy search stops short of the named dialect (DIALECT-8; the README says so); the
# certification against the dialect still conforms.
SEARCH_MISSES = {("lmcache", "lru")}


def matrix(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "spec", "matrix", str(folder)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_every_known_dialect_has_its_certification() -> None:
    assert WITH_DIALECT == sorted(set(KNOWN_DIALECTS) - ALIASES - UNCERTIFIED)
    assert not [name for name in FOLDERS if name not in WITH_DIALECT and (CERTIFICATIONS / name / "dialect").exists()]
    assert ALIASES == {f"{engine}-{policy}" for engine in ("sglang", "sglang-unified", "lmcache") for policy in ("lru", "fifo")}


def test_the_matrix_and_every_readme_are_what_the_reports_give(tmp_path: Path) -> None:
    copy = tmp_path / "certifications"
    shutil.copytree(CERTIFICATIONS, copy)
    run = matrix(copy)
    assert run.returncode == 0, run.stderr
    for readme in [copy / "README.md", *(copy / name / "README.md" for name in FOLDERS)]:
        committed = CERTIFICATIONS / readme.relative_to(copy)
        assert readme.read_text() == committed.read_text(), f"{committed} is out of date: run kvspec spec matrix"


@pytest.mark.parametrize("name", WITH_DIALECT)
def test_DIALECT_8_the_search_found_each_known_dialect_and_DIALECT_7_each_conforms_to_it(name: str) -> None:
    """The canonical certification's search found the dialect spec/dialects.md names for the
    implementation, every variation point of it that the examples can see; the certification
    against that dialect conforms, and so does its corpus."""
    canonical = json.loads((CERTIFICATIONS / name / "report.json").read_text())
    against = json.loads((CERTIFICATIONS / name / "dialect" / "report.json").read_text())
    assert not canonical["conforms"] and against["conforms"]
    for verdict in canonical["policies"]:
        named = KNOWN_DIALECTS[name][verdict["policy"]]
        found = verdict["found"]["dialect"]
        assert found == (None if (name, verdict["policy"]) in SEARCH_MISSES else [v for v in VARIATIONS if v in named]), (verdict["policy"], found)
    assert {v["policy"]: v["dialect"] for v in against["policies"]} == {p: [v for v in VARIATIONS if v in d]
                                                                         for p, d in KNOWN_DIALECTS[name].items()}
    fixtures = json.loads((CERTIFICATIONS / name / "dialect" / "fixtures.json").read_text())
    assert fixtures and not [case for case in fixtures if case["verdict"] == "fail"]


@pytest.mark.parametrize("name", FOLDERS)
def test_each_readme_states_the_dialect_found(name: str) -> None:
    readme = (CERTIFICATIONS / name / "README.md").read_text()
    for verdict in json.loads((CERTIFICATIONS / name / "report.json").read_text())["policies"]:
        if verdict["conforms"]:
            assert f"{verdict['policy']}: conforms to the canonical spec." in readme
            continue
        for variation in verdict["found"]["dialect"] or ():
            assert f"| `{variation}` ({VARIATIONS[variation].clause}) |" in readme
        if verdict["found"]["dialect"] is None:
            assert f"{verdict['policy']}: the search found no set of variation points" in readme


def test_a_folder_without_reports_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    run = matrix(tmp_path)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "no folder with a report.json" in run.stderr
    assert list(tmp_path.iterdir()) == []
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "report.json").write_text("{}")
    run = matrix(tmp_path)
    assert run.returncode == 1 and f"{broken / 'report.json'}: not a certification report" in run.stderr
    assert not (tmp_path / "README.md").exists()


@pytest.mark.parametrize(("verdicts", "why"), [('[{"verdict": "pass"}]', "each with a case id"), ('[{"verdict": "pass", "id": 5}]', "each with a case id"),
                                               ("{", "JSONDecodeError")])
def test_a_bad_fixtures_file_is_one_line_and_no_readme_is_rewritten(tmp_path: Path, verdicts: str, why: str) -> None:
    copy = tmp_path / "certifications"
    shutil.copytree(CERTIFICATIONS, copy)
    readmes = {p: p.read_text() for p in copy.glob("*/README.md")}
    (copy / FOLDERS[-1] / "fixtures.json").write_text(verdicts)
    run = matrix(copy)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and why in run.stderr, run.stderr
    assert {p: p.read_text() for p in copy.glob("*/README.md")} == readmes


def test_a_readme_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    copy = tmp_path / "certifications"
    shutil.copytree(CERTIFICATIONS, copy)
    (copy / FOLDERS[0] / "README.md").write_bytes(b"\xff\xfe not text")
    run = matrix(copy)
    assert run.returncode == 1 and "cannot read it as UTF-8 text" in run.stderr and run.stderr.count("\n") == 1
