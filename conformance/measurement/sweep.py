"""Hit rate against capacity: one replay per (policy, capacity), in a dialect or not, and the plot
of them; and the ablation of S3FIFO's variation points (spec/dialects.md): each alone on the
canonical policy, and each known implementation's dialect whole, beside the canonical policy."""

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kvspec.conformance.core.parallel import Records, Run, TraceJob, in_turn, replayed, served_replay
from kvspec.conformance.measurement.offline_optimum import OfflineOptimum, offline_optima
from kvspec.conformance.measurement.plots import (NEVER_EVICTS, POLICY_STYLES, dialect_style, draw_ceilings, figure, legend_outside,
                                                  on_trace, save, served_style)
from kvspec.reference import ConfigError, ReplayConfig, ReplayResult, make_policy
from kvspec.reference.constants import DEFAULT_CAPACITIES as DEFAULT_CAPACITIES  # re-exported: `kvspec sweep`'s capacities
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS, Dialect, dialect_for, in_catalogue_order, replaced_clauses
from kvspec.reference.caches import server_for
from kvspec.reference.models import ServedResult
from kvspec.reference.service import ServiceModel
from kvspec.reference.validation import INT64_MAX


class SweepPoint(BaseModel):
    """One replay of the sweep: its result and its hit rate (total_hit_tokens / total_prompt_tokens)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    hit_rate: float
    result: ReplayResult
    beside: str | None = Field(None, description="the known dialect (--beside) this point was replayed in, beside the others; else absent")


class ServedPoint(BaseModel):
    """One served replay of the sweep (--serve, spec/lifecycle.md section 6): its result and its hit rate."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    hit_rate: float
    result: ServedResult
    beside: str | None = Field(None, description="the known dialect (--beside) this replay was served in, beside the others; else absent")


class Sweep(BaseModel):
    """Every point, the hit rate of a cache that never evicts (the ceiling of every policy) and
    the offline optimum at each capacity (Belady's MIN over the block accesses); the dialect they
    were replayed in, as it was asked for (each point's result lists its policy's variation
    points, DIALECT-6)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str
    unbounded_hit_rate: float
    offline_optimum: list[OfflineOptimum] = Field(
        description="Belady's MIN over the block accesses at each capacity, in the sweep's order: a block-level optimum "
                    "(conformance/measurement/offline_optimum.py says when it bounds prefix hits)")
    points: list[SweepPoint]
    dialect: str | None = Field(None, description="the known implementation's dialect every policy was replayed in (--dialect); else absent")
    variations: list[str] | None = Field(None, description="the variation points added to every policy (--variation); absent if none")
    served: list[ServedPoint] | None = Field(
        None, description="with --serve: each policy at each capacity served as a server runs it, in the points' order; else absent")


def hit_rate(result: ReplayResult | ServedResult) -> float:
    return result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0


def sweep(
    records: Records,
    path: str,
    base: ReplayConfig,
    policies: Sequence[str],
    capacities: Sequence[int],
    *,
    dialects: Mapping[str, Dialect] | None = None,
    dialect: str | None = None,
    variations: Sequence[str] = (),
    beside: Sequence[str] = (),
    service: ServiceModel | None = None,
    run: Run = in_turn,
) -> Sweep:
    """Replay the trace once per policy and capacity, in that order, once without eviction, and
    once through the offline optimum at every capacity: each an independent job, which ``run``
    runs (one after another by default, or side by side; the results in this order either way).

    ``records(label)`` opens a fresh stream of the trace for the replay ``label`` names (picklable
    where ``run`` sends jobs to other processes). Each policy is replayed in its dialect in
    ``dialects`` (canonical where it has none), which --dialect ``dialect`` and --variation
    ``variations`` named; then each policy of each known dialect ``beside`` names, in that dialect
    (DIALECT-5). With a ``service``, each policy at each capacity is also served (LIFE-SERVE-1 to
    LIFE-SERVE-7). Every configuration is validated before the first replay, so that a bad one (a
    capacity that gives S3FIFO no small queue, S3-CONF-5) fails at once, not after minutes of work.
    """
    chosen = dialects or {}
    configs = [replace(base, policy=policy, capacity=capacity, dialect=chosen.get(policy, CANONICAL))  # type: ignore[arg-type]
               for policy in policies for capacity in capacities]
    named = [(name, policy) for name in beside for policy in KNOWN_DIALECTS[name]]
    configs += [replace(base, policy=policy, capacity=capacity, dialect=dialect_for(policy, name))  # type: ignore[arg-type]
                for name, policy in named for capacity in capacities]
    for config in configs:
        make_policy(config)
        if service is not None:
            server_for(config)  # LIFE-VLLM-1: a dialect whose lifecycle is specified, before any replay
    # An LRU as large as any trace can fill never evicts: its hits are every reuse there is.
    configs.append(replace(base, policy="lru", capacity=INT64_MAX, dialect=CANONICAL))
    total = len(configs) + 1
    jobs: list[TraceJob[Any]] = []
    for number, config in enumerate(configs, start=1):
        what = "a cache that never evicts" if number == len(configs) else f"{config.policy} at {config.capacity:,} blocks"
        jobs.append(TraceJob(f"[{number}/{total}] {what}", replayed, records, (config, path)))
    jobs.append(TraceJob(f"[{total}/{total}] the offline optimum (Belady's MIN) at every capacity", offline_optima, records,
                         (list(capacities), base.block_size, path)))
    # the served replays first: the one reading that refuses a trace whose timestamps go back (LIFE-SERVE-2) fails before the rest
    served_configs = configs[:-1] if service is not None else []
    jobs[:0] = [TraceJob(f"[served {number}/{len(served_configs)}] {config.policy} at {config.capacity:,} blocks", served_replay, records,
                         (config, service, path)) for number, config in enumerate(served_configs, start=1)]
    results = run(jobs)
    *points, ceiling, optima = results[len(served_configs):]
    own = len(policies) * len(capacities)
    besides = [None if n < own else named[(n - own) // len(capacities)][0] for n in range(len(configs) - 1)]
    return Sweep(
        trace=Path(path).name,
        unbounded_hit_rate=hit_rate(ceiling),
        offline_optimum=optima,
        points=[SweepPoint(hit_rate=hit_rate(result), result=result, beside=besides[n]) for n, result in enumerate(points)],
        dialect=dialect,
        variations=list(variations) or None,
        served=[ServedPoint(hit_rate=hit_rate(result), result=result, beside=besides[n])
                for n, result in enumerate(results[:len(served_configs)])] if service is not None else None,
    )


def plot(result: Sweep, path: Path) -> None:
    """Hit rate against capacity, one line per policy, under the offline optimum and the hit rate
    of a cache that never evicts (noted where above the policies' range); the legend beside the
    panel; written whole to ``path`` (PNG, SVG or PDF)."""
    drawn, axes = figure(size=(10, 4.5))
    lines = dict.fromkeys((point.beside, point.result.policy) for point in result.points)
    named = list(dict.fromkeys(name for name, _ in lines if name is not None))
    for name, policy in lines:
        points = [p for p in result.points if (p.beside, p.result.policy) == (name, policy)]
        style = POLICY_STYLES[policy] if name is None else dialect_style(policy, name, named.index(name))
        axes.plot([p.result.cache_capacity_blocks for p in points], [100 * p.hit_rate for p in points], **style)
    for name, policy in dict.fromkeys((point.beside, point.result.policy) for point in result.served or []):
        served = [p for p in result.served or [] if (p.beside, p.result.policy) == (name, policy)]
        solid = POLICY_STYLES[policy] if name is None else dialect_style(policy, name, named.index(name))
        style = served_style(solid)
        axes.plot([p.result.cache_capacity_blocks for p in served], [100 * p.hit_rate for p in served], **style)
    optima = sorted(result.offline_optimum, key=lambda optimum: optimum.cache_capacity_blocks)
    capacities = [o.cache_capacity_blocks for o in optima]
    draw_ceilings(axes, capacities, [100 * o.hit_rate for o in optima], 100 * result.unbounded_hit_rate)
    axes.set_xscale("log", base=2)
    axes.set_xticks(capacities, [f"{capacity:,}" for capacity in capacities])
    axes.minorticks_off()
    axes.set_xlabel(f"capacity (blocks of {result.points[0].result.block_size:,} tokens, log scale)")  # one block size a sweep
    axes.set_ylabel("hit rate (% of prompt tokens)")
    axes.set_title(f"Longest-prefix hit rate against capacity{on_trace(result.trace)}{in_dialect(result)}{under_load(result)}")
    axes.grid(True, which="major", alpha=0.3)
    legend_outside(drawn, axes, loc="outside right center", fontsize="small" if named else None)  # clear of the title
    save(drawn, path)


def under_load(result: Sweep) -> str:
    """What a title says of the served replays (dotted), on a line of its own; nothing without them."""
    if not result.served:
        return ""
    service = result.served[0].result.service
    return f"\ndotted: served, requests in flight ({service['gpus']} GPUs, {service['step_tokens']:,} tokens a step)"


def in_dialect(result: Sweep) -> str:
    """What a title says of the dialect a sweep was replayed in, on a line of its own; nothing if canonical."""
    named = [f"in {result.dialect}'s dialect"] if result.dialect else []
    added = [f"with {', '.join(result.variations)}"] if result.variations else []
    return "\n" + " ".join(named + added) if named or added else ""


# The ablation of S3FIFO's variation points (spec/dialects.md): each alone on the canonical policy,
# with those it is defined on top of, and each known implementation's dialect whole.

Kind = Literal["canonical", "variation point", "dialect"]


class AblationPoint(BaseModel):
    """One dialect at one capacity: its replay, or why the dialect refuses the configuration."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    capacity: int = Field(description="the cache capacity in blocks")
    hit_rate: float | None = Field(None, description="total_hit_tokens / total_prompt_tokens of the replay; absent if refused")
    difference: float | None = Field(
        None, description="hit_rate minus the canonical policy's at this capacity (0.01 is one percentage point); absent if refused")
    refused: str | None = Field(None, description="the clause that refuses this configuration in this dialect, and why; absent if replayed")
    result: ReplayResult | None = Field(None, description="the replay's result, as `kvspec replay` writes it; absent if refused")


class AblationRow(BaseModel):
    """The canonical policy, one variation point (with those it requires), or a known
    implementation's dialect, at every capacity of the ablation."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    name: str = Field(description="'canonical', the variation point's id, or the known implementation's dialect name (DIALECT-5)")
    kind: Kind = Field(description="which of the three the row is")
    clause: str | None = Field(None, description="the variation point's clause in spec/dialects.md; absent for the other kinds")
    required: list[str] = Field(description="the variation points replayed with this one because it is defined on top of them (DIALECT-3)")
    dialect: list[str] = Field(description="every variation point replayed, in spec/dialects.md's order; empty for the canonical policy")
    replaces: list[str] = Field(description="the canonical clauses the dialect replaces, in spec/dialects.md's order")
    points: list[AblationPoint] = Field(description="one per capacity, in the ablation's order")


class AblationTrace(BaseModel):
    """Every row of the ablation on one trace."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str = Field(description="the trace's file name")
    unbounded_hit_rate: float = Field(description="the hit rate of a cache that never evicts: the ceiling of every row")
    rows: list[AblationRow] = Field(
        description="the canonical policy, then each variation point in spec/dialects.md's order, then each known dialect")


class Ablation(BaseModel):
    """`kvspec sweep --ablate`: the effect on S3FIFO's hit rate of each variation point alone, and
    of each known implementation's dialect whole, on each trace and at each capacity."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    policy: Literal["s3fifo"] = Field(description="the policy ablated")
    block_size: int = Field(description="tokens per block (REPLAY-CONF-2)")
    small_ratio: float = Field(description="S3FIFO's small-queue share of the capacity (S3-CONF-1)")
    max_freq: int = Field(description="S3FIFO's frequency ceiling (S3-CONF-6)")
    capacities: list[int] = Field(description="the capacities in blocks, in the order every row's points follow")
    traces: list[AblationTrace] = Field(description="one per trace, in the order given")


def ablated_dialects() -> list[tuple[str, Kind, Dialect]]:
    """The rows of an ablation: the canonical S3FIFO, each of its variation points with those it
    requires (DIALECT-3), and each known implementation's S3FIFO dialect (DIALECT-5)."""
    rows: list[tuple[str, Kind, Dialect]] = [("canonical", "canonical", CANONICAL)]
    rows += [(v.id, "variation point", dialect_for("s3fifo", None, (v.id, *v.requires))) for v in VARIATIONS.values() if "s3fifo" in v.policies]
    rows += [(name, "dialect", dialect_for("s3fifo", name)) for name, policies in KNOWN_DIALECTS.items() if "s3fifo" in policies]
    return rows


def refusal(config: ReplayConfig) -> str | None:
    """Why the reference refuses ``config`` (its clause first), or None."""
    try:
        make_policy(config)
    except ConfigError as error:
        return str(error)
    return None


def ablate(traces: Sequence[tuple[str, Records]], base: ReplayConfig, capacities: Sequence[int], run: Run = in_turn) -> Ablation:
    """Replay each trace (its path, and ``records(label)`` as sweep takes it) once per row of
    ablated_dialects and capacity, and once without eviction: each an independent job, which
    ``run`` runs as sweep's.

    Every configuration is checked before the first replay: the canonical policy must accept each
    capacity (or its ConfigError is raised); a dialect that refuses one (max-freq-min-1 refuses
    max_freq 0) gets the refusal in its point instead of a replay.
    """
    rows = ablated_dialects()
    configs = [[replace(base, policy="s3fifo", capacity=capacity, dialect=dialect) for capacity in capacities] for _, _, dialect in rows]
    for config in configs[0]:
        make_policy(config)  # the canonical row: what every other is measured against
    refusals = [[refusal(config) for config in row] for row in configs]
    never_evicts = replace(base, policy="lru", capacity=INT64_MAX, dialect=CANONICAL)
    # Per trace: each row's replayed configurations, then the cache that never evicts.
    replayed_configs = [(f"{name} at {config.capacity:,} blocks", config) for (name, _, _), row, whys in zip(rows, configs, refusals, strict=True)
                        for config, why in zip(row, whys, strict=True) if why is None]
    replayed_configs.append(("a cache that never evicts", never_evicts))
    total = len(traces) * len(replayed_configs)
    jobs = [TraceJob(f"[{number}/{total}] {Path(path).name}: {what}", replayed, records, (config, path))
            for number, ((path, records), (what, config)) in enumerate(itertools.product(traces, replayed_configs), start=1)]
    results = iter(run(jobs))
    ablated = []
    for path, _ in traces:
        replays = [[None if why else next(results) for why in whys] for whys in refusals]
        ceiling = next(results)
        canonical = [hit_rate(result) for result in replays[0] if result is not None]
        ablated.append(AblationTrace(
            trace=Path(path).name,
            unbounded_hit_rate=hit_rate(ceiling),
            rows=[ablation_row(name, kind, dialect, [ablation_point(capacity, why, result, rate)
                                                     for capacity, why, result, rate in zip(capacities, whys, row, canonical, strict=True)])
                  for (name, kind, dialect), whys, row in zip(rows, refusals, replays, strict=True)],
        ))
    return Ablation(policy="s3fifo", block_size=base.block_size, small_ratio=base.small_ratio, max_freq=base.max_freq,
                    capacities=list(capacities), traces=ablated)


def ablation_point(capacity: int, refused: str | None, result: ReplayResult | None, canonical: float) -> AblationPoint:
    if result is None:
        return AblationPoint(capacity=capacity, refused=refused)
    return AblationPoint(capacity=capacity, hit_rate=hit_rate(result), difference=hit_rate(result) - canonical, result=result)


def ablation_row(name: str, kind: Kind, dialect: Dialect, points: list[AblationPoint]) -> AblationRow:
    variation = VARIATIONS.get(name) if kind == "variation point" else None
    return AblationRow(name=name, kind=kind, clause=variation.clause if variation else None,
                       required=list(variation.requires) if variation else [],
                       dialect=in_catalogue_order(dialect), replaces=replaced_clauses(dialect), points=points)


def capacity_shades(count: int) -> list[tuple[float, float, float]]:
    """One shade of S3FIFO's colour per capacity, light to dark as the capacity grows: every bar is
    S3FIFO (its colour in every figure), and the order of the capacities reads as one."""
    from matplotlib.colors import to_rgb

    colour = to_rgb(POLICY_STYLES["s3fifo"]["color"])
    weights = [0.3 + 0.7 * i / max(count - 1, 1) for i in range(count)]
    return [tuple(1 - w + w * c for c in colour) for w in weights]  # type: ignore[misc]


def row_label(row: AblationRow) -> str:
    """A row's name, with what it is replayed with."""
    if row.kind == "dialect":
        return f"{row.name} (dialect)"
    return f"{row.name} (+ {', '.join(row.required)})" if row.required else row.name


def row_note(row: AblationRow) -> str:
    """What a row without a bar says instead: that it changes nothing, or that it refuses the configuration."""
    if any(p.refused for p in row.points):
        return "refuses the configuration"
    return "no effect" if all(p.difference == 0 for p in row.points) else ""


SYMLOG_TICKS = (-50, -20, -10, -5, -1, -0.5, 0, 0.5, 1, 5, 10, 20, 50)


def plot_ablation(result: Ablation, path: Path) -> None:
    """The difference each variation point alone, and each known dialect whole, makes to the
    canonical S3FIFO's hit rate: one panel per trace, one row per dialect, one bar per capacity;
    written whole to ``path`` (PNG, SVG or PDF)."""
    rows = [row for row in result.traces[0].rows if row.kind != "canonical"]
    columns = len(result.traces)
    drawn, panels = figure(columns, (3.5 + 5 * columns, 1.5 + 0.12 * len(rows) * (2 + len(result.capacities))))
    panels = list(panels) if columns > 1 else [panels]
    shades = capacity_shades(len(result.capacities))
    height = 0.8 / len(result.capacities)
    for panel, trace in zip(panels, result.traces, strict=True):
        drawn_rows = [row for row in trace.rows if row.kind != "canonical"]
        for i, (capacity, shade) in enumerate(zip(result.capacities, shades, strict=True)):
            positions = [r + (i - (len(shades) - 1) / 2) * height for r in range(len(drawn_rows))]
            differences = [100 * (row.points[i].difference or 0.0) for row in drawn_rows]
            panel.barh(positions, differences, height, color=shade, label=f"{capacity:,} blocks")
        for r, row in enumerate(drawn_rows):
            panel.annotate(row_note(row), (0, r), xytext=(4, 0), textcoords="offset points", va="center", color="grey", fontsize="small")
        panel.set_yticks(range(len(drawn_rows)), [row_label(row) for row in drawn_rows] if panel is panels[0] else [])
        panel.set_ylim(len(drawn_rows) - 0.5, -0.5)  # the catalogue's order, top to bottom
        dialects = [r for r, row in enumerate(drawn_rows) if row.kind == "dialect"]
        if dialects:
            panel.axhline(dialects[0] - 0.5, **NEVER_EVICTS)  # the known dialects apart, below the variation points
        panel.axvline(0, color="black", linewidth=0.8)
        # One variation point can cost tens of points where others move a tenth: linear within ±1, logarithmic beyond.
        panel.set_xscale("symlog", linthresh=1)
        low, high = panel.get_xlim()
        panel.set_xticks([t for t in SYMLOG_TICKS if low <= t <= high], [f"{t:+g}" if t else "0" for t in SYMLOG_TICKS if low <= t <= high])
        panel.minorticks_off()
        panel.set_xlabel("hit rate minus the canonical S3FIFO's (percentage points)")
        panel.set_title(on_trace(trace.trace).strip() or "on the trace given")  # a trace not bundled: no file name in a title
        panel.grid(True, axis="x", alpha=0.3)
    legend_outside(drawn, panels[0], loc="outside lower center", title="capacity", ncols=len(result.capacities))
    drawn.suptitle("Each S3FIFO variation point alone, and each known dialect whole, against the canonical S3FIFO\n"
                   f"(blocks of {result.block_size:,} tokens, small_ratio {result.small_ratio}, max_freq {result.max_freq}; "
                   "the difference is drawn linear within ±1 point, logarithmic beyond)")
    save(drawn, path)
