"""`kvspec badge REPORT` (PROTO-32): a report's verdict as a shields.io endpoint badge. Real reports
(the reference, a mutant of the gallery, the checked-in certifications of docs/certifications/
against their dialects and with --find-dialect), and copies of them changed where no cheap
implementation gives the case; every badge matches spec/schemas/badge.schema.json; bad input is
one line naming the file, exit 1, nothing written."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance import cli
from kvspec.conformance.certification.verdict.report import Report

from support import certify_report, schema_errors

ROOT = Path(__file__).resolve().parent.parent
CERTIFICATIONS = ROOT / "docs" / "certifications"
MUTANT = "in-process:kvspec.conformance.galleries.mutants:no_min_clamp"


def kvspec_badge(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in a process of its own."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "badge", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def shown(report: Path, capsys: Any) -> dict[str, Any]:
    """The badge of ``report``, as `kvspec badge` writes it to standard output, checked against its schema."""
    assert cli.main(["badge", str(report)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    badge = json.loads(out)
    assert schema_errors("badge.schema.json", badge) == []
    return badge


def changed(tmp_path: Path, source: Path, **policies: dict[str, Any]) -> Path:
    """A copy of the report ``source`` with the given fields of each named policy's verdict replaced."""
    report = json.loads(source.read_text())
    for verdict in report["policies"]:
        verdict.update(policies.get(verdict["policy"], {}))
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    Report.model_validate_json(path.read_text())  # still a report
    return path


def test_PROTO_32_the_reference_conforms_brightgreen_and_a_mutant_does_not_red(tmp_path: Path, capsys: Any) -> None:
    """Certified for real: the reference's LRU and FIFO conform; a mutant of seed 000's common
    mistakes (the hit tokens not clamped to the input length) does not."""
    status, _ = certify_report("reference", "lru", tmp_path / "lru")
    assert status == 0
    run = kvspec_badge(str(tmp_path / "lru"))
    assert run.returncode == 0 and run.stderr == ""
    assert json.loads(run.stdout) == {"schemaVersion": 1, "label": "kvspec", "message": "lru, lru in flight conform", "color": "brightgreen"}
    status, _ = certify_report(MUTANT, "s3fifo", tmp_path / "mutant")
    assert status == 3
    assert shown(tmp_path / "mutant" / "report.json", capsys) == {"schemaVersion": 1, "label": "kvspec",
                                                                  "message": "s3fifo: does not conform", "color": "red"}
    both = changed(tmp_path, tmp_path / "lru" / "report.json")
    report = json.loads(both.read_text())
    report["policies"].insert(0, {**report["policies"][0], "policy": "s3fifo"})
    both.write_text(json.dumps(report))
    assert shown(both, capsys)["message"] == "s3fifo, lru, lru in flight conform"


def test_PROTO_32_a_dialect_is_yellow_by_its_name(capsys: Any) -> None:
    """vLLM's LRU certified against the dialect spec/dialects.md names vllm; libCacheSim's three
    policies against its three dialects, one name."""
    assert shown(CERTIFICATIONS / "vllm" / "dialect", capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru: dialect vllm",
                                                                  "color": "yellow"}
    assert shown(CERTIFICATIONS / "libcachesim" / "dialect", capsys)["message"] == "s3fifo, lru, fifo: dialect libcachesim"


def test_PROTO_32_DIALECT_8_a_dialect_found_counts_and_one_not_found_is_red(capsys: Any) -> None:
    """LMCache's certification with --find-dialect: its FIFO's dialect found (lmcache's), its
    LRU's not (the greedy search misses it, docs/certification.md)."""
    assert shown(CERTIFICATIONS / "lmcache", capsys) == {"schemaVersion": 1, "label": "kvspec",
                                                         "message": "lru: does not conform; fifo: dialect lmcache", "color": "red"}


def test_PROTO_32_a_dialect_without_a_name_is_its_variation_points(tmp_path: Path, capsys: Any) -> None:
    path = changed(tmp_path, CERTIFICATIONS / "vllm" / "dialect" / "report.json", lru={"dialect": ["path-ids", "hit-cap-last-token"]})
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru: dialect path-ids + hit-cap-last-token",
                                   "color": "yellow"}


def test_PROTO_32_DIALECT_8_not_conforming_to_a_dialect_is_red_unless_the_search_found_another(tmp_path: Path, capsys: Any) -> None:
    against = CERTIFICATIONS / "vllm" / "dialect" / "report.json"
    path = changed(tmp_path, against, lru={"conforms": False})
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru: does not conform to dialect vllm",
                                   "color": "red"}
    found = json.loads((CERTIFICATIONS / "vllm" / "report.json").read_text())["policies"][0]["found"]  # found from the canonical spec
    path = changed(tmp_path, against, lru={"conforms": False, "dialect": ["path-ids"], "found": found})
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru: dialect vllm", "color": "yellow"}


def test_PROTO_32_a_dialect_found_but_for_faults_does_not_conform(tmp_path: Path, capsys: Any) -> None:
    lmcache = json.loads((CERTIFICATIONS / "lmcache" / "report.json").read_text())
    fifo = next(v for v in lmcache["policies"] if v["policy"] == "fifo")
    hanging = {**fifo["found"], "unexplained": ["PROTO-15: a hang"]}
    path = changed(tmp_path, CERTIFICATIONS / "lmcache" / "report.json", fifo={"found": hanging})
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru, fifo: does not conform", "color": "red"}


def test_PROTO_32_faults_outside_the_policies_are_red(tmp_path: Path, capsys: Any) -> None:
    report = json.loads((CERTIFICATIONS / "lmcache" / "report.json").read_text())
    fault = report["policies"][0]["failures"][0]
    path = tmp_path / "report.json"
    path.write_text(json.dumps({**report, "faults": [fault], "policies": []}))
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "does not conform (1 fault)", "color": "red"}
    vllm = json.loads((CERTIFICATIONS / "vllm" / "dialect" / "report.json").read_text())
    path.write_text(json.dumps({**vllm, "faults": [fault, fault]}))
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "lru: dialect vllm; 2 faults", "color": "red"}
    path.write_text(json.dumps({**vllm, "policies": []}))
    assert shown(path, capsys) == {"schemaVersion": 1, "label": "kvspec", "message": "no policy certified", "color": "red"}


def test_PROTO_32_output_writes_the_file_whole_and_nothing_to_standard_output(tmp_path: Path, capsys: Any) -> None:
    badge = tmp_path / "badge.json"
    assert cli.main(["badge", str(CERTIFICATIONS / "vllm" / "dialect"), "--output", str(badge)]) == 0
    assert capsys.readouterr() == ("", "")
    assert json.loads(badge.read_text())["message"] == "lru: dialect vllm"
    assert [p.name for p in tmp_path.iterdir()] == ["badge.json"]


def bad_reports(tmp_path: Path) -> list[tuple[Path, Path, str]]:
    """Each bad REPORT, the file its line names, and what it says."""
    vllm = json.loads((CERTIFICATIONS / "vllm" / "dialect" / "report.json").read_text())
    made = {"not-json": "{", "no-field": json.dumps({k: v for k, v in vllm.items() if k != "seed"}),
            "old-spec": json.dumps({**vllm, "spec_version": "0.0.9"}),
            "unknown-variation": json.dumps({**vllm, "policies": [{**vllm["policies"][0], "dialect": ["path-ids", "gone-point"]}]})}
    for name, text in made.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(text)
    (tmp_path / "empty").mkdir()
    return [(tmp_path / "missing", tmp_path / "missing", "no certification report there"),
            (tmp_path / "empty", tmp_path / "empty" / "report.json", "no certification report there"),
            (tmp_path / "not-json", tmp_path / "not-json" / "report.json", "not a certification report of this kvspec"),
            (tmp_path / "no-field" / "report.json", tmp_path / "no-field" / "report.json", "seed: Field required"),
            (tmp_path / "old-spec", tmp_path / "old-spec" / "report.json", "certifies against spec 0.0.9, and this kvspec's is"),
            (tmp_path / "unknown-variation", tmp_path / "unknown-variation" / "report.json",
             "'gone-point', which spec/dialects.md does not have")]


def test_PROTO_32_PROTO_30_a_bad_report_is_one_line_naming_the_file_and_nothing_is_written(tmp_path: Path, capsys: Any) -> None:
    output = tmp_path / "badge.json"
    output.write_text("the badge committed before\n")
    for given, named, said in bad_reports(tmp_path):
        assert cli.main(["badge", str(given), "--output", str(output)]) == 1, given
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and err.startswith(f"kvspec: error: {named}: ") and said in err, err
        assert output.read_text() == "the badge committed before\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left
    run = kvspec_badge(str(tmp_path / "old-spec"))
    assert run.returncode == 1 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
