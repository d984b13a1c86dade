"""The plots of `kvspec sweep` and `kvspec compare`: each policy in the same colour in every figure,
drawn without a display (matplotlib is the optional extra kvspec[plot], imported only to draw),
and written whole or not at all."""

from pathlib import Path
from typing import Any

from kvspec.conformance.core.output import written_whole

POLICY_COLOURS = {"s3fifo": "C0", "lru": "C1", "fifo": "C2", "benefit": "C3"}  # matplotlib's default cycle, one colour per policy
NEVER_EVICTS = "grey"


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
