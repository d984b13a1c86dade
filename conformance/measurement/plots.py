"""The plots of `kvspec sweep` and `kvspec compare`: each policy in the same colour and marker in every figure,
each panel titled, its axes fitted to the policies' values, its legend outside the panels where it
hides nothing; drawn without a display (matplotlib is the optional extra kvspec[plot], imported
only to draw), and written whole or not at all."""

from pathlib import Path
from typing import Any

from kvspec.conformance.core.output import written_whole

# One colour (matplotlib's default cycle), one marker and one name per policy, in every figure: a
# policy is told apart by its marker too, in print and for a reader who does not see the colours.
POLICY_STYLES = {
    "s3fifo": {"color": "C0", "marker": "o", "label": "S3FIFO"},
    "lru": {"color": "C1", "marker": "s", "label": "LRU"},
    "fifo": {"color": "C2", "marker": "^", "label": "FIFO"},
    "benefit": {"color": "C3", "marker": "D", "label": "benefit policy"},
}
NEVER_EVICTS = {"color": "grey", "linestyle": "--"}
# The second ceiling: a line across the capacities, in black so that no policy's colour is taken.
# One dash per dialect, in the order asked for, six told apart (the five engines' take the first
# five, their LRUs the first, second and fourth); the policy's colour and marker, hollow.
DIALECT_LINES = ("--", ":", "-.", (0, (10, 3)), (0, (5, 1, 1, 1, 1, 1)), (0, (3, 1, 3, 1, 1, 1)))


SERVED_LINE = (0, (1, 1))  # densely dotted: apart from the canonical policies' solid lines and the dialects' dashes


def served_style(style: dict[str, object]) -> dict[str, object]:
    """A served replay's line (spec/lifecycle.md sections 6 and 7) drawn as ``style`` draws the replay one request at a time:
    its colour and marker, densely dotted and hollow."""
    return {**style, "linestyle": SERVED_LINE, "markerfacecolor": "none", "label": f"{style['label']}, served"}


def dialect_style(policy: str, dialect: str, index: int) -> dict[str, object]:
    """A dialect's line of ``policy``: the policy's colour and marker, hollow, the ``index``-th dash, the dialect named."""
    return {**POLICY_STYLES[policy], "linestyle": DIALECT_LINES[index % len(DIALECT_LINES)], "markerfacecolor": "none",
            "label": f"{POLICY_STYLES[policy]['label']} ({dialect})"}


OFFLINE_OPTIMUM = {"color": "black", "linestyle": ":", "marker": "x", "label": "offline optimum (Belady's MIN over blocks)"}
BUNDLED_TRACES = {"conversation_trace.jsonl.gz": "the Mooncake conversation trace", "synthetic_trace.jsonl.gz": "the Mooncake synthetic trace"}


def on_trace(name: str) -> str:
    """What a title says of the trace: the bundled ones by what they are, never a file name."""
    return f" on {BUNDLED_TRACES[name]}" if name in BUNDLED_TRACES else ""


# Above the policies' values, the room a hit-rate panel keeps for the notes of the ceilings beyond them (a share of its range).
NOTE_ROOM = 0.06


def draw_ceilings(axes: Any, capacities: list[float], optimum: list[float], never_evicts: float) -> None:
    """The offline optimum at each capacity and a cache that never evicts (hit rates in %) on a panel
    whose y-range the policies' lines, drawn before, decide: a ceiling far above the policies would
    squeeze them into a band of the axis. What lies above is not drawn by stretching the axis but
    noted: each point of the optimum by its value at the top edge, the never-evicting cache in the legend."""
    axes.autoscale_view()  # the policies' values, with matplotlib's margins
    low, high = axes.get_ylim()
    if any(rate > high for rate in [*optimum, never_evicts]):
        high += NOTE_ROOM * (high - low)
    axes.set_ylim(low, high)
    axes.plot(capacities, optimum, scaley=False, **OFFLINE_OPTIMUM)
    for capacity, rate in zip(capacities, optimum, strict=True):
        if rate > high:  # at the first or last capacity the note starts or ends there: centred, it crossed the panel's edge
            align = "left" if capacity == min(capacities) else "right" if capacity == max(capacities) else "center"
            axes.annotate(f"{rate:.1f} % \N{UPWARDS ARROW}", (capacity, high), xytext=(0, -2), textcoords="offset points",
                          ha=align, va="top", fontsize="small")
    if never_evicts > high:
        axes.plot([], [], label=f"a cache that never evicts ({never_evicts:.1f} %, above the axis)", **NEVER_EVICTS)
    else:
        axes.axhline(never_evicts, label=f"a cache that never evicts ({never_evicts:.1f} %)", **NEVER_EVICTS)


def legend_outside(drawn: Any, axes: Any, loc: str = "outside right upper", **options: Any) -> None:
    """The legend of ``axes``' lines, outside the panels (to their right unless ``loc`` says), where it hides no point."""
    drawn.legend(*axes.get_legend_handles_labels(), loc=loc, **options)


def figure(columns: int = 1, size: tuple[float, float] = (7, 4.5)) -> tuple[Any, Any]:
    """A new figure and its axes (one per column), drawn off-screen."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(1, columns, figsize=size, layout="constrained")


def save(drawn: Any, path: Path) -> None:
    """The figure, written whole to ``path`` (PNG, SVG or PDF, by its suffix) or not at all, and closed."""
    from matplotlib import pyplot

    try:
        with written_whole(path, "--plot") as temporary:
            drawn.savefig(temporary)
    finally:
        pyplot.close(drawn)
