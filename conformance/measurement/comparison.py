"""`kvspec compare`: the benefit policy against the LRU byte-budget baseline on the seeded
traces of spec/benefit.md section 17 (BEN-CMP-1 to BEN-CMP-3), and, given a TRACE, as the
prefix cache of a Mooncake trace beside S3FIFO, LRU and FIFO (BEN-PREFIX-1 to BEN-PREFIX-7); as
a table, JSON and a plot."""

import math
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kvspec.conformance.measurement.plots import POLICY_STYLES, figure, on_trace, save
from kvspec.reference.benefit import TRACES, ComparisonRow, compare
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import PREFIX_POLICIES, PrefixSide, replay_benefit, replay_blocks
from kvspec.reference.trace import TraceRecord


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
    """Saved cost and bytes written, the policy's point beside LRU's for each trace, written whole
    to ``path``. Points, not bars: a bar on the log scale of bytes written would start nowhere."""
    drawn, (saved, written) = figure(2, (11, 4.2))
    positions = range(len(result.rows))
    names = [f"{row.trace}, {row.capacity_bytes / 2**20:g} MiB" for row in result.rows]
    for axes, field, scale, label in ((saved, "saved", 1.0, "saved cold-prefill cost (the seeded traces' cost units)"),
                                      (written, "bytes_written", 2.0**20, "bytes written (MiB, log scale)")):
        for side, offset in (("policy", -0.12), ("lru", 0.12)):
            axes.plot([getattr(getattr(row, side), field) / scale for row in result.rows], [p + offset for p in positions],
                      linestyle="none", markersize=8, **POLICY_STYLES["benefit" if side == "policy" else "lru"])
        axes.set_yticks(list(positions), names if axes is saved else [])
        axes.set_ylim(len(names) - 0.5, -0.5)  # the first trace at the top
        axes.set_xlabel(label)
        axes.grid(True, axis="x", alpha=0.3)
    saved.xaxis.set_major_formatter("{x:,.0f}")
    written.set_xscale("log")
    saved.legend()
    drawn.suptitle("The benefit policy against LRU at the same byte capacity, on the seeded traces")
    save(drawn, path)


# On a Mooncake trace (spec/benefit.md section 20) --------------------------------------------------

GIB = 2**30
DEFAULT_TRACE_CAPACITIES = (16 * GIB, 64 * GIB, 256 * GIB)  # 256, 1,024 and 4,096 blocks of 64 MiB


class TraceComparison(BaseModel):
    """BEN-PREFIX-7 for every policy at every capacity, with the cost model that priced it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str
    model: str
    block_size: int
    block_bytes: int
    sides: list[PrefixSide]


def run_trace(records: Callable[[str], Iterator[tuple[int, TraceRecord]]], path: str, capacities: list[int],
              block_size: int = 512, model: Model = Model()) -> TraceComparison:
    """Every policy of BEN-PREFIX-6 at every capacity; ``records(label)`` reads the trace afresh."""
    sides = []
    for capacity in capacities:
        for policy in PREFIX_POLICIES:
            label = f"{Path(path).name}, {policy} at {capacity / GIB:g} GiB"
            if policy == "benefit":
                sides.append(replay_benefit(records(label), capacity, block_size, model, path))
            else:
                sides.append(replay_blocks(records(label), policy, capacity, block_size, model, path))
    return TraceComparison(trace=Path(path).name, model=model.name, block_size=block_size, block_bytes=model.block_bytes(block_size),
                           sides=sides)


def hit_rate(side: PrefixSide) -> float:
    """Hit tokens over prompt tokens; NaN for a trace without requests (left out of plots)."""
    return side.hit_tokens / side.prompt_tokens if side.prompt_tokens else math.nan


def rate_text(side: PrefixSide) -> str:
    return f"{hit_rate(side):.2%}" if side.prompt_tokens else "n/a"


def trace_table(result: TraceComparison) -> str:
    """Hit tokens, saved prefill, bytes written and the peak bytes resident, one line per capacity and policy."""
    lines = [f"{result.trace}: {result.model}, {result.block_size}-token blocks of {result.block_bytes / 2**20:g} MiB",
             f"{'capacity':>10} {'policy':<8} {'hit tokens':>14} {'hit rate':>9} {'saved prefill (s)':>18} {'written (GiB)':>14} {'peak (GiB)':>11}"]
    for side in result.sides:
        lines.append(
            f"{side.capacity_bytes / GIB:>6g} GiB {side.policy:<8} {side.hit_tokens:>14,} {rate_text(side):>9} "
            f"{side.saved_prefill_ms / 1000:>18,.1f} {side.bytes_written / GIB:>14,.0f} {side.peak_bytes / GIB:>11,.0f}"
        )
    return "\n".join(lines)


def plot_trace(result: TraceComparison, path: Path) -> None:
    """Hit rate and saved prefill against capacity, one line per policy, written whole to ``path``."""
    drawn, (rate, saved) = figure(2, (11, 4.5))
    for policy in PREFIX_POLICIES:
        sides = [side for side in result.sides if side.policy == policy]
        gib = [side.capacity_bytes / GIB for side in sides]
        rate.plot(gib, [100 * hit_rate(side) for side in sides], **POLICY_STYLES[policy])
        saved.plot(gib, [side.saved_prefill_ms / 1000 for side in sides], **POLICY_STYLES[policy])
    capacities = sorted({side.capacity_bytes / GIB for side in result.sides})
    for axes, label in ((rate, "hit rate (% of prompt tokens)"), (saved, f"saved prefill (modelled seconds, {result.model})")):
        axes.set_xscale("log", base=2)
        axes.set_xticks(capacities, [f"{capacity:g}" for capacity in capacities])
        axes.minorticks_off()
        axes.set_xlabel("capacity (GiB, log scale)")
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
    rate.legend()
    drawn.suptitle(f"The benefit policy as a prefix cache beside S3FIFO, LRU and FIFO{on_trace(result.trace)}")
    save(drawn, path)
