"""Golden fixtures (spec/fixtures.md): the corpus regenerates byte for byte, every file is what
its manifest says, the reference and the JavaScript example pass it, every mutant of both
galleries fails it, and the runner's known failures, damaged files and broken implementations
are reported, not crashed on."""

import gzip
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from kvspec.conformance.core.citations import CLAUSE_LINE, cited
from kvspec.conformance.fixtures.format import FORMAT, ID_PATTERN, case_id, file_text, schema_texts
from kvspec.conformance.fixtures.recorded import adapter_name
from kvspec.conformance.fixtures.runner import read_manifest, verify
from kvspec.conformance.fixtures.tracing import exercised
from kvspec.conformance.galleries import benefit_mutants, mutants
from kvspec.reference import KvspecError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "spec" / "fixtures"
FAKES = Path(__file__).resolve().parent / "fakes"
MUTANT_SPECS = [f"in-process:kvspec.conformance.galleries.mutants:{name.replace('-', '_')}" for name in mutants.MUTANTS] + [
    f"in-process:kvspec.conformance.galleries.benefit_mutants:{name.replace('-', '_')}" for name in benefit_mutants.MUTANTS]


def kvspec(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process with the contracts off, as users run it."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_every_FIX_clause_is_cited_by_the_fixture_code_and_named_by_a_test() -> None:
    clauses = CLAUSE_LINE.findall((ROOT / "spec" / "fixtures.md").read_text())
    assert sorted(clauses, key=lambda clause: int(clause[4:])) == [f"FIX-{n}" for n in range(1, len(clauses) + 1)]  # a new one, the next free number
    code = set(re.findall(r"\bFIX-\d+\b", "".join(path.read_text() for path in (ROOT / "conformance" / "fixtures").glob("*.py"))))
    tests = set(re.findall(r"\bFIX-\d+\b", "".join(path.read_text() for path in Path(__file__).parent.glob("test_fixtures*.py")).replace("_", "-")))
    assert sorted(set(clauses) - code) == [] and sorted(set(clauses) - tests) == []


def test_FIX_5_the_corpus_regenerates_byte_for_byte(tmp_path: Path) -> None:
    run = kvspec("fixtures", "generate", str(tmp_path))
    assert run.returncode == 0, run.stderr
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.json"))
    assert written == sorted(p.relative_to(CORPUS) for p in CORPUS.rglob("*.json")), "regenerate: kvspec fixtures generate"
    assert [p for p in written if (tmp_path / p).read_bytes() != (CORPUS / p).read_bytes()] == []


def test_FIX_5_regenerating_retires_the_cases_the_manifest_listed_and_deletes_nothing_else(tmp_path: Path) -> None:
    assert kvspec("fixtures", "generate", str(tmp_path)).returncode == 0
    generated = (tmp_path / "manifest.json").read_bytes()
    manifest = json.loads(generated)
    retired = {**manifest["cases"][0], "id": "replay-lru-retired-00000000", "kind": "replay", "path": "replay/replay-lru-retired-00000000.json"}
    listed = sorted([retired, *manifest["cases"]], key=lambda entry: entry["path"])  # as an earlier corpus's manifest lists them (FIX-2)
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "cases": listed}))
    (tmp_path / retired["path"]).write_text("{}")
    assert kvspec("fixtures", "generate", str(tmp_path)).returncode == 0
    assert not (tmp_path / retired["path"]).exists() and (tmp_path / "manifest.json").read_bytes() == generated
    foreign = tmp_path / "replay" / "mine.json"
    foreign.write_text("{}")
    run = kvspec("fixtures", "generate", str(tmp_path))
    assert run.returncode == 1 and run.stderr == (f"kvspec: error: {tmp_path}: holds replay/mine.json, which no manifest.json there lists: "
                                                  "not a kvspec corpus to regenerate (FIX-1); give a new or empty folder, or the corpus itself\n")
    assert foreign.read_text() == "{}"


def test_FIX_1_a_case_path_that_is_not_kind_slash_id_is_refused(tmp_path: Path) -> None:
    entry = read_manifest(CORPUS)[0]
    for path in ("../outside.json", f"{entry['kind']}/{entry['id']}.JSON", f"trace/{entry['id']}.json"):
        (tmp_path / "manifest.json").write_text(json.dumps({"format": FORMAT, "spec_version": "0.1.0", "cases": [{**entry, "path": path}]}))
        with pytest.raises(KvspecError, match="FIX-1: not a kvspec-fixture/1 manifest: cases.0"):
            read_manifest(tmp_path)


def test_FIX_2_a_manifest_of_no_case_is_refused(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"format": FORMAT, "spec_version": "0.1.0", "cases": []}))
    with pytest.raises(KvspecError, match="FIX-2: not a kvspec-fixture/1 manifest: cases: List should have at least 1 item"):
        read_manifest(tmp_path)


def test_FIX_1_FIX_2_the_manifest_lists_every_case_with_its_sha256() -> None:
    entries = read_manifest(CORPUS)
    assert [entry["path"] for entry in entries] == sorted(entry["path"] for entry in entries)
    assert sorted(entry["path"] for entry in entries) == sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.json"))
    for entry in entries:
        data = (CORPUS / entry["path"]).read_bytes()
        case = json.loads(data)
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert case["format"] == FORMAT and case["id"] == entry["id"] and case["clauses"] == entry["clauses"]


def test_FIX_3_a_case_id_names_where_it_comes_from_and_hashes_what_an_implementation_sees() -> None:
    """Each digest is recomputed as a consumer would, with another canonicaliser, in
    tests/test_fixtures_consumer.py (FIX-14); here, what else an id is."""
    ids = []
    for path in CORPUS.glob("*/*.json"):
        case = json.loads(path.read_bytes())
        kind = f"{case['kind']}-{case['config']['policy']}" if case["kind"] == "replay" else case["kind"]
        assert re.fullmatch(rf"{kind}(-[a-z0-9]+)+-[0-9a-f]{{8}}", case["id"]) and case["id"] == path.stem, case["id"]
        assert file_text(case) == path.read_text(encoding="utf-8")
        ids.append(case["id"])
    assert sorted(ids) == sorted(set(ids)) == sorted(entry["id"] for entry in read_manifest(CORPUS))
    quoted = {m.group(0) for doc in ("README.md", "docs/cli.md", "spec/fixtures.md")
              for m in re.finditer(rf"\b{ID_PATTERN}\b", (ROOT / doc).read_text())}
    assert quoted and sorted(quoted - set(ids)) == []  # the ids the docs give as examples are the corpus's
    assert [adapter_name(a) for a in ("in-process:kvspec.conformance.galleries.mutants:freq_not_saturated", "cmd:node examples/js/server.js",
                                      "python:docs/certifications/s3fifo-pypi/adapter.py:adapter", "python:my.module:adapter", "reference")] == [
        "freq_not_saturated", "node examples/js/server.js", "s3fifo-pypi", "module", "reference"]  # a counterexample's source
    digest = case["id"][-8:]  # the last case's, recomputed by tests/test_fixtures_consumer.py
    annotated = {**case, "id": "", "title": case["title"] + "!", "provenance": "elsewhere", "clauses": [*case["clauses"], "FIX-3"]}
    assert case_id(annotated, "a source") == case_id(case, "a source") == f"{kind}-a-source-{digest}"
    assert case_id({**case, "level": "state" if case["level"] == "results" else "results"}, "a source") != case_id(case, "a source")
    refused = {"kind": "replay", "config": {"policy": "lru"}, "refused": "REPLAY-CONF-1"}
    assert case_id({**refused, "refused": "REPLAY-CONF-2"}, "s") == case_id(refused, "s") != case_id({**refused, "refused": None}, "s")
    trace = {"kind": "trace", "refused": "REPLAY-TRACE-1"}
    assert case_id({**trace, "refused": "REPLAY-TRACE-2"}, "s") != case_id(trace, "s")  # its reader must name the clause (FIX-8)


# Every case generated as if no line of the reference cited a clause, its clauses only those declared (contracts off, as users run it).
UNCITED = """
import contextlib, json, sys
from kvspec.conformance.fixtures import benefit_cases, corpus, lifecycle_cases, replay_cases, trace_cases
for module in (replay_cases, benefit_cases, trace_cases, lifecycle_cases):
    module.exercised = lambda: contextlib.nullcontext(set())
json.dump({case["id"]: case["clauses"] for case in corpus.cases()}, sys.stdout)
"""


def test_FIX_3_ids_survive_a_change_to_the_clauses_the_reference_cites() -> None:
    run = subprocess.run([sys.executable, "-c", UNCITED], capture_output=True, text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    regenerated, listed = json.loads(run.stdout), {entry["id"]: entry["clauses"] for entry in read_manifest(CORPUS)}
    assert regenerated.keys() == listed.keys()
    assert all(regenerated[i] != listed[i] for i in listed)


def test_FIX_3_two_cases_of_one_id_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kvspec.conformance.fixtures import corpus

    case = json.loads(next(CORPUS.glob("trace/*.json")).read_text())
    monkeypatch.setattr(corpus, "cases", lambda: [case, {**case, "title": "the same case, titled apart"}])
    with pytest.raises(KvspecError, match=f"FIX-3: two cases have the same id: {case['id']}$"):
        corpus.generate(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_FIX_6_FIX_7_the_checked_in_schemas_are_what_the_models_generate() -> None:
    for name, text in schema_texts().items():
        assert (ROOT / "spec" / "schemas" / name).read_text(encoding="utf-8") == text, "regenerate: kvspec spec schemas"


def spec_clauses(*names: str) -> set[str]:
    return {clause for name in names for clause in CLAUSE_LINE.findall((ROOT / "spec" / name).read_text())}


def test_FIX_4_every_clause_is_exercised_by_a_case() -> None:
    """Every clause but the served replay's and the benefit policy's in flight, which FIX-18 says have no case yet."""
    covered = {clause for entry in read_manifest(CORPUS) for clause in entry["clauses"]}
    clauses = spec_clauses("replay.md", "s3fifo.md", "lru.md", "fifo.md", "benefit.md", "lifecycle.md")
    assert sorted(clause for clause in clauses - covered if not clause.startswith(("LIFE-SERVE-", "LIFE-BEN-"))) == []


def test_FIX_8_trace_cases_are_what_kvspec_replay_makes_of_the_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each file built from its case by FIX-8's recipe (tests/test_fixtures_consumer.py), and read
    by the CLI, an independent path: a refusal names the line, the field and the clause; a trace
    read gives each request's hit tokens and the totals; the requests are those its lines hold,
    read with a plain JSON parser."""
    from test_fixtures_consumer import trace_file

    from kvspec.conformance import cli

    cases = [json.loads(p.read_text()) for p in sorted(CORPUS.glob("trace/*.json"))]
    assert len(cases) >= 30 and {"lines" if "lines" in case["file"] else "parts" for case in cases} == {"lines", "parts"}
    assert any(case["file"].get("gzip") for case in cases)
    for case in cases:
        path = tmp_path / f"{case['id']}.jsonl"
        path.write_bytes(trace_file(case["file"]))
        config = case["config"]
        status = cli.main(["replay", str(path), "--policy", config["policy"], "--capacity", str(config["capacity"]),
                           "--block-size", str(config["block_size"]), "--per-request"])
        out, err = capsys.readouterr()
        if case["refused"]:
            at = case["refused_at"]
            assert status == 1 and out == "" and f"{path}:{at['line']}: field {at['field']}: {case['refused']}: " in err, (case["id"], err)
        else:
            result = json.loads(out)
            assert status == 0 and {key: result[key] for key in case["totals"]} == case["totals"], case["id"]
            assert [r["hit_tokens"] for r in result["per_request"]] == [step["expect"]["hit_tokens"] for step in case["requests"]]
            assert [[step["hash_ids"], step["input_length"]] for step in case["requests"]] == plain_requests(path.read_bytes()), case["id"]


def plain_requests(data: bytes) -> list[list[object]]:
    """A trace file's requests as a plain JSON parser reads them: gzip's members decompressed, a byte
    order mark at the start dropped."""
    text = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode().removeprefix("\ufeff")
    return [[record["hash_ids"], record["input_length"]] for record in map(json.loads, text.splitlines())]


def test_FIX_9_FIX_10_comparison_and_prefix_cases_match_the_published_figures() -> None:
    """The comparison rows are the notes' (tests/test_benefit_compare.py); the prefix sides are
    consistent with their own requests."""
    rows = {json.loads(p.read_text())["trace"]: json.loads(p.read_text()) for p in CORPUS.glob("comparison/*.json")}
    assert rows["one_shot(7, 2000)"]["expect"]["lru"]["bytes_written"] == 9_523_167_232
    assert rows["turn_growth(11, 4, 12)"]["expect"]["policy"]["bytes_written"] == 192_937_984
    for path in CORPUS.glob("prefix/*.json"):
        case = json.loads(path.read_text())
        prompt = sum(r["input_length"] for r in case["requests"])
        assert [side["policy"] for side in case["expect"]] == ["benefit", "s3fifo", "lru", "fifo"]
        assert all(side["prompt_tokens"] == prompt and side["requests"] == len(case["requests"]) for side in case["expect"])


def test_FIX_4_exercised_counts_the_lines_that_ran_and_the_docstrings_of_what_was_called() -> None:
    from kvspec.reference.s3fifo import saturating_increment

    with exercised() as ran:
        saturating_increment(1, 3)
    assert "S3-FREQ-2" in ran
    assert cited("S3-ADMIT-M-1..3 and REPLAY-HIT-1 to REPLAY-HIT-2") == {"S3-ADMIT-M-1", "S3-ADMIT-M-2", "S3-ADMIT-M-3", "REPLAY-HIT-1", "REPLAY-HIT-2"}
    with exercised() as nothing:
        sorted([3, 1])
    assert nothing == set()


def test_FIX_12_the_reference_passes_every_case() -> None:
    from kvspec.adapters.reference import ReferenceAdapter

    results = verify(CORPUS, ReferenceAdapter, {})
    assert len(results) == len(read_manifest(CORPUS))
    assert {r.verdict for r in results if r.id.startswith(("replay-", "benefit-", "lifecycle-"))} == {"pass"}  # the lifecycle's: PROTO-35
    assert {r.verdict for r in results if not r.id.startswith(("replay-", "benefit-", "lifecycle-"))} == {"skip"}  # no adapter operation for them


def policy_in_file(directory: Path, entry: dict[str, str]) -> str | None:
    """A case's policy as its file says (FIX-12): its configuration's (a replay or lifecycle case), or benefit, or none."""
    case = json.loads((directory / entry["path"]).read_text())
    return case["config"]["policy"] if case["kind"] in ("replay", "lifecycle") else "benefit" if case["kind"] == "benefit" else None


def small_corpus(folder: Path) -> dict[str, str | None]:
    """Two cases of each policy (seeded conversations, which an LRU asked for S3FIFO fails) and
    one of each other kind, with their manifest: each case's policy, by id, in manifest order."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    kept, taken = [], {}
    for entry in manifest["cases"]:
        group = entry["kind"] if entry["kind"] == "lifecycle" else policy_in_file(CORPUS, entry) or entry["kind"]  # one lifecycle case
        if taken.get(group, 0) < (1 if group == entry["kind"] else 2) and ("-conversations-" in entry["id"] or entry["kind"] != "replay"):
            taken[group] = taken.get(group, 0) + 1
            kept.append(entry)
            (folder / entry["path"]).parent.mkdir(parents=True, exist_ok=True)
            (folder / entry["path"]).write_bytes((CORPUS / entry["path"]).read_bytes())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "cases": kept}))
    return {entry["id"]: policy_in_file(folder, entry) for entry in kept}


def test_FIX_12_policy_verifies_only_the_cases_of_those_policies_and_the_report_gives_each_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kvspec.adapters.reference import ReferenceAdapter
    from kvspec.conformance import cli

    configured: list[str] = []

    class Recording(ReferenceAdapter):
        def configure(self, config):  # type: ignore[no-untyped-def]
            configured.append(config.policy)
            super().configure(config)

        def configure_benefit(self, config):  # type: ignore[no-untyped-def]
            configured.append("benefit")
            super().configure_benefit(config)

    corpus = tmp_path / "corpus"
    policies = small_corpus(corpus)
    assert set(policies.values()) == {"s3fifo", "lru", "fifo", "benefit", None}
    results = verify(corpus, Recording, {}, policies=("fifo", "benefit"))
    chosen = [case for case, policy in policies.items() if policy in ("fifo", "benefit")]
    assert [r.id for r in results] == chosen and sorted(configured) == sorted(policies[case] for case in chosen)
    assert {r.verdict for r in results} == {"pass"} and all(r.policy == policies[r.id] for r in results)
    output = tmp_path / "verdicts.json"
    assert cli.main(["fixtures", "verify", str(corpus), "--adapter", "in-process:kvspec.conformance.galleries.mutants:lru_instead_of_s3fifo",
                     "--policy", "lru", "--policy", "s3fifo", "--output", str(output)]) == 3
    verdicts = json.loads(output.read_text())
    assert [v["id"] for v in verdicts] == [case for case, policy in policies.items() if policy in ("lru", "s3fifo")]
    assert all(v["policy"] == policies[v["id"]] for v in verdicts) and {v["verdict"] for v in verdicts if v["policy"] == "lru"} == {"pass"}
    failed = [v for v in verdicts if v["verdict"] == "fail"]
    shown = capsys.readouterr().out
    assert failed and "cases of lru, s3fifo in " in shown and all(f"FAIL {v['id']} (s3fifo: {v['title']}): " in shown for v in failed)
    assert cli.main(["fixtures", "verify", str(corpus), "--adapter", "reference", "--output", str(tmp_path / "all.json")]) == 0
    everything = json.loads((tmp_path / "all.json").read_text())
    assert [(v["id"], v["policy"]) for v in everything] == list(policies.items())  # without --policy, every case, each with its policy
    single = corpus / next(entry["path"] for entry in json.loads((corpus / "manifest.json").read_text())["cases"] if entry["kind"] == "benefit")
    assert cli.main(["fixtures", "verify", str(single), "--adapter", "reference", "--policy", "fifo"]) == 1
    assert "FIX-12: " in capsys.readouterr().err


def test_FIX_12_the_javascript_example_passes_every_case_of_the_policies_it_lists(tmp_path: Path) -> None:
    run = kvspec("fixtures", "verify", str(CORPUS), "--adapter", f"cmd:node {ROOT / 'examples' / 's3fifo-node' / 'server.js'}",
                 "--output", str(tmp_path / "verdicts.json"))
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = json.loads((tmp_path / "verdicts.json").read_text())
    assert {v["verdict"] for v in verdicts if v["id"].startswith("replay-")} == {"pass"}
    assert {v["verdict"] for v in verdicts if v["id"].startswith("benefit-")} == {"skip"}  # it does not list benefit (PROTO-6)


@pytest.mark.untyped
@pytest.mark.parametrize("spec", MUTANT_SPECS)
def test_every_mutant_of_both_galleries_fails_a_fixture_at_the_results_level(spec: str) -> None:
    """The corpus in manifest order, up to the first case the mutant fails (verify runs them all),
    with no state compared: a consumer without state access is protected too (the invalid hit of
    findings F-16 and the rejection of F-15 among them)."""
    from kvspec.adapters import load_adapter
    from kvspec.conformance.fixtures.runner import Mismatch, check_benefit, check_replay

    adapter = load_adapter(spec)
    adapter.level = "results"  # type: ignore[misc]
    offered = adapter.policies
    for entry in read_manifest(CORPUS):
        case = json.loads((CORPUS / entry["path"]).read_text())
        if case["kind"] not in ("replay", "benefit") or (case["config"].get("policy", "benefit") not in offered):
            continue
        try:
            (check_replay if case["kind"] == "replay" else check_benefit)(adapter, case)  # type: ignore[operator]
        except Mismatch:
            return
    raise AssertionError(f"{spec} passes every fixture")


def failing_ids(spec: str) -> list[str]:
    from kvspec.adapters import load_adapter

    return [r.id for r in verify(CORPUS, lambda: load_adapter(spec), {}) if r.verdict == "fail"]


def test_FIX_11_known_failures_pass_the_run_and_an_unexpected_pass_fails_it(tmp_path: Path) -> None:
    spec = "in-process:kvspec.conformance.galleries.benefit_mutants:no_key_tiebreak"
    failing = failing_ids(spec)
    known = tmp_path / "known.json"
    known.write_text(json.dumps({case: "ordered by score alone" for case in failing}))
    assert kvspec("fixtures", "verify", str(CORPUS), "--adapter", spec, "--known-failures", str(known)).returncode == 0
    passing = next(entry["id"] for entry in read_manifest(CORPUS) if entry["id"] not in failing and entry["kind"] == "benefit")
    known.write_text(json.dumps({**{case: "ordered by score alone" for case in failing}, passing: "stale"}))
    run = kvspec("fixtures", "verify", str(CORPUS), "--adapter", spec, "--known-failures", str(known))
    assert run.returncode == 3 and f"UNEXPECTED-PASS {passing}" in run.stdout
    known.write_text(json.dumps({"replay-lru-retired-00000000": "no such case"}))
    run = kvspec("fixtures", "verify", str(CORPUS), "--adapter", spec, "--known-failures", str(known))
    assert run.returncode == 1 and "FIX-11: the known failures name cases the corpus does not have: replay-lru-retired-00000000" in run.stderr


def test_FIX_12_a_damaged_corpus_is_a_clear_error(tmp_path: Path) -> None:
    for path in CORPUS.rglob("*.json"):
        target = tmp_path / path.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    entry = read_manifest(tmp_path)[0]
    (tmp_path / entry["path"]).write_text((tmp_path / entry["path"]).read_text().replace('"title"', '"title" ', 1))
    run = kvspec("fixtures", "verify", str(tmp_path), "--adapter", "reference")
    assert run.returncode == 1 and f"{entry['path']}: FIX-2: its sha256 is not the manifest's" in run.stderr and "Traceback" not in run.stderr
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / "manifest.json").write_text(json.dumps({**manifest, "format": "kvspec-fixture/2"}))
    run = kvspec("fixtures", "verify", str(tmp_path), "--adapter", "reference")
    assert run.returncode == 1 and "FIX-1: not a kvspec-fixture/1 manifest: format" in run.stderr
    with pytest.raises(KvspecError, match="cannot read the manifest"):
        read_manifest(tmp_path / "nowhere")


def test_FIX_12_an_implementation_that_breaks_the_protocol_fails_its_case_and_the_run_goes_on() -> None:
    from kvspec.adapters import load_adapter

    started = []

    def load():  # type: ignore[no-untyped-def]
        started.append(1)
        return load_adapter(f"cmd:{sys.executable} {FAKES / 'exit_after_configure.py'}")

    results = verify(CORPUS, load, {})
    failed = [r for r in results if r.verdict == "fail"]
    broke = [r for r in failed if "the process exited with status 0 before replying" in r.detail]
    assert broke and all(r.detail for r in failed)  # the rest: configurations it accepts and should refuse
    # A fresh process for the case after each break; none after a break at the last case it runs.
    assert len(broke) <= len(started) <= len(broke) + 1


# The heavy third-party packages of pyproject's `thirdparty` extra, which CI does not install.
THIRDPARTY = [re.split(r"[=<>~!]", requirement)[0]
              for requirement in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["thirdparty"]]


def test_FIX_4_every_collected_counterexample_is_a_fixture_its_implementation_fails() -> None:
    """conformance/counterexamples.json (`kvspec fixtures collect`): the shrunk counterexamples of
    the mutant gallery's and the third-party certifications, each a case with its provenance,
    and each failed by the implementation it was found in."""
    from kvspec.adapters import load_adapter
    from kvspec.adapters.interface import AdapterFailure
    from kvspec.conformance.fixtures.recorded import COUNTEREXAMPLES
    from kvspec.conformance.fixtures.runner import Mismatch, check_benefit, check_replay

    collected = json.loads(COUNTEREXAMPLES.read_text())
    cases = [json.loads((CORPUS / e["path"]).read_text()) for e in read_manifest(CORPUS) if e["title"].startswith("counterexample: ")]
    assert len(cases) == len(collected) >= len(mutants.MUTANTS) + len(benefit_mutants.MUTANTS)
    assert {case["kind"] for case in cases} == {"replay", "benefit"}
    uninstalled = [name for name in THIRDPARTY if importlib.util.find_spec(name) is None]  # CI's
    checked = 0
    for case in cases:
        spec = case["provenance"].split("--adapter ")[1].split(" --policy")[0]
        try:
            adapter = load_adapter(spec)
        except AdapterFailure as failure:  # only a heavy third-party package, uninstalled, may keep a case unchecked
            assert any(f"No module named '{name}'" in str(failure) for name in uninstalled), failure
            continue
        checked += 1
        try:
            with pytest.raises(Mismatch):
                (check_replay if case["kind"] == "replay" else check_benefit)(adapter, case)  # type: ignore[operator]
        finally:
            adapter.close()
    assert checked >= len(mutants.MUTANTS) + len(benefit_mutants.MUTANTS)


def test_FIX_7_a_score_of_negative_zero_fails_the_state_it_is_compared_with() -> None:
    """-0.0 == 0.0 in Python: the runner compares the sign of a zero as well (findings F-19)."""
    import math

    from kvspec.conformance.fixtures.runner import Mismatch, check_benefit
    from kvspec.conformance.galleries.benefit_mutants import CanonicalBenefit

    class NegativeZeroKept(CanonicalBenefit):
        def score(self, key: int) -> float | None:
            cold, restore = self.items[key].cost
            value = super().score(key)
            return -0.0 if value == 0.0 and math.copysign(1.0, cold - restore) < 0.0 else value

    entry = next(e for e in read_manifest(CORPUS) if e["title"] == "negative zero: a score of zero ties and keys decide")
    case = json.loads((CORPUS / entry["path"]).read_text())
    check_benefit(CanonicalBenefit(), case)
    with pytest.raises(Mismatch, match="-0.0"):
        check_benefit(NegativeZeroKept(), case)
