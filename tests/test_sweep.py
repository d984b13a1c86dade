"""`kvspec sweep`: hit rate against capacity, as JSON and as a plot."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.conformance.measurement.sweep import sweep
from kvspec.reference import ConfigError, ReplayConfig, TraceFile, replay

REQUEST = {"timestamp": 0, "output_length": 1}
# Block size 4. Five requests over chained prefixes; every block but 9 and 7 is reused.
REQUESTS = [([1, 2, 3], 12), ([1, 2, 9, 3], 16), ([7, 2, 3], 10), ([1, 2, 9, 3], 13), ([1, 2, 3], 12)]


def small_trace(path: Path) -> Path:
    path.write_text("".join(json.dumps({**REQUEST, "hash_ids": h, "input_length": n}) + "\n" for h, n in REQUESTS))
    return path


def never_evicting_hit_rate() -> float:
    """Worked out with a set of every block seen so far, independently of any policy."""
    seen: set[int] = set()
    hits = prompt = 0
    for hashes, length in REQUESTS:
        k = 0
        while k < len(hashes) and hashes[k] in seen:
            k += 1
        hits += min(4 * k, length)
        prompt += length
        seen.update(hashes)
    return hits / prompt


def test_every_point_is_the_replay_of_its_policy_and_capacity(tmp_path: Path) -> None:
    trace = TraceFile(small_trace(tmp_path / "t.jsonl"))
    base = ReplayConfig(block_size=4, small_ratio=0.5)
    labels: list[str] = []

    def records(label: str):  # type: ignore[no-untyped-def]
        labels.append(label)
        return trace.records()

    result = sweep(records, trace.path, base, ["lru", "s3fifo"], [2, 4])
    assert [(p.result.policy, p.result.cache_capacity_blocks) for p in result.points] == [("lru", 2), ("lru", 4), ("s3fifo", 2), ("s3fifo", 4)]
    for point in result.points:
        alone = replay(trace.records(), ReplayConfig(point.result.policy, point.result.cache_capacity_blocks, 4, 0.5), path=trace.path)
        assert point.result == alone
        assert point.hit_rate == alone.total_hit_tokens / alone.total_prompt_tokens
    assert result.unbounded_hit_rate == never_evicting_hit_rate()
    assert labels == [
        "[1/5] lru at 2 blocks", "[2/5] lru at 4 blocks", "[3/5] s3fifo at 2 blocks", "[4/5] s3fifo at 4 blocks", "[5/5] a cache that never evicts",
    ]


def test_a_bad_configuration_fails_before_any_replay(tmp_path: Path) -> None:
    """S3-CONF-5: capacity 5 at small_ratio 0.1 is refused before the first replay starts."""
    trace = TraceFile(small_trace(tmp_path / "t.jsonl"))
    opened: list[str] = []
    with pytest.raises(ConfigError, match="S3-CONF-5"):
        sweep(lambda label: opened.append(label) or trace.records(), trace.path, ReplayConfig(block_size=4), ["lru", "s3fifo"], [1024, 5])
    assert opened == []


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=300, env={**os.environ})


@pytest.mark.parametrize(("name", "magic"), [("plot.png", b"\x89PNG\r\n\x1a\n"), ("plot.svg", b"<?xml"), ("plot.pdf", b"%PDF")])
def test_the_cli_writes_the_json_and_the_plot(tmp_path: Path, name: str, magic: bytes) -> None:
    trace = small_trace(tmp_path / "t.jsonl")
    run = kvspec("sweep", str(trace), "--block-size", "4", "--policy", "fifo", "--policy", "lru", "--capacity", "2", "--capacity", "3", "--capacity", "8",
                 "--output", str(tmp_path / "sweep.json"), "--plot", str(tmp_path / name))
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "sweep.json").read_text())
    assert [(p["result"]["policy"], p["result"]["cache_capacity_blocks"]) for p in result["points"]] == [
        ("fifo", 2), ("fifo", 3), ("fifo", 8), ("lru", 2), ("lru", 3), ("lru", 8),
    ]
    assert result["unbounded_hit_rate"] == never_evicting_hit_rate()
    assert (tmp_path / name).read_bytes().startswith(magic)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["t.jsonl", "sweep.json", name])


def test_a_plot_of_an_unknown_kind_is_refused_before_any_replay(tmp_path: Path) -> None:
    run = kvspec("sweep", str(small_trace(tmp_path / "t.jsonl")), "--block-size", "4", "--plot", str(tmp_path / "plot.gif"))
    assert run.returncode == 1
    assert run.stderr == f"kvspec: error: --plot {tmp_path / 'plot.gif'}: the file name must end in .png, .svg or .pdf\n"


def test_an_unparseable_capacity_names_its_clause() -> None:
    run = kvspec("sweep", "--capacity", "256", "--capacity", "many")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "REPLAY-CONF-1: capacity must be an integer, not 'many'" in run.stderr
