"""What the benefit-policy machine (machine.py) draws: keys and segments from small pools numbered
across BEN-KEY-1's domain, costs (fixed samples that tie, invalid ones, any pair of doubles),
configurations around every edge with now and then a knob from the whole domain (BEN-CONF-8),
and the whole-domain knobs the probes offer one at a time (WIDE_ALONE)."""

from dataclasses import replace
from typing import no_type_check

from hypothesis import strategies as st

from kvspec.conformance.certification.block.machine import same
from kvspec.conformance.certification.block.strategies import now_and_then
from kvspec.conformance.certification.findings.divergence import Knobs
from kvspec.conformance.core.benefit_requests import SEGMENT_SIZES as COMMON_SEGMENT_SIZES
from kvspec.reference.benefit import BenefitConfig, CostSample
from kvspec.reference.validation import INT64_MAX

NAN, INF = float("nan"), float("inf")
SLOTS = st.integers(1, 5)  # the example's five keys, numbered by its number_keys
KEYS = st.builds(lambda machine, slot: machine.numbering(slot), st.runner(), SLOTS)
PINNED = st.frozensets(KEYS, max_size=2)
FIXED_COSTS = [CostSample(100.0, 30.0), CostSample(100.0, 30.0), CostSample(100.0, 30.0), CostSample(60.0, 10.0), CostSample(20.0, 20.0),
               CostSample(10.0, 30.0), CostSample(NAN, 1.0), CostSample(1.0, INF), CostSample(-1.0, 0.0), CostSample(1.5, 1.0)]  # net 0.5: in (0, 1]
WITHOUT_NET_BENEFIT = [CostSample(20.0, 20.0), CostSample(10.0, 30.0)]  # rejected (BEN-ADMIT-2)
# Mostly a few fixed samples, so that scores tie (BEN-VICTIM-2); sometimes any pair of doubles.
# Every strategy is built once: Hypothesis validates each new strategy it draws from, and the
# shrinker replays each example hundreds of times.
EACH_FIXED_COST = [st.just(cost) for cost in FIXED_COSTS]
ANY_COST = st.builds(CostSample, st.floats(0.0, 500.0), st.floats(0.0, 500.0))
COSTS = st.integers(0, len(FIXED_COSTS)).flatmap(lambda i: EACH_FIXED_COST[i] if i < len(FIXED_COSTS) else ANY_COST)
ABOVE_SMALL_INTS = 257  # CPython keeps one object for each int up to 256: above, `is` no longer means ==
# By slot (segment ids are numbered as keys are): shares that are not whole, a size above the
# small ints, and a segment of 0 bytes, which releases nothing.
MACHINE_SEGMENT_SIZES = {**COMMON_SEGMENT_SIZES, 4: 300, 5: 0}
EVERY_BYTE = 10**6  # more than every entry holds: the victims list the whole order (BEN-VICTIM-2)


def wire_int(value: int) -> int:
    """A new int object equal to ``value``, as each integer read from the protocol is."""
    return int(str(value))


SEGMENTS = st.builds(lambda machine, slot: (machine.numbering(slot), wire_int(MACHINE_SEGMENT_SIZES[slot])), st.runner(),
                     st.sampled_from(sorted(MACHINE_SEGMENT_SIZES)))


DISTINCT_SEGMENTS = st.lists(SEGMENTS, unique=True, max_size=3)
FLAWS = st.integers(0, 15)


@no_type_check  # typeguard cannot check Hypothesis's DrawFn
@st.composite
def shared_segments(draw: st.DrawFn) -> list[tuple[int, int]]:
    """Distinct segments of consistent sizes, mostly; now and then a conflicting size, larger or
    smaller, or a repeated id (BEN-ADMIT-1)."""
    shared = draw(DISTINCT_SEGMENTS)
    flaw = draw(FLAWS)
    if shared and flaw == 0:
        shared[-1] = (shared[-1][0], shared[-1][1] + 1)
    if shared and flaw == 1:
        shared.append(shared[0])
    if shared and flaw == 2:
        shared[-1] = (shared[-1][0], abs(shared[-1][1] - 1))
    return shared


# Whole-domain values (BEN-CONF-1 to BEN-CONF-8): the bounds, and what a narrower integer keeps.
WIDE_COUNTS = [INT64_MAX, -1, 2**32, ABOVE_SMALL_INTS]
WIDE_PROBABILITIES = [NAN, INF, 1.5, -0.5, 5e-324]
WIDE_DECAYS = [NAN, 1.0, 0.0, -INF, INF, 1.0 - 2**-53]


USUAL = {  # each knob around its edges
    "probation_byte_budget": st.sampled_from([0, 8, 20, 40, 10**6]) | st.integers(-1, 64),
    "persistence_hit_threshold": st.sampled_from([1, 2, 3]) | st.integers(0, 4),
    "min_reuse_probability": st.sampled_from([0.0, 0.01, 0.5, 1.0]),
    "decay_factor": st.sampled_from([0.5, 0.9, 0.99]),
    "grace_observations": st.sampled_from([0, 1, 3, 32]),
    "ghost_capacity": st.sampled_from([0, 1, 2, 4096]),
    "ghost_max_age_observations": st.sampled_from([0, 2, 5, 1024]),
}
WIDE = {"probation_byte_budget": WIDE_COUNTS, "persistence_hit_threshold": [*WIDE_COUNTS, 2**32 - 1],  # BEN-CONF-2: a 32-bit count
        "min_reuse_probability": WIDE_PROBABILITIES,
        "decay_factor": WIDE_DECAYS, "grace_observations": WIDE_COUNTS, "ghost_capacity": WIDE_COUNTS, "ghost_max_age_observations": WIDE_COUNTS}


def configs(one_in: int = 8) -> st.SearchStrategy[BenefitConfig]:
    """Each knob around its edges, and one draw in ``one_in`` from its whole domain."""
    return st.builds(BenefitConfig, **{knob: now_and_then(usual, WIDE[knob], one_in) for knob, usual in USUAL.items()})


# The default configuration with one knob from its whole domain: a bound misplaced on that knob
# alone decides whether it is refused (BEN-CONF-8).
WIDE_ALONE = [replace(BenefitConfig(), **{knob: value}) for knob, values in WIDE.items() for value in values]


def wide_knobs(config: BenefitConfig) -> Knobs:
    """The knobs of ``config`` that take a whole-domain value (WIDE)."""
    return tuple((knob, getattr(config, knob)) for knob, values in WIDE.items() if any(same(v, getattr(config, knob)) for v in values))
