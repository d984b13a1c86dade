"""FIFO (spec/fifo.md): one test or more for every clause.

Expected values were worked out by hand from the spec; the comments show the arrival queue step
by step, head (admitted first) first.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import FIFO, LRU, S3FIFO
from kvspec.reference import fifo as fifo_rules

from support import run, violation

FEW = settings(max_examples=60, deadline=None)


def test_FIFO_CAP_1_starts_empty_and_residency_is_queue_membership() -> None:
    """FIFO-CAP-1: empty at first; resident iff in the queue; the resident count is its length.

    capacity 2: 1: [1]; 2: [1,2]; 3: [2,3] (1 evicted).
    """
    cache = FIFO.empty(2)
    assert list(cache.arrival) == [] and cache.resident_count() == 0
    run(cache, [1, 2, 3])
    assert list(cache.arrival) == [2, 3]
    assert [cache.is_resident(h) for h in (1, 2, 3, 4)] == [False, True, True, False]
    assert cache.resident_count() == 2


def test_FIFO_CAP_1_never_more_than_capacity() -> None:
    """FIFO-CAP-1: capacity 3, ten distinct hashes: never more than 3 queued; ends [8,9,10]."""
    cache = FIFO.empty(3)
    for h in range(1, 11):
        cache.access(h)
        assert cache.resident_count() <= 3
    assert list(cache.arrival) == [8, 9, 10]


def test_FIFO_CAP_1_a_queue_above_capacity_is_refused_by_the_contract() -> None:
    """FIFO-CAP-1: the access rule's precondition refuses a queue longer than the capacity."""
    with violation("FIFO-CAP-1"):
        fifo_rules.access(FIFO(1, {1: True, 2: True}), 3)
    with violation("FIFO-CAP-1"):
        fifo_rules.access(FIFO(0, {}), 3)


def test_FIFO_ACCESS_1_a_hit_changes_nothing() -> None:
    """FIFO-ACCESS-1: capacity 3: 1, 2, 3: [1,2,3]; 1 (hit): still [1,2,3] (LRU would give [2,3,1])."""
    cache = run(FIFO.empty(3), [1, 2, 3])
    cache.access(1)
    assert list(cache.arrival) == [1, 2, 3]
    assert cache.resident_count() == 3


def test_FIFO_ACCESS_1_a_hit_does_not_save_the_head() -> None:
    """FIFO-ACCESS-1, FIFO-EVICT-1: capacity 3: [1,2,3]; 1 (hit): [1,2,3]; 4: evict 1: [2,3,4].
    LRU on the same trace evicts 2: [3,1,4]."""
    assert list(run(FIFO.empty(3), [1, 2, 3, 1, 4]).arrival) == [2, 3, 4]
    assert list(run(LRU.empty(3), [1, 2, 3, 1, 4]).recency) == [3, 1, 4]


def test_FIFO_ACCESS_1_at_the_rule_level() -> None:
    """FIFO-ACCESS-1: arrival [1,2,3] (capacity 3): access 2 -> [1,2,3]."""
    arrival = {1: True, 2: True, 3: True}
    fifo_rules.access(FIFO(3, arrival), 2)
    assert list(arrival) == [1, 2, 3]


def test_FIFO_EVICT_1_a_full_queue_pops_exactly_its_head() -> None:
    """FIFO-EVICT-1: capacity 2: [1,2]; 3: pop 1 (one eviction): [2,3]."""
    arrival = {1: True, 2: True}
    fifo_rules.access(FIFO(2, arrival), 3)
    assert list(arrival) == [2, 3]


def test_FIFO_EVICT_1_a_queue_that_is_not_full_evicts_nothing() -> None:
    """FIFO-EVICT-1: capacity 3: [1,2]; 3: no eviction: [1,2,3]."""
    arrival = {1: True, 2: True}
    fifo_rules.access(FIFO(3, arrival), 3)
    assert list(arrival) == [1, 2, 3]


def test_FIFO_EVICT_1_a_hit_on_a_full_queue_evicts_nothing() -> None:
    """FIFO-EVICT-1: only a non-resident access evicts: capacity 2, [1,2]; 2: [1,2]."""
    arrival = {1: True, 2: True}
    fifo_rules.access(FIFO(2, arrival), 2)
    assert list(arrival) == [1, 2]


def test_FIFO_ADMIT_1_a_missed_hash_is_appended_at_the_tail() -> None:
    """FIFO-ADMIT-1: capacity 3: 5: [5]; 6: [5,6]; 7: [5,6,7]; 8: [6,7,8] (8 at the tail)."""
    cache = FIFO.empty(3)
    for h, expected in [(5, [5]), (6, [5, 6]), (7, [5, 6, 7]), (8, [6, 7, 8])]:
        cache.access(h)
        assert list(cache.arrival) == expected


def test_FIFO_ACCESS_1_FIFO_and_S3FIFO_differ_on_a_small_trace() -> None:
    """FIFO-ACCESS-1 vs S3-ADMIT-M-2 (seed 000: "plain FIFO pop on M" collapses S3FIFO to FIFO).

    capacity 3, trace 1, 2, 3, 1, 4. FIFO: [1,2,3]; 1 (hit, no change); 4: evict 1: [2,3,4].
    S3FIFO at 0.34 (small 1, main 2): 1: S=[1:0]; 2: 1 -> G=[1], S=[2:0]; 3: 2 -> G=[1,2], S=[3:0];
    1: ghost hit: G=[2], M=[1:0]; 4: 3 -> G=[2,3], S=[4:0]. 1 stays resident under S3FIFO only.
    """
    fifo, s3 = run(FIFO.empty(3), [1, 2, 3, 1, 4]), run(S3FIFO.empty(3, small_ratio=0.34), [1, 2, 3, 1, 4])
    assert not fifo.is_resident(1) and s3.is_resident(1)
    assert (list(s3.small.items()), list(s3.main.items()), list(s3.ghost)) == ([(4, 0)], [(1, 0)], [2, 3])


@FEW
@given(capacity=st.integers(1, 6), trace=st.lists(st.integers(0, 10), max_size=50))
def test_FIFO_CAP_1_ACCESS_1_EVICT_1_ADMIT_1_for_all_traces(capacity: int, trace: list[int]) -> None:
    """FIFO-CAP-1, FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1: for all capacities and traces, after
    every access: a hit leaves the queue exactly as it was; a miss drops the head if and only if
    the queue was full, then appends the hash; the queue never exceeds capacity."""
    cache = FIFO.empty(capacity)
    for h in trace:
        before = list(cache.arrival)
        cache.access(h)
        if h in before:
            expected = before
        else:
            expected = (before[1:] if len(before) >= capacity else before) + [h]
        assert list(cache.arrival) == expected
        assert cache.resident_count() == len(expected) <= capacity
        assert all(cache.is_resident(x) == (x in expected) for x in range(11))


@FEW
@given(capacity=st.integers(1, 6), trace=st.lists(st.integers(0, 10), max_size=30), probe=st.integers(0, 10))
def test_FIFO_CAP_1_the_residency_check_changes_nothing(capacity: int, trace: list[int], probe: int) -> None:
    """FIFO-CAP-1 (with REPLAY-POLICY-1): checking residency does not change the queue."""
    cache = run(FIFO.empty(capacity), trace)
    before = list(cache.arrival)
    cache.is_resident(probe)
    assert list(cache.arrival) == before
