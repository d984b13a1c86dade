"""Replays of the two bundled Mooncake traces, checked against the invariants of spec/replay.md and
against the naive model of tests/naive.py; never against hard-coded totals.

The only figures written down here are facts about the data, from the data README
(../shared/data/mooncake/README.md): request and token counts, distinct blocks, and what an
unbounded cache would hit. They are checked against an independent reading of the files.

Cost. With every contract installed (KVSPEC_CONTRACTS=all, the suite's setting) one S3FIFO replay
of the conversation trace takes most of a minute, so the full-trace replays run the reference in
subprocesses, as many at a time as there are cores, started together when the first test needs
one; the naive model runs in this process meanwhile. Each policy and each setting of its knobs
replays one whole trace with KVSPEC_CONTRACTS=1 (the O(1) contracts and the per-request state
invariants: 1.2 to 6.8 s of CPU a replay, against 0.3 to 0.4 s without); the other capacities
replay without contracts, the naive model checking every request of them. One test replays a
prefix of the conversation trace in process, with every contract and typeguard on.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kvspec.reference import S3FIFO, ReplayConfig, TraceFile, bundled_trace_path, make_policy, replay
from kvspec.reference.replay import replay_request

from naive import NaiveFIFO, NaiveLRU, NaiveS3FIFO, make_naive, naive_replay, naive_request
from support import reference_state

BLOCK_SIZE = 512

# Facts from the data README, measured there on the uncompressed files.
FACTS = {
    "conversation": {
        "file": "conversation_trace.jsonl.gz",
        "requests": 12_031,
        "block_refs": 288_500,
        "distinct_blocks": 182_790,
        "prompt_tokens": 144_793_823,
        "unbounded_hit_tokens": 54_098_411,
    },
    "synthetic": {
        "file": "synthetic_trace.jsonl.gz",
        "requests": 3_993,
        "block_refs": 121_877,
        "distinct_blocks": 43_924,
        "prompt_tokens": 61_194_628,
        "unbounded_hit_tokens": 39_852_661,
    },
}

Request = tuple[list[int], int]


def trace_path(name: str) -> Path:
    return bundled_trace_path(FACTS[name]["file"])


def read_plainly(path: Path) -> list[Request]:
    """(hash_ids, input_length) per line, with gzip and json alone (not the reference's reader)."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [(record["hash_ids"], record["input_length"]) for record in map(json.loads, lines)]


_requests: dict[str, list[Request]] = {}
_requests_lock = threading.Lock()


def requests_of(name: str) -> list[Request]:
    """The trace, read once (the pool's threads ask for it too)."""
    with _requests_lock:
        if name not in _requests:
            _requests[name] = read_plainly(trace_path(name))
        return _requests[name]


def unbounded_hits(requests: list[Request]) -> list[int]:
    """Per-request hit tokens of a cache that never evicts: the longest prefix of blocks seen."""
    seen: set[int] = set()
    hits = []
    for hash_ids, input_length in requests:
        k = 0
        while k < len(hash_ids) and hash_ids[k] in seen:
            k += 1
        hits.append(min(k * BLOCK_SIZE, input_length))
        seen.update(hash_ids)
    return hits


# -- the cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    trace: str
    policy: str
    capacity: int | str  # "distinct": the trace's number of distinct blocks
    small_ratio: float = 0.1
    max_freq: int = 3
    contracts: str = "0"  # KVSPEC_CONTRACTS of the reference's replay

    @property
    def id(self) -> str:
        knobs = f"-r{self.small_ratio}-f{self.max_freq}" if self.policy == "s3fifo" else ""
        return f"{self.trace}-{self.policy}-{self.capacity}{knobs}"

    def blocks(self) -> int:
        if self.capacity == "distinct":
            return len({h for hash_ids, _ in requests_of(self.trace) for h in hash_ids})
        assert isinstance(self.capacity, int)
        return self.capacity


# Longest first, so that the pool finishes early. S3FIFO at 64 to 1024 blocks on the conversation
# trace includes capacities at which it ends well below capacity; the synthetic trace adds other
# small_ratio and max_freq values (max_freq 0: M is plain FIFO). Under contracts: each policy and
# knob setting once, at its largest capacity that evicts.
CASES = [
    Case("conversation", "s3fifo", 1024, contracts="1"),
    Case("synthetic", "s3fifo", 512, small_ratio=0.25, max_freq=1, contracts="1"),
    Case("synthetic", "s3fifo", 128, small_ratio=0.5, max_freq=0, contracts="1"),
    Case("conversation", "lru", 1024, contracts="1"),
    Case("conversation", "fifo", 1024, contracts="1"),
    Case("conversation", "s3fifo", 256),
    Case("conversation", "s3fifo", 64),
    Case("synthetic", "s3fifo", 1024),
    Case("synthetic", "s3fifo", 256),
    Case("conversation", "lru", 256),
    Case("conversation", "fifo", 256),
    Case("conversation", "lru", "distinct"),
    Case("conversation", "fifo", "distinct"),
    Case("synthetic", "lru", 1024),
    Case("synthetic", "fifo", 256),
    Case("synthetic", "lru", "distinct"),
    Case("synthetic", "fifo", "distinct"),
]


class ReferenceRuns:
    """The reference's replays, each in a subprocess with its case's contracts, run in a pool."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.pool = ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1))
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.closed = False
        self.futures: dict[Case, Future[dict[str, Any]]] = {case: self.pool.submit(self.run, case) for case in CASES}

    def run(self, case: Case) -> dict[str, Any]:
        output = self.directory / f"{case.id}.json"
        command = [
            sys.executable, "-m", "kvspec.conformance.cli", "replay", str(trace_path(case.trace)),
            "--policy", case.policy, "--capacity", str(case.blocks()), "--block-size", str(BLOCK_SIZE),
            "--small-ratio", repr(case.small_ratio), "--max-freq", str(case.max_freq),
            "--per-request", "--output", str(output),
        ]  # fmt: skip
        env = {**os.environ, "KVSPEC_CONTRACTS": case.contracts}
        with self.lock:
            if self.closed:
                raise RuntimeError("the run was cancelled")
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.running.add(process)
        try:
            stdout, stderr = process.communicate()
        finally:
            with self.lock:
                self.running.discard(process)
        if process.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited with {process.returncode}:\n{stderr.decode(errors='replace')}")
        return json.loads(output.read_text(encoding="utf-8"))

    def result(self, case: Case) -> dict[str, Any]:
        return self.futures[case].result()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for process in self.running:
                process.kill()  # only the processes this object started
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def reference_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceRuns]:
    runs = ReferenceRuns(tmp_path_factory.mktemp("mooncake"))
    try:
        yield runs
    finally:
        runs.close()


@pytest.fixture(scope="module", autouse=True)
def start_reference_runs_early(request: pytest.FixtureRequest) -> None:
    """Start the subprocesses with the module's first test, so that they run while the tests
    that need none do; but only if a selected test needs them (not under ``-k in_process``)."""
    if any(item.module is request.module and "reference_runs" in item.fixturenames for item in request.session.items):
        request.getfixturevalue("reference_runs")


# -- facts about the data ---------------------------------------------------------------------


@pytest.mark.parametrize("name", FACTS)
def test_the_traces_are_the_ones_the_readme_describes(name: str) -> None:
    """REPLAY-TRACE-3, REPLAY-HIT-2: the README's counts, len(hash_ids) == ceil(input_length / 512)
    on every line, and the unbounded-cache hit figure (longest prefix of blocks seen before)."""
    facts = FACTS[name]
    requests = requests_of(name)
    assert len(requests) == facts["requests"]
    assert sum(len(hash_ids) for hash_ids, _ in requests) == facts["block_refs"]
    assert len({h for hash_ids, _ in requests for h in hash_ids}) == facts["distinct_blocks"]
    assert sum(length for _, length in requests) == facts["prompt_tokens"]
    assert all(len(hash_ids) == math.ceil(length / BLOCK_SIZE) for hash_ids, length in requests)
    assert sum(unbounded_hits(requests)) == facts["unbounded_hit_tokens"]


@pytest.mark.parametrize("name", FACTS)
def test_the_reference_reader_reads_what_json_reads(name: str) -> None:
    """REPLAY-TRACE-1, REPLAY-TRACE-5, REPLAY-TRACE-6: TraceFile yields every line, in order,
    numbered from 1, with the hash ids and input_length a plain gzip + json reading gives."""
    plain = requests_of(name)
    count = 0
    for (line_number, record), (hash_ids, length) in zip(TraceFile(trace_path(name)).records(), plain, strict=True):
        count += 1
        assert line_number == count
        assert record.hash_ids == hash_ids and record.input_length == length
    assert count == len(plain)


# -- full traces: reference (subprocess) against the naive model ------------------------------


# The naive LRU moves a hit to the tail with list.remove, O(cache size): at a capacity of every
# distinct block that would take minutes. There nothing is evicted, and
# test_lru_and_fifo_with_room_for_every_block_hit_the_unbounded_figure checks every request
# against the simpler model still, a cache that never evicts.
NAIVE_CASES = [case for case in CASES if not (case.policy == "lru" and case.capacity == "distinct")]


@pytest.mark.parametrize("case", NAIVE_CASES, ids=lambda case: case.id)
def test_full_trace_replay_agrees_with_the_naive_model(case: Case, reference_runs: ReferenceRuns) -> None:
    """REPLAY-1, REPLAY-PREFIX-1..3, REPLAY-HIT-1, REPLAY-ACCESS-1, REPLAY-RESULT-1..4, S3-FINAL-1,
    and the policies' rules: per-request hit and prompt tokens and final_cache_blocks of the
    reference equal the naive model's on the whole trace."""
    requests = requests_of(case.trace)
    capacity = case.blocks()
    expected = naive_replay(requests, case.policy, capacity, BLOCK_SIZE, case.small_ratio, case.max_freq)
    result = reference_runs.result(case)
    assert result["policy"] == case.policy
    assert result["requests"] == len(requests)
    assert result["cache_capacity_blocks"] == capacity
    assert result["block_size"] == BLOCK_SIZE
    if case.policy == "s3fifo":
        assert (result["small_ratio"], result["max_freq"]) == (case.small_ratio, case.max_freq)
    hits = [line["hit_tokens"] for line in result["per_request"]]
    prompts = [line["prompt_tokens"] for line in result["per_request"]]
    first = next((i for i, (a, b) in enumerate(zip(hits, expected.hit_tokens, strict=True)) if a != b), None)
    assert first is None, f"line {first + 1}: the reference hits {hits[first]} tokens, the naive model {expected.hit_tokens[first]}"
    assert prompts == expected.prompt_tokens
    assert result["final_cache_blocks"] == expected.final_cache_blocks


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_full_trace_replay_keeps_the_invariants(case: Case, reference_runs: ReferenceRuns) -> None:
    """REPLAY-RESULT-3 (sums equal totals), REPLAY-INV-1 (0 <= hit <= prompt), REPLAY-INV-2
    (final <= capacity), REPLAY-INV-3 (a first hash never seen before hits 0), REPLAY-HIT-2
    (the prompt total is the README's), and no request beats an unbounded cache."""
    result = reference_runs.result(case)
    lines = result["per_request"]
    requests = requests_of(case.trace)
    assert sum(line["hit_tokens"] for line in lines) == result["total_hit_tokens"]
    assert sum(line["prompt_tokens"] for line in lines) == result["total_prompt_tokens"] == FACTS[case.trace]["prompt_tokens"]
    assert all(0 <= line["hit_tokens"] <= line["prompt_tokens"] for line in lines)
    assert 0 <= result["final_cache_blocks"] <= result["cache_capacity_blocks"]
    seen: set[int] = set()
    for (hash_ids, _), line, bound in zip(requests, lines, unbounded_hits(requests), strict=True):
        if hash_ids[0] not in seen:
            assert line["hit_tokens"] == 0
        assert line["hit_tokens"] <= bound
        seen.update(hash_ids)


def test_s3fifo_ends_below_capacity_on_some_run(reference_runs: ReferenceRuns) -> None:
    """REPLAY-INV-2, S3-FINAL-1: S3FIFO may end strictly below capacity (nothing pads it); at least
    one of the full-trace runs does, and there the naive model ends at the same count."""
    below = []
    for case in CASES:
        if case.policy == "s3fifo":
            result = reference_runs.result(case)
            if result["final_cache_blocks"] < result["cache_capacity_blocks"]:
                below.append(case)
                naive = naive_replay(requests_of(case.trace), "s3fifo", case.blocks(), BLOCK_SIZE, case.small_ratio, case.max_freq)
                assert naive.final_cache_blocks == result["final_cache_blocks"]
    assert below, "no S3FIFO run ended below capacity"


@pytest.mark.parametrize("name", FACTS)
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_lru_and_fifo_with_room_for_every_block_hit_the_unbounded_figure(name: str, policy: str, reference_runs: ReferenceRuns) -> None:
    """LRU-EVICT-1, FIFO-EVICT-1, REPLAY-PREFIX-1, REPLAY-HIT-1: with capacity == the number of
    distinct blocks nothing is ever evicted, so LRU and FIFO hit exactly what the README says an
    unbounded cache hits, and end holding every block."""
    result = reference_runs.result(Case(name, policy, "distinct"))
    assert result["cache_capacity_blocks"] == FACTS[name]["distinct_blocks"]
    assert result["total_hit_tokens"] == FACTS[name]["unbounded_hit_tokens"]
    assert [line["hit_tokens"] for line in result["per_request"]] == unbounded_hits(requests_of(name))
    assert result["final_cache_blocks"] == FACTS[name]["distinct_blocks"]


# -- a prefix of the conversation trace, in process, with every contract ------------------------

PREFIX_REQUESTS = 300



@pytest.mark.parametrize(("policy", "capacity"), [("s3fifo", 32), ("s3fifo", 256), ("lru", 64), ("fifo", 64)])
def test_conversation_prefix_in_process_with_every_contract(policy: str, capacity: int) -> None:
    """REPLAY-1, REPLAY-PREFIX-1..3, REPLAY-HIT-1, REPLAY-ACCESS-1, REPLAY-RESULT-3, REPLAY-INV-1..3,
    S3-QUEUE-2, S3-INV-1..3, S3-FREQ-1, S3-FINAL-1 (as the installed contracts check them, and as
    checked here): the first 300 conversation requests, read by TraceFile and replayed in process
    with KVSPEC_CONTRACTS=all, equal the naive model per request, and the queues (order and freq)
    equal the naive model's after every request."""
    config = ReplayConfig(policy=policy, capacity=capacity, block_size=BLOCK_SIZE)
    records = list(itertools.islice(TraceFile(trace_path("conversation")).records(), PREFIX_REQUESTS))
    plain = requests_of("conversation")[:PREFIX_REQUESTS]
    result = replay(records, config, per_request=True)
    expected = naive_replay(plain, policy, capacity, BLOCK_SIZE)
    assert result.per_request is not None
    assert [line.hit_tokens for line in result.per_request] == expected.hit_tokens
    assert sum(expected.hit_tokens) == result.total_hit_tokens > 0
    assert result.final_cache_blocks == expected.final_cache_blocks <= capacity

    cache = make_policy(config)
    naive: NaiveS3FIFO | NaiveLRU | NaiveFIFO = make_naive(policy, capacity)
    seen: set[int] = set()
    for (_, record), (hash_ids, length) in zip(records, plain, strict=True):
        hit = replay_request(cache, record.hash_ids, record.input_length, BLOCK_SIZE)
        assert hit == naive_request(naive, hash_ids, length, BLOCK_SIZE)
        assert 0 <= hit <= length
        if hash_ids[0] not in seen:
            assert hit == 0
        seen.update(hash_ids)
        assert reference_state(cache) == naive.state()
    if isinstance(cache, S3FIFO):
        s, m, g = set(cache.small), set(cache.main), set(cache.ghost)
        assert not (s & m or s & g or m & g)
        assert len(s) <= cache.caps.small_cap and len(m) <= cache.caps.main_cap and len(g) <= cache.caps.ghost_cap
        assert cache.resident_count() == len(s) + len(m) == result.final_cache_blocks
