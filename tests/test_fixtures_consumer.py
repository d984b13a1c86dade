"""Golden fixtures as a consumer in another language reads them (spec/fixtures.md and the
documents it lists first): every id recomputed with a second canonicaliser (rfc8785, Trail of
Bits), its departures from RFC 8785 substituted (FIX-14); trace files built from their recipe
(FIX-8); the corpus refused whole, before a case runs, for each fault of FIX-15; the state-level
cases run by an implementation that offers results alone (FIX-16); no null where a field may be
absent (FIX-17); and what a trace reader names when it refuses a line, and for which fault first
(spec/replay.md REPLAY-TRACE-9, REPLAY-TRACE-10)."""

import base64
import gzip
import hashlib
import json
import math
import re
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fixtures import CORPUS, ROOT, kvspec, small_corpus

from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.core.citations import CLAUSE_LINE
from kvspec.conformance.fixtures.format import canonical
from kvspec.conformance.fixtures.runner import read_manifest, verify
from kvspec.reference import KvspecError
from kvspec.reference.errors import TraceError
from kvspec.reference.models import MAX_NESTING, parse_line
from kvspec.reference.trace import TraceFile

EXACT = 2**53 - 1  # rfc8785's integers: up to here a double holds every one


def jcs_exact(value: Any) -> str:
    """FIX-14 by rfc8785, which refuses integers past 2^53 - 1 and writes -0.0 as 0: each of those
    stands in as a string of its own, replaced by its text (digits, or -0) once rfc8785 wrote it."""
    texts: dict[str, str] = {}

    def stand_in(v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > EXACT or isinstance(v, float) and v == 0.0 and math.copysign(1, v) < 0:
            token = f"stand-in-{len(texts)}-for-fix-14"
            texts[token] = "-0" if isinstance(v, float) else str(v)
            return token
        if isinstance(v, list):
            return [stand_in(item) for item in v]
        if isinstance(v, dict):
            return {key: stand_in(item) for key, item in v.items()}
        return v

    text = rfc8785.dumps(stand_in(value)).decode()
    for token, written in texts.items():
        assert text.count(f'"{token}"') == 1
        text = text.replace(f'"{token}"', written)
    return text


def seen(case: dict[str, Any]) -> dict[str, Any]:
    """FIX-3: what the id hashes."""
    fields = {key: value for key, value in case.items() if key not in ("id", "title", "provenance", "clauses")}
    return {**fields, "refused": True} if case["kind"] != "trace" and case["refused"] is not None else fields


# Hand-derived: RFC 8785 section 3.2.3's example, ECMAScript's Number::toString, and the departures.
VECTORS = [
    (-1.7976931348623157e308, "-1.7976931348623157e+308"), (1e-07, "1e-7"), (0.1, "0.1"), (1.0, "1"), (0.000001, "0.000001"),
    (1.5e-7, "1.5e-7"), (1e21, "1e+21"), (1e20, "100000000000000000000"), (5e-324, "5e-324"), (123.456, "123.456"), (-0.5, "-0.5"),
    (2.0**53, "9007199254740992"), (0.0, "0"), (-0.0, "-0"),
    (2**64 - 1, "18446744073709551615"), (-(2**63), "-9223372036854775808"), (2**53 + 1, "9007199254740993"), (-0, "0"),
    ("é\n\x01\"\\/\u2028\x7f😀", '"é\\n\\u0001\\"\\\\/\u2028\x7f😀"'), ({"\ue000": 1, "😀": 2, "a": [True, None, False]}, '{"a":[true,null,false],"😀":2,"\ue000":1}'),
    ({"numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/", "literals": [None, True, False]},
     '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'),
]


@pytest.mark.parametrize(("value", "written"), VECTORS)
def test_FIX_14_the_canonical_form_of_hand_derived_values(value: Any, written: str) -> None:
    assert canonical(value) == jcs_exact(value) == written


def test_FIX_14_the_example_fixtures_md_gives_is_what_both_canonicalisers_write() -> None:
    text = " ".join((ROOT / "spec" / "fixtures.md").read_text(encoding="utf-8").split())
    given_value, written = re.search(r"So `(\{.*?\})` is written `(\{.*?\})`", text).groups()  # type: ignore[union-attr]
    assert canonical(json.loads(given_value)) == jcs_exact(json.loads(given_value)) == written


def test_FIX_3_FIX_14_every_id_recomputes_from_the_documents_with_a_second_canonicaliser() -> None:
    """For every case: its canonical form by kvspec is jcs_exact's, rfc8785's itself where no
    departure applies (in some cases, not all: both paths decide); its id is the kind, a replay
    case's policy, words, and the first 8 hex digits of the sha256 of that form. About 4 s."""
    within = 0
    for entry in read_manifest(CORPUS):
        case = json.loads((CORPUS / entry["path"]).read_bytes())
        written = jcs_exact(seen(case))
        assert canonical(seen(case)) == written, case["id"]
        try:
            within += rfc8785.dumps(seen(case)).decode() == written
        except rfc8785.IntegerDomainError:
            pass
        start = f"{case['kind']}-{case['config']['policy']}" if case["kind"] == "replay" else case["kind"]
        digest = hashlib.sha256(written.encode("utf-8")).hexdigest()[:8]
        assert re.fullmatch(rf"{start}(-[a-z0-9]+)+-{digest}", case["id"]) and case["id"] == entry["id"], case["id"]
    assert 50 < within < len(read_manifest(CORPUS)) - 50


def trace_file(file: dict[str, Any]) -> bytes:
    """FIX-8's recipe, as a consumer reads it: the lines, each with a line feed, gzip-compressed when
    it says so; or each part's base64 decoded and repeated."""
    if "lines" in file:
        text = b"".join(line.encode("utf-8") + b"\n" for line in file["lines"])
        return gzip.compress(text) if file["gzip"] else text
    return b"".join(base64.b64decode(part["base64"], validate=True) * part["repeat"] for part in file["parts"])


def trace_cases() -> list[dict[str, Any]]:
    return [json.loads(path.read_bytes()) for path in sorted(CORPUS.glob("trace/*.json"))]


def test_FIX_8_the_trace_files_lines_cannot_say_are_given_as_bytes_and_the_long_line_by_a_recipe() -> None:
    """Bytes that are not UTF-8, no final line feed, UTF-16, damaged gzip and two gzip members, the
    16 MiB bound and one byte past it: each a case of a few KB, whose file is what it says."""
    cases = {case["title"]: case for case in trace_cases()}
    files = {title: trace_file(case["file"]) for title, case in cases.items() if "parts" in case["file"]}
    sizes = {title: len(json.dumps(case)) for title, case in cases.items()}
    assert max(sizes.values()) < 4096
    by_title = {re.sub(r"^refused at line \d+: ", "", title): data for title, data in files.items()}
    assert b"\xff" in by_title["a byte that is never UTF-8 (ff) in a key"]
    assert b"\xed\xa0\x80" in by_title["a surrogate encoded as UTF-8 (ed a0 80), which UTF-8 forbids, in a key"]
    assert not by_title["a last line without a line feed is read"].endswith(b"\n")
    assert by_title["a trace in UTF-16 (little-endian, with a byte order mark)"][:2] == b"\xff\xfe"
    damaged = [data for title, data in by_title.items() if "gzip" in title and "two" not in title]
    assert len(damaged) == 4 and all(data[:2] == b"\x1f\x8b" for data in damaged)
    for data in damaged:
        with pytest.raises((EOFError, OSError, zlib.error)):
            gzip.decompress(data)
    assert gzip.decompress(by_title["two gzip members, as cat a.gz b.gz makes, read as one trace"]).count(b"\n") == 2
    read, past = by_title["a line of 16 MiB (16,777,216 bytes) without its line feed is read"], by_title["a line of 16 MiB and one byte"]
    assert [len(line) for line in read.split(b"\n")[1:]] == [16 * 2**20, 0] and [len(line) for line in past.split(b"\n")[1:]] == [16 * 2**20 + 1, 0]
    assert all(len(json.loads(line)) == 4 for line in read.splitlines())  # a good line: only the bound refuses the longer one


def test_FIX_8_a_trace_case_is_a_replay_case_read_from_a_file() -> None:
    """Refused: where, and no result; read: requests and totals as a replay case's at the results
    level, under LRU at 8 blocks."""
    for case in trace_cases():
        assert case["config"]["policy"] == "lru" and case["config"]["capacity"] == 8 and case["level"] == "results"
        if case["refused"]:
            assert case["refused_at"]["line"] >= 1 and case["requests"] == [] and case["totals"] is None
            assert {"REPLAY-TRACE-7", "REPLAY-TRACE-9"} <= set(case["clauses"])
        else:
            assert case["refused_at"] is None and case["totals"]["total_prompt_tokens"] == sum(r["input_length"] for r in case["requests"])
            assert all(set(step["expect"]) == {"hit_tokens", "resident_count"} for step in case["requests"])


# REPLAY-TRACE-9's vocabulary, each word with a case of the corpus that names it.
VOCABULARY = {"(file)": {"REPLAY-TRACE-1", "REPLAY-TRACE-6"}, "(line)": {"REPLAY-TRACE-1", "REPLAY-TRACE-8"},
              "timestamp": {"REPLAY-TRACE-1", "REPLAY-TRACE-2"}, "input_length": {"REPLAY-TRACE-1", "REPLAY-TRACE-2", "REPLAY-TRACE-3", "REPLAY-RESULT-3"},
              "output_length": {"REPLAY-TRACE-2"}, "hash_ids": {"REPLAY-TRACE-2"}, "hash_ids[1]": {"REPLAY-TRACE-2"}, "x": {"REPLAY-TRACE-1"}}


def test_REPLAY_TRACE_9_the_corpus_names_every_word_of_the_vocabulary_by_each_of_its_clauses() -> None:
    named: dict[str, set[str]] = {}
    for case in trace_cases():
        if case["refused"]:
            named.setdefault(case["refused_at"]["field"], set()).add(case["refused"])
    assert {word: named.get(word, set()) & clauses for word, clauses in VOCABULARY.items()} == VOCABULARY
    assert set(named) - set(VOCABULARY) <= {"y"}  # another field's name


FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
LOWEST = {"timestamp": 0, "input_length": 1, "output_length": 0}
INT64 = 2**63


def first_fault(members: list[tuple[str, Any]]) -> tuple[str, str] | None:
    """REPLAY-TRACE-9 and REPLAY-TRACE-10 read from spec/replay.md, for a line that is one JSON
    object of these members: the clause and field of the first fault, or None."""
    names, last = [name for name, _ in members], dict(members)

    def integer(value: Any, low: int, high: int) -> bool:
        return type(value) is int and low <= value <= high

    for field in FIELDS:
        if field not in last:
            return "REPLAY-TRACE-1", field
        value = last[field]
        if field != "hash_ids" and not integer(value, LOWEST[field], INT64 - 1):
            return "REPLAY-TRACE-2", field
    if not isinstance(last["hash_ids"], list) or not last["hash_ids"]:
        return "REPLAY-TRACE-2", "hash_ids"
    bad = next((i for i, h in enumerate(last["hash_ids"]) if not integer(h, -INT64, INT64 - 1)), None)
    if bad is not None:
        return "REPLAY-TRACE-2", f"hash_ids[{bad}]"
    other = next((name for name in names if name not in FIELDS), None)
    if other is not None:
        return "REPLAY-TRACE-1", other
    twice = next((name for i, name in enumerate(names) if name in names[:i]), None)
    return None if twice is None else ("REPLAY-TRACE-1", twice)


NUMBERS = st.one_of(st.integers(-(2**64), 2**64), st.integers(-3, 10), st.floats(allow_nan=False, allow_infinity=False))
VALUES = st.one_of(NUMBERS, st.booleans(), st.none(), st.text("ab1", max_size=2),
                   st.lists(st.one_of(NUMBERS, st.booleans(), st.text("1", max_size=1), st.lists(st.integers(0, 3), max_size=1)), max_size=4))
MEMBERS = st.lists(st.tuples(st.sampled_from([*FIELDS, *FIELDS, "x", "y"]), VALUES, st.booleans()), max_size=8)


@settings(max_examples=400, deadline=None)
@given(MEMBERS)
def test_REPLAY_TRACE_10_a_line_of_several_faults_is_refused_for_the_first_by_the_spec_s_order(members: list[tuple[str, Any, bool]]) -> None:
    """Lines of the four fields and others, in any order, some missing, given twice, spelled with
    an escape, of any JSON value: the reference's reader names what first_fault, written from the
    spec, does. About 1 s."""
    def spelled(name: str, escaped: bool) -> str:
        return f'"\\u{ord(name[0]):04x}{name[1:]}"' if escaped else json.dumps(name)

    line = "{" + ", ".join(f"{spelled(name, escaped)}: {json.dumps(value)}" for name, value, escaped in members) + "}"
    expected = first_fault([(name, value) for name, value, _ in members])
    try:
        parse_line("t.jsonl", 2, line.encode())
        named = None
    except TraceError as error:
        named = (error.clause, error.field)
    assert named == expected, line


def refusal(path: Path) -> tuple[int, str, str] | int:
    """Where the reference's reader refuses a file (line, field, clause), or how many requests it read."""
    try:
        return len(list(TraceFile(path).records()))
    except TraceError as error:
        return error.line, error.field, error.clause


def test_REPLAY_TRACE_6_the_reference_names_the_largest_line_the_clause_allows_and_skips_zero_padding(tmp_path: Path) -> None:
    """Two whole lines, then bytes that are no member: a reader may name line 1 to 3, and the
    reference, which hands over every byte it decoded, names 3; zero bytes after a member are
    padding, and a member after them is read. A few ms."""
    good = b'{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}\n'
    member = gzip.compress(good * 2, mtime=0)
    for name, data, expected in (("junk", member + b"junk", (3, "(file)", "REPLAY-TRACE-6")),
                                 ("padded", member + bytes(10), 2), ("padded then a member", member + bytes(3) + member, 4)):
        path = tmp_path / "trace.jsonl"
        path.write_bytes(data)
        assert refusal(path) == expected, name


@pytest.mark.parametrize("field", ["timestamp", "hash_ids[1]", "x"])
def test_REPLAY_TRACE_11_a_value_200_levels_below_the_line_s_object_is_read_and_201_refused_with_the_line(field: str) -> None:
    """The bound, counted as the clause counts it, in a field, in hash_ids and in another field;
    an array of 200 holding a number puts the number at 201. A few ms."""
    def line(value: str) -> bytes:
        fields = {"timestamp": "0", "input_length": "5", "output_length": "1", "hash_ids": "[1, 2]"}
        if field == "x":
            fields["x"] = value
        elif field == "hash_ids[1]":
            fields["hash_ids"] = f"[1, {value}]"
        else:
            fields["timestamp"] = value
        return ("{" + ", ".join(f'"{name}": {text}' for name, text in fields.items()) + "}").encode()

    def named(value: str) -> str:
        with pytest.raises(TraceError) as refused:
            parse_line("t.jsonl", 2, line(value))
        return refused.value.field

    below = 199 if field == "hash_ids[1]" else 200  # hash_ids itself is at level 1
    assert MAX_NESTING == 200
    assert named("[" * below + "]" * below) == field
    assert named("[" * (below + 1) + "]" * (below + 1)) == "(line)"
    assert named("[" * below + "1" + "]" * below) == "(line)"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["timestamp", "hash_ids", "x", "timestamp given twice"])
def test_REPLAY_TRACE_1_NaN_and_the_infinities_are_not_json_and_refuse_the_line_whichever_field_holds_them(field: str, value: str) -> None:
    """Where pydantic and Python's json would read a double, the field, the extra field, or the
    first of a key given twice (whose last value is read): the line. A few ms."""
    lines = {"timestamp": f'{{"timestamp": {value}, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}}',
             "hash_ids": f'{{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, {value}]}}',
             "x": f'{{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2], "x": {value}}}',
             "timestamp given twice": f'{{"timestamp": {value}, "input_length": 5, "output_length": 1, "hash_ids": [1, 2], "timestamp": 0}}'}
    with pytest.raises(TraceError) as refused:
        parse_line("t.jsonl", 2, lines[field].encode())
    assert (refused.value.field, refused.value.clause) == ("(line)", "REPLAY-TRACE-1")


def test_REPLAY_TRACE_10_the_corpus_holds_lines_of_several_faults_and_a_fault_of_line_1_before_one_of_line_2() -> None:
    several = [case for case in trace_cases() if "REPLAY-TRACE-10" in case["clauses"] and "of several faults" in case["title"]]
    assert len(several) >= 5
    first = next(case for case in trace_cases() if case["title"] == "refused at line 1, too many blocks, before line 2, not JSON")
    assert first["refused_at"] == {"line": 1, "field": "input_length"} and first["refused"] == "REPLAY-TRACE-3"
    assert json.loads(first["file"]["lines"][0]) and first["file"]["lines"][1] == "{"


# ---------------------------------------------------------------------------------- FIX-15

def copied_corpus(folder: Path) -> list[dict[str, Any]]:
    """small_corpus's cases, as a manifest lists them."""
    small_corpus(folder)
    return list(json.loads((folder / "manifest.json").read_text())["cases"])


def write_manifest(folder: Path, entries: list[dict[str, Any]]) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "cases": entries}))


def edited_case(folder: Path, entries: list[dict[str, Any]], index: int, edit: Callable[[dict[str, Any]], None]) -> None:
    """The case at ``index`` edited and its sha256 made the manifest's again."""
    path = folder / entries[index]["path"]
    case = json.loads(path.read_text())
    edit(case)
    path.write_text(json.dumps(case))
    entries[index] = {**entries[index], "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    write_manifest(folder, entries)


def last_replay(entries: list[dict[str, Any]]) -> int:
    return max(i for i, entry in enumerate(entries) if entry["kind"] == "replay")


def bad_sha256(folder: Path, entries: list[dict[str, Any]]) -> None:
    path = folder / entries[-1]["path"]
    path.write_bytes(path.read_bytes().replace(b'"title"', b'"title" ', 1))


def entry_field(field: str, value: Any) -> Callable[[Path, list[dict[str, Any]]], None]:
    def fault(folder: Path, entries: list[dict[str, Any]]) -> None:
        entries[-1] = {**entries[-1], field: value}
        write_manifest(folder, entries)
    return fault


def other_kind(folder: Path, entries: list[dict[str, Any]]) -> None:
    """A replay case listed as a trace case, at the path of one."""
    i = last_replay(entries)
    moved = f"trace/{entries[i]['id']}.json"
    (folder / "trace").mkdir(exist_ok=True)
    shutil.move(folder / entries[i]["path"], folder / moved)
    entries[i] = {**entries[i], "kind": "trace", "path": moved}
    write_manifest(folder, sorted(entries, key=lambda entry: entry["path"]))


def hits_edited(folder: Path, entries: list[dict[str, Any]]) -> None:
    edited_case(folder, entries, last_replay(entries), lambda case: case["requests"][0]["expect"].update(hit_tokens=12345))


def dialect_null(folder: Path, entries: list[dict[str, Any]]) -> None:
    edited_case(folder, entries, last_replay(entries), lambda case: case.update(dialect=None))


def snapshot_at_results(folder: Path, entries: list[dict[str, Any]]) -> None:
    i = next(i for i, entry in enumerate(entries) if entry["kind"] == "replay" and "snapshot" in (folder / entry["path"]).read_text())
    edited_case(folder, entries, i, lambda case: case.update(level="results"))


def unsorted(folder: Path, entries: list[dict[str, Any]]) -> None:
    write_manifest(folder, [entries[-1], *entries[:-1]])


def listed_twice(folder: Path, entries: list[dict[str, Any]]) -> None:
    write_manifest(folder, [*entries, entries[-1]])


def raw_edited(folder: Path, entries: list[dict[str, Any]], kind: str, edit: Callable[[bytes], bytes]) -> None:
    """The first case of ``kind`` with its bytes edited, and its sha256 made the manifest's again."""
    i = next(i for i, entry in enumerate(entries) if entry["kind"] == kind)
    path = folder / entries[i]["path"]
    path.write_bytes(edit(path.read_bytes()))
    entries[i] = {**entries[i], "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    write_manifest(folder, entries)


def edited_kind(kind: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[Path, list[dict[str, Any]]], None]:
    def fault(folder: Path, entries: list[dict[str, Any]]) -> None:
        edited_case(folder, entries, next(i for i, entry in enumerate(entries) if entry["kind"] == kind), edit)
    return fault


def bytes_edited(kind: str, old: bytes, new: bytes) -> Callable[[Path, list[dict[str, Any]]], None]:
    def fault(folder: Path, entries: list[dict[str, Any]]) -> None:
        raw_edited(folder, entries, kind, lambda data: data.replace(old, new, 1))
    return fault


def refused_with(clause: str) -> Callable[[dict[str, Any]], None]:
    def edit(case: dict[str, Any]) -> None:
        case.update(refused=clause, totals=None) if "totals" in case else case.update(refused=clause)
    return edit


FAULTS = {
    "a case's sha256": (bad_sha256, r"FIX-2: its sha256 is not the manifest's"),
    "a case's title": (entry_field("title", "another title"), r"FIX-2: its title \('.*'\) is not the manifest's \('another title'\)"),
    "a case's clauses": (entry_field("clauses", ["FIX-3"]), r"FIX-2: its clauses \(\[.*\]\) is not the manifest's \(\['FIX-3'\]\)"),
    "a case's kind": (other_kind, r"FIX-2: its kind \('replay'\) is not the manifest's \('trace'\)"),
    "a case's id": (hits_edited, r"FIX-3: its id replay-\S+ is not replay-\w+-<words>-[0-9a-f]{8}"),
    "a null dialect": (dialect_null, r"not a kvspec-fixture/1 case: replay\.dialect: Input should be a valid (list|array)"),
    "a snapshot at the results level": (snapshot_at_results, r"not a kvspec-fixture/1 case: replay: Value error, FIX-6"),
    "the manifest unsorted": (unsorted, r"FIX-2: not a kvspec-fixture/1 manifest: cases: .*not sorted by path"),
    "a path listed twice": (listed_twice, r"FIX-2: not a kvspec-fixture/1 manifest: cases: .*listed twice"),
    # FIX-15: I-JSON, which Python's json would read (the last of two names, the surrogate, the NaN)
    "a member name given twice": (bytes_edited("benefit", b"{", b'{"title": "another", '), r"FIX-1: not JSON: the member 'title' is given twice"),
    "a lone surrogate": (bytes_edited("benefit", b'"title": "', b'"title": "\\udc00'), r"FIX-1: not JSON: .*surrogate"),
    "a NaN": (bytes_edited("benefit", b"{", b'{"x": NaN, '), r"FIX-1: not JSON: NaN is not JSON"),
    # FIX-15: what a kind's clause says and the schema cannot
    "a refused replay case with requests": (edited_kind("replay", refused_with("REPLAY-CONF-1")), r"FIX-6: refused, requests and totals disagree"),
    "a refused benefit case with operations": (edited_kind("benefit", refused_with("BEN-CONF-1")), r"FIX-7: a refused case has no operations"),
    "a refused comparison case": (edited_kind("comparison", refused_with("BEN-CMP-1")), r"comparison\.refused: Input should be null"),
    "a prefix case's policies out of order": (edited_kind("prefix", lambda case: case["expect"].reverse()), r"FIX-10: expect lists benefit"),
    "a trace file past the bound": (edited_kind("trace", lambda case: case.update(file={"parts": [{"base64": "IA==", "repeat": 2**25 + 1}]})),
                                    r"FIX-8: the trace file is 33554433 bytes, past the bound of 33554432"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_FIX_15_a_fault_of_the_corpus_refuses_it_whole_before_any_case_runs(tmp_path: Path, fault: str) -> None:
    """Each fault in the last case the manifest lists, or the manifest: no case is configured."""
    make, message = FAULTS[fault]
    configured: list[str] = []

    class Recording(ReferenceAdapter):
        def configure(self, config):  # type: ignore[no-untyped-def]
            configured.append(config.policy)
            super().configure(config)

    entries = copied_corpus(tmp_path)
    make(tmp_path, entries)
    with pytest.raises(KvspecError, match=message):
        verify(tmp_path, Recording, {})
    assert configured == []


def test_FIX_15_the_refusal_is_one_line_and_exit_1_with_nothing_written(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    hits_edited(corpus, copied_corpus(corpus))
    run = kvspec("fixtures", "verify", str(corpus), "--adapter", "reference", "--output", str(tmp_path / "v.json"))
    assert run.returncode == 1 and run.stdout == "" and len(run.stderr.splitlines()) == 1 and "FIX-3: its id " in run.stderr
    assert not (tmp_path / "v.json").exists()


# ---------------------------------------------------------------------------------- FIX-16, FIX-17

def at_level(adapter: type, level: str) -> type:
    """``adapter``'s class, offering ``level`` (PROTO-6)."""
    return type(f"{adapter.__name__}At{level.title()}", (adapter,), {"level": level})


@pytest.mark.untyped
def test_FIX_16_an_implementation_of_results_alone_runs_every_state_level_case_checking_all_but_the_state(tmp_path: Path) -> None:
    """Results alone: every case of the small corpus runs, none skipped; a wrong state passes, a
    wrong result fails a state-level case. At the state level the wrong state fails."""
    from test_fixtures_output import ScanReorders

    from kvspec.conformance.galleries.mutants import NoMinClamp

    policies = small_corpus(tmp_path)
    state_level = {case_id for case_id, policy in policies.items()  # of the kinds an adapter runs: not a lifecycle case's (FIX-18)
                   if policy and json.loads(next(tmp_path.glob(f"*/{case_id}.json")).read_text())["level"] == "state"}
    results = verify(tmp_path, at_level(ReferenceAdapter, "results"), {})
    assert {r.verdict for r in results if r.policy is not None} == {"pass"} and state_level <= {r.id for r in results if r.verdict == "pass"}
    lru = {r.id: r.verdict for r in verify(tmp_path, at_level(ScanReorders, "results"), {}, policies=("lru",))}
    assert set(lru.values()) == {"pass"} and state_level & set(lru)
    assert {r.verdict for r in verify(tmp_path, at_level(ScanReorders, "state"), {}, policies=("lru",)) if r.id in state_level} == {"fail"}
    clamped = {r.id: r.verdict for r in verify(tmp_path, at_level(NoMinClamp, "results"), {}, policies=("lru",))}
    assert "fail" in {clamped[case_id] for case_id in state_level & set(clamped)}


def optional_properties(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every property of every object of the schema that is not required, with its schema."""
    found = []
    for name, node in schema.get("$defs", {}).items():
        required = set(node.get("required", ()))
        found += [(f"{name}.{key}", value) for key, value in node.get("properties", {}).items() if key not in required]
    return found


def test_FIX_17_a_field_that_may_be_absent_is_never_null() -> None:
    """The schemas allow no null and give no default for a field they do not require; the corpus
    writes none, and a canonical case has no dialect."""
    for name in ("fixture-case.schema.json", "fixture-manifest.schema.json"):
        schema = json.loads((ROOT / "spec" / "schemas" / name).read_text())
        optional = optional_properties(schema)
        assert [key for key, node in optional if "null" in json.dumps(node) or "default" in node] == [], name
    assert {key for key, _ in optional_properties(json.loads((ROOT / "spec" / "schemas" / "fixture-case.schema.json").read_text()))} == {
        "ReplayCase.dialect", "ReplayExpect.snapshot", "BenefitStep.state",
        *(f"{op.title()}Step.state" for op in ("arrive", "lookup", "allocate", "compute", "decode", "finish", "preempt"))}
    for path in CORPUS.glob("*/*.json"):
        text = path.read_text()
        assert '"dialect"' not in text and '"snapshot": null' not in text and '"state": null' not in text, path.name


def test_the_top_of_fixtures_md_links_every_document_a_consumer_needs() -> None:
    """Derived, not kept: the spec documents whose clauses spec/fixtures.md, the fixture schemas or
    the corpus's cases cite, the schemas and the RFCs it names, each linked before section 1 with
    what it is needed for, and each link resolving."""
    text = (ROOT / "spec" / "fixtures.md").read_text(encoding="utf-8")
    top = text[text.index("## The documents a consumer reads"):text.index("## 1. ")]
    home = {clause: path.name for path in (ROOT / "spec").glob("*.md") for clause in CLAUSE_LINE.findall(path.read_text(encoding="utf-8"))}
    citing = text + "".join(path.read_text() for path in (ROOT / "spec" / "schemas").glob("fixture-*.json"))
    cited = {clause for clause in re.findall(r"\b[A-Z][A-Z0-9]*(?:-[A-Z]+)*-\d+\b", citing) if clause in home}
    cited |= {clause for entry in read_manifest(CORPUS) for clause in entry["clauses"]}
    needed = {home[clause] for clause in cited} - {"fixtures.md"}
    items = [line for line in top.split("\n- ")[1:]]
    linked = {target for item in items for target in re.findall(r"\]\(([^)#]+)\)", item)}
    assert sorted(needed - linked) == [] and {"schemas/fixture-case.schema.json", "schemas/fixture-manifest.schema.json", "schemas/adapter/"} <= linked
    assert all(len(re.sub(r"\[[^]]*\]\([^)]*\)", "", item).split()) >= 6 for item in items)  # each says what it is needed for
    assert [target for target in linked if not target.startswith("https://") and not (ROOT / "spec" / target).exists()] == []
    assert {"https://www.rfc-editor.org/rfc/rfc8785", "https://www.rfc-editor.org/rfc/rfc4648", "https://www.rfc-editor.org/rfc/rfc1952"} <= linked
