"""`kvspec compare`: the benefit policy against the LRU byte-budget baseline on the seeded
traces of spec/benefit.md section 17 (BEN-CMP-1 to BEN-CMP-3), as a table, JSON and a plot."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kvspec.reference.benefit import TRACES, ComparisonRow, compare

from .output import written_whole


class Comparison(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    rows: list[ComparisonRow]


def run(capacity: int | None) -> Comparison:
    """Every seeded trace at its own capacity, or all at ``capacity`` bytes."""
    return Comparison(rows=[compare(name, make(), capacity or default) for name, (make, default) in TRACES.items()])


def ratio(policy: float, lru: float) -> str:
    return f"{policy / lru:.4f}" if lru else "n/a"


def table(result: Comparison) -> str:
    """Saved cold-prefill cost and bytes written, each side; the policy's saved as a share of LRU's."""
    lines = [f"{'trace':<24} {'capacity':>9} {'policy saved':>14} {'LRU saved':>14} {'policy/LRU':>11} {'policy written':>16} {'LRU written':>16}"]
    for row in result.rows:
        lines.append(
            f"{row.trace:<24} {row.capacity_bytes / 2**20:>5.0f} MiB {row.policy.saved:>14,.2f} {row.lru.saved:>14,.2f} "
            f"{ratio(row.policy.saved, row.lru.saved):>11} {row.policy.bytes_written:>16,} {row.lru.bytes_written:>16,}"
        )
    return "\n".join(lines)


def plot(result: Comparison, path: Path) -> None:
    """Saved cost and bytes written, policy beside LRU for each trace, written whole to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, (saved, written) = pyplot.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
    names = [row.trace for row in result.rows]
    positions = range(len(names))
    for axes, field, label in ((saved, "saved", "saved cold-prefill cost"), (written, "bytes_written", "bytes written (MiB, log scale)")):
        scale = 1.0 if field == "saved" else 2.0**20
        axes.bar([p - 0.2 for p in positions], [getattr(row.policy, field) / scale for row in result.rows], width=0.4, label="benefit policy")
        axes.bar([p + 0.2 for p in positions], [getattr(row.lru, field) / scale for row in result.rows], width=0.4, label="LRU")
        axes.set_xticks(list(positions), names, rotation=20, ha="right")
        axes.set_ylabel(label)
        axes.grid(True, axis="y", alpha=0.3)
    written.set_yscale("log")
    saved.legend()
    figure.suptitle("Benefit-per-exclusive-byte policy against LRU at the same byte capacity")
    try:
        with written_whole(path) as temporary:
            figure.savefig(temporary)
    finally:
        pyplot.close(figure)
