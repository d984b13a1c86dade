"""The figures of `kvspec sweep` and `kvspec compare`: each policy in its one colour and marker in
every figure, a unit on every axis, the ceiling named in the legend, no file name in a title; read
at a glance: no legend hides a point, a hit-rate axis fits the policies' values (a ceiling above
them noted, not stretching it), every panel titled with what it shows."""

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.measurement import comparison, sweep
from kvspec.conformance.measurement.plots import OFFLINE_OPTIMUM, POLICY_STYLES
from kvspec.reference import ReplayConfig, TraceFile
from kvspec.reference.benefit import TRACES
from kvspec.reference.benefit.compare import compare
from kvspec.reference.dialects import KNOWN_DIALECTS, dialect_for

NAME = "conversation_trace.jsonl.gz"  # a bundled trace's file name: its figure names the trace in words


def small_trace(path: Path) -> Path:
    """Three requests of 4-token blocks, the second and third reusing the first's."""
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": 12, "output_length": 1, "hash_ids": hashes}) + "\n"
                            for hashes in ([1, 2, 3], [1, 2, 4], [1, 2, 3])))
    return path


def conversations(path: Path, count: int = 16, turns: int = 4) -> Path:
    """``count`` conversations of ``turns`` turns, taken in turn: each turn resends its conversation's
    4-token blocks and adds one, so that a cache of 8 or 16 blocks hits at most 11 % where the
    offline optimum hits 17 and 33 % and a cache that never evicts two thirds (the squeeze of the
    Mooncake conversation trace at 16 to 256 GiB, in 64 requests)."""
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": 4 * turn + 3, "output_length": 1,
                                        "hash_ids": [100 * conversation + block for block in range(turn + 1)]}) + "\n"
                            for turn in range(turns) for conversation in range(count)))
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
    return {text.get_text() for legend in legends(figure) for text in legend.get_texts()}


def legends(figure: Any) -> list[Any]:
    """The figure's legends and its panels'."""
    return [*figure.legends, *(axes.get_legend() for axes in figure.axes if axes.get_legend())]


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


# Read at a glance: each figure kvspec draws, from the conversations above ------------------------------

BLOCKS = (8, 16)  # capacities in blocks: S3FIFO's small queue needs round(8 * 0.1) >= 1 (S3-CONF-5)


def sweep_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """kvspec sweep --beside each engine: ten lines and their legend over one panel."""
    path = conversations(tmp_path / NAME)
    trace = TraceFile(path)
    result = sweep.sweep(lambda label: trace.records(), str(path), ReplayConfig(block_size=4), ["s3fifo", "lru", "fifo"], BLOCKS,
                         beside=("vllm", "sglang", "lmcache"))
    return drawn(sweep, lambda: sweep.plot(result, tmp_path / "p.png"), monkeypatch)


def compare_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """kvspec compare TRACE --dialect vllm --dialect sglang-fifo."""
    path = conversations(tmp_path / NAME)
    trace = TraceFile(path)
    dialects = [(name, {policy: dialect_for(policy, name) for policy in KNOWN_DIALECTS[name]}) for name in ("vllm", "sglang-fifo")]
    block = comparison.Model().block_bytes(4)
    result = comparison.run_trace(lambda label: trace.records(), str(path), [n * block for n in BLOCKS], block_size=4, dialects=dialects)
    return drawn(comparison, lambda: comparison.plot_trace(result, tmp_path / "p.png"), monkeypatch)


def seeded_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """kvspec compare on the first 200 requests of two seeded traces."""
    rows = [compare(name, make()[:200], capacity) for name, (make, capacity) in list(TRACES.items())[:2]]
    return drawn(comparison, lambda: comparison.plot(comparison.Comparison(rows=rows), tmp_path / "p.png"), monkeypatch)


def ablation_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """kvspec sweep TRACE --ablate --capacity 8, on a trace kvspec does not bundle."""
    path = conversations(tmp_path / "mine.jsonl")
    trace = TraceFile(path)
    result = sweep.ablate([(str(path), lambda label: trace.records())], ReplayConfig(block_size=4), BLOCKS[:1])
    return drawn(sweep, lambda: sweep.plot_ablation(result, tmp_path / "p.png"), monkeypatch)


FIGURES: dict[str, Callable[[Path, pytest.MonkeyPatch], Any]] = {
    "sweep": sweep_figure, "compare": compare_figure, "seeded comparison": seeded_figure, "ablation": ablation_figure}


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """Each figure of FIGURES, drawn once for the tests below."""
    made: dict[str, Any] = {}

    def made_once(name: str) -> Any:
        if name not in made:
            with pytest.MonkeyPatch.context() as monkeypatch:
                made[name] = FIGURES[name](tmp_path_factory.mktemp("figure"), monkeypatch)
        return made[name]
    return made_once


def policy_labels(figure: Any) -> set[str]:
    """The legend's labels of policies (canonical or in a dialect): neither ceiling."""
    return {text.get_text() for legend in legends(figure) for text in legend.get_texts()
            if not text.get_text().startswith((OFFLINE_OPTIMUM["label"], "a cache that never evicts"))}


def covered(figure: Any) -> list[str]:
    """Each drawn thing a legend's box covers, in display coordinates after a draw: a visible line
    vertex (with its marker's radius), a bar, a note."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    boxes = [legend.get_window_extent(renderer) for legend in legends(figure)]
    hidden = []
    for number, axes in enumerate(figure.axes):
        for line in axes.get_lines():
            radius = line.get_markersize() * figure.dpi / 72 / 2 if line.get_marker() not in ("None", "", None) else 0
            for x, y in line.get_transform().transform(line.get_xydata()):
                if axes.bbox.contains(x, y) and any(box.x0 - radius <= x <= box.x1 + radius and box.y0 - radius <= y <= box.y1 + radius
                                                    for box in boxes):
                    hidden.append(f"panel {number}: a vertex of {line.get_label()!r} at ({x:.0f}, {y:.0f})")
        for artist in [*axes.patches, *axes.texts]:
            extent = artist.get_window_extent(renderer)
            if extent.width and extent.height and any(extent.overlaps(box) for box in boxes):
                hidden.append(f"panel {number}: {artist}")
    return hidden


@pytest.mark.parametrize("name", FIGURES)
def test_no_legend_hides_a_point(name: str, figures: Callable[[str], Any]) -> None:
    """Ten entries cover a third of the sweep's panel wherever inside it they go: they hid the offline
    optimum's marker at 1,024 blocks in docs/hit-rate-conversation.png, and at 16 blocks here. The
    legend stands outside the panels, in every figure."""
    figure = figures(name)
    assert legends(figure)
    assert covered(figure) == []


@pytest.mark.parametrize("name", FIGURES)
def test_every_panel_has_a_title_of_its_own(name: str, figures: Callable[[str], Any]) -> None:
    """Each panel says what it shows, and no two panels of a figure say the same."""
    titles = [axes.get_title() for axes in figures(name).axes]
    assert all(titles) and len(set(titles)) == len(titles), titles


def spans(axes: Any, labels: set[str]) -> float:
    """The share of the y-axis that the values of the lines labelled ``labels`` span."""
    values = [y for line in axes.get_lines() if line.get_label() in labels for y in line.get_ydata() if math.isfinite(y)]
    low, high = axes.get_ylim()
    return (max(values) - min(values)) / (high - low)


@pytest.mark.parametrize("name", ["sweep", "compare"])
def test_an_axis_fits_the_policies_and_notes_the_ceilings_above_them(name: str, figures: Callable[[str], Any]) -> None:
    """The policies hit 0 to 11 % where the offline optimum hits 17 and 33 % and a cache that never
    evicts 67 %: a y-axis run to the ceiling squeezed them into a sixth of it. Every panel's
    policies span at least 80 % of its y-axis; each point of the optimum above the axis is noted
    by its value at its capacity, and the never-evicting cache in the legend, with its rate."""
    figure = figures(name)
    labels = policy_labels(figure)
    assert len(labels) == (8 if name == "sweep" else 6)  # S3FIFO, LRU, FIFO (and the benefit policy), and the dialects'
    for axes in figure.axes:
        assert spans(axes, labels) >= 0.8, axes.get_title()
    rate = figure.axes[0]
    [optimum] = [line for line in rate.get_lines() if line.get_label() == OFFLINE_OPTIMUM["label"]]
    top = rate.get_ylim()[1]
    above = [(x, y) for x, y in optimum.get_xydata() if y > top]
    assert len(above) == 2  # 16.7 % and 33.3 %
    assert sorted((text.xy[0], text.get_text()) for text in rate.texts) == sorted((x, f"{y:.1f} % \N{UPWARDS ARROW}") for x, y in above)
    noted = {text.get_text() for legend in legends(figure) for text in legend.get_texts()}
    assert "a cache that never evicts (66.7 %, above the axis)" in noted  # 384 of 576 prompt tokens: every turn's resent blocks


def test_the_prefix_cache_figure_says_in_plain_words_what_its_third_panel_shows(figures: Callable[[str], Any]) -> None:
    """Not "hit rate less canonical LRU's": less is not minus."""
    gain = figures("compare").axes[2]
    assert gain.get_title() == "Each hit rate against canonical LRU's"
    assert gain.get_ylabel() == "hit rate minus canonical LRU's (percentage points)"
