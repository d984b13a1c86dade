"""LRU (spec/lru.md): one test or more for every clause.

Expected values were worked out by hand from the spec; the comments show the recency queue
step by step, head (least recently accessed) first.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import FIFO, LRU, S3FIFO
from kvspec.reference import lru as lru_rules

from support import run, violation

FEW = settings(max_examples=60, deadline=None)


def test_LRU_CAP_1_starts_empty_and_residency_is_queue_membership() -> None:
    """LRU-CAP-1: empty at first; resident iff in the queue; the resident count is its length.

    capacity 2: 1: [1]; 2: [1,2]; 3: [2,3] (1 evicted).
    """
    cache = LRU.empty(2)
    assert list(cache.recency) == [] and cache.resident_count() == 0
    run(cache, [1, 2, 3])
    assert list(cache.recency) == [2, 3]
    assert [cache.is_resident(h) for h in (1, 2, 3, 4)] == [False, True, True, False]
    assert cache.resident_count() == 2


def test_LRU_CAP_1_never_more_than_capacity() -> None:
    """LRU-CAP-1: capacity 3, ten distinct hashes: never more than 3 queued; ends [8,9,10]."""
    cache = LRU.empty(3)
    for h in range(1, 11):
        cache.access(h)
        assert cache.resident_count() <= 3
    assert list(cache.recency) == [8, 9, 10]


def test_LRU_CAP_1_a_queue_above_capacity_is_refused_by_the_contract() -> None:
    """LRU-CAP-1: the access rule's precondition refuses a queue longer than the capacity."""
    with violation("LRU-CAP-1"):
        lru_rules.access(LRU(1, {1: True, 2: True}), 3)
    with violation("LRU-CAP-1"):
        lru_rules.access(LRU(0, {}), 3)


def test_LRU_ACCESS_1_a_hit_moves_the_hash_to_the_tail() -> None:
    """LRU-ACCESS-1: capacity 3: 1, 2, 3: [1,2,3]; 1 (hit): [2,3,1] -- nothing evicted."""
    cache = run(LRU.empty(3), [1, 2, 3])
    cache.access(1)
    assert list(cache.recency) == [2, 3, 1]
    assert cache.resident_count() == 3


def test_LRU_ACCESS_1_a_hit_changes_which_hash_is_evicted_next() -> None:
    """LRU-ACCESS-1, LRU-EVICT-1: capacity 3: [1,2,3]; 1: [2,3,1]; 4: evict 2 (not 1): [3,1,4].
    FIFO on the same trace evicts 1: [2,3,4]."""
    assert list(run(LRU.empty(3), [1, 2, 3, 1, 4]).recency) == [3, 1, 4]
    assert list(run(FIFO.empty(3), [1, 2, 3, 1, 4]).arrival) == [2, 3, 4]


def test_LRU_ACCESS_1_a_hit_of_the_tail_changes_nothing() -> None:
    """LRU-ACCESS-1: [1,2]; 2 (hit, already the tail): [1,2]."""
    cache = run(LRU.empty(2), [1, 2, 2])
    assert list(cache.recency) == [1, 2]


def test_LRU_EVICT_1_a_full_queue_pops_exactly_its_head() -> None:
    """LRU-EVICT-1: capacity 2: [1,2]; 3: pop 1 (one eviction): [2,3]."""
    recency = {1: True, 2: True}
    lru_rules.access(LRU(2, recency), 3)
    assert list(recency) == [2, 3]


def test_LRU_EVICT_1_a_queue_that_is_not_full_evicts_nothing() -> None:
    """LRU-EVICT-1: capacity 3: [1,2]; 3: no eviction: [1,2,3]."""
    recency = {1: True, 2: True}
    lru_rules.access(LRU(3, recency), 3)
    assert list(recency) == [1, 2, 3]


def test_LRU_EVICT_1_a_hit_on_a_full_queue_evicts_nothing() -> None:
    """LRU-EVICT-1: only a non-resident access evicts: capacity 2, [1,2]; 1: [2,1]."""
    recency = {1: True, 2: True}
    lru_rules.access(LRU(2, recency), 1)
    assert list(recency) == [2, 1]


def test_LRU_ADMIT_1_a_missed_hash_is_appended_at_the_tail() -> None:
    """LRU-ADMIT-1: capacity 3: 5: [5]; 6: [5,6]; 7: [5,6,7]; 8: [6,7,8] (8 at the tail)."""
    cache = LRU.empty(3)
    for h, expected in [(5, [5]), (6, [5, 6]), (7, [5, 6, 7]), (8, [6, 7, 8])]:
        cache.access(h)
        assert list(cache.recency) == expected


def test_LRU_ACCESS_1_LRU_and_S3FIFO_differ_on_a_small_trace() -> None:
    """LRU-ACCESS-1 vs S3-ACCESS-1..4 (seed 000: "LRU instead of S3FIFO"): capacity 10, trace 1, 2.

    LRU: [1,2]: 1 is resident. S3FIFO (small 1, main 9): 1: S=[1:0]; 2: pop 1 (freq 0) -> G=[1],
    S=[2:0]: 1 is not resident. LRU holds 2 blocks, S3FIFO 1.
    """
    lru, s3 = run(LRU.empty(10), [1, 2]), run(S3FIFO.empty(10), [1, 2])
    assert lru.is_resident(1) and not s3.is_resident(1)
    assert (lru.resident_count(), s3.resident_count()) == (2, 1)


@FEW
@given(capacity=st.integers(1, 6), trace=st.lists(st.integers(0, 10), max_size=50))
def test_LRU_CAP_1_ACCESS_1_EVICT_1_ADMIT_1_keep_the_most_recent_distinct_hashes(capacity: int, trace: list[int]) -> None:
    """LRU-CAP-1, LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1: for all capacities and traces, after every
    access the queue holds the `capacity` most recently accessed distinct hashes, least recent
    first; it grows by one exactly on a miss that finds it not full, and otherwise keeps its length."""
    cache = LRU.empty(capacity)
    seen: list[int] = []  # every distinct hash, by last access, least recent first
    for h in trace:
        was_resident, before = cache.is_resident(h), cache.resident_count()
        cache.access(h)
        if h in seen:
            seen.remove(h)
        seen.append(h)
        assert list(cache.recency) == seen[-capacity:]
        assert cache.resident_count() == (before if was_resident else min(before + 1, capacity))
        assert all(cache.is_resident(x) == (x in seen[-capacity:]) for x in range(11))


@FEW
@given(capacity=st.integers(1, 6), trace=st.lists(st.integers(0, 10), max_size=30), probe=st.integers(0, 10))
def test_LRU_CAP_1_the_residency_check_changes_nothing(capacity: int, trace: list[int], probe: int) -> None:
    """LRU-CAP-1 (with REPLAY-POLICY-1): checking residency does not reorder the queue."""
    cache = run(LRU.empty(capacity), trace)
    before = list(cache.recency)
    cache.is_resident(probe)
    assert list(cache.recency) == before
