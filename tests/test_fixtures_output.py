"""What `kvspec fixtures verify` tells a user (spec/fixtures.md FIX-12, FIX-13): each failing case
with the clauses it decides, expected and got as protocol JSON with the first difference marked,
and a command that runs that case alone and fails it the same way; a bare case id; a failure to
start; the bounds refused as certify refuses them. And what the corpus claims (FIX-4, FIX-6): a
case names only the clauses its kind, policy and dialect can exercise, and a state-level case
catches a scan that reorders the cache."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_fixtures import CORPUS, ROOT, kvspec, small_corpus

from kvspec.conformance.core.citations import CLAUSE_LINE
from kvspec.conformance.fixtures.runner import read_manifest, verify
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO

LRU_FOR_S3FIFO = "in-process:kvspec.conformance.galleries.mutants:lru_instead_of_s3fifo"
FAIL = re.compile(r"  FAIL (\S+) \((\w+): (.*)\): (.*): the first difference is at (\S+)$")


def blocks(stdout: str) -> dict[str, list[str]]:
    """Each failing case's lines, by its id (FIX-13: a FAIL line, then the lines indented under it)."""
    found: dict[str, list[str]] = {}
    for line in stdout.splitlines()[1:]:
        if line.startswith("  FAIL "):
            found[line.split()[1]] = [line]
        else:
            found[list(found)[-1]].append(line)
    return found


def case_of(directory: Path, case_id: str) -> dict[str, Any]:
    return json.loads((directory / f"{case_id.split('-')[0]}/{case_id}.json").read_text())


def expected_message(case: dict[str, Any], where: str) -> dict[str, Any]:
    """The message a replay case expects at ``where``, read from the case file itself."""
    number, field = re.fullmatch(r"request (\d+): (\w+)", where).groups()  # type: ignore[union-attr]
    expect = case["requests"][int(number) - 1]["expect"]
    return expect["snapshot"] if field == "snapshot" else {field: expect[field]}


def at(value: Any, path: str) -> Any:
    """The item at a path as FIX-13 writes it (``main[0]``), or None where there is none."""
    for key, index in re.findall(r"(\w+)|\[(\d+)\]", path):
        if key:
            value = value.get(key) if isinstance(value, dict) else None
        else:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
    return value


def rerun(command: str) -> subprocess.CompletedProcess[str]:
    """A printed command, run as a user pastes it (kvspec being the CLI of this checkout)."""
    words = shlex.split(command)
    assert words[:3] == ["kvspec", "fixtures", "verify"], command
    return kvspec(*words[1:])


def check_block(lines: list[str], adapter: str) -> str:
    """One failure of a case of the installed corpus as FIX-13 says; the command that runs it alone."""
    case_id, policy, title, where, path = FAIL.fullmatch(lines[0]).groups()  # type: ignore[union-attr]
    case = case_of(CORPUS, case_id)
    assert (policy, title) == (case["config"]["policy"], case["title"])
    expected_line, got_line, caret, decides, alone = lines[1:]
    assert expected_line.startswith("      expected ") and got_line.startswith("      got      ")
    expected, got = json.loads(expected_line[15:]), json.loads(got_line[15:])
    assert json.dumps(expected, sort_keys=True) == expected_line[15:] and json.dumps(got, sort_keys=True) == got_line[15:]  # one key order
    assert expected == expected_message(case, where) != got
    assert at(expected, path) != at(got, path)
    parted = os.path.commonprefix([expected_line[15:], got_line[15:]])  # where the two messages part, back to the number's start
    first = 15 + len(re.sub(r"-?\d+$", "", parted))
    assert caret == " " * first + "^"
    assert decides == f"    the case decides {', '.join(case['clauses'])}"
    command = alone.removeprefix("    this case alone: ")
    assert shlex.split(command)[3:] == [case_id, "--adapter", adapter]
    return command


def test_FIX_13_a_failure_names_its_clauses_shows_protocol_json_marked_and_its_command_reruns_it_alone() -> None:
    """The S3FIFO cases an LRU fails, at the state level: each block as FIX-13 says, the values
    read from the case files; a snapshot's and a resident count's commands run each case alone,
    exit 3, the same lines."""
    run = kvspec("fixtures", "verify", "--adapter", LRU_FOR_S3FIFO, "--policy", "s3fifo")
    assert run.returncode == 3, run.stderr
    failures = blocks(run.stdout)
    assert len(failures) >= 50 and {FAIL.match(lines[0]).group(4).split(": ")[1] for lines in failures.values()} >= {  # type: ignore[union-attr]
        "snapshot", "resident_count"}
    commands = {FAIL.match(lines[0]).group(4).split(": ")[1]: check_block(lines, LRU_FOR_S3FIFO)  # type: ignore[union-attr]
                for lines in failures.values()}
    for command in commands.values():
        alone = rerun(command)
        case_id = shlex.split(command)[3]
        assert alone.returncode == 3 and blocks(alone.stdout) == {case_id: failures[case_id]}, alone.stdout + alone.stderr
        assert ": DOES NOT CONFORM: 1 case in " in alone.stdout.splitlines()[0] and alone.stdout.splitlines()[0].endswith(", 1 fail")


CACHETOOLS = "python:docs/certifications/cachetools/adapter.py:adapter"  # LRU and FIFO, each failing its capacity-0 case


def test_FIX_13_where_cases_of_several_policies_ran_a_line_gives_each_policy_s_counts(tmp_path: Path) -> None:
    """The second line, each policy's counts as --output's verdicts give them (skips apart), so that
    one policy's failures do not bury another's passes; with one policy, no such line."""
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "fixtures", "verify", "--adapter", CACHETOOLS, "--output",
                          str(tmp_path / "verdicts.json")], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 3, run.stderr
    tally: dict[str, dict[str, int]] = {}
    for verdict in json.loads((tmp_path / "verdicts.json").read_text()):
        if verdict["policy"] is not None and verdict["verdict"] != "skip":
            counts = tally.setdefault(verdict["policy"], {})
            counts[verdict["verdict"]] = counts.get(verdict["verdict"], 0) + 1
    assert set(tally) == {"lru", "fifo"} and all(counts.get("fail") == 1 and counts["pass"] > 50 for counts in tally.values())
    expected = "; ".join(f"{policy}: {counts['pass']} pass, 1 fail" for policy, counts in tally.items())
    assert run.stdout.splitlines()[1] == f"  {expected}"
    alone = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "fixtures", "verify", "--adapter", CACHETOOLS, "--policy", "lru"],
                           capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert alone.returncode == 3 and alone.stdout.splitlines()[1].startswith("  FAIL replay-lru-edge-capacity-")


def test_FIX_13_a_case_of_another_corpus_is_rerun_by_its_file_every_word_quoted(tmp_path: Path) -> None:
    """A corpus in a folder with a space in its name, through a cmd: adapter (a command of
    several words): the printed command names the case's file, and pastes whole."""
    corpus = tmp_path / "my corpus"
    small_corpus(corpus)
    adapter = f"cmd:{sys.executable} -m kvspec.adapters.serve {LRU_FOR_S3FIFO}"
    run = kvspec("fixtures", "verify", str(corpus), "--adapter", adapter, "--policy", "s3fifo", "--reply-timeout", "7.5")
    assert run.returncode == 3, run.stderr
    failures = blocks(run.stdout)
    assert failures
    for case_id, lines in failures.items():
        command = lines[-1].removeprefix("    this case alone: ")
        assert shlex.split(command)[3:] == [str(corpus / f"replay/{case_id}.json"), "--adapter", adapter, "--reply-timeout", "7.5"]
        alone = rerun(command)
        assert alone.returncode == 3 and blocks(alone.stdout) == {case_id: lines}, alone.stdout + alone.stderr


def test_FIX_12_a_bare_case_id_verifies_that_case_of_the_installed_corpus(tmp_path: Path) -> None:
    entry = next(e for e in read_manifest(CORPUS) if e["kind"] == "replay")
    run = kvspec("fixtures", "verify", entry["id"], "--adapter", "reference", "--output", str(tmp_path / "one.json"))
    assert run.returncode == 0 and ": conforms: 1 case in " in run.stdout and run.stdout.rstrip().endswith(", 1 pass"), run.stdout + run.stderr
    assert [v["id"] for v in json.loads((tmp_path / "one.json").read_text())] == [entry["id"]]
    other = "replay-s3fifo-another-corpus-00000000"  # a dialect's corpus, say: not the installed one
    run = kvspec("fixtures", "verify", other, "--adapter", "reference")
    assert run.returncode == 1 and run.stdout == "" and len(run.stderr.splitlines()) == 1, run.stdout + run.stderr
    assert run.stderr.startswith(f"kvspec: error: {other}: FIX-3: no case of that id in ") and "is verified by its file" in run.stderr


def test_FIX_12_after_a_failure_to_start_it_says_so_and_how_many_cases_were_not_run(tmp_path: Path) -> None:
    run = kvspec("fixtures", "verify", str(CORPUS), "--adapter", f"cmd:{shutil.which('false')}", "--output", str(tmp_path / "v.json"))
    kinds = [entry["kind"] for entry in read_manifest(CORPUS)]
    replayed = sum(kind in ("replay", "benefit", "lifecycle") for kind in kinds)
    assert run.returncode == 3
    assert run.stdout.splitlines()[0].endswith(
        f": DOES NOT CONFORM: {len(kinds)} cases in {CORPUS}, {len(kinds) - replayed} skip, {replayed} not-run (it failed at its start)")
    assert run.stdout.splitlines()[1].startswith("  FAIL at its start: PROTO-15: ") and len(run.stdout.splitlines()) == 2
    verdicts = json.loads((tmp_path / "v.json").read_text())
    assert [v["verdict"] for v in verdicts[:-1]] == ["not-run" if kind in ("replay", "benefit", "lifecycle") else "skip" for kind in kinds]
    assert verdicts[-1]["id"] == "implementation" and verdicts[-1]["title"] == "its start"


@pytest.mark.parametrize("bound", [["--max-capacity", "0"], ["--max-capacity", "-5"], ["--max-block-size", "0"]])
def test_FIX_12_a_bound_below_1_is_refused_as_certify_refuses_it(bound: list[str]) -> None:
    refused = kvspec("fixtures", "verify", "--adapter", "reference", *bound)
    certify = kvspec("certify", "--adapter", "reference", *bound)
    assert refused.returncode == certify.returncode == 1 and refused.stdout == ""
    assert refused.stderr == certify.stderr and len(refused.stderr.splitlines()) == 1 and "REPLAY-CONF-" in refused.stderr


class ScanReorders(CanonicalS3FIFO):
    """cachebox's LRUCache: asking whether a key is in the cache moves it to the most recent end, so
    the hit-token question reorders the cache (REPLAY-PREFIX-3); the accesses after it move every
    block of the request to that end anyway."""

    policies = ("lru",)

    def is_resident(self, h: int) -> bool:
        if h in self.main:
            self.main.move_to_end(h)
        return h in self.main


@pytest.mark.untyped
def test_FIX_6_a_scan_that_reorders_the_cache_fails_a_state_level_case() -> None:
    results = verify(CORPUS, ScanReorders, {}, policies=("lru",))
    failed = [r for r in results if r.verdict == "fail"]
    assert failed and all(r.difference is not None and r.difference.where.endswith("the snapshot after hit_tokens, which changes nothing "
                                                                                  "(REPLAY-PREFIX-3)") for r in failed)
    assert {case_of(CORPUS, r.id)["level"] for r in failed} == {"state"}


def spec_clauses(name: str) -> set[str]:
    return set(CLAUSE_LINE.findall((ROOT / "spec" / name).read_text()))


def test_FIX_4_no_case_names_a_clause_its_kind_policy_or_dialect_cannot_exercise() -> None:
    """From the spec files alone: no canonical case names a clause of spec/dialects.md, no LRU or
    FIFO case an S3FIFO clause; each kind and policy, the clauses of its own spec files (a
    lifecycle case, FIX-18, those of spec/lifecycle.md for the pool and its own policy)."""
    replay = spec_clauses("replay.md")
    allowed = {"trace": replay | spec_clauses("lru.md"), "benefit": spec_clauses("benefit.md"), "comparison": spec_clauses("benefit.md"),
               "prefix": replay | spec_clauses("benefit.md") | spec_clauses("s3fifo.md") | spec_clauses("lru.md") | spec_clauses("fifo.md")}
    stray = {}
    for entry in read_manifest(CORPUS):
        case = case_of(CORPUS, entry["id"])
        assert "dialect" not in case  # the corpus kvspec ships is canonical (FIX-6)
        policy = case["config"]["policy"] if case["kind"] in ("replay", "lifecycle") else None
        own = replay | spec_clauses(f"{policy}.md") if policy else allowed[case["kind"]]
        if case["kind"] == "lifecycle":  # FIX-18: the lifecycle's rules, and its policy's lifecycle rules alone
            own |= {c for c in spec_clauses("lifecycle.md") if c.startswith(("LIFE-", {"s3fifo": "S3-", "lru": "LRU-", "fifo": "FIFO-"}[policy]))}
        if set(case["clauses"]) - own:
            stray[entry["id"]] = sorted(set(case["clauses"]) - own)
    assert stray == {}


# The replay cases of two known dialects, each of its own (DIALECT-9), with the contracts off as `fixtures generate` runs.
DIALECT_CLAUSES = """
import json, sys
from kvspec.conformance.fixtures.replay_cases import replay_cases
from kvspec.reference.dialects import KNOWN_DIALECTS, dialect_for
for name in ("libcachesim", "lmcache"):
    for case in replay_cases({policy: dialect_for(policy, name) for policy in KNOWN_DIALECTS[name]}, name):
        print(json.dumps([case["config"]["policy"], case["dialect"], case["clauses"]]))
"""


def test_FIX_4_a_dialect_case_names_only_the_variation_points_of_its_dialect_and_no_clause_they_replace() -> None:
    """A dialect's rules test for every variation point of their policy on every replay: only the
    dialect's own points count, and not the canonical clauses they replace (DIALECT-2)."""
    from kvspec.reference.dialects import VARIATIONS, replaced_clauses

    run = subprocess.run([sys.executable, "-c", DIALECT_CLAUSES], capture_output=True, text=True, timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    dialects, generic = spec_clauses("dialects.md"), {f"DIALECT-{n}" for n in range(1, 10)}
    stray = set()
    for line in run.stdout.splitlines():
        policy, dialect, clauses = json.loads(line)
        own = spec_clauses("replay.md") | spec_clauses(f"{policy}.md") | generic | {VARIATIONS[v].clause for v in dialect}
        stray |= {(policy, c) for c in clauses if c not in own or c in replaced_clauses(frozenset(dialect))}
        assert dialects & set(clauses) - generic <= {VARIATIONS[v].clause for v in dialect}
    assert len(run.stdout.splitlines()) > 200 and stray == set()


# A conversation of every kind of request at a capacity that evicts, replayed by each policy with
# the clauses traced and nothing filtered; the contracts off, as `fixtures generate` runs.
CANONICAL_CLAUSES = """
import json
from kvspec.conformance.fixtures.replay_cases import conversation
from kvspec.conformance.fixtures.tracing import exercised
from kvspec.reference import ReplayConfig, TraceRecord, replay
from kvspec.reference.benefit.traces import XorShift64
requests = conversation(XorShift64(3), 40, 4)
records = [(n, TraceRecord(timestamp=n, input_length=length, output_length=1, hash_ids=ids)) for n, (ids, length) in enumerate(requests, 1)]
for policy in ("s3fifo", "lru", "fifo"):
    with exercised() as ran:
        replay(records, ReplayConfig(policy=policy, capacity=6, block_size=4))
    print(json.dumps([policy, sorted(ran)]))
"""


ADMITS = {"s3fifo": "S3-ADMIT-S-4", "lru": "LRU-ADMIT-1", "fifo": "FIFO-ADMIT-1"}


def test_FIX_4_a_canonical_replay_runs_no_line_that_cites_a_dialect_or_another_policy() -> None:
    """The tracing itself: a line that only tests for a dialect, or a call that the policies
    share, cites no clause."""
    run = subprocess.run([sys.executable, "-c", CANONICAL_CLAUSES], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    for line in run.stdout.splitlines():
        policy, ran = json.loads(line)
        assert {"REPLAY-PREFIX-3", "REPLAY-ACCESS-1", ADMITS[policy]} <= set(ran)  # it ran
        assert set(ran) - spec_clauses("replay.md") - spec_clauses(f"{policy}.md") == set(), policy


def test_FIX_13_the_caret_marks_the_first_field_that_differs_in_each_message() -> None:
    """Where the two messages part is not always that field: 1.0 and 1 are the same double but not
    the same text, so each message gets its own caret; a field one message lacks is marked where
    it would be written."""
    from kvspec.conformance.fixtures.runner import Difference
    from kvspec.conformance.fixtures.verdicts import marked

    parted = Difference("operation 1 (benefit_state)", {"a": 1.0, "b": [1, 2]}, {"a": 1, "b": [1, 3]})
    assert str(parted).endswith("; the first difference is at b[1]")
    expected, under_expected, got, under_got = marked(parted)
    assert expected[len(under_expected) - 1] == "2" and got[len(under_got) - 1] == "3" and under_expected != under_got
    lacking = Difference("request 1: snapshot", {"ghost": [], "main": [[1, 0]], "small": []}, {"ghost": [], "small": []})
    expected, got, under = marked(lacking)  # one caret: the field's name, and where it would be
    assert str(lacking).endswith("at main") and expected[len(under) - 1 :].startswith('"main"') and got[len(under) - 1 :].startswith('"small"')


def test_FIX_13_what_an_implementation_sent_is_printed_escaped() -> None:
    """A refusal's reason with a terminal's control sequences and a line separator: ASCII JSON."""
    from kvspec.conformance.fixtures.runner import Difference
    from kvspec.conformance.fixtures.verdicts import marked

    hostile = Difference("the configuration", {"ok": True}, {"ok": False, "refused": "\x1b[2K\x1b[1A\r\u2028\x9b done"})
    assert all(line.isascii() and line.isprintable() for line in [str(hostile), *marked(hostile)])


def test_FIX_13_the_command_under_an_unexpected_pass_keeps_the_known_failures_it_is_one_against(tmp_path: Path) -> None:
    """FIX-11: a case listed as a known failure that passes fails the run; the case alone, run
    without the list, would pass, so the command carries --known-failures."""
    entry = next(e for e in read_manifest(CORPUS) if e["kind"] == "replay")
    known = tmp_path / "known.json"
    known.write_text(json.dumps({entry["id"]: "thought to fail"}))
    run = kvspec("fixtures", "verify", entry["id"], "--adapter", "reference", "--known-failures", str(known))
    assert run.returncode == 3 and f"UNEXPECTED-PASS {entry['id']} " in run.stdout, run.stdout + run.stderr
    (command,) = [line.strip().removeprefix("this case alone: ") for line in run.stdout.splitlines() if "this case alone: " in line]
    assert command.endswith(f"--known-failures {known}")
    again = rerun(command)
    assert again.returncode == 3 and f"UNEXPECTED-PASS {entry['id']} " in again.stdout
