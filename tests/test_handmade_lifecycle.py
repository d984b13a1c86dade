"""tests/handmade/lifecycle_pool.py, an independent pool of requests in flight written from
spec/lifecycle.md's text, and its hand-made mistakes (tests/handmade/lifecycle_mistakes.py): the pool
passes every lifecycle case of the corpus at both levels and agrees with the reference's Pool over
random interleavings; each mistake is one, shown by a short sequence on which the reference's Pool
and the mistake differ."""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.adapters.interface import Adapter, AdapterConfig
from kvspec.adapters.reference import pool_state
from kvspec.conformance.fixtures.lifecycle_cases import state_of
from kvspec.conformance.fixtures.runner import verify
from kvspec.conformance.galleries.canonical_lifecycle import performed
from kvspec.conformance.galleries.lifecycle_mutants import MUTANTS as GALLERY
from kvspec.reference import POLICIES, ReplayConfig
from kvspec.reference.lifecycle import Pool

from test_canonical_lifecycle import lifecycle_corpus, step_drawn

HANDMADE = Path(__file__).resolve().parent / "handmade"
sys.path.insert(0, str(HANDMADE))

import lifecycle_mistakes  # noqa: E402
import lifecycle_pool  # noqa: E402
from lifecycle_mistakes import MISTAKES  # noqa: E402
from lifecycle_pool import HandmadePool  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "spec" / "fixtures"


@pytest.mark.parametrize("factory", [lifecycle_pool.pool, lifecycle_pool.pool_results], ids=["state", "results"])
def test_FIX_18_the_handmade_pool_passes_every_lifecycle_case_of_the_corpus(factory: Callable[[], Adapter]) -> None:
    """LIFE-POOL-1 to LIFE-POOL-3, LIFE-INV-1 and every clause the lifecycle cases declare, through
    `kvspec fixtures verify`'s runner, case file by case file (FIX-18): each operation's expect and, at
    the state level, its state."""
    results = [result for path in sorted(CORPUS.glob("lifecycle/*.json")) for result in verify(path, factory, {})]
    assert len(results) == len(lifecycle_corpus()) and {result.policy for result in results} == set(POLICIES)
    assert [(result.id, result.detail) for result in results if result.verdict != "pass"] == []


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=50, deadline=None)
@given(capacity=st.integers(3, 8), small_ratio=st.sampled_from([0.25, 0.34, 0.5]), max_freq=st.integers(1, 3), data=st.data())
def test_LIFE_ALLOC_1_to_LIFE_HIT_2_the_handmade_pool_agrees_with_the_reference_pool_operation_by_operation(
        policy: str, capacity: int, small_ratio: float, max_freq: int, data: st.DataObject) -> None:
    """Every operation of section 2 under section 3's eviction in use (LRU-LIFE-1, FIFO-LIFE-1,
    S3-LIFE-1 to S3-LIFE-4) and section 4's accounting, through the pool's in-process adapter: the
    same result and the same PROTO-44 state after each of 40 operations drawn by the reference's state."""
    adapter = lifecycle_pool.pool()
    adapter.configure(AdapterConfig(policy, capacity, 4, small_ratio, max_freq))  # type: ignore[arg-type]
    reference = Pool.empty(ReplayConfig(policy=policy, capacity=capacity, block_size=4, small_ratio=small_ratio, max_freq=max_freq))  # type: ignore[arg-type]
    drawn: list[dict[str, Any]] = []
    while len(drawn) < 40:
        drawn.append(step_drawn(data, reference))
        assert (performed(adapter, drawn[-1]), adapter.lifecycle_state()) == (performed(reference, drawn[-1]), pool_state(reference)), drawn


# -- each mistake is one: a short sequence on which the reference's Pool and the mistake differ ------
#
# Each sequence's expected values are worked by hand from the clauses, in the comments; the reference's
# Pool and the handmade pool must give them, and the mistake what its misreading gives.

Outcome = tuple[list[dict[str, Any]], dict[str, Any]]


def steps(operations: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """(op, id, args...) as a case's operations write them: ("arrive", 1, [1, 2], 8), ("compute", 1, 2), ("finish", 1)."""
    written = []
    for op, rid, *args in operations:
        step: dict[str, Any] = {"op": op, "id": rid}
        if op == "arrive":
            step.update(hash_ids=args[0], input_length=args[1])
        elif op == "compute":
            step["upto"] = args[0]
        written.append(step)
    return written


def outcomes(mistake: str, config: ReplayConfig, operations: list[tuple[Any, ...]]) -> tuple[Outcome, Outcome]:
    """What each operation returns and the pool's FIX-18 state at the end: the reference's Pool's
    (checked to be the handmade pool's too), and the mistake's."""
    reference, handmade, mistaken = Pool.empty(config), HandmadePool.empty(config), MISTAKES[mistake].empty(config)
    expected = [performed(reference, step) for step in steps(operations)]
    assert [performed(handmade, step) for step in steps(operations)] == expected and handmade.state() == state_of(reference)
    return (expected, state_of(reference)), ([performed(mistaken, step) for step in steps(operations)], mistaken.state())


def s3fifo(capacity: int, small_ratio: float) -> ReplayConfig:
    return ReplayConfig(policy="s3fifo", capacity=capacity, block_size=4, small_ratio=small_ratio, max_freq=3)


def of(policy: str, capacity: int) -> ReplayConfig:
    return ReplayConfig(policy=policy, capacity=capacity, block_size=4)  # type: ignore[arg-type]


def served(rid: int, hash_ids: list[int], finish: bool = True) -> list[tuple[Any, ...]]:
    """A request that arrives, is allocated, computes all its blocks and (unless told) finishes."""
    return [("arrive", rid, hash_ids, 4 * len(hash_ids)), ("allocate", rid), ("compute", rid, len(hash_ids))] + [("finish", rid)] * finish


def test_LIFE_ALLOC_3_a_held_block_is_found_by_no_lookup_even_once_its_request_has_computed_it() -> None:
    """S3FIFO, capacity 3, small_ratio 0.34: small_cap round(1.02) = 1, main_cap 2, ghost_cap 2.
    Requests 1 and 2 of one block each pass through S to G (S3-ADMIT-S-3): G [1, 2] once 3 is in S.
    Request 3 runs, and request 4's block pushes 3, referenced at freq 0, into M (S3-LIFE-1); request
    5's pushes 4 there too: M [3, 4], both referenced, S [5], evictable once 5 finishes. Request 6
    of block 1 fits (1 block <= 3 - 0 held - 2 referenced) and hits 1 in G; M is full of referenced
    entries at freq 0, so its drain evicts nothing and 1 is not admitted: 6 holds it (LIFE-ALLOC-3,
    S3-LIFE-3), and the pool being over, S's 5 goes to G (S3-LIFE-4). Request 6 computes block 1, which
    it holds and does not reference; request 7's lookup of [1] finds nothing: 1 is not resident. The
    mistake finds the held block, computed by its request: k = 1."""
    operations = (served(1, [1]) + served(2, [2]) + served(3, [3], finish=False) + served(4, [4], finish=False) + served(5, [5])
                  + served(6, [1], finish=False) + [("arrive", 7, [1], 4), ("lookup", 7)])
    (expected, state), (mistaken, _) = outcomes("held-block-found", s3fifo(3, 0.34), operations)
    assert (state["main"], state["small"], state["ghost"], state["held"]) == ([[3, 0], [4, 0]], [], [2, 5], 1)
    assert expected[-1] == {"k": 0} and mistaken[-1] == {"k": 1}


def test_LIFE_EVICT_3_a_block_removed_at_a_preemption_is_not_inserted_into_the_ghost() -> None:
    """S3FIFO, capacity 4, small_ratio 0.5: small_cap 2. Request 1 of blocks [1, 2] is allocated (S [1, 2],
    both referenced, neither computed) and preempted before it computes: no request is left to compute
    them, so both are removed (LIFE-PREEMPT-1), out of S and out of the cache, and not into G: they were
    not evicted. The mistake sends them to G as an eviction does: G [1, 2]."""
    operations = [("arrive", 1, [1, 2], 8), ("allocate", 1), ("preempt", 1)]
    (_, state), (_, mistaken) = outcomes("removed-to-ghost", s3fifo(4, 0.5), operations)
    assert (state["small"], state["ghost"]) == ([], []) and (mistaken["small"], mistaken["ghost"]) == ([], [1, 2])


def test_LIFE_FINISH_1_a_finished_request_frees_its_held_blocks() -> None:
    """LRU, capacity 2. Request 1 of block [1] computes it and decodes: 1 resident + 0 held < 2, so its
    block is held (LIFE-DECODE-1, held 1). It finishes: it frees its held block (held 0). Request 2 of
    blocks [2, 3] then finds nothing in use and is allocated (made). The mistake keeps the held block:
    held 1, so 2 is in use, and the 2 blocks of request 2 do not fit in 2 - 1 held - 0 referenced = 1
    slot: refused (LIFE-ALLOC-4)."""
    operations = served(1, [1], finish=False) + [("decode", 1), ("finish", 1), ("arrive", 2, [2, 3], 8), ("allocate", 2)]
    (expected, _), (mistaken, _) = outcomes("finish-keeps-held", of("lru", 2), operations)
    assert expected[3] == mistaken[3] == {"made": True}
    assert expected[-1] == {"made": True} and mistaken[-1] == {"made": False}


def test_LIFE_ALLOC_4_the_fit_counts_a_repeated_block_once() -> None:
    """LRU, capacity 2. Request 1 of block [1] runs (1 referenced). Request 2 of blocks [2, 2]: the blocks
    no other request references, each counted once, are {2}, 1 <= 2 - 0 held - 1 referenced: made. The
    mistake counts both positions, 2 > 1: refused."""
    operations = [("arrive", 1, [1], 4), ("allocate", 1), ("arrive", 2, [2, 2], 8), ("allocate", 2)]
    (expected, state), (mistaken, _) = outcomes("fit-counts-repeats", of("lru", 2), operations)
    assert expected[-1] == {"made": True} and mistaken[-1] == {"made": False}
    assert state["refs"] == [[1, 1], [2, 1]]


def test_LIFE_COMPUTE_1_a_request_computes_only_the_blocks_it_references() -> None:
    """S3FIFO, capacity 4, small_ratio 0.25: small_cap 1. Request 1 of blocks [1, 2] runs alone: 1 goes
    to S, then 2's admission drains S and 1, at freq 0 and not yet referenced (LIFE-ALLOC-2: a request
    references its blocks when its allocation ends), goes to G; request 1 references 2 alone. Request 2
    of block [1] hits 1 in G and admits it to M, and references it. Request 1 computes its blocks 1 and
    2: 2 becomes computed, and 1, which it does not reference, is request 2's to compute and stays
    pending, so request 3's lookup of [1] finds nothing. The mistake computes 1 too, and request 3 hits it."""
    operations = [("arrive", 1, [1, 2], 8), ("allocate", 1), ("arrive", 2, [1], 4), ("allocate", 2), ("compute", 1, 2),
                  ("arrive", 3, [1], 4), ("lookup", 3)]
    (expected, state), (mistaken, mistaken_state) = outcomes("computes-unreferenced", s3fifo(4, 0.25), operations)
    assert (state["main"], state["small"], state["pending"]) == ([[1, 0]], [[2, 0]], [1]) and mistaken_state["pending"] == []
    assert expected[-1] == {"k": 0} and mistaken[-1] == {"k": 1}


def test_S3_LIFE_1_s_drain_admits_a_referenced_entry_at_freq_0_to_main() -> None:
    """S3FIFO, capacity 4, small_ratio 0.5: small_cap 2, main_cap 2. Requests 1 and 2 of one block each
    run: S [1, 2], both referenced at freq 0. Request 3 of block [3] fits (1 <= 4 - 2) and its admission
    drains S: 1, referenced at freq 0, goes to M with freq 0, where S3-ADMIT-S-3 would send it to G, and
    3 is admitted: M [1], S [2, 3]; request 4's lookup of [3], once 3 computes it, finds it. The mistake
    keeps 1 and 2 in S, so no entry can leave S and 3 is held: its lookup finds nothing."""
    operations = ([("arrive", 1, [1], 4), ("allocate", 1), ("arrive", 2, [2], 4), ("allocate", 2)] + served(3, [3], finish=False)
                  + [("arrive", 4, [3], 4), ("lookup", 4)])
    (expected, state), (mistaken, mistaken_state) = outcomes("referenced-kept-in-small", s3fifo(4, 0.5), operations)
    assert (state["main"], state["small"], state["held"]) == ([[1, 0]], [[2, 0], [3, 0]], 0)
    assert (mistaken_state["main"], mistaken_state["small"], mistaken_state["held"]) == ([], [[1, 0], [2, 0]], 1)
    assert expected[-1] == {"k": 1} and mistaken[-1] == {"k": 0}


def test_S3_LIFE_2_m_s_drain_spends_the_chance_of_a_referenced_entry_at_freq_1() -> None:
    """S3FIFO, capacity 4, small_ratio 0.5: small_cap 2, main_cap 2. Request 1 of [1] runs; request 2 of
    [1, 2] hits 1 in S (freq 1, S3-ACCESS-1) and admits 2: S [(1, 1), (2, 0)]. Request 3's block drains
    S: 1 at freq 1 goes to M with its freq (S3-ADMIT-S-2); request 4's drains S again: 2, referenced
    at freq 0, goes to M (S3-LIFE-1): M [(1, 1), (2, 0)], S [3, 4]. Request 2 finishes: 2 is evictable.
    Request 5's block drains S: 3, referenced, goes to M, whose drain finds 1 at its head, referenced
    at freq 1: it spends its chance and is requeued at freq 0 (S3-ADMIT-M-2, whether referenced or
    not); 2, evictable at freq 0, goes to G (S3-ADMIT-M-3): M [(1, 0), (3, 0)]. The mistake passes over
    1 with its freq: M [(1, 1), (3, 0)]."""
    operations = (served(1, [1], finish=False) + served(2, [1, 2], finish=False) + served(3, [3], finish=False)
                  + served(4, [4], finish=False) + [("finish", 2), ("arrive", 5, [5], 4), ("allocate", 5)])
    (_, state), (_, mistaken) = outcomes("in-use-skips-its-chance", s3fifo(4, 0.5), operations)
    assert (state["main"], state["small"], state["ghost"]) == ([[1, 0], [3, 0]], [[4, 0], [5, 0]], [2])
    assert (mistaken["main"], mistaken["ghost"]) == ([[1, 1], [3, 0]], [2])


def test_FIFO_LIFE_1_a_referenced_head_is_passed_over_where_it_stands() -> None:
    """FIFO, capacity 3. Request 1 of [1] runs; requests 2 and 3 of [2] and [3] are served: the queue
    [1, 2, 3], 1 referenced. Request 4's block evicts the evictable hash nearest the head, 2, passing
    over 1 where it stands: [1, 3, 4]. Once every request has finished, request 5's block evicts the
    head, 1: [3, 4, 5], and request 6's lookup of [1] finds nothing. The mistake moves 1 to the tail as
    it passes over it: [3, 1, 4]; then 5 evicts 3, and 6 hits 1."""
    operations = (served(1, [1], finish=False) + served(2, [2]) + served(3, [3]) + served(4, [4], finish=False))
    (_, state), (_, mistaken_state) = outcomes("fifo-in-use-requeued", of("fifo", 3), operations)
    assert state["main"] == [[1, 0], [3, 0], [4, 0]] and mistaken_state["main"] == [[3, 0], [1, 0], [4, 0]]
    operations += [("finish", 4), ("finish", 1)] + served(5, [5]) + [("arrive", 6, [1], 4), ("lookup", 6)]
    (expected, _), (mistaken, _) = outcomes("fifo-in-use-requeued", of("fifo", 3), operations)
    assert expected[-1] == {"k": 0} and mistaken[-1] == {"k": 1}


def test_LIFE_DECODE_1_decode_frees_an_evictable_block_when_the_pool_is_full() -> None:
    """LRU, capacity 2. Request 1 of [1] is served (1 evictable); request 2 of [2] runs and computes it:
    the pool is full (2 resident, 0 held), but 1 is evictable, so decoding frees its slot (LRU-LIFE-2)
    and holds the new block: made, queue [2], held 1. The mistake refuses it because the pool is full."""
    operations = served(1, [1]) + served(2, [2], finish=False) + [("decode", 2)]
    (expected, state), (mistaken, mistaken_state) = outcomes("decode-refused-when-full", of("lru", 2), operations)
    assert expected[-1] == {"made": True} and (state["main"], state["held"]) == ([[2, 0]], 1)
    assert mistaken[-1] == {"made": False} and (mistaken_state["main"], mistaken_state["held"]) == ([[1, 0], [2, 0]], 0)


def test_LIFE_HIT_2_recomputed_tokens_are_never_below_0() -> None:
    """LRU, capacity 4, block_size 4. Request 1 of [1, 2] (8 tokens) is allocated (k = 0: hit tokens 0,
    LIFE-HIT-1) and preempted before it computes: c = 0, and its blocks, computed by no one, are removed.
    Request 2 of [1, 2] is served: both computed. Request 1 resumes: its lookup finds k = 2, and its
    recomputed tokens are max(0, min(0 x 4, 8) - min(2 x 4, 8)) = max(0, -8) = 0. The mistake gives -8."""
    operations = [("arrive", 1, [1, 2], 8), ("allocate", 1), ("preempt", 1)] + served(2, [1, 2]) + [
        ("allocate", 1), ("compute", 1, 2), ("finish", 1)]
    (expected, _), (mistaken, _) = outcomes("recomputed-below-zero", of("lru", 4), operations)
    assert expected[-1] == {"hit_tokens": 0, "recomputed_tokens": 0} and mistaken[-1] == {"hit_tokens": 0, "recomputed_tokens": -8}


def test_each_handmade_lifecycle_mistake_is_named_breaks_a_lifecycle_clause_and_is_an_adapter_at_both_levels() -> None:
    """Ten mistakes, none a gallery mutant's (conformance/galleries/lifecycle_mutants.py), each with its
    clause of spec/lifecycle.md, and each behind the in-process adapter interface at both levels
    (PROTO-35): ``python:tests/handmade/lifecycle_mistakes.py:NAME`` and ``NAME_results``."""
    lifecycle_text = (CORPUS.parent / "lifecycle.md").read_text()
    assert len(MISTAKES) == 10 and not set(MISTAKES) & set(GALLERY)
    assert all(mistake.name == name and mistake.mistake and f"**{mistake.breaks}**" in lifecycle_text for name, mistake in MISTAKES.items())
    for name in MISTAKES:
        state, results = getattr(lifecycle_mistakes, name.replace("-", "_"))(), getattr(lifecycle_mistakes, name.replace("-", "_") + "_results")()
        assert (state.level, results.level, state.lifecycle, results.lifecycle) == ("state", "results", True, True)
