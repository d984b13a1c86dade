"""`kvspec replay --adapter --keep-going` (docs/certification.md, "Past the first divergence"):
every divergence reported, each cache's own totals, the first divergence as without it, a
failure mid-way reported with the divergences before it. The expected divergences and totals are
worked out apart from the lockstep: the reference's S3FIFO and LRU stepped side by side (the fake
is an LRU asked for S3FIFO), and each replayed alone."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.inprocess import LATE_FAULT_AT

from kvspec.conformance import cli
from kvspec.conformance.certification.block.keep_going import DivergenceReport
from kvspec.conformance.cli.replay import SHOWN
from kvspec.reference import ReplayConfig, make_policy, replay
from kvspec.reference.replay import replay_request
from kvspec.reference.trace import TraceRecord

from support import schema_errors

FAKES = Path(__file__).resolve().parent / "fakes" / "inprocess.py"
MUTANT = "in-process:kvspec.conformance.galleries.mutants:lru_instead_of_s3fifo"  # the same LRU, showing its queues
S3FIFO = ReplayConfig(policy="s3fifo", capacity=8, block_size=4, small_ratio=0.25)
LRU = ReplayConfig(policy="lru", capacity=8, block_size=4)
OPTIONS = ["--capacity", "8", "--block-size", "4", "--small-ratio", "0.25"]


def requests() -> list[tuple[list[int], int]]:
    """120 conversations' turns over 30 blocks, the last block of each partial now and then."""
    draw = random.Random(16)
    made = []
    for _ in range(120):
        hash_ids = [draw.randrange(30) for _ in range(draw.randint(1, 5))]
        made.append((hash_ids, 4 * len(hash_ids) - draw.choice((0, 0, 1, 3))))
    return made


def trace_file(path: Path) -> Path:
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": length, "output_length": 0, "hash_ids": ids}) + "\n"
                            for ids, length in requests()))
    return path


def side_by_side(count: int) -> list[tuple[int, int, int, int, int]]:
    """Each of the first ``count`` requests on which the reference's S3FIFO and LRU differ, each
    from its own cache: (request, S3FIFO's hit tokens, LRU's, S3FIFO's resident count, LRU's)."""
    spec, lru = make_policy(S3FIFO), make_policy(LRU)
    found = []
    for number, (ids, length) in enumerate(requests()[:count], start=1):
        hits = replay_request(spec, ids, length, 4), replay_request(lru, ids, length, 4)
        counts = spec.resident_count(), lru.resident_count()
        if hits[0] != hits[1] or counts[0] != counts[1]:
            found.append((number, hits[0], hits[1], counts[0], counts[1]))
    return found


def alone(config: ReplayConfig, count: int) -> tuple[int, int, int]:
    """One policy's totals replayed alone over the first ``count`` requests: hit tokens, prompt tokens, final resident count."""
    records = [(n, TraceRecord(timestamp=0, input_length=length, output_length=0, hash_ids=ids)) for n, (ids, length) in enumerate(requests()[:count], 1)]
    result = replay(records, config)
    return result.total_hit_tokens, result.total_prompt_tokens, result.final_cache_blocks


def keep_going(tmp_path: Path, adapter: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, DivergenceReport, str, str]:
    """The exit status, the report (checked against its schema), its JSON as written, and stderr."""
    output = tmp_path / "divergences.json"
    status = cli.main(["replay", str(trace_file(tmp_path / "t.jsonl")), *OPTIONS, "--adapter", adapter, "--keep-going",
                       "--output", str(output)])
    text = output.read_text()
    assert schema_errors("replay-divergences.schema.json", json.loads(text)) == []
    return status, DivergenceReport.model_validate_json(text), text, capsys.readouterr().err


def rows(report: DivergenceReport) -> list[tuple[int, int, int, int, int]]:
    return [(d.request, d.hit_tokens.reference, d.hit_tokens.implementation, d.resident_count.reference, d.resident_count.implementation)
            for d in report.divergences]


def test_every_divergence_is_reported_with_each_caches_own_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, report, text, err = keep_going(tmp_path, f"in-process:{FAKES}:lru_at_the_results_level", capsys)
    expected = side_by_side(120)
    assert status == 3 and not report.conforms and report.stopped is None
    assert len(expected) > SHOWN and rows(report) == expected and report.diverged_requests == len(expected) and report.requests == 120
    assert [d.line for d in report.divergences] == [d.request for d in report.divergences]  # one request a line
    first = report.first_divergence
    assert first is not None and (first.request, first.line) == (expected[0][0], expected[0][0]) and first.clauses
    for totals, config in ((report.reference, S3FIFO), (report.implementation, LRU)):
        assert (totals.total_hit_tokens, totals.total_prompt_tokens, totals.final_cache_blocks) == alone(config, 120)
        assert totals.hit_rate == totals.total_hit_tokens / totals.total_prompt_tokens
    assert report.reference.total_hit_tokens != report.implementation.total_hit_tokens
    # The spooled divergences make the JSON pydantic writes for the whole report.
    assert text == report.model_dump_json(indent=2, exclude_none=True) + "\n"
    assert "never reset to the reference's" in err and f"{len(expected):,} of 120 requests diverged" in err
    assert f"and {len(expected) - SHOWN:,} more" in err and err.count("\n  line ") == SHOWN
    number, *_ = expected[SHOWN - 1]
    assert f"  line {number} (request {number}): " in err


def test_the_first_divergence_is_diagnosed_as_without_keep_going(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the state level the queues tell the two apart at request 1, before any result does; past
    it only the results are compared."""
    status, report, _, _ = keep_going(tmp_path, MUTANT, capsys)
    assert status == 3 and report.first_divergence is not None
    assert cli.main(["replay", str(tmp_path / "t.jsonl"), *OPTIONS, "--adapter", MUTANT]) == 3
    stopped = capsys.readouterr().err
    assert report.first_divergence.request == 1 and f"(request 1): {report.first_divergence.message}" in stopped
    assert rows(report)[1:] == [row for row in side_by_side(120) if row[0] > 1]


def test_a_failure_mid_way_is_reported_with_the_divergences_before_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, report, _, err = keep_going(tmp_path, f"in-process:{FAKES}:lru_raising_late", capsys)
    before = side_by_side(LATE_FAULT_AT - 1)
    assert status == 3 and report.stopped is not None and before
    assert (report.stopped.at, report.stopped.request, report.stopped.line, report.stopped.clauses) == ("request", LATE_FAULT_AT, LATE_FAULT_AT,
                                                                                                       ["PROTO-29"])
    assert "MemoryError" in report.stopped.message and rows(report) == before and report.requests == LATE_FAULT_AT - 1
    for totals, config in ((report.reference, S3FIFO), (report.implementation, LRU)):
        assert (totals.total_hit_tokens, totals.total_prompt_tokens, totals.final_cache_blocks) == alone(config, LATE_FAULT_AT - 1)
    assert f"at line {LATE_FAULT_AT} of {tmp_path / 't.jsonl'} (request {LATE_FAULT_AT}): PROTO-29: " in err


def test_a_failure_at_the_start_and_a_conforming_implementation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, report, _, err = keep_going(tmp_path, f"in-process:{FAKES}:factory_raises", capsys)
    assert status == 3 and report.stopped is not None and report.stopped.at == "start" and report.requests == 0
    assert "at its start: PROTO-29: " in err
    output = tmp_path / "agrees.json"
    assert cli.main(["replay", str(tmp_path / "t.jsonl"), *OPTIONS, "--adapter", "reference", "--keep-going", "--output", str(output)]) == 0
    agrees = DivergenceReport.model_validate_json(output.read_text())
    assert agrees.conforms and agrees.divergences == [] and agrees.first_divergence is None and agrees.reference == agrees.implementation
    assert (agrees.reference.total_hit_tokens, agrees.reference.total_prompt_tokens, agrees.reference.final_cache_blocks) == alone(S3FIFO, 120)


@pytest.mark.parametrize("extra", [[], ["--adapter", "reference", "--per-request"]])
def test_keep_going_without_an_adapter_or_with_per_request_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]) -> None:
    assert cli.main(["replay", str(trace_file(tmp_path / "t.jsonl")), "--keep-going", *extra, "--output", str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kvspec: error: --keep-going ") and err.count("\n") == 1 and not (tmp_path / "out.json").exists()


def test_memory_does_not_grow_with_the_divergences(tmp_path: Path) -> None:
    """Every request diverges (one-block requests, never reused: S3FIFO keeps them in S alone, the
    LRU fills its capacity): 5,000 divergences take no more memory than 500, each written to the
    spool as it is found (a list of the 5,000 would take some 7 MiB)."""
    line = '{{"timestamp": 0, "input_length": 1, "output_length": 0, "hash_ids": [{}]}}\n'
    output = tmp_path / "out.json"
    peaks = []
    for count in (500, 5_000):
        (tmp_path / f"{count}.jsonl").write_text("".join(line.format(i) for i in range(count)))
        peaks.append(peak_mib("replay", str(tmp_path / f"{count}.jsonl"), "--capacity", "64", "--block-size", "1", "--adapter",
                              f"in-process:{FAKES}:lru_at_the_results_level", "--keep-going", "--output", str(output)))
        assert json.loads(output.read_text())["diverged_requests"] > count - 10
    assert peaks[1] < peaks[0] + 1, peaks


def peak_mib(*args: str) -> float:
    """The peak of a kvspec command's Python allocations (tracemalloc, after the imports), contracts
    off, in a process of its own; the command must find the divergences."""
    code = ("import sys, tracemalloc\nfrom kvspec.conformance.cli import main\ntracemalloc.start()\nstatus = main(sys.argv[1:])\n"
            "print(tracemalloc.get_traced_memory()[1] / 2**20, file=sys.stderr)\nsys.exit(status)")
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 3, run.stderr
    return float(run.stderr.splitlines()[-1])
