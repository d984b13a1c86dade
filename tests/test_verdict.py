"""One model of a verdict (issue 30): report.py builds it once, and rendering.py alone renders it,
for the console, report.md and report.json, and writes it."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from kvspec.adapters.interface import AdapterConfig, Identity
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Outcome
from kvspec.conformance.certification.verdict.rendering import console_text, json_text, markdown, write_report
from kvspec.conformance.certification.verdict.report import CertificationVerdict, Report, build_verdict
from kvspec.conformance.certification.verdict.reproduction import Reproduction
from kvspec.conformance.core.workloads import Pins
from kvspec.reference.dialects import CANONICAL

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"
ADAPTER = "in-process:kvspec.conformance.galleries.mutants:no_min_clamp"
WRITERS = {"written_whole", "write_text", "write_bytes", "open", "copy", "copyfile"}


def verdict_of(outcome: Outcome, directory: Path | None) -> CertificationVerdict:
    return build_verdict(Reproduction(ADAPTER), Identity(name="fake", language="python", version="1"), "state", "quick", 0, Pins(),
                         (outcome,), (), {}, directory)


def lru_clauses() -> list[str]:
    """The clauses an LRU's verdict covers, as the report lists them: these tests prove no clause,
    and so name none (the annotated spec would list them under it)."""
    return list(verdict_of(Outcome("lru", 100.0), None).report.policies[0].clauses)


def divergent_verdict(directory: Path | None) -> CertificationVerdict:
    """A verdict built by hand: an LRU that gives 4 hit tokens where the spec gives 1."""
    trace = [([1], 1), ([1], 1)]
    divergence = Divergence(lru_clauses()[:1], "request 2 (hash_ids [1], input_length 1): expected 1 hit token, got 4", request=2,
                            expected=1, actual=4, config=AdapterConfig("lru", 6, 4, 0.1, 3), trace=trace)
    outcome = Outcome("lru", 100.0, (Finding(str(divergence), "state.request(...)", divergence),), CANONICAL, examples=7, accepted=1)
    return verdict_of(outcome, directory)


def changed(verdict: CertificationVerdict, message: str, clause: str, status: str) -> CertificationVerdict:
    """``verdict`` with its one failure's message and one clause's status changed in the model alone."""
    policy = verdict.report.policies[0]
    failure = policy.failures[0].model_copy(update={"message": message})
    policy = policy.model_copy(update={"failures": [failure], "clauses": {**policy.clauses, clause: status}})
    report = verdict.report.model_copy(update={"policies": [policy]})
    return CertificationVerdict(report, verdict.outcomes, verdict.hints, verdict.reproduction, verdict.directory, verdict.counterexamples)


def test_the_console_the_markdown_and_the_json_are_rendered_from_the_same_model(tmp_path: Path) -> None:
    """Each policy's verdict and each failure's message and replay command read alike in all three,
    and each clause's status alike in the markdown's table and the JSON; a change to the model
    alone shows in every one of them."""
    last = lru_clauses()[-1]
    verdict = changed(divergent_verdict(tmp_path), "a message the model alone holds", last, "fail")
    console, report_md, report = console_text(verdict), markdown(verdict.report), json.loads(json_text(verdict.report))
    (policy,) = report["policies"]
    (failure,) = policy["failures"]
    assert failure["message"] == "a message the model alone holds"
    assert all(failure["message"] in text and failure["replay_command"] in text for text in (console, report_md))
    assert not policy["conforms"] and "## lru: does not conform\n" in report_md
    assert "  lru: DOES NOT CONFORM (100.0 examples/s)\n" in console
    assert policy["clauses"][last] == "fail" and last not in failure["clauses"]
    assert [f"| {clause} | {status} |" for clause, status in policy["clauses"].items()] == [
        line for line in report_md.splitlines() if line.startswith("| ") and line != "| clause | result |"]


def test_the_counterexample_the_console_shows_is_the_file_the_report_saves(tmp_path: Path) -> None:
    verdict = divergent_verdict(tmp_path)
    write_report(verdict, tmp_path)
    (failure,) = verdict.report.policies[0].failures
    saved = (tmp_path / failure.trace_file).read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lru-counterexample-1.jsonl", "report.json", "report.md"]
    assert f"{failure.replay_command}\n\n{saved}" in console_text(verdict)
    unsaved = divergent_verdict(None)
    assert unsaved.counterexamples == {} and unsaved.report.policies[0].failures[0].trace_file is None
    assert f"<<'EOF'\n{saved}EOF\n" in console_text(unsaved)


def test_report_json_and_report_md_are_renderings_of_the_model_report_json_holds(tmp_path: Path) -> None:
    """`kvspec certify --report`: report.json read back into the model renders both files byte for
    byte, and the console says each policy's verdict and each failure of that model."""
    command = [sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", ADAPTER, "--policy", "lru",
               "--report", str(tmp_path)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 3, run.stderr
    written = (tmp_path / "report.json").read_text()
    report = Report.model_validate_json(written)
    assert json_text(report) == written and markdown(report) == (tmp_path / "report.md").read_text()
    for policy in report.policies:
        assert f"  {policy.policy}: {'conforms' if policy.conforms else 'DOES NOT CONFORM'}" in run.stdout
        assert all(f"    {failure.message}\n" in run.stdout and (failure.replay_command or "") in run.stdout for failure in policy.failures)


def written_names(call: ast.Call) -> set[str]:
    """The report files a call to a writer names in its arguments."""
    constants = {node.value for arg in call.args for node in ast.walk(arg) if isinstance(node, ast.Constant)}
    return constants & {"report.json", "report.md"}


def writer(call: ast.Call) -> bool:
    func = call.func
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in WRITERS


def test_no_module_but_rendering_writes_report_md_or_report_json() -> None:
    """No call to a writer names report.json or report.md outside rendering.py, nor does any other
    module import its renderings of a report; rendering.py itself writes both."""
    writing, importing = set(), set()
    for path in CONFORMANCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Call) and writer(node) and written_names(node) for node in ast.walk(tree)):
            writing.add(path.name)
        if any(isinstance(node, ast.ImportFrom) and node.module == "kvspec.conformance.certification.verdict.rendering"
               and {"markdown", "json_text"} & {alias.name for alias in node.names} for node in ast.walk(tree)):
            importing.add(path.name)
    assert writing == set() and importing == set()
    rendering = (CONFORMANCE / "certification" / "verdict" / "rendering.py").read_text()
    assert '"report.json": json_text(' in rendering and '"report.md": markdown(' in rendering
    assert "written_whole(directory / name)" in rendering
