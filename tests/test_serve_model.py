"""The served replay (reference/serve.py) against tests/serve_model.py, an independent model of
spec/lifecycle.md section 6 written from the spec text, on small random traces."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvspec.reference.benefit.model import Model
from kvspec.reference.replay import ReplayConfig
from kvspec.reference.serve import served
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

from serve_model import Service, serve_model

BLOCK = 4


@st.composite
def traces(draw: st.DrawFn) -> list[tuple[int, Request]]:
    count = draw(st.integers(2, 8))
    times = sorted(draw(st.lists(st.integers(0, 50), min_size=count, max_size=count)))
    records = []
    for i, ts in enumerate(times):
        hash_ids = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
        n = len(hash_ids)
        input_length = draw(st.integers((n - 1) * BLOCK + 1, n * BLOCK))
        output_length = draw(st.integers(1, 12))
        records.append((i + 1, Request(ts, input_length, output_length, hash_ids)))
    return records


@st.composite
def setups(draw: st.DrawFn) -> tuple[ReplayConfig, dict[str, int]]:
    policy = draw(st.sampled_from(["s3fifo", "lru", "fifo"]))
    capacity = draw(st.integers(2, 12))
    small_ratio = 0.5 if capacity < 10 else draw(st.sampled_from([0.1, 0.5]))
    config = ReplayConfig(policy, capacity, BLOCK, small_ratio=small_ratio)
    step_tokens = draw(st.integers(1, 16))
    service = dict(max_running=draw(st.integers(1, min(4, step_tokens))), step_tokens=step_tokens, gpus=1,  # LIFE-SERVE-1
                   flops_per_second=4 * 10**14, memory_bytes_per_second=335 * 10**10)
    return config, service


def ms(ticks: int, tpm: int) -> float:
    return round(ticks / tpm, 3)


def compare(records: list[tuple[int, Request]], config: ReplayConfig, service: dict[str, int]) -> list[str]:
    """The differences between the reference and the model, as text (empty when they agree)."""
    lines: list = []
    ref = served(records, config, ServiceModel(**service, model=Model()), add=lines.append)
    mine = serve_model(records, config, Service(**service, model=Model()))
    tpm = mine.ticks_per_ms
    diffs = []
    theirs = {x.line: (x.hit_tokens, x.prompt_tokens, x.recomputed_tokens, x.waiting_ms, x.preemptions,
                       x.output_tokens, x.finished_ms) for x in lines}
    ours = {x.line: (x.hit_tokens, x.prompt_tokens, x.recomputed_tokens, ms(x.waiting_ticks, tpm), x.preemptions,
                     x.output_tokens, ms(x.finished_ticks, tpm)) for x in mine.lines}
    names = ("hit", "prompt", "recomputed", "waiting_ms", "preemptions", "output", "finished_ms")
    for line in sorted(set(theirs) | set(ours)):
        a, b = theirs.get(line), ours.get(line)
        if a is None or b is None:
            diffs.append(f"line {line}: reference {a}, model {b}")
            continue
        for name, x, y in zip(names, a, b):
            if x != y:
                diffs.append(f"line {line} {name}: reference {x}, model {y}")
    # the order the requests finish (LIFE-SERVE-7); the text leaves the order of those finishing in one step open
    ref_order = [(x.finished_ms, x.line) for x in lines]
    if ref_order != sorted(ref_order, key=lambda t: t[0]) or sorted(ref_order) != sorted((ms(x.finished_ticks, tpm), x.line) for x in mine.lines):
        diffs.append(f"finish order: reference {[x.line for x in lines]}, model {[x.line for x in mine.lines]}")
    totals = {
        "steps": (ref.steps, mine.steps),
        "preemptions": (ref.preemptions, mine.preemptions),
        "cut_short": (ref.cut_short, mine.cut_short),
        "peak_referenced_blocks": (ref.peak_referenced_blocks, mine.peak_referenced_blocks),
        "peak_running": (ref.peak_running, mine.peak_running),
        "total_hit_tokens": (ref.total_hit_tokens, sum(x.hit_tokens for x in mine.lines)),
        "total_recomputed_tokens": (ref.total_recomputed_tokens, sum(x.recomputed_tokens for x in mine.lines)),
        "final_cache_blocks": (ref.final_cache_blocks, mine.final_cache_blocks),
        "served_ms": (ref.served_ms, ms(mine.last_finish_ticks, tpm)),
    }
    for name, (x, y) in totals.items():
        if x != y:
            diffs.append(f"{name}: reference {x}, model {y}")
    return diffs


@settings(max_examples=int(os.environ.get("SERVE_MODEL_EXAMPLES", "150")), deadline=None, suppress_health_check=list(HealthCheck))
@given(traces(), setups())
def test_LIFE_SERVE_3_to_LIFE_SERVE_6_the_served_replay_is_a_model_of_the_text_stepping_one_step_at_a_time(
        records: list[tuple[int, Request]], setup: tuple[ReplayConfig, dict[str, int]]) -> None:
    """Every line and total (times to the microsecond) of the reference's served replay is the model's,
    on traces of up to 8 requests sharing prefixes, pools of 2 to 12 blocks, every policy, every contract on."""
    config, service = setup
    diffs = compare(records, config, service)
    assert not diffs, "\n".join(diffs)


def test_LIFE_SERVE_5_a_block_held_since_its_allocation_is_one_of_its_blocks_not_a_slot_past_them() -> None:
    """The model's first finding: request 5's block 2 is not admitted (S holds 1, M is in use) and is
    held (LIFE-ALLOC-3); decoding its 5th token needs 2 slots, its block and one held past it, which
    evicts block 3. The reference had counted the held block as a slot past its blocks, and computed 5
    tokens' KV in one slot (its cache ended with block 3 resident)."""
    records = [(1, Request(0, 5, 5, [1, 2])), (2, Request(0, 1, 1, [1])), (3, Request(0, 1, 1, [1])),
               (4, Request(0, 1, 3, [3])), (5, Request(0, 3, 3, [2]))]
    config = ReplayConfig("s3fifo", 2, BLOCK, small_ratio=0.5)
    service = dict(max_running=2, step_tokens=2, gpus=1, flops_per_second=4 * 10**14, memory_bytes_per_second=335 * 10**10)
    assert compare(records, config, service) == []
