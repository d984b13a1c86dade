"""spec/findings.md: each decision on what seed 000 leaves open, checked as the spec states it."""

import math
from collections import OrderedDict

import pytest
from typeguard import suppress_type_checks

from kvspec.reference import S3FIFO, ConfigError, ReplayConfig, TraceError, make_policy, replay, replay_request
from kvspec.reference.s3fifo import Caps, access
from kvspec.reference.trace import parse_line


@pytest.mark.parametrize("capacity", [1, 2, 3, 4, 5])
def test_F1_small_cap_0_is_refused_for_every_capacity_from_1_to_5_at_ratio_0_1(capacity: int) -> None:
    """F-1, S3-CONF-5: round(c * 0.1) is 0 for c <= 5 (0.5 ties to even 0)."""
    with pytest.raises(ConfigError) as caught:
        S3FIFO.empty(capacity, 0.1, 3)
    assert caught.value.clause == "S3-CONF-5"
    assert f"round({capacity} * 0.1) = 0" in str(caught.value)


def test_F1_capacity_6_is_the_smallest_that_runs_at_ratio_0_1() -> None:
    """F-1: round(6 * 0.1) = round(0.6000000000000001) = 1."""
    assert S3FIFO.empty(6, 0.1, 3).caps == Caps(small_cap=1, main_cap=5, ghost_cap=5, max_freq=3)


@pytest.mark.parametrize("capacity", [1, 10, 4096])
def test_F1_small_ratio_0_is_refused_at_every_capacity(capacity: int) -> None:
    """F-1, S3-CONF-5."""
    with pytest.raises(ConfigError, match="S3-CONF-5"):
        S3FIFO.empty(capacity, 0.0, 3)


@pytest.mark.parametrize(("capacity", "ratio"), [(1, 1.0), (10, 1.0), (4096, 1.0), (1, 0.9)])
def test_F2_main_cap_0_is_refused(capacity: int, ratio: float) -> None:
    """F-2, S3-CONF-5: round(capacity * ratio) == capacity leaves main_cap (and ghost_cap) 0."""
    with pytest.raises(ConfigError, match="S3-CONF-5"):
        S3FIFO.empty(capacity, ratio, 3)


def test_F2_small_ratio_1_is_refused_up_to_2_53_and_accepted_where_the_product_rounds_below_capacity() -> None:
    """F-2, S3-CONF-2, S3-CONF-5: capacity × 1.0 is capacity while capacity is a double; 2^53 + 1
    is not one, the product rounds to 2^53, and main_cap is 1 (the Go example asked)."""
    with pytest.raises(ConfigError, match="S3-CONF-5"):
        S3FIFO.empty(2**53, 1.0, 3)
    assert S3FIFO.empty(2**53 + 1, 1.0, 3).caps == Caps(small_cap=2**53, main_cap=1, ghost_cap=1, max_freq=3)


def test_F3_max_freq_0_runs_and_blocks_reach_main_only_through_the_ghost() -> None:
    """F-3, S3-CONF-6: capacity 10, small_ratio 0.2 (small_cap 2, main_cap 8), max_freq 0.
    Access 1, 1, 2, 3: the second access of 1 leaves its freq at 0, so 3 pushes 1 from S to G,
    not to M. Access 1 again: a ghost hit, into M with freq 0. S = [2, 3], M = [1], G = []."""
    cache = S3FIFO.empty(10, 0.2, 0)
    for h in [1, 1, 2, 3]:
        cache.access(h)
    assert (cache.small, cache.main, cache.ghost) == (OrderedDict({2: 0, 3: 0}), OrderedDict(), OrderedDict({1: True}))
    cache.access(1)
    assert (cache.small, cache.main, cache.ghost) == (OrderedDict({2: 0, 3: 0}), OrderedDict({1: 0}), OrderedDict())


def test_F3_a_negative_max_freq_is_refused() -> None:
    """F-3, S3-CONF-6."""
    with pytest.raises(ConfigError, match="S3-CONF-6"):
        S3FIFO.empty(10, 0.1, -1)


@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_F4_capacity_0_is_refused_for_every_policy(policy: str) -> None:
    """F-4, REPLAY-CONF-1."""
    with pytest.raises(ConfigError, match="REPLAY-CONF-1"):
        make_policy(ReplayConfig(policy=policy, capacity=0))  # type: ignore[arg-type]


def test_F5_a_repeated_hash_is_one_access_per_position() -> None:
    """F-5, REPLAY-TRACE-4, REPLAY-PREFIX-3: S3FIFO capacity 20, small_ratio 0.5 (small_cap 10).
    Request [4, 4]: the scan sees an empty cache, k = 0, 0 tokens; the first access admits 4
    with freq 0, the second finds it in S: freq 1. Request [4, 4] again: k = 2, both blocks."""
    cache = S3FIFO.empty(20, 0.5, 3)
    assert replay_request(cache, [4, 4], 8, 4) == 0
    assert cache.small == OrderedDict({4: 1})
    assert replay_request(cache, [4, 4], 8, 4) == 8
    assert cache.small == OrderedDict({4: 3})


@pytest.mark.parametrize(("input_length", "blocks"), [(2049, 4), (1536, 4), (1, 2)])
def test_F6_an_input_length_that_does_not_fit_its_blocks_is_refused(input_length: int, blocks: int) -> None:
    """F-6, REPLAY-TRACE-3."""
    record = parse_line("t", 1, f'{{"timestamp":0,"input_length":{input_length},"output_length":0,"hash_ids":{list(range(blocks))}}}'.encode())
    with pytest.raises(TraceError) as caught:
        replay([(1, record)], ReplayConfig(policy="lru", capacity=8, block_size=512), path="t")
    assert (caught.value.field, caught.value.clause) == ("input_length", "REPLAY-TRACE-3")


def test_F7_an_empty_hash_ids_is_refused() -> None:
    """F-7, REPLAY-TRACE-2."""
    with pytest.raises(TraceError) as caught:
        parse_line("t", 1, b'{"timestamp":0,"input_length":0,"output_length":0,"hash_ids":[]}')
    assert caught.value.clause == "REPLAY-TRACE-2"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"timestamp":-1,"input_length":5,"output_length":0,"hash_ids":[1]}', "timestamp"),
        (b'{"timestamp":0,"input_length":5,"output_length":-1,"hash_ids":[1]}', "output_length"),
        (b'{"timestamp":0,"input_length":5.0,"output_length":0,"hash_ids":[1]}', "input_length"),
        (b'{"timestamp":0,"input_length":"5","output_length":0,"hash_ids":[1]}', "input_length"),
    ],
)
def test_F8_negative_and_non_integer_trace_values_are_refused(raw: bytes, field: str) -> None:
    """F-8, REPLAY-TRACE-2."""
    with pytest.raises(TraceError) as caught:
        parse_line("t", 1, raw)
    assert (caught.value.field, caught.value.clause) == (field, "REPLAY-TRACE-2")


@pytest.mark.parametrize(("ratio", "clause"), [(math.nan, "S3-CONF-1"), (math.inf, "S3-CONF-1"), (-0.1, "S3-CONF-1"), (1.5, "S3-CONF-1")])
def test_F8_impossible_config_values_are_refused(ratio: float, clause: str) -> None:
    """F-8, S3-CONF-1: NaN, infinity and ratios outside [0, 1]."""
    with pytest.raises(ConfigError) as caught:
        S3FIFO.empty(100, ratio, 3)
    assert caught.value.clause == clause


def test_F8_a_config_value_of_the_wrong_type_is_refused() -> None:
    """F-8, S3-CONF-1, S3-CONF-6: no coercion of "0.1", 1 or 3.0."""
    with suppress_type_checks():
        for ratio, max_freq, clause in [("0.1", 3, "S3-CONF-1"), (1, 3, "S3-CONF-1"), (0.1, 3.0, "S3-CONF-6"), (0.1, True, "S3-CONF-6")]:
            with pytest.raises(ConfigError) as caught:
                S3FIFO.empty(100, ratio, max_freq)  # type: ignore[arg-type]
            assert caught.value.clause == clause


@pytest.mark.parametrize(("hash_id", "accepted"), [("-7", True), ("9223372036854775807", True), ('"7"', False), ("7.0", False), ("true", False)])
def test_F9_hash_ids_are_signed_64_bit_integers(hash_id: str, accepted: bool) -> None:
    """F-9, REPLAY-TRACE-2."""
    raw = f'{{"timestamp":0,"input_length":5,"output_length":0,"hash_ids":[{hash_id}]}}'.encode()
    if accepted:
        assert parse_line("t", 1, raw).hash_ids == [int(hash_id)]
    else:
        with pytest.raises(TraceError, match=r"field hash_ids\[0\]: REPLAY-TRACE-2"):
            parse_line("t", 1, raw)


def test_F10_no_access_from_a_valid_state_reinserts_a_ghost() -> None:
    """F-10, S3-GHOST-1: a hash reaches G only from S or M, and a hash in G is in neither, so
    insert_to_ghost never meets h already in G. Checked on every insertion of a long random-ish
    run: at each call, the hash being inserted is not in G."""
    import kvspec.reference.s3fifo as s3fifo

    seen_in_ghost = []
    original = s3fifo.insert_to_ghost

    def watching(cache: S3FIFO, h: int) -> None:
        seen_in_ghost.append(h in cache.ghost)
        original(cache, h)

    cache = S3FIFO.empty(12, 0.25, 2)
    s3fifo.insert_to_ghost = watching  # type: ignore[assignment]
    try:
        for step in range(1000):
            cache.access((step * 7919) % 41 if step % 3 else (step * 31) % 13)
    finally:
        s3fifo.insert_to_ghost = original
    assert len(seen_in_ghost) > 100
    assert not any(seen_in_ghost)


def test_F11_a_ghost_hit_enters_main_with_freq_0() -> None:
    """F-11, S3-ACCESS-3: G = [5]; accessing 5 puts it at M's tail with freq 0, not 1."""
    small: dict[int, int] = {}
    main: dict[int, int] = {}
    ghost = {5: True}
    access(S3FIFO(Caps(2, 8, 8, 3), small, main, ghost), 5)
    assert (small, main, ghost) == ({}, {5: 0}, {})


def test_F12_a_hit_does_not_move_the_entry() -> None:
    """F-12, S3-ACCESS-1, S3-ACCESS-2: M = [1, 2, 3]; a hit on 1 leaves it at the head."""
    main = {1: 0, 2: 0, 3: 0}
    small = {4: 0}
    access(S3FIFO(Caps(2, 8, 8, 3), small, main, {}), 1)
    access(S3FIFO(Caps(2, 8, 8, 3), small, main, {}), 4)
    assert list(main.items()) == [(1, 1), (2, 0), (3, 0)]
    assert list(small.items()) == [(4, 1)]


def test_F13_the_prefix_scan_has_no_side_effect() -> None:
    """F-13, REPLAY-PREFIX-3: three resident blocks scanned and then accessed once each: every
    freq rises by exactly one."""
    cache = S3FIFO.empty(20, 0.5, 3)
    replay_request(cache, [1, 2, 3], 12, 4)
    replay_request(cache, [1, 2, 3], 12, 4)
    assert cache.small == OrderedDict({1: 1, 2: 1, 3: 1})
