"""The figures of `kvspec sweep` and `kvspec compare`: each policy in its one colour and marker in
every figure, a unit on every axis, the ceiling named in the legend, no file name in a title."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.measurement import comparison, sweep
from kvspec.conformance.measurement.plots import OFFLINE_OPTIMUM, POLICY_STYLES
from kvspec.reference import ReplayConfig, TraceFile
from kvspec.reference.benefit import TRACES, compare
from kvspec.reference.dialects import KNOWN_DIALECTS, dialect_for

NAME = "conversation_trace.jsonl.gz"  # a bundled trace's file name: its figure names the trace in words


def small_trace(path: Path) -> Path:
    """Three requests of 4-token blocks, the second and third reusing the first's."""
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": 12, "output_length": 1, "hash_ids": hashes}) + "\n"
                            for hashes in ([1, 2, 3], [1, 2, 4], [1, 2, 3])))
    return path


def drawn(module: Any, draw: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The figure ``draw`` makes, caught before it is saved."""
    figures = []
    monkeypatch.setattr(module, "save", lambda figure, path: figures.append(figure))
    draw()
    return figures[0]


def check(figure: Any, quantities: str = "xy", dialects: tuple[str, ...] = ()) -> set[str]:
    """Every policy line in its style (a policy in one of ``dialects`` too), a unit on every axis
    of a quantity (``quantities``: the other names categories), no file name in the title; the
    legend's labels."""
    by_label = {style["label"]: style for style in POLICY_STYLES.values()}
    by_label |= {f"{style['label']} ({dialect})": style for style in POLICY_STYLES.values() for dialect in dialects}
    by_label[OFFLINE_OPTIMUM["label"]] = OFFLINE_OPTIMUM
    titles = [figure.get_suptitle(), *(axes.get_title() for axes in figure.axes)]
    assert not any(".json" in title or NAME in title for title in titles), titles
    labels = set()
    for axes in figure.axes:
        for axis in quantities:
            label = getattr(axes, f"get_{axis}label")()
            assert re.fullmatch(r"[a-z][^()]* \([^()]+\)", label), label  # "capacity (blocks of 4 tokens, log scale)"
        for line in axes.get_lines():
            if line.get_label() in by_label:
                style = by_label[line.get_label()]
                assert (line.get_color(), line.get_marker()) == (style["color"], style["marker"]), line.get_label()
            else:  # unlabelled (matplotlib's "_child…"), or the ceiling
                assert line.get_label().startswith(("_", "a cache that never evicts (")), line.get_label()
        legend = axes.get_legend()
        labels |= {text.get_text() for text in legend.get_texts()} if legend else set()
    return labels


def test_the_sweep_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = small_trace(tmp_path / NAME)
    trace = TraceFile(path)
    result = sweep.sweep(lambda label: trace.records(), str(path), ReplayConfig(block_size=4, small_ratio=0.5), ["s3fifo", "lru", "fifo"], [4, 8])
    labels = check(drawn(sweep, lambda: sweep.plot(result, tmp_path / "p.png"), monkeypatch))
    assert labels == {"S3FIFO", "LRU", "FIFO", OFFLINE_OPTIMUM["label"], f"a cache that never evicts ({100 * result.unbounded_hit_rate:.1f} %)"}


def test_the_prefix_cache_figure_says_its_seconds_are_modelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = small_trace(tmp_path / NAME)
    trace = TraceFile(path)
    result = comparison.run_trace(lambda label: trace.records(), str(path), [comparison.GIB, 2 * comparison.GIB], block_size=4)
    figure = drawn(comparison, lambda: comparison.plot_trace(result, tmp_path / "p.png"), monkeypatch)
    ceilings = {OFFLINE_OPTIMUM["label"], f"a cache that never evicts ({100 * result.unbounded_hit_rate:.1f} %)"}
    assert check(figure) == {POLICY_STYLES[policy]["label"] for policy in ("benefit", "s3fifo", "lru", "fifo")} | ceilings
    assert "modelled seconds" in figure.axes[1].get_ylabel() and "the Mooncake conversation trace" in figure.get_suptitle()


def test_the_prefix_cache_figure_names_each_dialect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = small_trace(tmp_path / NAME)
    trace = TraceFile(path)
    dialects = [(name, {policy: dialect_for(policy, name) for policy in KNOWN_DIALECTS[name]}) for name in ("kvcache-simulator", "libcachesim")]
    result = comparison.run_trace(lambda label: trace.records(), str(path), [comparison.GIB, 2 * comparison.GIB], block_size=4, dialects=dialects)
    figure = drawn(comparison, lambda: comparison.plot_trace(result, tmp_path / "p.png"), monkeypatch)
    named = {f"{POLICY_STYLES[policy]['label']} ({name})" for name, policies in dialects for policy in policies}
    assert named <= check(figure, dialects=("kvcache-simulator", "libcachesim"))
    dashes = {line.get_label(): line.get_linestyle() for line in figure.axes[0].get_lines()}
    assert dashes["LRU (kvcache-simulator)"] != dashes["LRU (libcachesim)"] != dashes["LRU"]  # one line each, told apart


def test_the_seeded_comparison_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, (make, capacity) = next(iter(TRACES.items()))
    result = comparison.Comparison(rows=[compare(name, make()[:200], capacity)])
    labels = check(drawn(comparison, lambda: comparison.plot(result, tmp_path / "p.png"), monkeypatch), quantities="x")
    assert labels == {POLICY_STYLES["benefit"]["label"], POLICY_STYLES["lru"]["label"]}


def test_the_prefix_cache_figure_tells_the_five_engines_apart_beside_canonical_lru(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = small_trace(tmp_path / NAME)
    trace = TraceFile(path)
    engines = ("vllm", "sglang-lru", "sglang-fifo", "lmcache-lru", "lmcache-fifo")
    dialects = [(name, {policy: dialect_for(policy, name) for policy in KNOWN_DIALECTS[name]}) for name in engines]
    result = comparison.run_trace(lambda label: trace.records(), str(path), [comparison.GIB, 2 * comparison.GIB], block_size=4, dialects=dialects)
    figure = drawn(comparison, lambda: comparison.plot_trace(result, tmp_path / "p.png"), monkeypatch)
    named = {f"{POLICY_STYLES[policy]['label']} ({name})" for name, policies in dialects for policy in policies}
    assert named <= check(figure, dialects=engines)
    assert len({style["linestyle"] for style in comparison.dialect_styles(result).values()}) == len(engines)  # a dash each
    rate = {side.capacity_bytes: 100 * side.hit_tokens / side.prompt_tokens for side in result.sides if side.policy == "lru"}
    sides = {POLICY_STYLES[side.policy]["label"]: [side] for side in result.sides}
    for d in result.dialect_sides:
        sides.setdefault(f"{POLICY_STYLES[d.side.policy]['label']} ({d.dialect})", []).append(d.side)
    for side in result.sides:
        sides[POLICY_STYLES[side.policy]["label"]] = [s for s in result.sides if s.policy == side.policy]
    gain = figure.axes[2]  # each hit rate less canonical LRU's at the same capacity
    assert {line.get_label() for line in gain.get_lines()} == sides.keys()
    for line in gain.get_lines():
        expected = [100 * s.hit_tokens / s.prompt_tokens - rate[s.capacity_bytes] for s in sides[line.get_label()]]
        assert list(line.get_ydata()) == pytest.approx(expected)
