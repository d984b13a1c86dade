"""S3FIFO (spec/s3fifo.md): one test or more for every clause, and one for every common mistake
of seed 000 that breaks an S3FIFO clause (spec/s3fifo.md section 8).

Every expected value was worked out by hand from the spec on a tiny example; the comments show
the queues step by step as ``S=[hash:freq, ...]`` (head first), ``M=[...]`` and ``G=[...]``.
"""

import inspect
import math
from collections import OrderedDict
from fractions import Fraction

import icontract
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import LRU, S3FIFO, ConfigError, ReplayConfig, TraceRecord, replay, s3fifo
from kvspec.reference.s3fifo import (
    Caps,
    access,
    admit_to_main,
    admit_to_small,
    caps_for,
    insert_to_ghost,
    saturating_increment,
    small_cap_for,
)

from support import run, violation

INT64_MAX = 2**63 - 1
FEW = settings(max_examples=60, deadline=None)


def caps(small_cap: int, main_cap: int, max_freq: int = 3) -> Caps:
    """A valid Caps: ghost_cap = main_cap (S3-CONF-4)."""
    return Caps(small_cap=small_cap, main_cap=main_cap, ghost_cap=main_cap, max_freq=max_freq)


def state(cache: S3FIFO) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
    """(S, M, G), each head first."""
    return list(cache.small.items()), list(cache.main.items()), list(cache.ghost)


def one_request(hash_ids: list[int]) -> TraceRecord:
    """A request of one-token blocks (block_size 1), so hit tokens count hit blocks."""
    return TraceRecord(timestamp=0, input_length=len(hash_ids), output_length=0, hash_ids=hash_ids)


# ---------------------------------------------------------------------------------------------
# 1. Configuration
# ---------------------------------------------------------------------------------------------


def test_S3_CONF_1_small_ratio_defaults_to_0_1() -> None:
    """S3-CONF-1: default small_ratio 0.1, so capacity 4096 gives small_cap round(409.6) = 410."""
    assert inspect.signature(S3FIFO.empty).parameters["small_ratio"].default == 0.1
    assert S3FIFO.empty(4096).caps.small_cap == 410


@pytest.mark.parametrize("ratio", [math.nan, math.inf, -math.inf, -0.1, 1.0000000000000002, 2.0, -1e-300])
def test_S3_CONF_1_small_ratio_outside_0_1_or_not_finite_is_refused(ratio: float) -> None:
    """S3-CONF-1: small_ratio is a finite double in [0, 1]; NaN, infinities and out-of-range refused."""
    with pytest.raises(ConfigError) as refused:
        S3FIFO.empty(100, small_ratio=ratio)
    assert refused.value.clause == "S3-CONF-1"


@FEW
@given(ratio=st.floats(allow_nan=True, allow_infinity=True).filter(lambda r: not 0.0 <= r <= 1.0))
def test_S3_CONF_1_every_ratio_outside_0_1_is_refused(ratio: float) -> None:
    """S3-CONF-1: for all doubles outside [0, 1] (NaN and infinities included) the config is refused."""
    with pytest.raises(ConfigError) as refused:
        caps_for(1000, ratio, 3)
    assert refused.value.clause == "S3-CONF-1"


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        (4096, 410),  # 4096 * 0.1 = 409.6 -> 410 (int() would give 409)
        (15, 2),  # 1.5 is a tie -> the even 2 (int() gives 1)
        (25, 2),  # 2.5 is a tie -> the even 2 (half-up gives 3; the exact rational product would give 3)
        (35, 4),  # 3.5 is a tie -> the even 4 (int() gives 3)
        (45, 4),  # 4.5 is a tie -> the even 4 (half-up gives 5)
        (5, 0),  # 0.5 is a tie -> the even 0 (refused by S3-CONF-5, see below)
        (6, 1),  # 0.6000000000000001 -> 1 (int() gives 0)
    ],
)
def test_S3_CONF_2_small_cap_is_round_half_even_of_the_double_product(capacity: int, expected: int) -> None:
    """S3-CONF-2: small_cap = round(capacity * small_ratio), banker's rounding, not int()."""
    assert small_cap_for(capacity, 0.1) == expected


def test_S3_CONF_2_int_instead_of_round_is_caught_on_the_cache() -> None:
    """S3-CONF-2 (common mistake "int() instead of round()"): the cache is built with 410 / 3686."""
    assert S3FIFO.empty(4096).caps == Caps(small_cap=410, main_cap=3686, ghost_cap=3686, max_freq=3)
    assert S3FIFO.empty(15).caps.small_cap == 2
    assert S3FIFO.empty(25).caps.small_cap == 2
    assert S3FIFO.empty(35).caps.small_cap == 4


def test_S3_CONF_2_the_product_is_the_double_one_not_the_exact_rational_one() -> None:
    """S3-CONF-2: 25 * 0.1 is the double 2.5 (a tie, -> 2), although the double 0.1 is a little more
    than 1/10, so that 25 times it is exactly a little more than 2.5 (which would round to 3)."""
    assert Fraction(25) * Fraction(0.1) > Fraction(5, 2)
    assert 25 * 0.1 == 2.5
    assert small_cap_for(25, 0.1) == 2


def nearest_even(x: Fraction) -> int:
    """Nearest integer to the exact rational x, a tie going to the even integer."""
    n = math.floor(x)
    d = x - n
    if d < Fraction(1, 2):
        return n
    if d > Fraction(1, 2):
        return n + 1
    return n if n % 2 == 0 else n + 1


@FEW
@given(capacity=st.integers(1, INT64_MAX), ratio=st.floats(0.0, 1.0))
def test_S3_CONF_2_for_all_capacities_and_ratios(capacity: int, ratio: float) -> None:
    """S3-CONF-2: for all capacities and ratios, small_cap is Python's round() of the double product,
    which is the nearest integer to that double (tie to even), and so within 0.5 of it."""
    product = capacity * ratio
    result = small_cap_for(capacity, ratio)
    assert result == round(product)
    assert result == nearest_even(Fraction(product))
    assert abs(Fraction(result) - Fraction(product)) <= Fraction(1, 2)


def test_S3_CONF_3_main_cap_is_capacity_minus_small_cap() -> None:
    """S3-CONF-3: 4096 - 410 = 3686; 10 - round(1.0) = 9; 4 - round(4 * 0.25) = 3."""
    assert S3FIFO.empty(4096).caps.main_cap == 3686
    assert S3FIFO.empty(10).caps.main_cap == 9
    assert S3FIFO.empty(4, small_ratio=0.25).caps.main_cap == 3


def valid_or_refused(capacity: int, ratio: float, max_freq: int) -> Caps | None:
    """caps_for, or None after checking that a config the spec refuses is refused by S3-CONF-5."""
    small = round(capacity * ratio)
    if small < 1 or capacity - small < 1:
        with pytest.raises(ConfigError) as refused:
            caps_for(capacity, ratio, max_freq)
        assert refused.value.clause == "S3-CONF-5"
        return None
    return caps_for(capacity, ratio, max_freq)


@FEW
@given(capacity=st.integers(1, 10**9), ratio=st.floats(0.0, 1.0), max_freq=st.integers(0, 10))
def test_S3_CONF_3_for_all_valid_configs(capacity: int, ratio: float, max_freq: int) -> None:
    """S3-CONF-3: for all accepted configs, small_cap + main_cap = capacity."""
    got = valid_or_refused(capacity, ratio, max_freq)
    if got is not None:
        assert got.main_cap == capacity - round(capacity * ratio)
        assert got.small_cap + got.main_cap == capacity


def test_S3_CONF_4_ghost_cap_is_main_cap_not_small_cap() -> None:
    """S3-CONF-4: capacity 4 at 0.25: small_cap 1, main_cap 3, so ghost_cap 3 (not 1)."""
    assert S3FIFO.empty(4, small_ratio=0.25).caps == Caps(small_cap=1, main_cap=3, ghost_cap=3, max_freq=3)
    assert S3FIFO.empty(4096).caps.ghost_cap == 3686


def test_S3_CONF_4_the_ghost_holds_more_than_small_cap_hashes() -> None:
    """S3-CONF-4 (common mistake "ghost_cap = small_cap"): the ghost holds main_cap hashes.

    capacity 4, small_ratio 0.25: small_cap 1, main_cap 3, ghost_cap 3.
      1: S=[1:0]
      2: S full, pop 1 (freq 0) -> G=[1];        S=[2:0]
      3: pop 2 -> G=[1,2];                       S=[3:0]
      4: pop 3 -> G=[1,2,3];                     S=[4:0]
      5: pop 4, G full -> forget 1, G=[2,3,4];   S=[5:0]
    With ghost_cap = small_cap = 1 the ghost would be G=[4] and 2 would be forgotten.
      2: a ghost hit: G=[3,4], M=[2:0]           (with the mistake: a new block, admitted to S)
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 2, 3, 4, 5])
    assert state(cache) == ([(5, 0)], [], [2, 3, 4])
    assert len(cache.ghost) == 3 > cache.caps.small_cap
    cache.access(2)
    assert state(cache) == ([(5, 0)], [(2, 0)], [3, 4])


@pytest.mark.parametrize("capacity", [1, 2, 3, 4, 5])
def test_S3_CONF_5_small_cap_0_is_refused(capacity: int) -> None:
    """S3-CONF-5: at 0.1, capacities 1 to 5 give small_cap round(<= 0.5) = 0: refused."""
    with pytest.raises(ConfigError) as refused:
        S3FIFO.empty(capacity)
    assert refused.value.clause == "S3-CONF-5"


def test_S3_CONF_5_capacity_6_is_the_smallest_accepted_at_0_1() -> None:
    """S3-CONF-5: round(0.6000000000000001) = 1 >= 1 and main_cap 5 >= 1: accepted."""
    assert S3FIFO.empty(6).caps == Caps(small_cap=1, main_cap=5, ghost_cap=5, max_freq=3)


@pytest.mark.parametrize(("capacity", "ratio"), [(1, 0.0), (100, 0.0), (4096, 0.0), (1, 1.0), (100, 1.0), (1, 0.9), (10, 0.96)])
def test_S3_CONF_5_main_cap_0_or_small_cap_0_is_refused(capacity: int, ratio: float) -> None:
    """S3-CONF-5: ratio 0 gives small_cap 0, ratio 1 main_cap 0, round(0.9) = 1 = capacity 1 main_cap 0,
    round(9.6) = 10 = capacity 10 main_cap 0: all refused."""
    with pytest.raises(ConfigError) as refused:
        S3FIFO.empty(capacity, small_ratio=ratio)
    assert refused.value.clause == "S3-CONF-5"


@FEW
@given(capacity=st.integers(1, 50), ratio=st.floats(0.0, 1.0))
def test_S3_CONF_5_for_all_small_configs(capacity: int, ratio: float) -> None:
    """S3-CONF-5: for all configs, refused exactly when small_cap < 1 or main_cap < 1."""
    got = valid_or_refused(capacity, ratio, 3)
    if got is not None:
        assert got.small_cap >= 1 and got.main_cap >= 1


def test_S3_CONF_6_max_freq_defaults_to_3_and_0_is_valid() -> None:
    """S3-CONF-6: default 3; 0 is valid; 2^63 - 1 is valid."""
    assert inspect.signature(S3FIFO.empty).parameters["max_freq"].default == 3
    assert S3FIFO.empty(10).caps.max_freq == 3
    assert S3FIFO.empty(10, max_freq=0).caps.max_freq == 0
    assert S3FIFO.empty(10, max_freq=INT64_MAX).caps.max_freq == INT64_MAX


@pytest.mark.parametrize("max_freq", [-1, -(2**63), True, False])
def test_S3_CONF_6_max_freq_negative_or_not_an_int_is_refused(max_freq: int) -> None:
    """S3-CONF-6: max_freq is an integer (a bool is not) in [0, 2^63 - 1]."""
    with pytest.raises(ConfigError) as refused:
        S3FIFO.empty(10, max_freq=max_freq)
    assert refused.value.clause == "S3-CONF-6"


def test_S3_CONF_6_max_freq_above_2_63_minus_1_is_refused() -> None:
    """S3-CONF-6: max_freq MUST be in [0, 2^63 - 1]; 2^63 is outside."""
    with pytest.raises(ConfigError) as refused:
        S3FIFO.empty(10, max_freq=2**63)
    assert refused.value.clause == "S3-CONF-6"


@FEW
@given(max_freq=st.integers(0, INT64_MAX), bad=st.integers(max_value=-1) | st.integers(min_value=INT64_MAX + 1))
def test_S3_CONF_6_for_all_max_freqs(max_freq: int, bad: int) -> None:
    """S3-CONF-6: every integer in [0, 2^63 - 1] is accepted, every other one refused."""
    assert caps_for(10, 0.1, max_freq).max_freq == max_freq
    with pytest.raises(ConfigError) as refused:
        caps_for(10, 0.1, bad)
    assert refused.value.clause == "S3-CONF-6"


# ---------------------------------------------------------------------------------------------
# 2. State
# ---------------------------------------------------------------------------------------------


def test_S3_QUEUE_1_three_empty_queues_and_the_ghost_holds_hashes_alone() -> None:
    """S3-QUEUE-1: S, M and G start empty; S and M map hash -> freq, G holds hashes with no freq.

    capacity 4 at 0.5: small_cap 2, main_cap 2.
      1: S=[1:0];  1: S=[1:1];  2: S=[1:1,2:0]
      3: S full, pop 1 (freq 1) -> M=[1:1]; S=[2:0,3:0]
      4: pop 2 (freq 0) -> G=[2]; S=[3:0,4:0]
    """
    cache = S3FIFO.empty(4, small_ratio=0.5)
    assert state(cache) == ([], [], [])
    assert cache.resident_count() == 0
    run(cache, [1, 1, 2, 3, 4])
    assert state(cache) == ([(3, 0), (4, 0)], [(1, 1)], [2])
    assert dict(cache.ghost) == {2: True}  # no freq carried into G


def test_S3_QUEUE_2_a_state_with_a_hash_in_two_queues_is_refused_by_the_contract() -> None:
    """S3-QUEUE-2: the access rule's precondition refuses S and M sharing a hash."""
    with violation("S3-QUEUE-2"):
        access(S3FIFO(caps(1, 2), {1: 0}, {1: 0}, {}), 5)
    with violation("S3-QUEUE-2"):
        access(S3FIFO(caps(1, 2), {}, {1: 0}, {1: True}), 5)


def test_S3_QUEUE_3_a_ghost_is_not_resident() -> None:
    """S3-QUEUE-3 (common mistake "ghost counted as resident").

    capacity 4 at 0.25 (small 1, main 3): 1, 2, 3 give S=[3:0], M=[], G=[1,2].
    1 and 2 are in G and so not resident; 3 is.
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 2, 3])
    assert state(cache) == ([(3, 0)], [], [1, 2])
    assert not cache.is_resident(1)
    assert not cache.is_resident(2)
    assert cache.is_resident(3)
    assert not cache.is_resident(99)
    assert s3fifo.is_resident(S3FIFO(caps(1, 2), {3: 0}, {}, {}), 1) is False


def test_S3_QUEUE_3_a_prefix_that_reaches_a_ghost_hits_nothing() -> None:
    """S3-QUEUE-3 through the replay: block_size 1, capacity 4 at 0.25.

    request [1,2,3]: nothing resident, k = 0; after it S=[3:0], G=[1,2].
    request [1,3]:   1 is in G, so not resident: k = 0 (a ghost counted as resident would give 2).
    """
    config = ReplayConfig(policy="s3fifo", capacity=4, block_size=1, small_ratio=0.25)
    result = replay(enumerate([one_request([1, 2, 3]), one_request([1, 3])], 1), config, per_request=True)
    assert result.per_request is not None
    assert [r.hit_tokens for r in result.per_request] == [0, 0]


def test_S3_FREQ_1_a_freq_above_max_freq_is_refused_by_the_contract() -> None:
    """S3-FREQ-1: freqs lie in [0, max_freq]; the rules' preconditions refuse a state outside."""
    with violation("S3-FREQ-1"):
        access(S3FIFO(caps(1, 2, max_freq=3), {1: 4}, {}, {}), 1)
    with violation("S3-FREQ-1"):
        access(S3FIFO(caps(1, 2, max_freq=3), {}, {1: -1}, {}), 1)
    with violation("S3-FREQ-1"):
        admit_to_main(S3FIFO(caps(1, 2, max_freq=3), {}, {}, {}), 9, 4)


@pytest.mark.parametrize("max_freq", [0, 1, 3])
def test_S3_FREQ_1_freqs_stay_in_0_max_freq(max_freq: int) -> None:
    """S3-FREQ-1: capacity 4 at 0.25; 1 accessed 6 times stays at max_freq in S, then in M.

      1 x6: S=[1:min(5, max_freq)]
      2:    pop 1: freq >= 1 -> M=[1:f], else -> G=[1];  S=[2:0]
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25, max_freq=max_freq), [1] * 6)
    assert state(cache) == ([(1, max_freq)], [], [])
    cache.access(2)
    if max_freq >= 1:
        assert state(cache) == ([(2, 0)], [(1, max_freq)], [])
        run(cache, [1] * 5)
        assert cache.main[1] == max_freq
    else:
        assert state(cache) == ([(2, 0)], [], [1])


@pytest.mark.parametrize(("freq", "max_freq", "expected"), [(0, 3, 1), (1, 3, 2), (2, 3, 3), (3, 3, 3), (0, 0, 0), (0, 1, 1), (1, 1, 1)])
def test_S3_FREQ_2_increment_adds_one_and_saturates(freq: int, max_freq: int, expected: int) -> None:
    """S3-FREQ-2: min(freq + 1, max_freq)."""
    assert saturating_increment(freq, max_freq) == expected


@FEW
@given(data=st.data(), max_freq=st.integers(0, INT64_MAX))
def test_S3_FREQ_2_for_all_freqs(data: st.DataObject, max_freq: int) -> None:
    """S3-FREQ-2: for all freq in [0, max_freq], the increment is min(freq + 1, max_freq)."""
    freq = data.draw(st.integers(0, max_freq))
    assert saturating_increment(freq, max_freq) == min(freq + 1, max_freq)


def test_S3_FREQ_2_freq_not_saturated_is_caught() -> None:
    """S3-FREQ-2 (common mistake "freq not saturated"): capacity 10 (small 1, main 9), max_freq 3.

    7 accessed five times: S=[7:0], [7:1], [7:2], [7:3], [7:3] (not 4).
    8: pop 7 (freq 3) -> M=[7:3]; S=[8:0]. Three more hits of 7 in M keep it at 3.
    """
    cache = run(S3FIFO.empty(10), [7] * 5)
    assert state(cache) == ([(7, 3)], [], [])
    run(cache, [8, 7, 7, 7])
    assert state(cache) == ([(8, 0)], [(7, 3)], [])


# ---------------------------------------------------------------------------------------------
# 3. Access
# ---------------------------------------------------------------------------------------------


def test_S3_ACCESS_1_a_hit_in_S_increments_freq_in_place() -> None:
    """S3-ACCESS-1: capacity 4 at 0.5 (small 2, main 2).

      1: S=[1:0];  2: S=[1:0,2:0]
      1: hit in S: S=[1:1,2:0]  -- 1 stays at the head (moving it to the tail would be LRU)
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.5), [1, 2])
    assert state(cache) == ([(1, 0), (2, 0)], [], [])
    cache.access(1)
    assert state(cache) == ([(1, 1), (2, 0)], [], [])


def test_S3_ACCESS_1_the_head_stays_the_next_victim_after_a_hit() -> None:
    """S3-ACCESS-1: from S=[1:1,2:0] (previous test), 3 pops the head 1 (not 2):

      3: pop 1 (freq 1) -> M=[1:1]; S=[2:0,3:0]
    Under LRU-style movement S would be [2:0,1:1] and 2 would go to G.
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.5), [1, 2, 1, 3])
    assert state(cache) == ([(2, 0), (3, 0)], [(1, 1)], [])


def test_S3_ACCESS_2_a_hit_in_M_increments_freq_in_place() -> None:
    """S3-ACCESS-2: capacity 4 at 0.25 (small 1, main 3).

      1: S=[1:0];  1: S=[1:1]
      2: pop 1 (freq 1) -> M=[1:1]; S=[2:0];  2: S=[2:1]
      3: pop 2 (freq 1) -> M=[1:1,2:1]; S=[3:0]
      1: hit in M: M=[1:2,2:1]  -- order unchanged
      1, 1: M=[1:3,2:1] (saturated at 3)
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 1, 2, 2, 3])
    assert state(cache) == ([(3, 0)], [(1, 1), (2, 1)], [])
    cache.access(1)
    assert state(cache) == ([(3, 0)], [(1, 2), (2, 1)], [])
    run(cache, [1, 1])
    assert state(cache) == ([(3, 0)], [(1, 3), (2, 1)], [])


def test_S3_ACCESS_2_at_the_rule_level() -> None:
    """S3-ACCESS-2: S=[5:0], M=[1:0,2:0]; access 1 -> M=[1:1,2:0]; S and G untouched."""
    small, main, ghost = {5: 0}, {1: 0, 2: 0}, {7: True}
    access(S3FIFO(caps(1, 2), small, main, ghost), 1)
    assert (list(small.items()), list(main.items()), list(ghost)) == ([(5, 0)], [(1, 1), (2, 0)], [7])


def test_S3_ACCESS_3_a_ghost_hit_goes_to_M_with_freq_0() -> None:
    """S3-ACCESS-3: capacity 4 at 0.25 (small 1, main 3).

      1, 2, 3: S=[3:0], G=[1,2]
      2: in G: removed from G, admitted to M with freq 0: S=[3:0], M=[2:0], G=[1]
    Not to S (that would be S3-ACCESS-4), and freq 0, not 1 (findings F-11).
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 2, 3])
    assert state(cache) == ([(3, 0)], [], [1, 2])
    cache.access(2)
    assert state(cache) == ([(3, 0)], [(2, 0)], [1])
    assert cache.is_resident(2)


def test_S3_ACCESS_3_a_ghost_hit_into_a_full_M_evicts_one() -> None:
    """S3-ACCESS-3 with S3-ADMIT-M-1..4 at the rule level: S=[], M=[1:0,2:0], G=[9] (main_cap 2).

    access 9: G=[]; M full, head 1 freq 0 -> G=[1]; M=[2:0,9:0].
    """
    small, main, ghost = {}, {1: 0, 2: 0}, {9: True}
    access(S3FIFO(caps(1, 2), small, main, ghost), 9)
    assert (small, list(main.items()), list(ghost)) == ({}, [(2, 0), (9, 0)], [1])


def test_S3_ACCESS_4_a_new_hash_goes_to_the_tail_of_S_with_freq_0() -> None:
    """S3-ACCESS-4: capacity 4 at 0.5 (small 2): 1: S=[1:0]; 2: S=[1:0,2:0]. M and G untouched."""
    cache = S3FIFO.empty(4, small_ratio=0.5)
    cache.access(1)
    assert state(cache) == ([(1, 0)], [], [])
    cache.access(2)
    assert state(cache) == ([(1, 0), (2, 0)], [], [])


def test_S3_ACCESS_1_to_4_LRU_instead_of_S3FIFO_is_caught() -> None:
    """S3-ACCESS-1..4 (common mistake "LRU instead of S3FIFO"): capacity 10, trace 1, 2, 1.

    S3FIFO (small 1, main 9): 1: S=[1:0]; 2: pop 1 (freq 0) -> G=[1], S=[2:0]: 1 is not resident
    before the third access, and the third access is a ghost hit: M=[1:0].
    LRU: [1], [1,2]: 1 is resident, and the third access hits: [2,1].
    Replayed as three one-block requests, S3FIFO hits 0 blocks and LRU 1.
    """
    s3, lru = run(S3FIFO.empty(10), [1, 2]), run(LRU.empty(10), [1, 2])
    assert not s3.is_resident(1) and lru.is_resident(1)
    s3.access(1)
    assert state(s3) == ([(2, 0)], [(1, 0)], [])
    requests = [one_request([1]), one_request([2]), one_request([1])]
    hits = {
        policy: replay(enumerate(requests, 1), ReplayConfig(policy=policy, capacity=10, block_size=1)).total_hit_tokens
        for policy in ("s3fifo", "lru")
    }
    assert hits == {"s3fifo": 0, "lru": 1}


# ---------------------------------------------------------------------------------------------
# 4. Admission to S
# ---------------------------------------------------------------------------------------------


def test_S3_ADMIT_S_1_a_full_S_pops_exactly_its_head() -> None:
    """S3-ADMIT-S-1: small_cap 2. S=[1:0,2:0] (full); admit 3: pop the head 1 only -> G=[1];
    S=[2:0,3:0]. Then S is not full before 4? It is (2 >= 2): pop 2 -> G=[1,2]; S=[3:0,4:0]."""
    small, main, ghost = {1: 0, 2: 0}, {}, {}
    admit_to_small(S3FIFO(caps(2, 2), small, main, ghost), 3)
    assert (list(small.items()), main, list(ghost)) == ([(2, 0), (3, 0)], {}, [1])
    admit_to_small(S3FIFO(caps(2, 2), small, main, ghost), 4)
    assert (list(small.items()), main, list(ghost)) == ([(3, 0), (4, 0)], {}, [1, 2])


def test_S3_ADMIT_S_1_an_S_that_is_not_full_pops_nothing() -> None:
    """S3-ADMIT-S-1: small_cap 3, S=[1:0] -> admit 2: no pop; S=[1:0,2:0], M and G empty."""
    small, main, ghost = {1: 0}, {}, {}
    admit_to_small(S3FIFO(caps(3, 2), small, main, ghost), 2)
    assert (list(small.items()), main, ghost) == ([(1, 0), (2, 0)], {}, {})


def test_S3_ADMIT_S_2_promotion_keeps_the_freq() -> None:
    """S3-ADMIT-S-2 (common mistake "freq reset on S -> M promotion"): capacity 4 at 0.25.

      1, 1, 1: S=[1:2]
      2: pop 1 (freq 2 >= 1) -> M=[1:2] (not [1:0]); S=[2:0]
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 1, 1, 2])
    assert state(cache) == ([(2, 0)], [(1, 2)], [])


def test_S3_ADMIT_S_2_promotion_may_evict_from_M() -> None:
    """S3-ADMIT-S-2: small 1, main 2. S=[1:1], M=[2:0,3:0]; admit 4:

      pop 1 (freq 1) -> admit to M with freq 1: M full, head 2 freq 0 -> G=[2]; M=[3:0,1:1]
      S=[4:0]
    """
    small, main, ghost = {1: 1}, {2: 0, 3: 0}, {}
    admit_to_small(S3FIFO(caps(1, 2), small, main, ghost), 4)
    assert (list(small.items()), list(main.items()), list(ghost)) == ([(4, 0)], [(3, 0), (1, 1)], [2])


def test_S3_ADMIT_S_3_a_cold_entry_goes_to_G_not_M() -> None:
    """S3-ADMIT-S-3: small 1, main 2. S=[1:0]; admit 2: pop 1 (freq 0) -> G=[1]; M stays []."""
    small, main, ghost = {1: 0}, {}, {}
    admit_to_small(S3FIFO(caps(1, 2), small, main, ghost), 2)
    assert (list(small.items()), main, list(ghost)) == ([(2, 0)], {}, [1])


def test_S3_ADMIT_S_3_cold_and_warm_entries_part_ways() -> None:
    """S3-ADMIT-S-2, S3-ADMIT-S-3: capacity 4 at 0.5 (small 2, main 2).

      1: S=[1:0]; 2: S=[1:0,2:0]; 2: S=[1:0,2:1]
      3: pop 1 (freq 0) -> G=[1];  S=[2:1,3:0]
      4: pop 2 (freq 1) -> M=[2:1]; S=[3:0,4:0]
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.5), [1, 2, 2, 3, 4])
    assert state(cache) == ([(3, 0), (4, 0)], [(2, 1)], [1])


def test_S3_ADMIT_S_4_the_new_hash_is_appended_at_the_tail_with_freq_0() -> None:
    """S3-ADMIT-S-4: small 2, main 2. S=[1:3,2:2]; admit 3: pop 1 (freq 3) -> M=[1:3];
    S=[2:2,3:0]: 3 at the tail, with freq 0 (not at the head, not inheriting a freq)."""
    small, main, ghost = {1: 3, 2: 2}, {}, {}
    admit_to_small(S3FIFO(caps(2, 2), small, main, ghost), 3)
    assert (list(small.items()), list(main.items()), ghost) == ([(2, 2), (3, 0)], [(1, 3)], {})


def test_S3_ADMIT_S_4_admitting_a_queued_hash_is_refused_by_the_contract() -> None:
    """S3-ACCESS-4 / S3-ADMIT-S-4: only a new hash is admitted to S; a ghost hash is not new."""
    with violation("S3-ADMIT-S-4"):
        admit_to_small(S3FIFO(caps(1, 2), {}, {}, {7: True}), 7)
    with violation("S3-ADMIT-S-4"):
        admit_to_small(S3FIFO(caps(1, 2), {}, {7: 1}, {}), 7)


# ---------------------------------------------------------------------------------------------
# 5. Admission to M
# ---------------------------------------------------------------------------------------------


def test_S3_ADMIT_M_1_an_M_that_is_not_full_evicts_nothing() -> None:
    """S3-ADMIT-M-1: main_cap 3, M=[1:0,2:0]; admit (9, 1): no eviction; M=[1:0,2:0,9:1], G=[]."""
    small, main, ghost = {}, {1: 0, 2: 0}, {}
    admit_to_main(S3FIFO(caps(1, 3), small, main, ghost), 9, 1)
    assert (list(main.items()), ghost) == ([(1, 0), (2, 0), (9, 1)], {})


def test_S3_ADMIT_M_1_a_full_M_examines_its_head() -> None:
    """S3-ADMIT-M-1: main_cap 2, M=[1:0,2:0]; admit (9, 0): head 1 (freq 0) is evicted (not 2)."""
    small, main, ghost = {}, {1: 0, 2: 0}, {}
    admit_to_main(S3FIFO(caps(1, 2), small, main, ghost), 9, 0)
    assert (list(main.items()), list(ghost)) == ([(2, 0), (9, 0)], [1])


def test_S3_ADMIT_M_2_second_chance_requeues_at_the_tail_with_freq_minus_one() -> None:
    """S3-ADMIT-M-2 (common mistakes "plain FIFO pop on M" and "requeue at the head").

    main_cap 3, M=[1:1,2:0,3:0]; admit (9, 0):
      head 1 freq 1: requeued at the tail with freq 0: M=[2:0,3:0,1:0]
      head 2 freq 0: to G and stop: G=[2]; M=[3:0,1:0]
      append: M=[3:0,1:0,9:0]
    Plain FIFO pop would evict 1: G=[1], M=[2:0,3:0,9:0].
    Requeue at the head would put 1 back at the head with freq 0 and evict it next: same as FIFO.
    """
    small, main, ghost = {}, {1: 1, 2: 0, 3: 0}, {}
    admit_to_main(S3FIFO(caps(1, 3), small, main, ghost), 9, 0)
    assert (list(main.items()), list(ghost)) == ([(3, 0), (1, 0), (9, 0)], [2])


def test_S3_ADMIT_M_2_each_requeue_spends_one_chance() -> None:
    """S3-ADMIT-M-2: freq − 1, not a reset to 0. main_cap 3, M=[1:2,2:1,3:0]; admit (9, 0):
      1 (2) -> tail with 1: M=[2:1,3:0,1:1]
      2 (1) -> tail with 0: M=[3:0,1:1,2:0]
      3 (0) -> G=[3], stop: M=[1:1,2:0]
      append: M=[1:1,2:0,9:0]
    A reset to 0 would leave 1 with freq 0; a head requeue would evict 1 after two passes.
    """
    small, main, ghost = {}, {1: 2, 2: 1, 3: 0}, {}
    admit_to_main(S3FIFO(caps(1, 3), small, main, ghost), 9, 0)
    assert (list(main.items()), list(ghost)) == ([(1, 1), (2, 0), (9, 0)], [3])


def test_S3_ADMIT_M_2_the_loop_ends_when_every_head_is_warm() -> None:
    """S3-ADMIT-M-2: main_cap 2, M=[1:1,2:1]; admit (9, 3):
      1 -> tail with 0: M=[2:1,1:0]; 2 -> tail with 0: M=[1:0,2:0]
      1 (0) -> G=[1]: M=[2:0]; append: M=[2:0,9:3]
    """
    small, main, ghost = {}, {1: 1, 2: 1}, {}
    admit_to_main(S3FIFO(caps(1, 2), small, main, ghost), 9, 3)
    assert (list(main.items()), list(ghost)) == ([(2, 0), (9, 3)], [1])


def test_S3_ADMIT_M_2_second_chance_end_to_end() -> None:
    """S3-ADMIT-M-2 on the public cache: capacity 3 at 0.34 (round(1.02) = 1: small 1, main 2, ghost 2).

      1, 1, 1: S=[1:2]
      2: pop 1 (2) -> M=[1:2];            S=[2:0];  2: S=[2:1]
      3: pop 2 (1) -> M=[1:2,2:1];        S=[3:0]
      4: pop 3 (0) -> G=[3];              S=[4:0];  4: S=[4:1]
      5: pop 4 (1) -> admit (4, 1) to M, which is full:
           1 (2) -> tail with 1: M=[2:1,1:1]
           2 (1) -> tail with 0: M=[1:1,2:0]
           1 (1) -> tail with 0: M=[2:0,1:0]
           2 (0) -> G=[3,2], stop;  M=[1:0,4:1]
         S=[5:0]
    Plain FIFO or a head requeue would evict 1 instead: M=[2:1,4:1], G=[3,1].
    """
    cache = run(S3FIFO.empty(3, small_ratio=0.34), [1, 1, 1, 2, 2, 3, 4, 4, 5])
    assert cache.caps == Caps(small_cap=1, main_cap=2, ghost_cap=2, max_freq=3)
    assert state(cache) == ([(5, 0)], [(1, 0), (4, 1)], [3, 2])


def test_S3_ADMIT_M_3_exactly_one_entry_leaves_M() -> None:
    """S3-ADMIT-M-3: main_cap 2, M=[1:0,2:0]; admit (9, 0): 1 -> G=[1] and stop (2 stays):
    M=[2:0,9:0]."""
    small, main, ghost = {}, {1: 0, 2: 0}, {}
    admit_to_main(S3FIFO(caps(1, 2), small, main, ghost), 9, 0)
    assert (list(main.items()), list(ghost)) == ([(2, 0), (9, 0)], [1])


def test_S3_ADMIT_M_3_with_max_freq_0_M_is_plain_fifo() -> None:
    """S3-ADMIT-M-3, findings F-3: max_freq 0, capacity 3 at 0.34 (small 1, main 2, ghost 2).

      1: S=[1:0];  2: pop 1 -> G=[1], S=[2:0];  3: pop 2 -> G=[1,2], S=[3:0]
      1: ghost hit -> G=[2], M=[1:0];  2: ghost hit -> G=[], M=[1:0,2:0]
      4: pop 3 -> G=[3], S=[4:0]
      3: ghost hit -> G=[], M full: head 1 (0) -> G=[1]; M=[2:0,3:0]
    """
    cache = run(S3FIFO.empty(3, small_ratio=0.34, max_freq=0), [1, 2, 3, 1, 2, 4, 3])
    assert state(cache) == ([(4, 0)], [(2, 0), (3, 0)], [1])


def test_S3_ADMIT_M_4_the_admitted_entry_goes_to_the_tail_with_its_freq() -> None:
    """S3-ADMIT-M-4: main_cap 3, M=[1:0]; admit (9, 2): M=[1:0,9:2]."""
    small, main, ghost = {}, {1: 0}, {}
    admit_to_main(S3FIFO(caps(1, 3), small, main, ghost), 9, 2)
    assert list(main.items()) == [(1, 0), (9, 2)]


def test_S3_ADMIT_M_4_admitting_a_queued_hash_is_refused_by_the_contract() -> None:
    """S3-ADMIT-M-4: h must not already be queued (its precondition names the clause)."""
    with violation("S3-ADMIT-M-4"):
        admit_to_main(S3FIFO(caps(1, 3), {}, {9: 0}, {}), 9, 0)
    with violation("S3-ADMIT-M-4"):
        admit_to_main(S3FIFO(caps(1, 3), {9: 1}, {}, {}), 9, 1)


# ---------------------------------------------------------------------------------------------
# 6. Ghost insertion
# ---------------------------------------------------------------------------------------------


def test_S3_GHOST_1_a_hash_already_in_G_is_moved_to_the_tail_without_evicting() -> None:
    """S3-GHOST-1: ghost_cap 3, G=[1,2,3] (full); insert 2: remove 2, no head pop (the "otherwise"
    branch is not taken), append: G=[1,3,2]. (Unreachable from a valid state, findings F-10.)"""
    ghost = {1: True, 2: True, 3: True}
    insert_to_ghost(S3FIFO(caps(1, 3), {}, {}, ghost), 2)
    assert list(ghost) == [1, 3, 2]


def test_S3_GHOST_2_a_full_G_forgets_its_head() -> None:
    """S3-GHOST-2: ghost_cap 2, G=[1,2]; insert 3: pop 1; G=[2,3]."""
    ghost = {1: True, 2: True}
    insert_to_ghost(S3FIFO(caps(1, 2), {}, {}, ghost), 3)
    assert list(ghost) == [2, 3]


def test_S3_GHOST_2_a_G_that_is_not_full_forgets_nothing() -> None:
    """S3-GHOST-2: ghost_cap 3, G=[1,2]; insert 3: G=[1,2,3]."""
    ghost = {1: True, 2: True}
    insert_to_ghost(S3FIFO(caps(1, 3), {}, {}, ghost), 3)
    assert list(ghost) == [1, 2, 3]


def test_S3_GHOST_3_the_hash_is_appended_at_the_tail() -> None:
    """S3-GHOST-3: G=[] -> insert 5: G=[5]; insert 6: G=[5,6] (6 at the tail, not the head)."""
    ghost: dict[int, bool] = {}
    insert_to_ghost(S3FIFO(caps(1, 3), {}, {}, ghost), 5)
    insert_to_ghost(S3FIFO(caps(1, 3), {}, {}, ghost), 6)
    assert ghost == {5: True, 6: True} and list(ghost) == [5, 6]


def test_S3_GHOST_3_evicted_order_end_to_end() -> None:
    """S3-GHOST-3: capacity 4 at 0.25 (small 1, main 3, ghost 3): 1..5 send 1, 2, 3, 4 to G in
    that order; G keeps the last three, oldest at the head: G=[2,3,4]."""
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 2, 3, 4, 5])
    assert list(cache.ghost) == [2, 3, 4]


def test_S3_GHOST_4_inserting_a_resident_hash_is_refused_by_the_contract() -> None:
    """S3-GHOST-4: only a hash that is not resident goes to G."""
    with violation("S3-GHOST-4"):
        insert_to_ghost(S3FIFO(caps(1, 3), {5: 0}, {}, {}), 5)
    with violation("S3-GHOST-4"):
        insert_to_ghost(S3FIFO(caps(1, 3), {}, {5: 1}, {}), 5)


# ---------------------------------------------------------------------------------------------
# 7. Bounds and final size
# ---------------------------------------------------------------------------------------------


def test_S3_INV_1_to_3_a_state_above_its_caps_is_refused_by_the_contract() -> None:
    """S3-INV-1, S3-INV-2, S3-INV-3: the access rule refuses |S| > small_cap, |M| > main_cap or
    |G| > ghost_cap."""
    with violation("S3-INV-1"):
        access(S3FIFO(caps(1, 2), {1: 0, 2: 0}, {}, {}), 9)  # |S| = 2 > 1
    with violation("S3-INV-2"):
        access(S3FIFO(caps(1, 2), {}, {1: 0, 2: 0, 3: 0}, {}), 9)  # |M| = 3 > 2
    with violation("S3-INV-3"):
        access(S3FIFO(caps(1, 2), {}, {}, {1: True, 2: True, 3: True}), 9)  # |G| = 3 > 2


def test_S3_INV_1_S_never_exceeds_small_cap() -> None:
    """S3-INV-1: capacity 4 at 0.5 (small 2): ten new hashes leave S=[9:0,10:0], never 3 entries."""
    cache = S3FIFO.empty(4, small_ratio=0.5)
    for h in range(1, 11):
        cache.access(h)
        assert len(cache.small) <= 2
    assert list(cache.small) == [9, 10]


def test_S3_INV_2_M_never_exceeds_main_cap() -> None:
    """S3-INV-2: capacity 3 at 0.34 (small 1, main 2). Each hash h in 1..6 accessed twice is
    promoted when the next one arrives: after 1,1,2,2,3,3: M=[1:1,2:1]; 4 pops 3 (1): M full,
    1 -> [2:1,1:0], 2 -> [1:0,2:0], 1 (0) -> G=[1]: M=[2:0,3:1]. M stays at 2 entries."""
    cache = S3FIFO.empty(3, small_ratio=0.34)
    for h in [1, 1, 2, 2, 3, 3, 4]:
        cache.access(h)
        assert len(cache.main) <= 2
    assert state(cache) == ([(4, 0)], [(2, 0), (3, 1)], [1])


def test_S3_INV_3_G_never_exceeds_ghost_cap() -> None:
    """S3-INV-3: capacity 4 at 0.25 (ghost 3): twenty new hashes leave G=[17,18,19]."""
    cache = S3FIFO.empty(4, small_ratio=0.25)
    for h in range(1, 21):
        cache.access(h)
        assert len(cache.ghost) <= 3
    assert state(cache) == ([(20, 0)], [], [17, 18, 19])


def test_S3_FINAL_1_the_ghost_is_not_counted() -> None:
    """S3-FINAL-1 (common mistake "ghost counted in final_cache_blocks"): capacity 4 at 0.25.

    1..5 leave S=[5:0], M=[], G=[2,3,4]: the resident count is 1 (not 4); then 2 (ghost hit)
    leaves S=[5:0], M=[2:0], G=[3,4]: 2 (not 4).
    """
    cache = run(S3FIFO.empty(4, small_ratio=0.25), [1, 2, 3, 4, 5])
    assert cache.resident_count() == 1
    cache.access(2)
    assert cache.resident_count() == 2


def test_S3_FINAL_1_final_cache_blocks_is_S_plus_M() -> None:
    """S3-FINAL-1 through the replay (REPLAY-RESULT-4): one request [1,2,3,4,5], block_size 1,
    capacity 4 at 0.25: S=[5:0], M=[], G=[2,3,4] -> final_cache_blocks 1."""
    config = ReplayConfig(policy="s3fifo", capacity=4, block_size=1, small_ratio=0.25)
    result = replay([(1, one_request([1, 2, 3, 4, 5]))], config)
    assert result.final_cache_blocks == 1
    assert result.cache_capacity_blocks == 4


# ---------------------------------------------------------------------------------------------
# Universal statements over random traces, against a model written from the spec
# ---------------------------------------------------------------------------------------------


class SpecModel:
    """S3-ACCESS-1..4, S3-ADMIT-S-1..4, S3-ADMIT-M-1..4, S3-GHOST-1..3 transcribed onto lists."""

    def __init__(self, capacity: int, ratio: float, max_freq: int) -> None:
        self.small_cap = round(capacity * ratio)  # S3-CONF-2
        self.main_cap = capacity - self.small_cap  # S3-CONF-3
        self.ghost_cap = self.main_cap  # S3-CONF-4
        self.max_freq = max_freq
        self.s: list[list[int]] = []
        self.m: list[list[int]] = []
        self.g: list[int] = []

    def access(self, h: int) -> None:
        for queue in (self.s, self.m):
            for entry in queue:
                if entry[0] == h:
                    entry[1] = min(entry[1] + 1, self.max_freq)
                    return
        if h in self.g:
            self.g.remove(h)
            self.to_main(h, 0)
        else:
            self.to_small(h)

    def to_small(self, h: int) -> None:
        while len(self.s) >= self.small_cap:
            victim, f = self.s.pop(0)
            if f >= 1:
                self.to_main(victim, f)
            else:
                self.to_ghost(victim)
        self.s.append([h, 0])

    def to_main(self, h: int, f: int) -> None:
        while len(self.m) >= self.main_cap:
            victim, vf = self.m.pop(0)
            if vf >= 1:
                self.m.append([victim, vf - 1])
                continue
            self.to_ghost(victim)
            break
        self.m.append([h, f])

    def to_ghost(self, h: int) -> None:
        if h in self.g:
            self.g.remove(h)
        elif len(self.g) >= self.ghost_cap:
            self.g.pop(0)
        self.g.append(h)

    def state(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
        return [(h, f) for h, f in self.s], [(h, f) for h, f in self.m], list(self.g)


configs = st.tuples(
    st.integers(2, 12), st.sampled_from([0.1, 0.2, 0.25, 0.34, 0.5, 0.75]), st.integers(0, 4)
).filter(lambda c: 1 <= round(c[0] * c[1]) <= c[0] - 1)
traces = st.lists(st.integers(0, 14), max_size=60)


@FEW
@given(config=configs, trace=traces)
def test_S3_ACCESS_1_to_4_every_access_matches_the_spec_model(config: tuple[int, float, int], trace: list[int]) -> None:
    """S3-ACCESS-1..4, S3-ADMIT-S-1..4, S3-ADMIT-M-1..4, S3-GHOST-1..3: for all small configs and
    traces, the queues after every access are those of the spec transcribed onto lists."""
    cache, model = S3FIFO.empty(*config), SpecModel(*config)
    for h in trace:
        cache.access(h)
        model.access(h)
        assert state(cache) == model.state()


@FEW
@given(config=configs, trace=traces)
def test_S3_QUEUE_2_S3_FREQ_1_S3_INV_1_to_3_S3_GHOST_4_hold_after_every_access(
    config: tuple[int, float, int], trace: list[int]
) -> None:
    """S3-QUEUE-2, S3-QUEUE-3, S3-FREQ-1, S3-INV-1, S3-INV-2, S3-INV-3, S3-GHOST-4, S3-FINAL-1:
    for all small configs and traces, after every access the queues are disjoint, freqs lie in
    [0, max_freq], each queue within its cap, every hash that entered G was in S or M just before
    and is not resident, residency is S ∪ M, and the resident count is |S| + |M|."""
    cache = S3FIFO.empty(*config)
    c = cache.caps
    for h in trace:
        before = set(cache.small) | set(cache.main)
        old_ghost = set(cache.ghost)
        cache.access(h)
        s, m, g = set(cache.small), set(cache.main), set(cache.ghost)
        assert not (s & m) and not (s & g) and not (m & g)  # S3-QUEUE-2
        assert all(0 <= f <= c.max_freq for f in [*cache.small.values(), *cache.main.values()])  # S3-FREQ-1
        assert len(s) <= c.small_cap and len(m) <= c.main_cap and len(g) <= c.ghost_cap  # S3-INV-1..3
        assert g - old_ghost <= before  # S3-GHOST-4: a new ghost came from S or M
        assert all(not cache.is_resident(x) for x in g)  # S3-GHOST-4, S3-QUEUE-3
        assert all(cache.is_resident(x) == (x in s or x in m) for x in range(15))  # S3-QUEUE-3
        assert cache.resident_count() == len(s) + len(m)  # S3-FINAL-1


@FEW
@given(config=configs, trace=traces, probe=st.integers(0, 14))
def test_S3_QUEUE_3_the_residency_check_changes_nothing(config: tuple[int, float, int], trace: list[int], probe: int) -> None:
    """S3-QUEUE-3 (with REPLAY-POLICY-1): is_resident(h) is h in S or M, and reads only."""
    cache = run(S3FIFO.empty(*config), trace)
    before = state(cache)
    assert cache.is_resident(probe) == (probe in cache.small or probe in cache.main)
    assert state(cache) == before


def test_S3_CONF_4_a_caps_with_ghost_cap_small_cap_is_refused_by_the_contract() -> None:
    """S3-CONF-4: a Caps with ghost_cap = small_cap != main_cap does not pass the rules' guard.
    (The guard is labelled S3-CONF-5 in the reference; it checks S3-CONF-4 too.)"""
    with pytest.raises(icontract.ViolationError, match=r"S3-CONF-\d"):
        access(S3FIFO(Caps(small_cap=1, main_cap=3, ghost_cap=1, max_freq=3), {}, {}, {}), 1)


def test_S3_CONF_5_a_caps_with_small_cap_0_is_refused_by_the_contract() -> None:
    """S3-CONF-5: a Caps built elsewhere with small_cap 0 is refused before the drain of S can spin."""
    with violation("S3-CONF-5"):
        access(S3FIFO(Caps(small_cap=0, main_cap=3, ghost_cap=3, max_freq=3), {}, {}, {}), 1)
    with violation("S3-CONF-5"):
        access(S3FIFO(Caps(small_cap=1, main_cap=0, ghost_cap=0, max_freq=3), {}, {}, {}), 1)


def test_caches_are_independent_ordered_dicts() -> None:
    """S3-QUEUE-1: each cache owns its queues (a shared default would leak state between caches)."""
    a, b = S3FIFO.empty(10), S3FIFO.empty(10)
    a.access(1)
    assert state(b) == ([], [], [])
    assert isinstance(a.small, OrderedDict) and isinstance(a.main, OrderedDict) and isinstance(a.ghost, OrderedDict)
