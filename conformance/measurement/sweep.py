"""Hit rate against capacity: one replay per (policy, capacity), and the plot of them."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kvspec.conformance.measurement.plots import NEVER_EVICTS, POLICY_STYLES, figure, on_trace, save
from kvspec.reference import ReplayConfig, ReplayResult, TraceRecord, make_policy, replay
from kvspec.reference.validation import INT64_MAX

DEFAULT_CAPACITIES = (256, 1024, 4096, 16384, 65536)


class SweepPoint(BaseModel):
    """One replay of the sweep: its result and its hit rate (total_hit_tokens / total_prompt_tokens)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    hit_rate: float
    result: ReplayResult


class Sweep(BaseModel):
    """Every point, and the hit rate of a cache that never evicts (the ceiling of every policy)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str
    unbounded_hit_rate: float
    points: list[SweepPoint]


def hit_rate(result: ReplayResult) -> float:
    return result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0


def sweep(
    records: Callable[[str], Iterable[tuple[int, TraceRecord]]],
    path: str,
    base: ReplayConfig,
    policies: Sequence[str],
    capacities: Sequence[int],
) -> Sweep:
    """Replay the trace once per policy and capacity, in that order, and once without eviction.

    ``records(label)`` opens a fresh stream of the trace for the replay ``label`` names. Every
    configuration is validated before the first replay, so that a bad one (a capacity that gives
    S3FIFO no small queue, S3-CONF-5) fails at once, not after minutes of work.
    """
    configs = [replace(base, policy=policy, capacity=capacity) for policy in policies for capacity in capacities]  # type: ignore[arg-type]
    for config in configs:
        make_policy(config)
    # An LRU as large as any trace can fill never evicts: its hits are every reuse there is.
    configs.append(replace(base, policy="lru", capacity=INT64_MAX))
    results = []
    for number, config in enumerate(configs, start=1):
        what = "a cache that never evicts" if number == len(configs) else f"{config.policy} at {config.capacity:,} blocks"
        results.append(replay(records(f"[{number}/{len(configs)}] {what}"), config, path=path))
    *points, ceiling = results
    return Sweep(
        trace=Path(path).name,
        unbounded_hit_rate=hit_rate(ceiling),
        points=[SweepPoint(hit_rate=hit_rate(result), result=result) for result in points],
    )


def plot(result: Sweep, path: Path) -> None:
    """Hit rate against capacity, one line per policy, under the hit rate of a cache that never
    evicts; written whole to ``path`` (PNG, SVG or PDF)."""
    drawn, axes = figure()
    policies = dict.fromkeys(point.result.policy for point in result.points)
    for policy in policies:
        points = [p for p in result.points if p.result.policy == policy]
        axes.plot([p.result.cache_capacity_blocks for p in points], [100 * p.hit_rate for p in points], **POLICY_STYLES[policy])
    ceiling = 100 * result.unbounded_hit_rate
    axes.axhline(ceiling, label=f"a cache that never evicts ({ceiling:.1f} %)", **NEVER_EVICTS)
    capacities = sorted({p.result.cache_capacity_blocks for p in result.points})
    axes.set_xscale("log", base=2)
    axes.set_xticks(capacities, [f"{capacity:,}" for capacity in capacities])
    axes.minorticks_off()
    axes.set_xlabel(f"capacity (blocks of {result.points[0].result.block_size:,} tokens, log scale)")  # one block size a sweep
    axes.set_ylabel("hit rate (% of prompt tokens)")
    axes.set_ylim(bottom=0)
    axes.set_title(f"Longest-prefix hit rate against capacity{on_trace(result.trace)}")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend()
    save(drawn, path)
