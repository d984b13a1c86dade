"""conformance/galleries/canonical_lifecycle.py, the lifecycle gallery's correct pool, written from
spec/lifecycle.md's text: it replays every lifecycle case of the corpus, result and state, and agrees
with the reference's Pool operation by operation over random interleavings."""

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.conformance.fixtures.lifecycle_cases import state_of
from kvspec.conformance.galleries.canonical_lifecycle import CanonicalPool, first_failure, performed
from kvspec.reference import POLICIES, ReplayConfig
from kvspec.reference.lifecycle import Pool

CORPUS = Path(__file__).resolve().parent.parent / "spec" / "fixtures"


def lifecycle_corpus() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(CORPUS.glob("lifecycle/*.json"))]


def test_FIX_18_the_canonical_pool_replays_every_lifecycle_case_at_both_levels() -> None:
    """LIFE-POOL-1 to LIFE-POOL-3, LIFE-INV-1, and every clause the cases declare: each operation's
    expect and, at the state level, its state."""
    corpus = lifecycle_corpus()
    assert {case["config"]["policy"] for case in corpus} == set(POLICIES)
    assert {case["id"]: first_failure(CanonicalPool, case) for case in corpus} == {case["id"]: None for case in corpus}
    assert [case["id"] for case in corpus if first_failure(CanonicalPool, case, states=False)] == []


def step_drawn(data: st.DataObject, pool: Pool) -> dict[str, Any]:
    """One operation, as a case writes it, that the reference pool's state allows, on one of four
    request ids (tests/test_lifecycle.py's one_step, drawn without running it)."""
    rid = data.draw(st.integers(0, 3))
    request = pool.requests.get(rid)
    if request is None:
        hash_ids = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
        return {"op": "arrive", "id": rid, "hash_ids": hash_ids, "input_length": 4 * len(hash_ids) - data.draw(st.integers(0, 3))}
    if not request.running:
        return {"op": data.draw(st.sampled_from(["lookup", "allocate"])), "id": rid}
    if request.computed < len(request.blocks):
        op = data.draw(st.sampled_from(["compute", "compute", "preempt"]))
        step = {"op": op, "id": rid}
        if op == "compute":
            step["upto"] = data.draw(st.integers(request.computed + 1, len(request.blocks)))
        return step
    return {"op": data.draw(st.sampled_from(["decode", "finish", "preempt"])), "id": rid}


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=150, deadline=None)
@given(capacity=st.integers(3, 8), small_ratio=st.sampled_from([0.25, 0.34, 0.5]), max_freq=st.integers(1, 3), data=st.data())
def test_LIFE_LOOKUP_1_to_LIFE_HIT_2_the_canonical_pool_agrees_with_the_reference_pool_operation_by_operation(
        policy: str, capacity: int, small_ratio: float, max_freq: int, data: st.DataObject) -> None:
    """Every operation of section 2 (LIFE-ARRIVE-1 to LIFE-PREEMPT-1) under section 3's eviction in
    use (LRU-LIFE-1, FIFO-LIFE-1, S3-LIFE-1 to S3-LIFE-4) and section 4's accounting: the same
    result and the same FIX-18 state after each, over 40 operations."""
    config = ReplayConfig(policy=policy, capacity=capacity, block_size=4, small_ratio=small_ratio, max_freq=max_freq)  # type: ignore[arg-type]
    reference, canonical = Pool.empty(config), CanonicalPool.empty(config)
    for number in range(40):
        step = step_drawn(data, reference)
        expected = performed(reference, step)
        assert performed(canonical, step) == expected, (number, step)
        assert canonical.state() == state_of(reference), (number, step)

