"""REPLAY-TRACE-1 to REPLAY-TRACE-8: the Mooncake trace reader, and the vendored traces."""

import gzip
import hashlib
import json
import tracemalloc
import zlib
from pathlib import Path

import pytest

from kvspec.reference import KvspecError, ReplayConfig, TraceError, TraceFile, TraceRecord, bundled_trace_path, replay
from kvspec.reference.trace import MAX_LINE_BYTES, parse_line

GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}


def line(**fields: object) -> bytes:
    return json.dumps({**GOOD, **fields}).encode()


def refusal(raw: bytes) -> TraceError:
    with pytest.raises(TraceError) as caught:
        parse_line("t.jsonl", 7, raw)
    return caught.value


def write_trace(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(raw + b"\n" for raw in lines))
    return path


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"", "(line)"),
        (b"   ", "(line)"),
        (b"{", "(line)"),
        (b"[1, 2]", "(line)"),
        (b'{"timestamp": 0, "input_length": 1000, "output_length": 10}', "hash_ids"),
        (line(model="llama"), "model"),
    ],
)
def test_REPLAY_TRACE_1_refuses_what_is_not_one_object_with_exactly_the_four_fields(raw: bytes, field: str) -> None:
    """REPLAY-TRACE-1: blank lines, non-JSON, non-objects, missing and extra fields are refused."""
    error = refusal(raw)
    assert (error.path, error.line, error.field, error.clause) == ("t.jsonl", 7, field, "REPLAY-TRACE-1")
    assert str(error).startswith(f"t.jsonl:7: field {field}: REPLAY-TRACE-1: ")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"timestamp": -1}, "timestamp"),
        ({"timestamp": 2**63}, "timestamp"),
        ({"input_length": 0}, "input_length"),
        ({"input_length": 1000.0}, "input_length"),
        ({"input_length": "1000"}, "input_length"),
        ({"input_length": True}, "input_length"),
        ({"input_length": None}, "input_length"),
        ({"output_length": -5}, "output_length"),
        ({"hash_ids": []}, "hash_ids"),
        ({"hash_ids": 5}, "hash_ids"),
        ({"hash_ids": [1, "2"]}, "hash_ids[1]"),
        ({"hash_ids": [1, 2.5]}, "hash_ids[1]"),
        ({"hash_ids": [1, 2, False]}, "hash_ids[2]"),
        ({"hash_ids": [2**63]}, "hash_ids[0]"),
        ({"hash_ids": [-(2**63) - 1]}, "hash_ids[0]"),
    ],
)
def test_REPLAY_TRACE_2_refuses_values_that_are_not_integers_in_range(fields: dict[str, object], field: str) -> None:
    """REPLAY-TRACE-2: strict integers in their ranges; no coercion of 1000.0, "1000" or true."""
    error = refusal(line(**fields))
    assert (error.field, error.clause) == (field, "REPLAY-TRACE-2")


def test_REPLAY_TRACE_2_refuses_an_exponent_even_when_the_value_is_whole() -> None:
    """REPLAY-TRACE-2: 1e3 is a JSON number with an exponent, not an integer."""
    error = refusal(b'{"timestamp": 0, "input_length": 1e3, "output_length": 0, "hash_ids": [1, 2]}')
    assert (error.field, error.clause) == ("input_length", "REPLAY-TRACE-2")


def test_REPLAY_TRACE_2_accepts_the_64_bit_extremes_and_negative_hash_ids() -> None:
    """REPLAY-TRACE-2: the bounds are inclusive; a hash id may be negative."""
    record = parse_line("t.jsonl", 1, line(timestamp=2**63 - 1, output_length=0, hash_ids=[-(2**63), 2**63 - 1, -1]))
    assert record.hash_ids == [-(2**63), 2**63 - 1, -1]
    assert record.timestamp == 2**63 - 1


def test_REPLAY_TRACE_1_a_bad_line_is_reported_with_its_line_number_in_the_file(tmp_path: Path) -> None:
    """REPLAY-TRACE-1, REPLAY-TRACE-7: the error names the file and the line the reader was on."""
    path = write_trace(tmp_path / "t.jsonl", [line(), line(), line(extra=1)])
    with pytest.raises(TraceError) as caught:
        list(TraceFile(path).records())
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 3, "extra")


def test_REPLAY_TRACE_1_the_reader_streams_records_before_reaching_a_bad_line(tmp_path: Path) -> None:
    """The reader yields line 1 before it has read line 2: memory does not grow with the trace."""
    path = write_trace(tmp_path / "t.jsonl", [line(), b"not json"])
    records = TraceFile(path).records()
    assert next(records) == (1, TraceRecord(**GOOD))
    with pytest.raises(TraceError, match=":2: "):
        next(records)


@pytest.mark.parametrize(("input_length", "accepted"), [(1024, True), (513, True), (512, False), (1025, False), (5000, False)])
def test_REPLAY_TRACE_3_input_length_must_fill_its_blocks(tmp_path: Path, input_length: int, accepted: bool) -> None:
    """REPLAY-TRACE-3: two hash ids at block size 512 take 513 to 1024 tokens, no fewer, no more."""
    path = write_trace(tmp_path / "t.jsonl", [line(input_length=input_length)])
    config = ReplayConfig(policy="lru", capacity=4, block_size=512)
    if accepted:
        assert replay(TraceFile(path).records(), config, path=str(path)).total_prompt_tokens == input_length
        return
    with pytest.raises(TraceError) as caught:
        replay(TraceFile(path).records(), config, path=str(path))
    assert (caught.value.line, caught.value.field, caught.value.clause) == (1, "input_length", "REPLAY-TRACE-3")
    assert "--block-size" in str(caught.value)


def test_REPLAY_TRACE_5_timestamps_and_output_lengths_do_not_change_the_replay(tmp_path: Path) -> None:
    """REPLAY-TRACE-5: file order, not timestamp order; output_length is not read."""
    requests = [([1, 2, 3], 1500), ([1, 2, 4], 1400), ([5], 100), ([1, 2, 3], 1536)]
    ordered = [line(timestamp=i, output_length=1, hash_ids=h, input_length=n) for i, (h, n) in enumerate(requests)]
    shuffled = [line(timestamp=100 - i * 7, output_length=900 + i, hash_ids=h, input_length=n) for i, (h, n) in enumerate(requests)]
    config = ReplayConfig(policy="lru", capacity=3, block_size=512)
    a = replay(TraceFile(write_trace(tmp_path / "a.jsonl", ordered)).records(), config, per_request=True)
    b = replay(TraceFile(write_trace(tmp_path / "b.jsonl", shuffled)).records(), config, per_request=True)
    assert a == b
    reversed_order = replay(TraceFile(write_trace(tmp_path / "c.jsonl", ordered[::-1])).records(), config, per_request=True)
    assert reversed_order.per_request is not None and a.per_request is not None
    assert [r.prompt_tokens for r in reversed_order.per_request] == [r.prompt_tokens for r in a.per_request][::-1]


def test_REPLAY_TRACE_6_gzip_is_recognised_by_its_magic_bytes_not_its_name(tmp_path: Path) -> None:
    """REPLAY-TRACE-6: a gzip file named .jsonl and a plain file named .gz both read."""
    lines = [line(), line(hash_ids=[1, 3])]
    plain = b"".join(raw + b"\n" for raw in lines)
    (tmp_path / "packed.jsonl").write_bytes(gzip.compress(plain))
    (tmp_path / "plain.jsonl.gz").write_bytes(plain)
    packed_records = list(TraceFile(tmp_path / "packed.jsonl").records())
    plain_records = list(TraceFile(tmp_path / "plain.jsonl.gz").records())
    assert packed_records == plain_records
    assert [record.hash_ids for _, record in plain_records] == [[1, 2], [1, 3]]


def test_REPLAY_TRACE_6_a_truncated_gzip_file_is_refused_at_the_line_reading_failed(tmp_path: Path) -> None:
    """REPLAY-TRACE-6: a file that cannot be decompressed is an error naming the file and line."""
    packed = gzip.compress(b"".join(line(hash_ids=[i, i + 1]) + b"\n" for i in range(2000)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceError) as caught:
        list(TraceFile(path).records())
    assert caught.value.clause == "REPLAY-TRACE-6"
    assert caught.value.line > 1


def test_a_missing_trace_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="cannot read the trace"):
        TraceFile(tmp_path / "nowhere.jsonl")


def test_a_folder_is_not_a_trace_file(tmp_path: Path) -> None:
    """Refused when the trace is named, before any work, as a folder rather than as a file that cannot be read."""
    with pytest.raises(KvspecError) as caught:
        TraceFile(tmp_path)
    assert str(caught.value) == f"{tmp_path}: is a folder, not a trace file"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "Invalid JSON: EOF while parsing an object at column 1"),
        (b'{"timestamp": 0, "input_length": 1000x}', "Invalid JSON: expected `,` or `}` at column 38"),
        (b'{"timestamp": 0,\n', "Invalid JSON: EOF while parsing a value at the end of the line"),
    ],
)
def test_REPLAY_TRACE_1_a_json_error_names_one_line_and_its_column(raw: bytes, message: str) -> None:
    """REPLAY-TRACE-1, REPLAY-TRACE-7: the trace's line number only, never pydantic's `at line 1 column K` beside it."""
    assert str(refusal(raw)) == f"t.jsonl:7: field (line): REPLAY-TRACE-1: {message}"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (b', "timestamp": 0', "timestamp"),
        (b', "hash_ids": [3, 4]', "hash_ids"),
        (b', "\\u0074imestamp": 5', "timestamp"),
        (b', "input_length": "x", "input_length": 1000', "input_length"),
    ],
)
def test_REPLAY_TRACE_1_a_key_given_twice_is_refused(extra: bytes, field: str) -> None:
    """REPLAY-TRACE-1: exactly four fields, each once, even where the last value would be valid
    (pydantic alone keeps the last); an escape spells the same key."""
    error = refusal(line()[:-1] + extra + b"}")
    assert str(error) == f"t.jsonl:7: field {field}: REPLAY-TRACE-1: duplicate key"


def test_REPLAY_TRACE_1_an_escaped_key_given_once_is_accepted() -> None:
    """REPLAY-TRACE-1: the quick check counts quotes, and an escape changes none of them."""
    assert parse_line("t.jsonl", 1, line().replace(b'"timestamp"', b'"\\u0074imestamp"')) == TraceRecord(**GOOD)


def test_REPLAY_TRACE_1_a_byte_order_mark_is_ignored_at_the_start_of_the_file_only(tmp_path: Path) -> None:
    """REPLAY-TRACE-1: EF BB BF before line 1 (plain or gzip) is dropped; before any other line it is refused."""
    marked = b"\xef\xbb\xbf" + line() + b"\n" + line(hash_ids=[1, 3]) + b"\n"
    (tmp_path / "plain.jsonl").write_bytes(marked)
    (tmp_path / "packed.jsonl").write_bytes(gzip.compress(marked))
    expected = list(TraceFile(write_trace(tmp_path / "unmarked.jsonl", [line(), line(hash_ids=[1, 3])])).records())
    assert list(TraceFile(tmp_path / "plain.jsonl").records()) == list(TraceFile(tmp_path / "packed.jsonl").records()) == expected
    with pytest.raises(TraceError) as caught:
        list(TraceFile(write_trace(tmp_path / "inside.jsonl", [line(), b"\xef\xbb\xbf" + line()])).records())
    assert (caught.value.line, caught.value.field, caught.value.clause) == (2, "(line)", "REPLAY-TRACE-1")


def padded(size: int) -> bytes:
    """A valid line of exactly ``size`` bytes: the JSON, then spaces."""
    return line() + b" " * (size - len(line()))


def test_REPLAY_TRACE_8_a_line_of_16_MiB_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    """REPLAY-TRACE-8: the bound counts the line's bytes, not its line feed; the error names the line and the bound."""
    path = write_trace(tmp_path / "t.jsonl", [line(), padded(MAX_LINE_BYTES)])
    assert [number for number, _ in TraceFile(path).records()] == [1, 2]
    path = write_trace(tmp_path / "t.jsonl", [line(), padded(MAX_LINE_BYTES + 1)])
    with pytest.raises(TraceError) as caught:
        list(TraceFile(path).records())
    assert str(caught.value) == f"{path}:2: field (line): REPLAY-TRACE-8: line longer than 16,777,216 bytes"


def test_REPLAY_TRACE_8_a_small_gzip_file_of_one_endless_line_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """REPLAY-TRACE-8: 256 MiB of line in a gzip file of a few hundred KB; the reader holds at most
    the bound of it, so the run's Python allocations stay well below the line's length."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip stream
    path = tmp_path / "endless.jsonl.gz"
    path.write_bytes(b"".join(packer.compress(b"a" * 2**20) for _ in range(256)) + packer.flush())
    tracemalloc.start()
    try:
        with pytest.raises(TraceError) as caught:
            list(TraceFile(path).records())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (caught.value.line, caught.value.clause) == (1, "REPLAY-TRACE-8")
    assert peak < 3 * MAX_LINE_BYTES


def test_standard_input_is_named_dash_has_no_fraction_and_is_read_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`-` reads standard input, gzip or plain by content (REPLAY-TRACE-6); a second read is
    refused rather than finding it empty, and its errors name `<stdin>`."""
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(line() + b"\n" + line(extra=1) + b"\n"))
    with path.open("rb") as stdin:
        monkeypatch.setattr("sys.stdin", stdin)
        trace = TraceFile("-")
        assert trace.fraction_read() is None
        records = trace.records()
        assert next(records) == (1, TraceRecord(**GOOD))
        with pytest.raises(TraceError, match="^<stdin>:2: field extra: REPLAY-TRACE-1: "):
            next(records)
        with pytest.raises(KvspecError, match="^-: standard input can be read once"):
            next(trace.records())


def sha256_of_decompressed(name: str) -> str:
    with gzip.open(bundled_trace_path(name), "rb") as packed:
        return hashlib.sha256(packed.read()).hexdigest()


@pytest.mark.parametrize(
    ("name", "digest"),
    [
        ("conversation_trace.jsonl.gz", "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df"),
        ("synthetic_trace.jsonl.gz", "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131"),
    ],
)
def test_the_vendored_traces_are_the_published_files(name: str, digest: str) -> None:
    """The sha256 sums are those the Mooncake data README and traces/NOTICE.md publish."""
    assert sha256_of_decompressed(name) == digest
    notice = (bundled_trace_path(name).parent / "NOTICE.md").read_text()
    assert digest in notice
    assert "Apache License\n                           Version 2.0" in (bundled_trace_path(name).parent / "LICENSE-APACHE").read_text()
