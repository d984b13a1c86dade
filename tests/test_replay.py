"""spec/replay.md: configuration, queues, the prefix scan, hit tokens, accesses and the result.

Expected values are worked out by hand in the comments, from the clauses they cite.
"""

import math
from collections import OrderedDict

import icontract
import pytest
from typeguard import suppress_type_checks

from kvspec.reference import (
    FIFO,
    LRU,
    POLICIES,
    S3FIFO,
    Caps,
    ConfigError,
    ReplayConfig,
    RequestResult,
    TraceRecord,
    make_policy,
    replay,
    replay_request,
)
from kvspec.reference.queues import requeue
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks


def records(*requests: tuple[list[int], int]) -> list[tuple[int, TraceRecord]]:
    return [
        (number, TraceRecord(timestamp=0, input_length=length, output_length=0, hash_ids=hashes))
        for number, (hashes, length) in enumerate(requests, start=1)
    ]


# Block size 4. A: [1, 2, 3] with 12 tokens. B: [1, 2, 9, 3] with 16. C: [7, 2, 3] with 10.
# D: [1, 2, 9, 3] with 13 (four blocks, the last holding one token).
TRACE = records(([1, 2, 3], 12), ([1, 2, 9, 3], 16), ([7, 2, 3], 10), ([1, 2, 9, 3], 13))


def test_REPLAY_PREFIX_1_and_2_hits_count_from_index_0_and_stop_at_the_first_miss() -> None:
    """REPLAY-PREFIX-1, REPLAY-PREFIX-2, REPLAY-HIT-1 on an LRU cache of 10 blocks (no eviction).

    A: nothing resident, k = 0, 0 tokens. B: 1 and 2 resident, 9 is not, so k = 2 although 3
    is resident after the miss (a set intersection would say 3 blocks): 8 tokens. C: 7 is not
    resident, so k = 0 although 2 and 3 are: 0 tokens. D: all four resident, k = 4, and
    min(4 * 4, 13) = 13 tokens."""
    result = replay(TRACE, ReplayConfig(policy="lru", capacity=10, block_size=4), per_request=True)
    assert result.per_request is not None
    assert [r.hit_tokens for r in result.per_request] == [0, 8, 0, 13]


def test_REPLAY_PREFIX_1_prefix_hit_blocks_on_its_own() -> None:
    """REPLAY-PREFIX-1, REPLAY-PREFIX-2: k for a resident set {1, 2, 3}."""
    resident = {1, 2, 3}.__contains__
    assert prefix_hit_blocks([1, 2, 3], resident) == 3
    assert prefix_hit_blocks([1, 2, 9, 3], resident) == 2
    assert prefix_hit_blocks([9, 1, 2, 3], resident) == 0
    assert prefix_hit_blocks([3, 3, 1], resident) == 3


def test_REPLAY_PREFIX_3_the_scan_sees_the_cache_before_the_request_touches_it() -> None:
    """REPLAY-PREFIX-3, REPLAY-INV-3: after its accesses every block of A is resident, yet A hit
    nothing: the scan ran first. Scanning after the accesses would report 12 tokens."""
    policy = make_policy(ReplayConfig(policy="s3fifo", capacity=20, small_ratio=0.5))
    assert replay_request(policy, [1, 2, 3], 12, 4) == 0
    assert all(policy.is_resident(h) for h in [1, 2, 3])


def test_REPLAY_PREFIX_3_and_REPLAY_POLICY_1_the_scan_changes_no_freq() -> None:
    """REPLAY-PREFIX-3, REPLAY-POLICY-1: S3FIFO, capacity 20, small_ratio 0.5 (small_cap 10).
    [1] admits 1 to S with freq 0. [1] again: the scan finds 1 (k = 1) and the access adds one:
    freq 1. A scan that also counted as an access would leave freq 2."""
    policy = S3FIFO.empty(20, 0.5, 3)
    replay_request(policy, [1], 4, 4)
    assert replay_request(policy, [1], 4, 4) == 4
    assert policy.small == OrderedDict({1: 1})


@pytest.mark.parametrize("policy", POLICIES)
def test_REPLAY_POLICY_1_a_residency_check_changes_nothing(policy: str) -> None:
    """REPLAY-POLICY-1: asking about resident, ghost and unknown hashes leaves the state as it was."""
    cache = make_policy(ReplayConfig(policy=policy, capacity=6))
    for h in [1, 2, 3, 4, 5, 6, 7, 8, 1, 2]:
        cache.access(h)
    before = repr(cache)
    for h in range(12):
        cache.is_resident(h)
    assert repr(cache) == before


def test_REPLAY_HIT_1_clamps_the_last_partial_block() -> None:
    """REPLAY-HIT-1: min(k * block_size, input_length)."""
    assert hit_tokens(4, 512, 1537) == 1537
    assert hit_tokens(3, 512, 1537) == 1536
    assert hit_tokens(0, 512, 1537) == 0
    assert hit_tokens(2, 512, 2048) == 1024


def test_REPLAY_HIT_2_prompt_tokens_are_the_input_length() -> None:
    """REPLAY-HIT-2: 12 + 16 + 10 + 13 = 51 prompt tokens."""
    result = replay(TRACE, ReplayConfig(policy="fifo", capacity=10, block_size=4), per_request=True)
    assert result.per_request is not None
    assert [r.prompt_tokens for r in result.per_request] == [12, 16, 10, 13]
    assert result.total_prompt_tokens == 51


def test_REPLAY_ACCESS_1_every_block_is_accessed_in_order_even_after_the_miss() -> None:
    """REPLAY-ACCESS-1 on LRU, capacity 10: after A the recency queue is [1, 2, 3]; B accesses
    1, 2, 9 and 3 in that order, 3 coming after B's miss on 9: [1, 2, 9, 3]."""
    policy = LRU.empty(10)
    replay_request(policy, [1, 2, 3], 12, 4)
    replay_request(policy, [1, 2, 9, 3], 16, 4)
    assert list(policy.recency) == [1, 2, 9, 3]


def test_REPLAY_ACCESS_1_blocks_after_the_miss_get_their_freq_too() -> None:
    """REPLAY-ACCESS-1 ("freq updated only on prefix hits" is a mistake): S3FIFO, capacity 10,
    small_ratio 0.5 (small_cap 5). [1, 2] puts 1 and 2 in S with freq 0. [9, 2]: k = 0 (9 is
    new); 9 joins S; then 2, after the miss, is accessed: freq 1."""
    policy = S3FIFO.empty(10, 0.5, 3)
    replay_request(policy, [1, 2], 8, 4)
    assert replay_request(policy, [9, 2], 8, 4) == 0
    assert policy.small == OrderedDict({1: 0, 2: 1, 9: 0})


def test_REPLAY_RESULT_1_to_4_the_result_has_the_seed_field_names_and_sums() -> None:
    """REPLAY-RESULT-1 to REPLAY-RESULT-4 on the LRU run of the first test: hits 0 + 8 + 0 + 13
    = 21; prompt 51; blocks 1, 2, 3, 9, 7 are resident at the end: 5."""
    result = replay(TRACE, ReplayConfig(policy="lru", capacity=10, block_size=4), per_request=True)
    dumped = result.model_dump(exclude_none=True)
    assert set(dumped) == {
        "policy", "block_size", "requests", "total_hit_tokens", "total_prompt_tokens",
        "final_cache_blocks", "cache_capacity_blocks", "per_request",
    }
    assert dumped["per_request"][1] == {"hit_tokens": 8, "prompt_tokens": 16}
    assert (result.total_hit_tokens, result.total_prompt_tokens, result.requests) == (21, 51, 4)
    assert (result.final_cache_blocks, result.cache_capacity_blocks) == (5, 10)


def test_REPLAY_RESULT_1_s3fifo_results_carry_its_parameters() -> None:
    """REPLAY-RESULT-1: small_ratio and max_freq for S3FIFO only; per_request only when asked."""
    result = replay(TRACE, ReplayConfig(policy="s3fifo", capacity=10, block_size=4, small_ratio=0.2, max_freq=2))
    assert (result.small_ratio, result.max_freq, result.per_request) == (0.2, 2, None)


def test_REPLAY_1_each_replay_starts_from_an_empty_cache() -> None:
    """REPLAY-1: the same trace replayed twice gives the same result: nothing is carried over."""
    config = ReplayConfig(policy="s3fifo", capacity=10, block_size=4)
    assert replay(TRACE, config, per_request=True) == replay(TRACE, config, per_request=True)


def test_REPLAY_INV_2_s3fifo_may_end_below_capacity() -> None:
    """REPLAY-INV-2, S3-FINAL-1: capacity 10 at small_ratio 0.1: small_cap 1, main_cap 9.
    Three one-block requests [1], [2], [3]: each new block pushes the one before it, freq 0,
    from S to G. At the end S = [3], M = [], G = [1, 2]: 1 block resident, not 10."""
    result = replay(records(([1], 4), ([2], 4), ([3], 4)), ReplayConfig(policy="s3fifo", capacity=10, block_size=4))
    assert result.final_cache_blocks == 1


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("capacity", [0, -1, True, 1.5, 2**63])
def test_REPLAY_CONF_1_capacity_is_an_integer_of_at_least_one(policy: str, capacity: object) -> None:
    """REPLAY-CONF-1, for every policy. typeguard would refuse the float before the reference
    sees it; a caller without typeguard gets the ConfigError checked here."""
    with pytest.raises(ConfigError) as caught, suppress_type_checks():
        make_policy(ReplayConfig(policy=policy, capacity=capacity))  # type: ignore[arg-type]
    assert caught.value.clause == "REPLAY-CONF-1"


@pytest.mark.parametrize("block_size", [0, -512, 512.0, False])
def test_REPLAY_CONF_2_block_size_is_an_integer_of_at_least_one(block_size: object) -> None:
    """REPLAY-CONF-2."""
    with pytest.raises(ConfigError) as caught:
        make_policy(ReplayConfig(policy="lru", capacity=8, block_size=block_size))  # type: ignore[arg-type]
    assert caught.value.clause == "REPLAY-CONF-2"


def test_REPLAY_CONF_3_policy_is_one_of_three_and_others_ignore_s3fifo_knobs() -> None:
    """REPLAY-CONF-3: an unknown policy is refused; LRU and FIFO ignore small_ratio and max_freq."""
    with pytest.raises(ConfigError) as caught:
        make_policy(ReplayConfig(policy="arc", capacity=8))  # type: ignore[arg-type]
    assert caught.value.clause == "REPLAY-CONF-3"
    assert isinstance(make_policy(ReplayConfig(policy="lru", capacity=8, small_ratio=math.nan, max_freq=-1)), LRU)
    assert isinstance(make_policy(ReplayConfig(policy="fifo", capacity=8, small_ratio=7.0)), FIFO)


def test_REPLAY_QUEUE_1_and_2_the_head_is_the_oldest_entry() -> None:
    """REPLAY-QUEUE-1, REPLAY-QUEUE-2: the rules append at the tail and pop the head, with its value,
    alike on the plain dicts CrossHair passes and on the policies' OrderedDicts."""
    for kind in (dict, OrderedDict):
        fifo = FIFO(2, kind())
        for h in (5, 3, 9):
            fifo.access(h)
        assert list(fifo.arrival) == [3, 9]  # 5, the head, popped (FIFO-EVICT-1)
        lru = LRU(2, kind())
        for h in (5, 3, 5, 9):
            lru.access(h)
        assert list(lru.recency) == [5, 9]  # 3, the head once 5 was requeued, popped (LRU-EVICT-1)
        cache = S3FIFO(Caps(small_cap=2, main_cap=2, ghost_cap=2, max_freq=3), kind(), kind(), kind())
        for h in (5, 5, 5, 3, 9, 7):
            cache.access(h)
        assert list(cache.small.items()) == [(9, 0), (7, 0)]  # S's heads 5 and 3 popped, in that order
        assert list(cache.main.items()) == [(5, 2)] and list(cache.ghost) == [3]  # each with its own freq (S3-ADMIT-S-2, S3-ADMIT-S-3)


def test_REPLAY_QUEUE_3_requeue_moves_an_entry_to_the_tail() -> None:
    """REPLAY-QUEUE-3."""
    queue: dict[int, int] = OrderedDict({5: 0, 3: 1, 9: 2})
    requeue(queue, 5, 7)
    assert list(queue.items()) == [(3, 1), (9, 2), (5, 7)]


class BrokenPolicy(LRU):
    """An LRU whose state check fails: the replay's per-request invariant contract must notice."""

    def state_invariants_hold(self) -> bool:
        return False


def test_the_per_request_state_invariants_are_a_contract_of_replay_request() -> None:
    """S3-QUEUE-2, LRU-CAP-1, FIFO-CAP-1 are checked after every request while contracts are on."""
    with pytest.raises(icontract.ViolationError, match="LRU-CAP-1"):
        replay_request(BrokenPolicy.empty(4), [1], 4, 4)


def test_REPLAY_INV_1_hit_tokens_never_exceed_the_prompt() -> None:
    """REPLAY-INV-1: 2**20 blocks of 2**20 tokens hit, yet the prompt has one token: 1."""
    assert hit_tokens(2**20, 2**20, 1) == 1


class Sink:
    """A RequestSink that keeps what it is given; ``skew`` miscounts its hit-token sum."""

    def __init__(self, skew: int = 0) -> None:
        self.lines: list[RequestResult] = []
        self.hit_tokens = self.prompt_tokens = 0
        self.skew = skew

    def add(self, line: RequestResult) -> None:
        self.lines.append(line)
        self.hit_tokens += line.hit_tokens + self.skew
        self.prompt_tokens += line.prompt_tokens


def test_REPLAY_RESULT_2_a_sink_takes_the_lines_one_at_a_time_in_trace_order() -> None:
    """REPLAY-RESULT-2: the lines per_request=True keeps, given to the sink instead, none kept in the result."""
    config = ReplayConfig(policy="lru", capacity=10, block_size=4)
    sink = Sink()
    result = replay(TRACE, config, sink=sink)
    kept = replay(TRACE, config, per_request=True)
    assert result.per_request is None and sink.lines == kept.per_request
    assert result == kept.model_copy(update={"per_request": None})


def test_REPLAY_RESULT_3_the_sums_a_sink_keeps_are_checked_against_the_totals() -> None:
    """REPLAY-RESULT-3, checked as the lines go rather than over a list of them; REPLAY-RESULT-2:
    the lines go to the result or to a sink, not both."""
    config = ReplayConfig(policy="lru", capacity=10, block_size=4)
    with pytest.raises(icontract.ViolationError, match="REPLAY-RESULT-3"):
        replay(TRACE, config, sink=Sink(skew=1))
    with pytest.raises(icontract.ViolationError, match="REPLAY-RESULT-2"):
        replay(TRACE, config, per_request=True, sink=Sink())
