"""`kvspec sweep`: hit rate against capacity, as JSON and as a plot."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from engines import sglang_model, vllm_model

from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.cli.sweep import ablated_traces
from kvspec.conformance.measurement import sweep as measurement
from kvspec.conformance.measurement.offline_optimum import offline_optima
from kvspec.conformance.measurement.sweep import Ablation, ablate, sweep
from kvspec.reference import ConfigError, ReplayConfig, ReplayResult, TraceFile, bundled_trace_path, replay
from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS

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
    assert result.offline_optimum == offline_optima(trace.records(), [2, 4], 4, trace.path)
    assert labels == [
        "[1/6] lru at 2 blocks", "[2/6] lru at 4 blocks", "[3/6] s3fifo at 2 blocks", "[4/6] s3fifo at 4 blocks", "[5/6] a cache that never evicts",
        "[6/6] the offline optimum (Belady's MIN) at every capacity",
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
    assert [(o["cache_capacity_blocks"], o["requests"]) for o in result["offline_optimum"]] == [(2, 5), (3, 5), (8, 5)]
    assert result["offline_optimum"][-1]["hit_rate"] == never_evicting_hit_rate()  # room for all 6 blocks: MIN never evicts
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


# Dialects (spec/dialects.md) and the ablation. Ten requests of the bundled conversation trace
# (about 300 blocks) are enough for S3FIFO's dialects to differ at 16 and 48 blocks, and cheap to
# replay 44 times under contracts and typeguard: every expected result is the reference's replay
# of the dialect, built here from the catalogue (VARIATIONS, KNOWN_DIALECTS), not by the sweep's code.

SLICE = 10


def conversation_slice(path: Path) -> Path:
    with gzip.open(bundled_trace_path(), "rt") as trace:
        path.write_text("".join(line for _, line in zip(range(SLICE), trace)))
    return path


def replayed(trace: Path, capacity: int, dialect: frozenset[str] = frozenset()) -> ReplayResult:
    return replay(TraceFile(trace).records(), ReplayConfig("s3fifo", capacity, dialect=dialect), path=str(trace))


def test_a_dialect_and_variations_apply_to_every_policy_swept_as_replay_applies_them(tmp_path: Path) -> None:
    """DIALECT-5: without --policy, the sweep covers the policies s3fifo-pypi has (S3FIFO alone);
    each point is the replay of S3FIFO in that dialect plus the --variation, and differs from the
    canonical replay and from the dialect's without the variation (at 16 blocks its small queue of
    one block refuses every new block, S3-DIALECT-17)."""
    trace = conversation_slice(tmp_path / "t.jsonl")
    run = kvspec("sweep", str(trace), "--dialect", "s3fifo-pypi", "--variation", "small-refuses-own-size", "--capacity", "16", "--capacity", "48",
                 "--output", str(tmp_path / "sweep.json"))
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "sweep.json").read_text())  # as written: without the absent per_request
    named = frozenset(KNOWN_DIALECTS["s3fifo-pypi"]["s3fifo"])
    expected = [replayed(trace, capacity, named | {"small-refuses-own-size"}) for capacity in (16, 48)]
    assert [point["result"] for point in result["points"]] == [r.model_dump(mode="json", exclude_none=True) for r in expected]
    assert (result["dialect"], result["variations"]) == ("s3fifo-pypi", ["small-refuses-own-size"])
    hit_tokens = [r.total_hit_tokens for r in expected]
    assert hit_tokens != [replayed(trace, c).total_hit_tokens for c in (16, 48)]
    assert hit_tokens != [replayed(trace, c, named).total_hit_tokens for c in (16, 48)]


def test_a_dialect_without_the_policy_swept_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    trace = small_trace(tmp_path / "t.jsonl")
    run = kvspec("sweep", str(trace), "--block-size", "4", "--dialect", "s3fifo-pypi", "--policy", "lru", "--capacity", "8",
                 "--output", str(tmp_path / "out.json"))
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "kvspec: error: DIALECT-5: s3fifo-pypi has no lru dialect; it has s3fifo: give --policy s3fifo\n"
    assert not (tmp_path / "out.json").exists()


def test_ablate_takes_no_policy_or_dialect(tmp_path: Path) -> None:
    run = kvspec("sweep", str(small_trace(tmp_path / "t.jsonl")), "--ablate", "--variation", "promote-at-2")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "kvspec: error: --ablate replays every S3FIFO variation point and known dialect on its own; it takes no --variation\n"


def test_every_row_of_the_ablation_is_the_replay_of_its_dialect(tmp_path: Path) -> None:
    """A row per S3FIFO variation point, replayed with the ones it requires (DIALECT-3), and per
    known S3FIFO dialect (DIALECT-5); each point the replay of that dialect, and its difference
    the hit rate's from the canonical replay at the same capacity. The plot is written beside."""
    trace = conversation_slice(tmp_path / "t.jsonl")
    capacities = [16, 48]
    run = kvspec("sweep", str(trace), "--ablate", *(f"--capacity={c}" for c in capacities), "--output", str(tmp_path / "ablation.json"),
                 "--plot", str(tmp_path / "ablation.png"))
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "ablation.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    result = json.loads((tmp_path / "ablation.json").read_text())
    assert set(result) == set(Ablation.model_fields) and result["capacities"] == capacities
    [ablated] = result["traces"]
    variations = [v for v in VARIATIONS.values() if "s3fifo" in v.policies]
    dialects = [name for name, policies in KNOWN_DIALECTS.items() if "s3fifo" in policies]
    expected = {"canonical": frozenset(), **{v.id: frozenset({v.id, *v.requires}) for v in variations},
                **{name: frozenset(KNOWN_DIALECTS[name]["s3fifo"]) for name in dialects}}
    assert (ablated["trace"], [row["name"] for row in ablated["rows"]]) == ("t.jsonl", list(expected))
    assert [row["required"] for row in ablated["rows"] if row["required"]] == [["global-eviction"]]  # new-to-main-until-first-eviction
    canonical = [replayed(trace, capacity) for capacity in capacities]
    for row in ablated["rows"]:
        assert set(row["dialect"]) == expected[row["name"]], row["name"]
        for point, capacity, base in zip(row["points"], capacities, canonical, strict=True):
            alone = replayed(trace, capacity, expected[row["name"]])
            rate = alone.total_hit_tokens / alone.total_prompt_tokens
            difference = rate - base.total_hit_tokens / base.total_prompt_tokens
            assert point == {"capacity": capacity, "hit_rate": rate, "difference": difference,
                             "result": alone.model_dump(mode="json", exclude_none=True)}, row["name"]
    assert any(point["difference"] for row in ablated["rows"] for point in row["points"])  # the slice tells some dialects apart


def test_a_dialect_that_refuses_the_configuration_says_so_in_its_row(tmp_path: Path) -> None:
    """S3-DIALECT-8: max-freq-min-1 (alone, and in s3fifo-cache's dialect) refuses max_freq 0,
    which the canonical policy accepts; the other rows are replayed, each labelled on the progress line."""
    trace = small_trace(tmp_path / "t.jsonl")
    labels: list[str] = []

    def records(label: str):  # type: ignore[no-untyped-def]
        labels.append(label)
        return TraceFile(trace).records()

    result = ablate([(str(trace), records)], ReplayConfig(block_size=4, max_freq=0), [20])
    [ablated] = result.traces
    refused = {row.name: row.points[0].refused for row in ablated.rows if row.points[0].refused}
    assert set(refused) == {"max-freq-min-1", "s3fifo-cache"}
    assert all(why.startswith("S3-DIALECT-8: ") for why in refused.values())
    assert all(row.points[0].result is None and row.points[0].hit_rate is None for row in ablated.rows if row.name in refused)
    assert ablated.unbounded_hit_rate == never_evicting_hit_rate()
    replayed_rows = [row.name for row in ablated.rows if row.name not in refused]
    assert labels == [f"[{n}/{len(replayed_rows) + 1}] t.jsonl: {name} at 20 blocks" for n, name in enumerate(replayed_rows, start=1)] + [
        f"[{len(replayed_rows) + 1}/{len(replayed_rows) + 1}] t.jsonl: a cache that never evicts"]


def test_without_a_trace_the_ablation_reads_both_bundled_traces() -> None:
    assert [Path(trace.path).name for trace in ablated_traces(None)] == ["conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"]
    assert [Path(trace.path).name for trace in ablated_traces("synthetic")] == ["synthetic_trace.jsonl.gz"]


def test_the_sweep_plot_names_its_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = TraceFile(small_trace(tmp_path / "t.jsonl"))
    result = sweep(lambda label: trace.records(), trace.path, ReplayConfig(block_size=4), ["s3fifo"], [20],
                   dialects={"s3fifo": frozenset({"promote-at-2"})}, variations=["promote-at-2"])
    figures: list[Any] = []
    monkeypatch.setattr(measurement, "save", lambda figure, path: figures.append(figure))
    measurement.plot(result, tmp_path / "p.png")
    assert figures[0].axes[0].get_title().endswith("\nwith promote-at-2")


def test_DIALECT_5_beside_adds_each_policy_of_each_engine_as_its_model_replays_it(tmp_path: Path) -> None:
    """--beside vllm --beside sglang: after the canonical points, vLLM's LRU and SGLang's LRU and
    FIFO at each capacity, each point named by its dialect and replayed in it; their hit tokens and
    resident counts are what the engines' independent models (tests/engines/) give on the trace."""
    trace = TraceFile(small_trace(tmp_path / "t.jsonl"))
    result = sweep(lambda label: trace.records(), trace.path, ReplayConfig(block_size=4), ["lru"], [2, 4], beside=["vllm", "sglang"])
    beside = [(p.beside, p.result.policy, p.result.cache_capacity_blocks) for p in result.points if p.beside is not None]
    assert beside == [("vllm", "lru", 2), ("vllm", "lru", 4), ("sglang", "lru", 2), ("sglang", "lru", 4), ("sglang", "fifo", 2), ("sglang", "fifo", 4)]
    for point in result.points[2:]:
        model = (vllm_model if point.beside == "vllm" else sglang_model).adapter()
        model.configure(AdapterConfig(point.result.policy, point.result.cache_capacity_blocks, 4))  # type: ignore[arg-type]
        hits = 0
        for hashes, length in REQUESTS:
            hits += model.hit_tokens(hashes, length)
            model.access(hashes, input_length=length)
        assert (point.result.total_hit_tokens, point.result.final_cache_blocks) == (hits, model.resident_count()), point.beside
        assert point.result.dialect == [v for v in VARIATIONS if v in KNOWN_DIALECTS[point.beside][point.result.policy]]
