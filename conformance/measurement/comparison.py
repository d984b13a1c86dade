"""`kvspec compare`: the benefit policy against the LRU byte-budget baseline on the seeded
traces of spec/benefit.md section 17 (BEN-CMP-1 to BEN-CMP-3), and, given a TRACE, as the
prefix cache of a Mooncake trace beside S3FIFO, LRU and FIFO (BEN-PREFIX-1 to BEN-PREFIX-7), those
in the dialects asked for (spec/dialects.md), the offline optimum and a cache that never evicts;
as a table, JSON and a plot."""

import math
from dataclasses import asdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kvspec.conformance.core.parallel import Records, Run, TraceJob, in_turn, served_replay
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
from kvspec.conformance.measurement.offline_optimum import OfflineOptimum, offline_optima
from kvspec.conformance.measurement.plots import (POLICY_STYLES, dialect_style, draw_ceilings, figure, legend_outside, on_trace, save,
                                                  served_style)
from kvspec.reference.benefit import TRACES
from kvspec.reference.benefit.compare import ComparisonRow, compare
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import PREFIX_POLICIES, PrefixSide, replay_benefit, replay_blocks
from kvspec.reference.benefit.served import served_benefit
from kvspec.reference.caches import server_for
from kvspec.reference.dialects import CANONICAL, Dialect, in_catalogue_order
from kvspec.reference.models import ServedResult
from kvspec.reference.replay import ReplayConfig
from kvspec.reference.service import ServiceModel
from kvspec.reference.validation import INT64_MAX


class Comparison(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    rows: list[ComparisonRow]


def run(capacity: int | None) -> Comparison:
    """Every seeded trace at its own capacity, or all at ``capacity`` bytes; the benefit policy indexed
    (indexed_benefit.py: the reference's results, certified)."""
    return Comparison(rows=[compare(name, make(), capacity or default, policy_class=IndexedBenefitPolicy)
                            for name, (make, default) in TRACES.items()])


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
    """Saved cost and bytes written, the policy's point beside LRU's for each trace, each panel
    titled, the legend below them; written whole to ``path``. Points, not bars: a bar on the log
    scale of bytes written would start nowhere."""
    drawn, (saved, written) = figure(2, (11, 4.6))
    positions = range(len(result.rows))
    names = [f"{row.trace}, {row.capacity_bytes / 2**20:g} MiB" for row in result.rows]
    for axes, field, scale, title, label in (
            (saved, "saved", 1.0, "Cold-prefill cost the cache saves", "saved cold-prefill cost (the seeded traces' cost units)"),
            (written, "bytes_written", 2.0**20, "Bytes the cache writes", "bytes written (MiB, log scale)")):
        for side, offset in (("policy", -0.12), ("lru", 0.12)):
            axes.plot([getattr(getattr(row, side), field) / scale for row in result.rows], [p + offset for p in positions],
                      linestyle="none", markersize=8, **POLICY_STYLES["benefit" if side == "policy" else "lru"])
        axes.set_yticks(list(positions), names if axes is saved else [])
        axes.set_ylim(len(names) - 0.5, -0.5)  # the first trace at the top
        axes.set_xlabel(label)
        axes.set_title(title)
        axes.grid(True, axis="x", alpha=0.3)
    saved.xaxis.set_major_formatter("{x:,.0f}")
    written.set_xscale("log")
    legend_outside(drawn, saved, loc="outside lower center", ncols=2)
    drawn.suptitle("The benefit policy against LRU at the same byte capacity, on the seeded traces")
    save(drawn, path)


# On a Mooncake trace (spec/benefit.md section 20) --------------------------------------------------

GIB = 2**30
DEFAULT_TRACE_CAPACITIES = (16 * GIB, 64 * GIB, 256 * GIB)  # 256, 1,024 and 4,096 blocks of 64 MiB


class DialectSide(BaseModel):
    """A block policy of BEN-PREFIX-6 replayed in a dialect (spec/dialects.md), measured as BEN-PREFIX-7."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    dialect: str = Field(description="the dialect as it was asked for: a known implementation's name (--dialect), "
                                     "with '+' and the variation points added (--variation)")
    variations: list[str] = Field(description="every variation point replayed, in spec/dialects.md's order (DIALECT-6)")
    side: PrefixSide


class ServedSide(BaseModel):
    """One policy served at one byte capacity (spec/lifecycle.md sections 6 and 7): its hit rate and its result."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    capacity_bytes: int
    hit_rate: float = Field(description="total_hit_tokens / total_prompt_tokens; 0 for a trace without requests")
    result: ServedResult
    dialect: str | None = Field(None, description="the engine's dialect (--dialect) this policy was served in, over the engine's own "
                                                  "pool (spec/dialects.md section 9); else absent")


def served_config(policy: str, capacity: int, service: ServiceModel, block_size: int, dialect: Dialect = CANONICAL) -> ReplayConfig:
    """A block policy served at ⌊capacity / block bytes⌋ blocks (BEN-PREFIX-6), in ``dialect``."""
    return ReplayConfig(policy, capacity // service.model.block_bytes(block_size), block_size, dialect=dialect)  # type: ignore[arg-type]


def served_side(records: Any, policy: str, capacity: int, service: ServiceModel, block_size: int, path: str,
                asked: tuple[str, Dialect] | None = None) -> ServedSide:
    """A TraceJob's function: the benefit policy served by LIFE-BEN-1 to LIFE-BEN-8 (indexed, as its replay is), or a block
    policy by section 6 at its capacity's blocks, canonical or in the dialect ``asked`` names over the engine's pool
    (server_for: spec/dialects.md section 9, as `kvspec sweep --serve --beside` serves it)."""
    if policy == "benefit":
        served = served_benefit(records, capacity, service, block_size=block_size, path=path, policy_class=IndexedBenefitPolicy)
        result = ServedResult(**{name: value for name, value in asdict(served).items() if name != "per_request"})  # as served_replay's
    else:
        config = served_config(policy, capacity, service, block_size, asked[1] if asked else CANONICAL)
        result = served_replay(records, config, service, path)
    rate = result.total_hit_tokens / result.total_prompt_tokens if result.total_prompt_tokens else 0.0
    return ServedSide(capacity_bytes=capacity, hit_rate=rate, result=result, dialect=asked[0] if asked else None)



class TraceComparison(BaseModel):
    """BEN-PREFIX-7 for every policy at every capacity, canonical and in each dialect asked for,
    with the cost model that priced it, and the two ceilings of the hit rate."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    trace: str
    model: str
    block_size: int
    block_bytes: int
    unbounded_hit_rate: float = Field(description="the hit rate of a cache that never evicts: the ceiling of every policy")
    offline_optimum: list[OfflineOptimum] = Field(
        description="Belady's MIN over the block accesses at each capacity's blocks, in the order of the capacities: a block-level "
                    "optimum (conformance/measurement/offline_optimum.py says when it bounds prefix hits)")
    sides: list[PrefixSide]
    dialect_sides: list[DialectSide] = Field(description="each dialect's policies at each capacity, in the order the dialects were asked for")
    served: list[ServedSide] | None = Field(
        None, description="with --serve: each policy at each capacity served as a server runs it, in the sides' order; else absent")


# A dialect as run_trace takes it: its name as asked for, and the dialect of each policy it has.
DialectPolicies = tuple[str, Mapping[str, Dialect]]


def run_trace(records: Records, path: str, capacities: list[int], block_size: int = 512, model: Model = Model(),
              dialects: Sequence[DialectPolicies] = (), run: Run = in_turn, service: ServiceModel | None = None) -> TraceComparison:
    """Every policy of BEN-PREFIX-6 at every capacity (the benefit policy indexed, as in ``run``), then each of
    ``dialects``' policies, then the offline optimum and a cache that never evicts from one more reading;
    ``records(label)`` reads the trace afresh. Each replay is an independent job, which ``run`` runs as
    kvspec sweep's (conformance/core/parallel.py); every configuration is checked before ``run`` is
    called, so that one the spec refuses fails at once, before a cluster is sought. With a ``service``,
    every policy at every capacity is also served (spec/lifecycle.md sections 6 and 7), each dialect's over its engine's
    pool (spec/dialects.md section 9, where server_for refuses a dialect whose lifecycle is not specified), first, as
    `kvspec sweep --serve` serves first: the one reading that refuses a trace whose timestamps go back fails before the rest."""
    capacities = list(dict.fromkeys(capacities))  # one row per capacity, as the offline optimum has
    jobs: list[TraceJob[Any]] = []
    dialect_of: list[tuple[str, Dialect] | None] = []  # each replay's dialect, as asked for; None for the canonical sides
    for capacity in capacities:
        for policy, asked in sides_of(dialects):
            label = f"{Path(path).name}, {side_label(policy, asked)} at {capacity / GIB:g} GiB"
            if policy == "benefit":
                jobs.append(TraceJob(label, replay_benefit, records, (capacity, block_size, model, path, IndexedBenefitPolicy)))
            else:
                dialect = asked[1] if asked else CANONICAL
                jobs.append(TraceJob(label, replay_blocks, records, (policy, capacity, block_size, model, path, dialect)))
            dialect_of.append(asked)
    blocks = [capacity // model.block_bytes(block_size) for capacity in capacities]
    for job in jobs:  # each configuration checked before the first replay (BEN-PREFIX-6, S3-CONF-5), as a replay of no request
        job.function((), *job.arguments)
    jobs.append(TraceJob(f"{Path(path).name}, the offline optimum and a cache that never evicts", offline_optima, records,
                         ([*blocks, INT64_MAX], block_size, path)))
    served_sides = [] if service is None else [(policy, capacity, asked) for capacity in capacities for policy, asked in sides_of(dialects)]
    for policy, capacity, asked in served_sides:  # LIFE-VLLM-1: each dialect's lifecycle specified, before any replay
        if asked is not None:
            server_for(served_config(policy, capacity, service, block_size, asked[1]))  # type: ignore[arg-type]  # service is given
    served_jobs = [TraceJob(f"{Path(path).name}, {side_label(policy, asked)} served at {capacity / GIB:g} GiB", served_side, records,
                            (policy, capacity, service, block_size, path, asked)) for policy, capacity, asked in served_sides]
    served, (*replays, (*optima, never_evicts)) = split(run([*served_jobs, *jobs]), len(served_jobs))
    sides = [side for side, asked in zip(replays, dialect_of, strict=True) if asked is None]
    dialect_sides = [DialectSide(dialect=asked[0], variations=in_catalogue_order(asked[1]), side=side)
                     for side, asked in zip(replays, dialect_of, strict=True) if asked is not None]
    return TraceComparison(trace=Path(path).name, model=model.name, block_size=block_size, block_bytes=model.block_bytes(block_size),
                           unbounded_hit_rate=never_evicts.hit_rate, offline_optimum=optima, sides=sides, dialect_sides=dialect_sides,
                           served=served if service is not None else None)


def sides_of(dialects: Sequence[DialectPolicies]) -> list[tuple[str, tuple[str, Dialect] | None]]:
    """The sides at one capacity, in their order: every policy of BEN-PREFIX-6, then each dialect's policies, with it."""
    return [(policy, None) for policy in PREFIX_POLICIES] + [(policy, (name, dialect)) for name, policies in dialects
                                                              for policy, dialect in policies.items()]


def side_label(policy: str, asked: tuple[str, Dialect] | None) -> str:
    return f"{policy} in {asked[0]}" if asked else policy


def split(results: list[Any], count: int) -> tuple[list[Any], list[Any]]:
    return results[:count], results[count:]


def hit_rate(side: PrefixSide) -> float:
    """Hit tokens over prompt tokens; NaN for a trace without requests (left out of plots)."""
    return side.hit_tokens / side.prompt_tokens if side.prompt_tokens else math.nan


def rate_text(side: PrefixSide) -> str:
    return f"{hit_rate(side):.2%}" if side.prompt_tokens else "n/a"


def side_name(side: PrefixSide | ServedResult, dialect: str | None = None) -> str:
    """A row's policy, and the dialect it was replayed in."""
    return f"{side.policy} ({dialect})" if dialect else side.policy


def trace_table(result: TraceComparison) -> str:
    """Hit tokens, saved prefill, bytes written and the peak bytes resident, one line per capacity and
    policy (each dialect's after the canonical ones), the offline optimum's hit tokens at each
    capacity, and a cache that never evicts."""
    rows = [(side, None) for side in result.sides] + [(d.side, d.dialect) for d in result.dialect_sides]
    width = max(len("offline optimum"), *(len(side_name(side, dialect)) for side, dialect in rows))
    lines = [f"{result.trace}: {result.model}, {result.block_size}-token blocks of {result.block_bytes / 2**20:g} MiB",
             f"{'capacity':>10} {'policy':<{width}} {'hit tokens':>14} {'hit rate':>9} {'saved prefill (s)':>18} {'written (GiB)':>14} {'peak (GiB)':>11}"]
    capacities = list(dict.fromkeys(side.capacity_bytes for side in result.sides))
    for capacity, optimum in zip(capacities, result.offline_optimum, strict=True):
        for side, dialect in rows:
            if side.capacity_bytes == capacity:
                lines.append(
                    f"{capacity / GIB:>6g} GiB {side_name(side, dialect):<{width}} {side.hit_tokens:>14,} {rate_text(side):>9} "
                    f"{side.saved_prefill_ms / 1000:>18,.1f} {side.bytes_written / GIB:>14,.0f} {side.peak_bytes / GIB:>11,.0f}"
                )
        lines.append(f"{capacity / GIB:>6g} GiB {'offline optimum':<{width}} {optimum.total_hit_tokens:>14,} {ceiling_text(optimum.hit_rate, result):>9}"
                     f"  (Belady's MIN over {optimum.cache_capacity_blocks:,} blocks)")
    lines.append(f"a cache that never evicts: {ceiling_text(result.unbounded_hit_rate, result)}")
    return "\n".join(lines)


def served_table(result: TraceComparison) -> str:
    """With --serve: each policy's hit rate one request at a time beside its hit rate served, and what serving cost."""
    one_at_a_time = {(None, side.policy, side.capacity_bytes): side for side in result.sides}
    one_at_a_time.update({(d.dialect, d.side.policy, d.side.capacity_bytes): d.side for d in result.dialect_sides})
    width = max(len(side_name(served.result, served.dialect)) for served in result.served or [])
    lines = ["served as a server runs the trace (spec/lifecycle.md sections 6 and 7) beside one request at a time:",
             f"{'capacity':>10} {'policy':<{width}} {'one at a time':>14} {'served':>9} {'preemptions':>12} {'recomputed':>12} "
             f"{'peak referenced':>16} {'mean wait (s)':>14}"]
    for served in result.served or []:
        alone, run = one_at_a_time[(served.dialect, served.result.policy, served.capacity_bytes)], served.result
        lines.append(f"{served.capacity_bytes / GIB:>6g} GiB {side_name(run, served.dialect):<{width}} {rate_text(alone):>14} "
                     f"{served.hit_rate:>9.2%} {run.preemptions:>12,} {run.total_recomputed_tokens:>12,} "
                     f"{run.peak_referenced_blocks:>16,} {run.mean_waiting_ms / 1000:>14,.2f}")
    return "\n".join(lines)


def ceiling_text(rate: float, result: TraceComparison) -> str:
    """A ceiling's hit rate; n/a for a trace without requests, as for the policies."""
    return f"{rate:.2%}" if result.sides and result.sides[0].prompt_tokens else "n/a"


def dialect_styles(result: TraceComparison) -> dict[tuple[str, str], dict[str, object]]:
    """Each (dialect, policy) line's style: its policy's colour and marker, its dialect's dash, its name in the legend."""
    names = list(dict.fromkeys(d.dialect for d in result.dialect_sides))
    return {(d.dialect, d.side.policy): dialect_style(d.side.policy, d.dialect, names.index(d.dialect)) for d in result.dialect_sides}


def plot_trace(result: TraceComparison, path: Path) -> None:
    """Hit rate and saved prefill against capacity, one line per policy (and per dialect's policy),
    the hit rate under the offline optimum and a cache that never evicts (noted where above the
    policies' range; neither is a ceiling of saved prefill), and each hit rate minus canonical LRU's,
    where lines a point apart on the first panel's scale are told apart; each panel titled, the
    legend beside them; written whole to ``path``."""
    drawn, (rate, saved, gain) = figure(3, (17, 4.8))
    lines = [(POLICY_STYLES[policy], [side for side in result.sides if side.policy == policy]) for policy in PREFIX_POLICIES]
    lines += [(style, [d.side for d in result.dialect_sides if (d.dialect, d.side.policy) == key]) for key, style in dialect_styles(result).items()]
    lru = {side.capacity_bytes: hit_rate(side) for side in result.sides if side.policy == "lru"}
    for style, sides in lines:
        gib = [side.capacity_bytes / GIB for side in sides]
        rate.plot(gib, [100 * hit_rate(side) for side in sides], **style)
    styles = dialect_styles(result)
    for name, policy in dict.fromkeys((s.dialect, s.result.policy) for s in result.served or []):
        served = [s for s in result.served or [] if (s.dialect, s.result.policy) == (name, policy)]  # dotted beside the line one at
        rate.plot([s.capacity_bytes / GIB for s in served], [100 * s.hit_rate for s in served],  # a time, as kvspec sweep --serve draws it
                  **served_style(POLICY_STYLES[policy] if name is None else styles[(name, policy)]))
    for style, sides in lines:
        gib = [side.capacity_bytes / GIB for side in sides]
        saved.plot(gib, [side.saved_prefill_ms / 1000 for side in sides], **style)
        gain.plot(gib, [100 * (hit_rate(side) - lru[side.capacity_bytes]) for side in sides], **style)
    capacities = list(dict.fromkeys(side.capacity_bytes / GIB for side in result.sides))
    draw_ceilings(rate, capacities, [100 * o.hit_rate if o.total_prompt_tokens else math.nan for o in result.offline_optimum],
                  100 * result.unbounded_hit_rate)
    for axes, title, label in ((rate, "Hit rate of each policy", "hit rate (% of prompt tokens)"),
                               (saved, "Prefill time each policy saves", f"saved prefill (modelled seconds, {result.model})"),
                               (gain, "Each hit rate against canonical LRU's", "hit rate minus canonical LRU's (percentage points)")):
        axes.set_xscale("log", base=2)
        axes.set_xticks(sorted(capacities), [f"{capacity:g}" for capacity in sorted(capacities)])
        axes.minorticks_off()
        axes.set_xlabel("capacity (GiB, log scale)")
        axes.set_ylabel(label)
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
    legend_outside(drawn, rate, fontsize="small")
    drawn.suptitle(f"The benefit policy as a prefix cache beside S3FIFO, LRU and FIFO{on_trace(result.trace)}"
                   + ("\ndotted: served, requests in flight (spec/lifecycle.md sections 6 and 7)" if result.served else ""))
    save(drawn, path)
