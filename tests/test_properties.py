"""Property tests: the reference against the naive model of tests/naive.py, and the invariants of
spec/replay.md and spec/s3fifo.md, on generated traces (kvspec.conformance.certification.block.strategies).

The reference runs with every contract installed (tests/conftest.py), so each block access costs
a few hundred microseconds; the example counts below keep this file well under a minute.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvspec.conformance.certification.block.strategies import CacheConfig, Trace, cache_configs, conversation_traces, traces
from kvspec.reference import FIFO, LRU, POLICIES, S3FIFO, ConfigError, ReplayConfig, make_policy, replay, replay_request

from naive import NaiveS3FIFO, make_naive, naive_replay, naive_request
from support import reference_state

FEW = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

policies = st.sampled_from(POLICIES)


def config_for(policy: str, cache: CacheConfig, block_size: int) -> ReplayConfig:
    return ReplayConfig(policy=policy, capacity=cache.capacity, block_size=block_size, small_ratio=cache.small_ratio, max_freq=cache.max_freq)



def in_ghost(policy: object, h: int) -> bool:
    return isinstance(policy, S3FIFO) and h in policy.ghost


def resident_set(policy: object) -> set[int]:
    if isinstance(policy, S3FIFO):
        return set(policy.small) | set(policy.main)
    if isinstance(policy, LRU):
        return set(policy.recency)
    assert isinstance(policy, FIFO)
    return set(policy.arrival)


def longest_prefix(hash_ids: list[int], resident: set[int]) -> int:
    k = 0
    while k < len(hash_ids) and hash_ids[k] in resident:
        k += 1
    return k


# -- the reference against the naive model --------------------------------------------------


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_replay_agrees_with_the_naive_model(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-PREFIX-1, REPLAY-PREFIX-2, REPLAY-HIT-1, REPLAY-ACCESS-1, REPLAY-RESULT-4, S3-FINAL-1,
    and the policies' rules: per-request hit tokens and final_cache_blocks equal the naive model's."""
    result = replay(trace.records(), config_for(policy, cache, trace.block_size), per_request=True)
    expected = naive_replay(trace.requests, policy, cache.capacity, trace.block_size, cache.small_ratio, cache.max_freq)
    assert result.per_request is not None
    assert [r.hit_tokens for r in result.per_request] == expected.hit_tokens
    assert [r.prompt_tokens for r in result.per_request] == expected.prompt_tokens
    assert result.final_cache_blocks == expected.final_cache_blocks
    assert result.requests == len(trace.requests)
    assert result.cache_capacity_blocks == cache.capacity


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_queue_contents_agree_with_the_naive_model_after_every_request(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-ACCESS-1, S3-ACCESS-1..4, S3-ADMIT-S-1..4, S3-ADMIT-M-1..4, S3-GHOST-1..3,
    LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1, FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1: after every
    request the queues hold the same hashes in the same order (and, for S3FIFO, the same freqs)."""
    ref = make_policy(config_for(policy, cache, trace.block_size))
    naive = make_naive(policy, cache.capacity, cache.small_ratio, cache.max_freq)
    for hash_ids, input_length in trace.requests:
        hit = replay_request(ref, hash_ids, input_length, trace.block_size)
        assert hit == naive_request(naive, hash_ids, input_length, trace.block_size)
        assert reference_state(ref) == naive.state()
        assert ref.resident_count() == naive.resident_count()
        assert naive.index_is_consistent()


@FEW
@given(trace=traces(), cache=cache_configs())
def test_s3fifo_agrees_with_the_naive_model_after_every_access(trace: Trace, cache: CacheConfig) -> None:
    """S3-ACCESS-1..4, S3-ADMIT-S-1..4, S3-ADMIT-M-1..4, S3-GHOST-1..3, S3-FREQ-2: one block
    access at a time, S, M and G (order and freq) equal the naive model's."""
    ref = S3FIFO.empty(cache.capacity, cache.small_ratio, cache.max_freq)
    naive = NaiveS3FIFO(cache.capacity, cache.small_ratio, cache.max_freq)
    for hash_ids, _ in trace.requests:
        for h in hash_ids:
            assert ref.is_resident(h) == naive.is_resident(h)
            ref.access(h)
            naive.access(h)
            assert reference_state(ref) == naive.state()


# -- the replay's clauses, checked directly -------------------------------------------------


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_hit_is_the_longest_resident_prefix_at_arrival(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-PREFIX-1, REPLAY-PREFIX-2, REPLAY-PREFIX-3, REPLAY-HIT-1, REPLAY-INV-1: against the
    resident set as it was when the request arrived, k is the longest prefix from index 0 (no
    skip-ahead, no set intersection), the hit is min(k * block_size, input_length), and the scan
    itself changes no state."""
    ref = make_policy(config_for(policy, cache, trace.block_size))
    for hash_ids, input_length in trace.requests:
        before = resident_set(ref)
        state_before = reference_state(ref)
        for h in hash_ids:
            ref.is_resident(h)
        assert reference_state(ref) == state_before  # a residency check changes nothing
        k = longest_prefix(hash_ids, before)
        hit = replay_request(ref, hash_ids, input_length, trace.block_size)
        assert hit == min(k * trace.block_size, input_length)
        assert 0 <= hit <= input_length
        if hash_ids[0] not in before:
            assert hit == 0


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_every_block_is_accessed_in_order(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-ACCESS-1: replaying a request leaves the cache exactly as accessing each of its
    blocks in order, hit or miss, does."""
    ref = make_policy(config_for(policy, cache, trace.block_size))
    twin = make_policy(config_for(policy, cache, trace.block_size))
    for hash_ids, input_length in trace.requests:
        replay_request(ref, hash_ids, input_length, trace.block_size)
        for h in hash_ids:
            twin.access(h)
        assert reference_state(ref) == reference_state(twin)
        assert ref.is_resident(hash_ids[-1])  # the last block accessed is resident


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_totals_and_bounds(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-RESULT-3, REPLAY-INV-1, REPLAY-INV-2, REPLAY-HIT-2: per-request sums equal the
    totals, 0 <= hit <= prompt for every request, final_cache_blocks <= capacity."""
    result = replay(trace.records(), config_for(policy, cache, trace.block_size), per_request=True)
    assert result.per_request is not None
    assert sum(r.hit_tokens for r in result.per_request) == result.total_hit_tokens
    assert sum(r.prompt_tokens for r in result.per_request) == result.total_prompt_tokens
    assert [r.prompt_tokens for r in result.per_request] == [length for _, length in trace.requests]
    assert all(0 <= r.hit_tokens <= r.prompt_tokens for r in result.per_request)
    assert 0 <= result.final_cache_blocks <= result.cache_capacity_blocks == cache.capacity


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_a_never_seen_first_block_hits_nothing(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-INV-3: a request whose first hash was never seen before, and is not in the ghost,
    has hit_tokens == 0; neither does one whose first hash is only in the ghost (S3-QUEUE-3)."""
    ref = make_policy(config_for(policy, cache, trace.block_size))
    seen: set[int] = set()
    for hash_ids, input_length in trace.requests:
        first_unseen = hash_ids[0] not in seen and not in_ghost(ref, hash_ids[0])
        first_ghost = in_ghost(ref, hash_ids[0])
        hit = replay_request(ref, hash_ids, input_length, trace.block_size)
        if first_unseen or first_ghost:
            assert hit == 0
        seen.update(hash_ids)


@SOME
@given(policy=policies, trace=traces(), cache=cache_configs())
def test_no_policy_beats_an_unbounded_cache(policy: str, trace: Trace, cache: CacheConfig) -> None:
    """REPLAY-PREFIX-1, REPLAY-HIT-1: a block is resident only if it was accessed before, so no
    request hits more than it would against an unbounded cache (every block ever seen)."""
    result = replay(trace.records(), config_for(policy, cache, trace.block_size), per_request=True)
    assert result.per_request is not None
    seen: set[int] = set()
    for (hash_ids, input_length), line in zip(trace.requests, result.per_request, strict=True):
        assert line.hit_tokens <= min(longest_prefix(hash_ids, seen) * trace.block_size, input_length)
        seen.update(hash_ids)


@SOME
@given(policy=st.sampled_from(["lru", "fifo"]), trace=traces())
def test_lru_and_fifo_with_room_for_every_block_equal_an_unbounded_cache(policy: str, trace: Trace) -> None:
    """LRU-EVICT-1, FIFO-EVICT-1 (nothing is evicted before the queue is full), REPLAY-PREFIX-1,
    REPLAY-HIT-1: with capacity >= the number of distinct blocks, every request hits exactly what
    an unbounded cache gives it."""
    distinct = len({h for hash_ids, _ in trace.requests for h in hash_ids})
    config = ReplayConfig(policy=policy, capacity=distinct, block_size=trace.block_size)
    result = replay(trace.records(), config, per_request=True)
    assert result.per_request is not None
    seen: set[int] = set()
    for (hash_ids, input_length), line in zip(trace.requests, result.per_request, strict=True):
        assert line.hit_tokens == min(longest_prefix(hash_ids, seen) * trace.block_size, input_length)
        seen.update(hash_ids)
    assert result.final_cache_blocks == distinct


@FEW
@given(trace=conversation_traces(), capacity=st.integers(1, 30), extra=st.integers(1, 10))
def test_lru_hits_do_not_fall_as_capacity_grows(trace: Trace, capacity: int, extra: int) -> None:
    """LRU-ACCESS-1, LRU-EVICT-1, REPLAY-PREFIX-1: LRU is a stack policy (a larger LRU cache holds
    a superset of a smaller one's blocks at every moment), so no request hits fewer tokens in a
    larger LRU cache. (FIFO and S3FIFO have no such property, and it is not asserted of them.)"""
    small = replay(trace.records(), ReplayConfig(policy="lru", capacity=capacity, block_size=trace.block_size), per_request=True)
    large = replay(trace.records(), ReplayConfig(policy="lru", capacity=capacity + extra, block_size=trace.block_size), per_request=True)
    assert small.per_request is not None and large.per_request is not None
    for a, b in zip(small.per_request, large.per_request, strict=True):
        assert a.hit_tokens <= b.hit_tokens


@FEW
@given(trace=traces(), capacity=st.integers(1, 30))
def test_lru_repeat_of_a_request_that_fits_hits_its_whole_prompt(trace: Trace, capacity: int) -> None:
    """LRU-ACCESS-1, LRU-ADMIT-1, REPLAY-HIT-1: right after a request whose distinct blocks fit in
    the cache, all its blocks are the most recent ones, so repeating it hits input_length (the
    clamp of a partial last block included)."""
    ref = LRU.empty(capacity)
    for hash_ids, input_length in trace.requests:
        replay_request(ref, hash_ids, input_length, trace.block_size)
        if len(set(hash_ids)) <= capacity:
            assert replay_request(ref, hash_ids, input_length, trace.block_size) == input_length


# -- S3FIFO's state ----------------------------------------------------------------------


@SOME
@given(trace=traces(), cache=cache_configs())
def test_s3fifo_queues_stay_disjoint_bounded_and_saturated(trace: Trace, cache: CacheConfig) -> None:
    """S3-QUEUE-2 (S, M, G pairwise disjoint), S3-INV-1..3 (|S| <= small_cap, |M| <= main_cap,
    |G| <= ghost_cap), S3-FREQ-1 (0 <= freq <= max_freq), S3-QUEUE-3 and S3-FINAL-1 (resident count
    = |S| + |M|, the ghost never counted), after every block access; S3-CONF-2..4 for the caps."""
    ref = S3FIFO.empty(cache.capacity, cache.small_ratio, cache.max_freq)
    small_cap = round(cache.capacity * cache.small_ratio)
    main_cap = cache.capacity - small_cap
    assert (ref.caps.small_cap, ref.caps.main_cap, ref.caps.ghost_cap) == (small_cap, main_cap, main_cap)
    for hash_ids, _ in trace.requests:
        for h in hash_ids:
            ref.access(h)
            s, m, g = set(ref.small), set(ref.main), set(ref.ghost)
            assert not (s & m) and not (s & g) and not (m & g)
            assert len(ref.small) <= small_cap and len(ref.main) <= main_cap and len(ref.ghost) <= main_cap
            assert all(0 <= f <= cache.max_freq for f in [*ref.small.values(), *ref.main.values()])
            assert ref.resident_count() == len(ref.small) + len(ref.main)
            assert all(not ref.is_resident(x) for x in g)
            assert ref.is_resident(h)


@FEW
@given(trace=traces(), cache=cache_configs())
def test_s3fifo_final_cache_blocks_is_small_plus_main(trace: Trace, cache: CacheConfig) -> None:
    """S3-FINAL-1, REPLAY-RESULT-4, REPLAY-INV-2: the replay's final_cache_blocks is |S| + |M|
    of the cache the requests leave behind, never counting G, and at most the capacity."""
    result = replay(trace.records(), config_for("s3fifo", cache, trace.block_size))
    ref = S3FIFO.empty(cache.capacity, cache.small_ratio, cache.max_freq)
    for hash_ids, input_length in trace.requests:
        replay_request(ref, hash_ids, input_length, trace.block_size)
    assert result.final_cache_blocks == len(ref.small) + len(ref.main) <= cache.capacity


# -- hand-made cases the generators might reach only rarely -------------------------------


def test_a_resident_suffix_behind_a_miss_does_not_count() -> None:
    """REPLAY-PREFIX-2: no skip-ahead, no set intersection. LRU of 2 after a, b, c holds b and c;
    [a, b, c] hits nothing, and [b, a, c] hits one block."""
    cache = LRU.empty(2)
    for h in (1, 2, 3):
        cache.access(h)
    assert replay_request(cache, [1, 2, 3], 30, 10) == 0
    cache = LRU.empty(2)
    for h in (1, 2, 3):
        cache.access(h)
    assert replay_request(cache, [2, 1, 3], 30, 10) == 10


def test_the_scan_sees_the_cache_as_the_request_found_it() -> None:
    """REPLAY-PREFIX-3, REPLAY-TRACE-4: a block repeated inside a request cannot hit on the
    strength of its own earlier occurrence, and a block the request itself admits does not count."""
    for policy in POLICIES:
        cache = make_policy(ReplayConfig(policy=policy, capacity=10, small_ratio=0.5))
        assert replay_request(cache, [7, 7, 7], 3, 1) == 0
        assert replay_request(cache, [7, 7, 7], 3, 1) == 3


def test_the_last_partial_block_is_clamped() -> None:
    """REPLAY-HIT-1: min(k * block_size, input_length), never k * block_size unclamped."""
    for policy in POLICIES:
        cache = make_policy(ReplayConfig(policy=policy, capacity=10, small_ratio=0.5))
        replay_request(cache, [1, 2, 3], 1025, 512)
        assert replay_request(cache, [1, 2, 3], 1025, 512) == 1025


def test_a_ghost_is_not_resident() -> None:
    """S3-QUEUE-3, REPLAY-INV-3, S3-ACCESS-3: a prefix whose first block is in G hits nothing, and
    the access brings it back into M with freq 0."""
    cache = S3FIFO.empty(2, 0.5, 3)  # small_cap 1, main_cap 1, ghost_cap 1
    replay_request(cache, [1], 1, 1)
    replay_request(cache, [2], 1, 1)  # 1 (freq 0) leaves S for G
    assert list(cache.ghost) == [1] and not cache.is_resident(1)
    assert replay_request(cache, [1], 1, 1) == 0
    assert list(cache.main.items()) == [(1, 0)]
    naive = NaiveS3FIFO(2, 0.5, 3)
    for h in (1, 2, 1):
        naive.access(h)
    assert naive.state() == reference_state(cache)


@SOME
@given(capacity=st.integers(1, 60), small_ratio=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]) | st.floats(0.0, 1.0), max_freq=st.integers(0, 4))
def test_s3fifo_refuses_exactly_the_configs_the_naive_model_cannot_run(capacity: int, small_ratio: float, max_freq: int) -> None:
    """S3-CONF-2 (round, not int), S3-CONF-3, S3-CONF-4, S3-CONF-5: the reference refuses a config
    iff round(capacity * small_ratio) or capacity minus it is below 1, and otherwise builds the
    same queue sizes as the naive model."""
    try:
        naive = NaiveS3FIFO(capacity, small_ratio, max_freq)
    except ValueError:
        naive = None
    try:
        ref = S3FIFO.empty(capacity, small_ratio, max_freq)
    except ConfigError as error:
        assert error.clause == "S3-CONF-5"
        assert naive is None
        return
    assert naive is not None
    assert (ref.caps.small_cap, ref.caps.main_cap, ref.caps.ghost_cap, ref.caps.max_freq) == (naive.small_cap, naive.main_cap, naive.ghost_cap, max_freq)
