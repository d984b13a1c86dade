"""spec/lifecycle.md: requests in flight in one pool (reference/lifecycle.py, reference/in_use.py).

Each rule on a small pool built for it, the expected state worked out by hand from the clause; then
random interleavings of every operation on small pools of each policy, every contract on; then the
one-at-a-time limit against the replay on both bundled traces."""

import json
import os
import subprocess
import sys
from collections import OrderedDict

import icontract
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference.errors import KvspecError
from kvspec.reference.in_use import InUseFIFO, InUseLRU, InUseS3FIFO
from kvspec.reference.lifecycle import Pool
from kvspec.reference.s3fifo import Caps


def pool_of(policy: InUseS3FIFO | InUseLRU | InUseFIFO, capacity: int, block_size: int = 4) -> Pool:
    return Pool(policy, capacity, block_size)


def lru(capacity: int, *hashes: int) -> Pool:
    return pool_of(InUseLRU(capacity, OrderedDict((h, True) for h in hashes)), capacity)


def s3fifo(small: dict[int, int], main: dict[int, int], small_cap: int = 2, main_cap: int = 3, ghost: tuple[int, ...] = ()) -> Pool:
    caps = Caps(small_cap, main_cap, main_cap, 3)
    policy = InUseS3FIFO(caps, OrderedDict(small), OrderedDict(main), OrderedDict((h, True) for h in ghost))
    return pool_of(policy, small_cap + main_cap)


def run(pool: Pool, rid: int, hash_ids: list[int], input_length: int | None = None) -> None:
    """A request arrives and is allocated (it runs)."""
    pool.arrive(rid, hash_ids, input_length or 4 * len(hash_ids))
    assert pool.allocate(rid)


def done(pool: Pool, rid: int) -> None:
    pool.compute(rid, len(pool.requests[rid].blocks))
    pool.finish(rid)


# Section 2: a request's life -------------------------------------------------------------------

def test_LIFE_ARRIVE_1_an_arrival_changes_nothing_and_an_id_in_flight_is_refused() -> None:
    pool = lru(3, 1, 2)
    pool.arrive(7, [1, 2], 8)
    assert list(pool.policy.recency) == [1, 2] and not pool.policy.refs and not pool.requests[7].running
    with pytest.raises(KvspecError, match="LIFE-ARRIVE-1: request 7 is in flight already"):
        pool.arrive(7, [3], 4)
    with pytest.raises(KvspecError, match="REPLAY-TRACE-2"):
        pool.arrive(8, [], 4)


def test_LIFE_LOOKUP_1_a_block_not_computed_is_no_hit_for_another_request_nor_LIFE_INV_2() -> None:
    """Request 1 has allocated [5, 6] but computed only 5 (LIFE-COMPUTE-1, a chunk): request 2's lookup of
    [5, 6, 7] stops at 6, which is resident but not computed (LIFE-POOL-3: not usable)."""
    pool = lru(4)
    run(pool, 1, [5, 6])
    pool.arrive(2, [5, 6, 7], 12)
    assert pool.lookup(2) == 0  # nothing computed yet
    pool.compute(1, 1)
    assert pool.lookup(2) == 1
    pool.compute(1, 2)
    assert pool.lookup(2) == 2


def test_LIFE_ALLOC_1_and_LIFE_ALLOC_2_every_block_accessed_then_each_referenced_once() -> None:
    """LRU, capacity 4, holding 1 2: request [2, 3, 3] hits 2 (requeued), admits 3 (not computed),
    then references 2 and 3 once each though it names 3 twice."""
    pool = lru(4, 1, 2)
    run(pool, 1, [2, 3, 3])
    assert list(pool.policy.recency) == [1, 2, 3] and pool.policy.refs == {2: 1, 3: 1}
    assert pool.pending == {3} and pool.requests[1].referenced == [2, 3]


def test_LIFE_ALLOC_2_a_request_may_evict_its_own_earlier_blocks_as_a_replay_does() -> None:
    """LRU of 2 slots: a request of 3 new blocks evicts its own first (it references none while it allocates)."""
    pool = lru(2)
    run(pool, 1, [1, 2, 3])
    assert list(pool.policy.recency) == [2, 3] and pool.policy.refs == {2: 1, 3: 1} and pool.pending == {2, 3}


def test_LIFE_ALLOC_4_a_pool_full_of_blocks_in_use_refuses_an_allocation() -> None:
    """S3FIFO with S of 2 and M of 3, every block in use by request 1: request 2's one new block does
    not fit (5 slots, 5 referenced), so its allocation is refused and changes nothing."""
    pool = s3fifo({8: 0, 9: 0}, {1: 0, 2: 0, 3: 0})
    run(pool, 1, [1, 2, 3, 8, 9])
    pool.arrive(2, [10], 4)
    assert not pool.allocate(2)
    assert list(pool.policy.small.items()) == [(8, 1), (9, 1)] and list(pool.policy.main) == [1, 2, 3] and pool.held == 0


def test_LIFE_ALLOC_3_an_admission_while_blocks_are_held_frees_a_slot() -> None:
    """S3FIFO, S of 2 and M of 2: request 1 [5] decodes one held block, filling the pool of 4 (S 5, M 1 2,
    1 held); request 2's new block 6 joins S (|S| 1 < 2), which puts the pool over: a slot is freed by
    M's drain (S3-LIFE-4), evicting 1 to G."""
    pool = s3fifo({5: 0}, {1: 0, 2: 0}, small_cap=2, main_cap=2)
    run(pool, 1, [5])
    pool.compute(1, 1)
    assert pool.decode(1) and pool.held == 1
    run(pool, 2, [6])
    assert list(pool.policy.small) == [5, 6] and list(pool.policy.main) == [2] and list(pool.policy.ghost) == [1]


def test_S3_LIFE_1_in_a_pool_a_new_block_in_use_leaves_S_for_M() -> None:
    """S of 2: request 1's new blocks 1 and 2 fill S, at freq 0, in use; request 2's block 3 makes S's
    drain pop 1, which may not go to G: it is admitted to M with freq 0."""
    pool = s3fifo({}, {}, small_cap=2, main_cap=3)
    run(pool, 1, [1, 2])
    run(pool, 2, [3])
    assert list(pool.policy.small) == [2, 3] and list(pool.policy.main.items()) == [(1, 0)] and not pool.policy.ghost


def test_LIFE_ALLOC_4_a_refused_allocation_changes_nothing_and_counts_no_hit() -> None:
    """LRU of 3, all in use by request 1: request 2 of one new block is refused, and its later
    allocation, once request 1 has finished, counts the hits of the lookup then (LIFE-HIT-1)."""
    pool = lru(3)
    run(pool, 1, [1, 2, 3])
    pool.arrive(2, [1, 4], 8)
    assert not pool.allocate(2)
    assert list(pool.policy.recency) == [1, 2, 3] and pool.requests[2].hit_tokens is None
    done(pool, 1)
    assert pool.allocate(2) and pool.requests[2].hit_tokens == 4


def test_LIFE_COMPUTE_1_a_step_starts_at_the_first_block_not_computed() -> None:
    pool = lru(4)
    run(pool, 1, [1, 2, 3])
    pool.compute(1, 2)
    assert pool.pending == {3}
    with pytest.raises(KvspecError, match="LIFE-COMPUTE-1: request 1 has computed 2 of its 3 blocks"):
        pool.compute(1, 2)


def test_LIFE_DECODE_1_a_decode_block_is_held_frees_a_slot_and_is_refused_when_none_can_be() -> None:
    """LIFE-POOL-1: LRU of 3 holding 1 2 (evictable); request 3 [3] runs: the pool is full; its first decode block
    frees the slot of 1 (LRU-LIFE-2); its second, that of 2; its third finds only 3, in use: refused."""
    pool = lru(3, 1, 2)
    run(pool, 3, [3])
    pool.compute(3, 1)
    assert pool.decode(3) and list(pool.policy.recency) == [2, 3] and pool.held == 1
    assert pool.decode(3) and list(pool.policy.recency) == [3] and pool.held == 2
    assert not pool.decode(3) and pool.held == 2
    pool.finish(3)
    assert pool.held == 0 and list(pool.policy.recency) == [3] and not pool.policy.refs


def test_LIFE_FINISH_1_references_dropped_blocks_stay_computed_and_evictable() -> None:
    pool = lru(4)
    run(pool, 1, [1, 2])
    run(pool, 2, [1, 3])
    done(pool, 1)
    assert pool.policy.refs == {1: 1, 3: 1} and pool.pending == {3}  # 1 still used by request 2
    done(pool, 2)
    assert not pool.policy.refs and not pool.pending and list(pool.policy.recency) == [2, 1, 3]
    run(pool, 3, [4])
    with pytest.raises(KvspecError, match="LIFE-FINISH-1: request 3 has computed 0 of its 1 blocks"):
        pool.finish(3)


def test_LIFE_PREEMPT_1_and_LIFE_EVICT_3_what_it_did_not_compute_leaves_and_not_into_G() -> None:
    """S3FIFO: request 1 [1, 2, 3] computes 1 and 2 and is preempted: 3 is removed (not in G), 1 and 2 stay
    computed and evictable; resumed, its lookup finds 1 and 2 (its own, computed) and counts no hit
    (LIFE-HIT-1), its recomputed tokens none of those (LIFE-HIT-2)."""
    pool = s3fifo({}, {}, small_cap=3, main_cap=3)
    run(pool, 1, [1, 2, 3], 12)
    assert pool.requests[1].hit_tokens == 0
    pool.compute(1, 2)
    pool.preempt(1)
    assert list(pool.policy.small) == [1, 2] and not pool.policy.ghost and not pool.policy.refs and not pool.pending
    assert pool.lookup(1) == 2 and pool.allocate(1)
    assert pool.requests[1].hit_tokens == 0 and pool.requests[1].recomputed_tokens == 0


def test_LIFE_HIT_2_a_resumed_request_recomputes_what_was_evicted_while_it_waited() -> None:
    """LRU of 3: request 1 [1, 2] computes both and is preempted; request 2 [3, 4] runs (3 takes the free
    slot, 4 evicts the least recent, 1); request 1 resumes, its lookup stopping at 1, which is gone: it
    recomputes the 8 tokens it had computed, and counts no hit."""
    pool = lru(3)
    run(pool, 1, [1, 2], 8)
    pool.compute(1, 2)
    pool.preempt(1)
    run(pool, 2, [3, 4], 8)
    assert list(pool.policy.recency) == [2, 3, 4]
    done(pool, 2)  # (while 3 and 4 are in use, request 1's two blocks do not fit: LIFE-ALLOC-4)
    assert pool.allocate(1)
    assert pool.requests[1].hit_tokens == 0 and pool.requests[1].recomputed_tokens == 8


def test_LIFE_HIT_1_the_hits_are_those_of_the_first_allocation_made() -> None:
    pool = lru(4, 1, 2)
    pool.arrive(1, [1, 2, 3], 10)
    assert pool.allocate(1) and pool.requests[1].hit_tokens == 8


def test_LIFE_ALLOC_4_counts_the_request_s_resident_blocks_too_so_a_victim_is_always_left() -> None:
    """S3FIFO of 3 (S 1, M 2), M's 1 and 2 in use by request 1, S holding 8, G 7: request 2 [7, 8] needs
    two slots (7 and its own 8), and one is left: refused. (Counting only 7, the block not resident, let
    it in; 7, a ghost hit M cannot take, was held, the slot freed for it was 8's, and 8, back as a
    ghost hit, was held too: the pool over, no victim left.)"""
    pool = s3fifo({}, {}, small_cap=1, main_cap=2)
    for rid, hash_ids in enumerate([[1, 1], [2, 2], [7], [8]], start=10):
        run(pool, rid, hash_ids)
        done(pool, rid)
    assert list(pool.policy.small) == [8] and list(pool.policy.main.items()) == [(1, 1), (2, 1)] and list(pool.policy.ghost) == [7]
    run(pool, 1, [1, 2])
    pool.arrive(2, [7, 8], 8)
    assert not pool.allocate(2) and pool.held == 0


def test_LIFE_ALLOC_3_a_block_not_admitted_is_held_once_however_often_it_is_named() -> None:
    """S3FIFO, S 2 and M 2, M all in use: request 2 [7, 7] finds 7 in G; M cannot take it (S3-LIFE-3), so
    it is held; its second 7 leaves it held: one slot, not two."""
    pool = s3fifo({8: 0}, {1: 0, 2: 0}, small_cap=2, main_cap=2, ghost=(7,))
    run(pool, 1, [1, 2])
    run(pool, 2, [7, 7])
    assert pool.held == 1 and not pool.policy.is_resident(7) and not pool.policy.ghost
    assert pool.policy.resident_count() + pool.held <= pool.capacity


def test_LIFE_COMPUTE_1_a_request_does_not_compute_a_block_it_does_not_reference() -> None:
    """S3FIFO, S of 1: request A [1, 2] evicts its own 1 to G when it admits 2; B [1] then admits 1 (a
    ghost hit, to M), computing nothing; A's computing its first block must not make B's 1 usable."""
    pool = s3fifo({}, {}, small_cap=1, main_cap=3)
    run(pool, 1, [1, 2])
    assert pool.requests[1].referenced == [2] and list(pool.policy.ghost) == [1]
    run(pool, 2, [1])
    pool.compute(1, 1)
    pool.arrive(3, [1], 4)
    assert pool.lookup(3) == 0 and 1 in pool.pending


def test_LIFE_PREEMPT_1_a_block_no_request_is_left_to_compute_is_removed() -> None:
    """LRU: A admits 1, B references it too; A is preempted (B still uses 1: it stays), then B: no request
    is left to compute 1, so it is removed, though B did not admit it."""
    pool = lru(4)
    run(pool, 1, [1])
    run(pool, 2, [1, 2])
    pool.preempt(1)
    assert pool.policy.is_resident(1) and 1 in pool.pending
    pool.preempt(2)
    assert not pool.policy.is_resident(1) and not pool.policy.is_resident(2) and not pool.pending


def test_LIFE_DECODE_1_a_refused_decode_changes_nothing_even_under_S3FIFO() -> None:
    """S3FIFO, pool of 3 full of blocks in use at freq 3: a refused decode spends no chance of M's."""
    pool = s3fifo({5: 0}, {1: 2, 2: 2}, small_cap=1, main_cap=2)
    run(pool, 1, [1, 2, 5])
    pool.compute(1, 3)
    before = (list(pool.policy.small.items()), list(pool.policy.main.items()))
    assert not pool.decode(1)
    assert (list(pool.policy.small.items()), list(pool.policy.main.items())) == before and pool.held == 0


def test_LIFE_HIT_2_recomputed_tokens_add_up_over_preemptions_and_are_never_negative() -> None:
    """LRU of 8: request 1 [1, 2] (8 tokens) computes both, is preempted and resumes finding both usable:
    nothing recomputed. Preempted again, it waits while request 2 [3..10], alone, evicts 1 and 2: it
    resumes finding nothing and recomputes its 8 tokens. Preempted a third time, it resumes finding both
    again, which adds 0: 8 in all, never less, and still no hit."""
    pool = lru(8)
    run(pool, 1, [1, 2], 8)
    pool.compute(1, 2)
    pool.preempt(1)
    assert pool.allocate(1) and pool.requests[1].recomputed_tokens == 0
    pool.compute(1, 2)
    pool.preempt(1)
    run(pool, 2, [3, 4, 5, 6, 7, 8, 9, 10])
    assert not pool.policy.is_resident(1) and not pool.policy.is_resident(2)
    done(pool, 2)
    assert pool.allocate(1) and pool.requests[1].recomputed_tokens == 8
    pool.compute(1, 2)
    pool.preempt(1)
    assert pool.allocate(1) and pool.requests[1].recomputed_tokens == 8 and pool.requests[1].hit_tokens == 0


def test_LIFE_HIT_1_a_later_allocation_never_changes_the_hits_and_the_clamp_applies() -> None:
    """LRU of 4 holding 1, 2: request [1, 2] of 6 tokens hits min(2 x 4, 6) = 6; preempted and resumed, still 6."""
    pool = lru(4, 1, 2)
    pool.arrive(1, [1, 2], 6)
    assert pool.allocate(1) and pool.requests[1].hit_tokens == 6
    pool.compute(1, 2)
    pool.preempt(1)
    assert pool.allocate(1) and pool.requests[1].hit_tokens == 6


# Section 3: references and eviction -------------------------------------------------------------

def test_LIFE_EVICT_1_LRU_LIFE_1_the_victim_is_the_evictable_hash_nearest_the_head() -> None:
    """LRU of 3 holding 1 2 3, 1 in use: admitting 4 evicts 2, not the head 1 (LRU-EVICT-1's victim)."""
    policy = InUseLRU(3, OrderedDict({1: True, 2: True, 3: True}), {1: 1})
    policy.access(4)
    assert list(policy.recency) == [1, 3, 4]


def test_LRU_LIFE_1_when_every_hash_is_referenced_nothing_is_evicted_and_LRU_LIFE_2() -> None:
    policy = InUseLRU(2, OrderedDict({1: True, 2: True}), {1: 1, 2: 1})
    policy.access(3)
    assert list(policy.recency) == [1, 2]
    assert not policy.free_slot()
    policy.refs = {2: 1}
    assert policy.free_slot() and list(policy.recency) == [2]


def test_FIFO_LIFE_1_and_FIFO_LIFE_2_the_oldest_evictable_hash() -> None:
    policy = InUseFIFO(3, OrderedDict({1: True, 2: True, 3: True}), {1: 1})
    policy.access(1)  # FIFO-ACCESS-1: a hit changes nothing
    policy.access(4)
    assert list(policy.arrival) == [1, 3, 4]
    policy.refs = {1: 1, 3: 1, 4: 1}
    policy.access(5)
    assert list(policy.arrival) == [1, 3, 4] and not policy.free_slot()
    policy.refs = {1: 1}
    assert policy.free_slot() and list(policy.arrival) == [1, 4]  # FIFO-LIFE-2: the oldest evictable, 3, not the newest


def test_S3_LIFE_1_a_referenced_entry_of_S_at_freq_0_goes_to_M() -> None:
    policy = InUseS3FIFO(Caps(2, 3, 3, 3), OrderedDict({1: 0, 2: 0}), OrderedDict(), OrderedDict(), {1: 1})
    policy.access(3)
    assert list(policy.small) == [2, 3] and list(policy.main.items()) == [(1, 0)] and not policy.ghost


def test_S3_LIFE_2_M_s_drain_passes_over_a_referenced_entry_at_freq_0() -> None:
    """M [1:0 in use, 2:1, 3:0]: 2 spends its chance (to the tail, 0), 1 is passed over, 3 is evicted;
    1 stays at M's head."""
    policy = InUseS3FIFO(Caps(1, 3, 3, 3), OrderedDict({9: 1}), OrderedDict({1: 0, 2: 1, 3: 0}), OrderedDict(), {1: 1})
    policy.access(10)  # S's head 9 (freq 1) is promoted to a full M
    assert list(policy.main.items()) == [(1, 0), (2, 0), (9, 1)] and list(policy.ghost) == [3] and list(policy.small) == [10]


def test_S3_LIFE_2_and_S3_LIFE_3_when_all_of_M_is_in_use_nothing_leaves_and_S_s_evictable_entry_goes_to_G() -> None:
    """M [1:1, 2:0], all in use: the drain spends 1's chance and evicts nothing; S's head 9 (freq 1,
    evictable) is not admitted to M, so it goes to G (S3-LIFE-3), and 10 joins S."""
    policy = InUseS3FIFO(Caps(1, 2, 2, 3), OrderedDict({9: 1}), OrderedDict({1: 1, 2: 0}), OrderedDict(), {1: 1, 2: 1})
    policy.access(10)
    assert list(policy.main.items()) == [(2, 0), (1, 0)] and list(policy.ghost) == [9] and list(policy.small) == [10]


def test_S3_LIFE_3_an_entry_in_use_keeps_its_place_and_the_new_hash_is_not_admitted() -> None:
    policy = InUseS3FIFO(Caps(1, 2, 2, 3), OrderedDict({9: 0}), OrderedDict({1: 0, 2: 0}), OrderedDict({7: True}), {1: 1, 2: 1, 9: 1})
    policy.access(10)
    assert list(policy.small) == [9] and not policy.is_resident(10)
    policy.access(7)  # a ghost hit M does not admit leaves G and is not admitted
    assert not policy.ghost and not policy.is_resident(7)


def test_S3_LIFE_4_a_slot_is_freed_from_M_then_from_S() -> None:
    policy = InUseS3FIFO(Caps(3, 2, 2, 3), OrderedDict({5: 0, 6: 0, 7: 0}), OrderedDict({1: 0, 2: 0}), OrderedDict(), {1: 1})
    assert policy.free_slot() and list(policy.main) == [1] and list(policy.ghost) == [2]
    policy.refs = {1: 1, 5: 1}
    assert policy.free_slot() and list(policy.small) == [5, 7] and list(policy.ghost) == [2, 6]  # the evictable entry nearest S's head
    policy.refs = {1: 1, 5: 1, 7: 1}
    assert not policy.free_slot()


def test_LIFE_EVICT_2_a_slot_for_a_held_block_is_freed_by_the_policy() -> None:
    """S3FIFO: the pool of 4 is full when request 1 decodes; M's drain frees a slot (S3-LIFE-4)."""
    pool = s3fifo({5: 0, 6: 0}, {1: 0, 2: 0}, small_cap=2, main_cap=2)
    run(pool, 1, [5])
    pool.compute(1, 1)
    assert pool.decode(1) and list(pool.policy.main) == [2] and list(pool.policy.ghost) == [1]


# Section 5: invariants, and random interleavings -----------------------------------------------

def test_LIFE_INV_1_and_LIFE_POOL_2_a_count_of_a_block_no_request_names_is_refused() -> None:
    pool = lru(3, 1, 2)
    pool.policy.refs[1] = 1  # LIFE-POOL-2's count, but no running request names 1
    pool.arrive(1, [3], 4)
    with pytest.raises(icontract.ViolationError, match="LIFE-INV-1"):
        pool.allocate(1)


def test_LIFE_INV_1_a_block_not_computed_that_no_request_references_is_refused() -> None:
    """Such a block could be evicted before any request computes it, or be found computed by none:
    every block not computed is referenced by a request that will compute it."""
    pool = lru(3, 1, 2)
    pool.pending.add(2)  # resident, not computed, referenced by no one
    pool.arrive(1, [3], 4)
    with pytest.raises(icontract.ViolationError, match="LIFE-INV-1"):
        pool.allocate(1)


def test_LIFE_ARRIVE_1_an_operation_on_a_request_not_in_its_state_is_refused() -> None:
    pool = lru(3)
    pool.arrive(1, [1], 4)
    with pytest.raises(KvspecError, match="not running"):
        pool.preempt(1)
    assert pool.allocate(1)
    with pytest.raises(KvspecError, match="not waiting"):
        pool.lookup(1)


POLICIES = {
    "s3fifo": lambda capacity: InUseS3FIFO.empty(capacity, 0.25, 2),
    "lru": lambda capacity: InUseLRU.empty(capacity),
    "fifo": lambda capacity: InUseFIFO.empty(capacity),
}


def one_step(pool: Pool, data: st.DataObject, computed: set[int]) -> None:
    """One operation the state allows, on one of four request ids; ``computed`` kept apart from the
    pool: the blocks a running request has computed that it references, while they stay resident."""
    rid = data.draw(st.integers(0, 3))
    request = pool.requests.get(rid)
    if request is None:
        pool.arrive(rid, data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=4)), 4)
    elif not request.running:
        k = pool.lookup(rid)
        assert set(request.blocks[:k]) <= computed  # LIFE-LOOKUP-1, LIFE-INV-2, against the record kept here
        pool.allocate(rid)
    else:
        done = request.computed == len(request.blocks)
        operation = data.draw(st.sampled_from(["decode", "finish", "preempt"] if done else ["compute", "preempt"]))
        if operation == "compute":
            upto = data.draw(st.integers(request.computed + 1, len(request.blocks)))
            computed.update(h for h in request.blocks[request.computed:upto] if h in request.referenced)
            pool.compute(rid, upto)
        else:
            getattr(pool, operation)(rid)
    computed.intersection_update(h for h in computed if pool.policy.is_resident(h))


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=120, deadline=None)
@given(capacity=st.integers(3, 8), data=st.data())
def test_LIFE_INV_1_and_LIFE_EVICT_1_hold_over_every_interleaving(policy: str, capacity: int, data: st.DataObject) -> None:
    """Any order of arrivals, allocations, chunks, decodes, finishes and preemptions the states allow:
    no KvspecError (LIFE-ALLOC-4's victim is always found), the contracts hold after every operation
    (LIFE-INV-1, LIFE-EVICT-1 after every access), and every hit block of every lookup was computed by
    a request that referenced it and has stayed resident since."""
    pool, computed = pool_of(POLICIES[policy](capacity), capacity), set()
    for _ in range(30):
        one_step(pool, data, computed)


# LIFE-LIMIT-1 on the bundled traces ------------------------------------------------------------

LIMIT = r"""
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy
from kvspec.reference.in_use import queues_of
from kvspec.reference.lifecycle import Pool
from kvspec.reference.replay import hit_tokens
from kvspec.reference.request import step

trace, results = sys.argv[1], []
records = [request for _, request in TraceFile(bundled_trace_path(trace)).requests()]
for policy in ("s3fifo", "lru", "fifo"):
    for capacity in (256, 4096, 65536):
        config = ReplayConfig(policy, capacity, 512)
        pool, canonical, differ = Pool.empty(config), make_policy(config), 0
        for rid, record in enumerate(records):
            want = hit_tokens(step(canonical, record.hash_ids, record.input_length), 512, record.input_length)
            pool.arrive(rid, record.hash_ids, record.input_length)
            assert pool.allocate(rid)
            pool.compute(rid, len(record.hash_ids))
            differ += pool.finish(rid).hit_tokens != want or pool.policy.resident_count() != canonical.resident_count()
        results.append([policy, capacity, len(records), differ, queues_of(pool.policy) == queues_of(canonical)])
print(json.dumps(results))
"""


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"])
def test_LIFE_LIMIT_1_one_request_at_a_time_is_the_replay_on_both_traces(trace: str) -> None:
    """Each request alone (arrive, allocate, compute, finish) gives the replay's hit tokens and resident
    count, request by request, and its queues after the last, for each policy at 256, 4,096 and 65,536
    blocks; in a process of its own without contracts, as the full-trace replays run. (The queues after
    every access are compared with the canonical access's by in_use.py's LIFE-LIMIT-1 contract, which
    the tests above run on small pools.)"""
    run_ = subprocess.run([sys.executable, "-c", LIMIT, trace], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run_.returncode == 0, run_.stderr
    results = json.loads(run_.stdout)
    assert [(policy, capacity) for policy, capacity, *_ in results] == [(p, c) for p in ("s3fifo", "lru", "fifo") for c in (256, 4096, 65536)]
    assert all(requests > 3000 and differ == 0 and same_state for _, _, requests, differ, same_state in results), results
