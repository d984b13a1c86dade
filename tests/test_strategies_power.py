"""The suite reaches what real implementations get wrong (issue 10, section 2): hand-made wrong
implementations, each one plausible mistake away from conformance/galleries/mutants.py's CanonicalS3FIFO or
conformance/galleries/benefit_mutants.py's CanonicalBenefit, fail `certify` quick at seed 0; the key-width
and de-duplication ones fail the fixtures at the results level too. And what certify draws (ids,
keys, configurations) and what the corpus holds cover the whole domain (REPLAY-TRACE-2, BEN-KEY-1,
FIX-6, FIX-7)."""

import json
import math
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.inprocess import InProcessAdapter
from kvspec.adapters.interface import AdapterConfig, ConfigRefused
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.certification.block.machine import config_strategy, machine_for, probes
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.core.workloads import Pins, long_queues
from kvspec.conformance.fixtures.runner import read_manifest, verify
from kvspec.conformance.galleries.benefit_mutants import CanonicalBenefit
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims
from kvspec.reference.validation import INT64_MAX, INT64_MIN

from support import Recording, certified_apart

CORPUS = Path(__file__).resolve().parent.parent / "spec" / "fixtures"


def signed(bits: int) -> Callable[[int], int]:
    """What a signed integer of ``bits`` bits keeps of an id."""
    return lambda h: (h + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


def unsigned(bits: int) -> Callable[[int], int]:
    return lambda key: key % 2**bits


def as_double(value: int) -> int:
    """What a double keeps of an integer (JavaScript's Number, a JSON parser into float64)."""
    return int(float(value))


# S3FIFO, LRU and FIFO ---------------------------------------------------------------------------


class NarrowIds(CanonicalS3FIFO):
    """Keeps hash ids in a narrower type than REPLAY-TRACE-2's signed 64 bits."""

    narrow: Callable[[int], int] = staticmethod(signed(32))

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return super().hit_tokens([self.narrow(h) for h in hash_ids], input_length)

    def access(self, hash_ids: list[int]) -> None:
        super().access([self.narrow(h) for h in hash_ids])


class Int32Ids(NarrowIds):
    pass


class Int8Ids(NarrowIds):
    narrow = staticmethod(signed(8))


class DoubleIds(NarrowIds):
    narrow = staticmethod(as_double)


class DeduplicatedRequest(CanonicalS3FIFO):
    """Treats a request as the set of its ids, in order of first appearance (breaks REPLAY-TRACE-4)."""

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return super().hit_tokens(list(dict.fromkeys(hash_ids)), input_length)

    def access(self, hash_ids: list[int]) -> None:
        super().access(list(dict.fromkeys(hash_ids)))


class GhostKeptOnHit(CanonicalS3FIFO):
    """A ghost hit admits the hash to M and leaves it in G too (breaks S3-ACCESS-3)."""

    def s3fifo_access(self, h: int) -> None:
        if h in self.ghost and not self.is_resident(h):
            self.admit_to_main(h, 0)
            return
        super().s3fifo_access(h)


class RefusesLargest(CanonicalS3FIFO):
    """Checks a knob with ``< 2**63 - 1``: refuses the largest value the spec accepts."""

    knob = "capacity"

    def configure(self, config: AdapterConfig) -> None:
        if getattr(config, self.knob) == INT64_MAX:
            raise ConfigRefused(f"{self.knob} too large")
        super().configure(config)


class RefusesLargestCapacity(RefusesLargest):
    pass


class RefusesLargestBlockSize(RefusesLargest):
    knob = "block_size"


class RefusesLargestMaxFreq(RefusesLargest):
    knob = "max_freq"


class AcceptsBlockSizeZero(CanonicalS3FIFO):
    """Checks block_size >= 0 (breaks REPLAY-CONF-2): every hit is then 0 tokens."""

    def configure(self, config: AdapterConfig) -> None:
        super().configure(replace(config, block_size=config.block_size or 1))
        self.config = config


class Lenient(CanonicalS3FIFO):
    """Replaces an S3FIFO knob the spec refuses by a usable one instead of refusing it."""

    def configure(self, config: AdapterConfig) -> None:
        super().configure(self.lenient(config) if config.policy == "s3fifo" else config)

    def lenient(self, config: AdapterConfig) -> AdapterConfig:
        return replace(config, max_freq=max(config.max_freq, 0))


class AcceptsNegativeMaxFreq(Lenient):
    """max_freq -1 taken as 0 (breaks S3-CONF-6)."""


class AcceptsNaNRatio(Lenient):
    """A NaN small_ratio taken as the default 0.1 (breaks S3-CONF-1)."""

    def lenient(self, config: AdapterConfig) -> AdapterConfig:
        return replace(config, small_ratio=0.1) if math.isnan(config.small_ratio) else config


class AcceptsInfiniteRatio(Lenient):
    """An infinite small_ratio taken as the default 0.1 (breaks S3-CONF-1)."""

    def lenient(self, config: AdapterConfig) -> AdapterConfig:
        return replace(config, small_ratio=0.1) if math.isinf(config.small_ratio) else config


class AcceptsRatioAboveOne(Lenient):
    """A small_ratio above 1 taken as the default 0.1 (breaks S3-CONF-1)."""

    def lenient(self, config: AdapterConfig) -> AdapterConfig:
        return replace(config, small_ratio=0.1) if config.small_ratio > 1.0 else config


class LengthByIdentity(CanonicalS3FIFO):
    """Compares a queue's length with its bound by identity (``is``): CPython keeps one object for
    each int up to 256 only, so past 256 blocks the queue never evicts (breaks LRU-CAP-1,
    FIFO-CAP-1, S3-INV-1 to S3-INV-3)."""

    def lru_access(self, h: int) -> None:
        if h in self.main:
            self.main.move_to_end(h)
            return
        if len(self.main) is self.configured().capacity:
            self.main.popitem(last=False)
        self.main[h] = 0

    def fifo_access(self, h: int) -> None:
        if h not in self.main:
            if len(self.main) is self.configured().capacity:
                self.main.popitem(last=False)
            self.main[h] = 0


class SmallLengthByIdentity(CanonicalS3FIFO):
    def admit_to_small(self, h: int) -> None:
        while len(self.small) is self.small_cap:
            victim, freq = self.small.popitem(last=False)
            self.admit_to_main(victim, freq) if freq >= 1 else self.insert_to_ghost(victim)
        self.small[h] = 0


class MainLengthByIdentity(CanonicalS3FIFO):
    def admit_to_main(self, h: int, freq: int) -> None:
        if len(self.main) is self.main_cap:
            self.evict_from_main()
        self.main[h] = freq


class GhostLengthByIdentity(CanonicalS3FIFO):
    def insert_to_ghost(self, h: int) -> None:
        if h in self.ghost:
            del self.ghost[h]
        elif len(self.ghost) is self.ghost_cap:
            self.ghost.popitem(last=False)
        self.ghost[h] = None


LRU = "lru"  # a constant of this module's, the same object as every other interned "lru"


class PolicyByIdentity(CanonicalS3FIFO):
    """Compares the configured policy's name by identity: over the protocol the name is a new
    string, never the interned constant (PROTO-29: in-process, it is one too)."""

    def access_one(self, h: int) -> None:
        engine = self.engine()
        if engine is LRU:
            self.lru_access(h)
        elif engine == "fifo":
            self.fifo_access(h)
        else:
            self.s3fifo_access(h)


class RatioRangeUnchecked(CanonicalS3FIFO):
    """Leaves a finite small_ratio outside [0, 1] to S3-CONF-5's check (breaks S3-CONF-1): fine
    until capacity × small_ratio overflows, and round() of the infinity raises."""

    def configure(self, config: AdapterConfig) -> None:
        ratio = config.small_ratio
        if config.policy == "s3fifo" and math.isfinite(ratio) and not 0.0 <= ratio <= 1.0:
            small_cap = round(config.capacity * ratio)
            raise ConfigRefused(f"S3-CONF-5: small_cap {small_cap}, main_cap {config.capacity - small_cap}")
        super().configure(config)


class SecondChanceByTwo(CanonicalS3FIFO):
    """Lowers a freq by two, down to 0, on M's second chance (breaks S3-ADMIT-M-2)."""

    def requeue(self, victim: int, freq: int) -> None:
        super().requeue(victim, max(freq - 1, 0))


LONG_QUEUES = [(LengthByIdentity, "lru"), (LengthByIdentity, "fifo"), (SmallLengthByIdentity, "s3fifo"), (MainLengthByIdentity, "s3fifo"),
               (GhostLengthByIdentity, "s3fifo")]

# (wrong implementation, policy): the key-width and S3FIFO-only ones on S3FIFO, the rest on all three.
REPLAY_WRONG = [
    *((cls, "s3fifo") for cls in (Int32Ids, Int8Ids, DoubleIds, GhostKeptOnHit, RefusesLargestMaxFreq, AcceptsNegativeMaxFreq,
                                  AcceptsNaNRatio, AcceptsInfiniteRatio, AcceptsRatioAboveOne, RatioRangeUnchecked, SecondChanceByTwo)),
    *((cls, policy) for cls in (DeduplicatedRequest, RefusesLargestCapacity, RefusesLargestBlockSize, AcceptsBlockSizeZero)
      for policy in ("s3fifo", "lru", "fifo")),
    *LONG_QUEUES, (PolicyByIdentity, "lru"),
]


# The benefit policy ----------------------------------------------------------------------------


class NarrowKeys(CanonicalBenefit):
    """Keeps keys and segment ids in a narrower type than BEN-KEY-1's unsigned 64 bits."""

    narrow: Callable[[int], int] = staticmethod(unsigned(32))

    def pins(self, pinned: frozenset[int]) -> frozenset[int]:
        return frozenset(self.narrow(key) for key in pinned)

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        segments = [(self.narrow(segment), size) for segment, size in shared]
        return super().consider_admission(self.narrow(key), exclusive_bytes, segments, cost, self.pins(pinned))

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        return super().record_hit(self.narrow(key), cost)

    def record_miss(self, key: int) -> None:
        super().record_miss(self.narrow(key))

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        return super().choose_victims(bytes_to_free, self.pins(pinned))

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        return super().select_probation_cap_victims(self.pins(pinned))

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        return super().remove(self.narrow(key), self.pins(pinned))


class Uint32Keys(NarrowKeys):
    pass


class Uint8Keys(NarrowKeys):
    narrow = staticmethod(unsigned(8))


class DoubleKeys(NarrowKeys):
    narrow = staticmethod(as_double)


class RefusesLargestBudget(CanonicalBenefit):
    """Checks probation_byte_budget < 2**63 - 1 (breaks BEN-CONF-1)."""

    def configure_benefit(self, config: BenefitConfig) -> None:
        if config.probation_byte_budget == INT64_MAX:
            raise ConfigRefused("probation_byte_budget too large")
        super().configure_benefit(config)


class AcceptsNaNDecay(CanonicalBenefit):
    """A NaN decay_factor taken as the default 0.9 (breaks BEN-CONF-4)."""

    def configure_benefit(self, config: BenefitConfig) -> None:
        super().configure_benefit(replace(config, decay_factor=0.9) if math.isnan(config.decay_factor) else config)


class AcceptsInfiniteReuseProbability(CanonicalBenefit):
    """An infinite min_reuse_probability clamped to 1 (breaks BEN-CONF-3)."""

    def configure_benefit(self, config: BenefitConfig) -> None:
        probability = config.min_reuse_probability
        super().configure_benefit(replace(config, min_reuse_probability=1.0) if math.isinf(probability) else config)


class ThresholdOf63Bits(CanonicalBenefit):
    """Accepts persistence_hit_threshold up to 2**63 - 1, as BEN-CONF-2 read before findings F-18."""

    def configure_benefit(self, config: BenefitConfig) -> None:
        threshold = config.persistence_hit_threshold
        super().configure_benefit(replace(config, persistence_hit_threshold=1) if type(threshold) is int and threshold >= 2**32 else config)
        self.config = config


class ThresholdOf31Bits(CanonicalBenefit):
    """Keeps persistence_hit_threshold in a signed 32-bit integer: refuses 2**31 and above (BEN-CONF-2)."""

    def configure_benefit(self, config: BenefitConfig) -> None:
        if type(config.persistence_hit_threshold) is int and config.persistence_hit_threshold >= 2**31:
            raise ConfigRefused("persistence_hit_threshold too large")
        super().configure_benefit(config)


class NegativeZeroFirst(CanonicalBenefit):
    """Net benefit max(cold - restore, 0) keeping a -0.0, scores ranked in IEEE-754 totalOrder: a
    score of -0.0 goes before +0.0 (breaks BEN-COST-2, BEN-VICTIM-2; findings F-19)."""

    def score(self, key: int) -> float | None:
        item = self.items[key]
        value = super().score(key)
        if value == 0.0 and item.cost[0] - item.cost[1] == 0.0 and math.copysign(1.0, item.cost[0] - item.cost[1]) < 0:
            return -0.0
        return value

    def rank(self, scored: list[tuple[float, int]]) -> list[tuple[float, int]]:
        return sorted(scored, key=lambda pair: (pair[0], math.copysign(1.0, pair[0]), pair[1]))


class Int32ByteSums(CanonicalBenefit):
    """Adds freed bytes in a 32-bit integer that wraps (BEN-VICTIM-4; the bytes held reach 2**53, BEN-KEY-2)."""

    def freed(self, chosen: list[int]) -> int:
        return super().freed(chosen) % 2**32


BENEFIT_WRONG = [Uint32Keys, Uint8Keys, DoubleKeys, RefusesLargestBudget, AcceptsNaNDecay, AcceptsInfiniteReuseProbability, ThresholdOf63Bits,
                 ThresholdOf31Bits, NegativeZeroFirst, Int32ByteSums]


# Certify catches every one ---------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "policy"), REPLAY_WRONG, ids=lambda p: p if isinstance(p, str) else p.__name__)
def test_certify_quick_catches_a_wrong_replay_implementation(cls: type[CanonicalS3FIFO], policy: str) -> None:
    assert not certified_apart(__name__, f"{cls.__name__}()", policy)[0], f"{cls.__name__} conforms on {policy}"


@pytest.mark.parametrize("cls", BENEFIT_WRONG, ids=lambda cls: cls.__name__)
def test_certify_quick_catches_a_wrong_benefit_implementation(cls: type[CanonicalBenefit]) -> None:
    assert not certified_apart(__name__, f"{cls.__name__}()", "benefit")[0], f"{cls.__name__} conforms"


def results_level(cls: type[Any]) -> Any:
    """``cls``, seen as an implementation without state access (PROTO-6's "results" level)."""
    return type(cls.__name__, (cls,), {"level": "results"})()


def test_certify_at_the_results_level_catches_a_ghost_left_in_place() -> None:
    """S3-ACCESS-3 seen through hit tokens and resident counts alone: ghost hits in the middle
    of a request, and old ids after new ones, make the stale ghost entry matter."""
    assert not certified_apart(__name__, "results_level(GhostKeptOnHit)", "s3fifo")[0]


@pytest.mark.untyped
@pytest.mark.parametrize("cls", [Int32Ids, Int8Ids, DoubleIds, DeduplicatedRequest, Uint32Keys, Uint8Keys, DoubleKeys, LengthByIdentity,
                                 SmallLengthByIdentity, MainLengthByIdentity, GhostLengthByIdentity, PolicyByIdentity, RatioRangeUnchecked,
                                 SecondChanceByTwo], ids=lambda cls: cls.__name__)
def test_FIX_6_FIX_7_the_fixtures_catch_key_width_and_deduplication_at_the_results_level(cls: type) -> None:
    results = verify(CORPUS, lambda: results_level(cls), {})
    assert any(result.verdict == "fail" for result in results), f"{cls.__name__} passes every fixture"


# What certify draws and what the corpus holds ----------------------------------------------------


def over_the_protocol(adapter: ReferenceAdapter) -> Implementation:
    """``adapter`` as certify sees an implementation over the protocol (a ``cmd:`` spec)."""
    return Implementation("cmd:recorded", launch=lambda: InProcessAdapter("cmd:recorded", lambda: adapter))


@pytest.mark.untyped
def test_REPLAY_TRACE_2_certify_draws_ids_and_configurations_across_the_whole_domain() -> None:
    """What three quick runs (seeds 0, 1 and 2) send: which values one run meets depends on how
    Hypothesis's generation goes, the distribution does not."""
    adapter = Recording()
    for seed_value in (0, 1, 2):
        assert certify_policy(over_the_protocol(adapter), "s3fifo", "quick", seed_value).conforms
    ids = {h for request in adapter.requests for h in request}
    assert min(ids) == INT64_MIN and max(ids) == INT64_MAX and any(h < 0 for h in ids) and any(0 < h < 100 for h in ids)
    for bits in (8, 16, 32, 53):  # distinct ids a narrower key would keep as one
        assert len({h % 2**bits for h in ids}) < len(ids), bits
    assert len({float(h) for h in ids}) < len(ids)
    assert any(len(set(request)) < len(request) for request in adapter.requests)  # REPLAY-TRACE-4
    configs = adapter.configs
    assert {INT64_MAX, 0, -1} <= {c.capacity for c in configs} and {INT64_MAX, 0} <= {c.block_size for c in configs}
    assert {INT64_MAX, -1} <= {c.max_freq for c in configs} and any(c.small_ratio > 1 for c in configs)
    assert all(math.isfinite(c.small_ratio) for c in configs), "a ratio JSON cannot carry went to a protocol adapter"
    assert not machine_for(over_the_protocol(adapter), "s3fifo").non_finite_ratios
    assert machine_for(Implementation.of(CanonicalS3FIFO()), "s3fifo").non_finite_ratios


@pytest.mark.untyped
def test_every_quick_run_sends_every_probe() -> None:
    """The whole-domain value of each knob and queues longer than 256 blocks, whatever the seed
    and Hypothesis's generation (conformance/certification/block/machine.py's probes)."""
    adapter = Recording()
    assert certify_policy(over_the_protocol(adapter), "s3fifo", "quick", 5).conforms
    sent = {(c.capacity, c.block_size, c.small_ratio, c.max_freq) for c in adapter.configs}
    wanted = probes("s3fifo")
    assert all((p.config.capacity, p.config.block_size, p.config.small_ratio, p.config.max_freq) in sent for p in wanted)
    assert {sys.float_info.max, -sys.float_info.max, 1.5} <= {p.config.small_ratio for p in wanted}
    assert {INT64_MAX, 0, -1} <= {p.config.capacity for p in wanted} and {INT64_MAX, 0, -1} <= {p.config.block_size for p in wanted}
    long = wanted[-1]
    small_cap = round(long.config.capacity * long.config.small_ratio)
    assert min(small_cap, long.config.capacity - small_cap) > 256 and max(map(len, long.requests)) > long.config.capacity
    assert [list(ids) for ids in long.requests] == adapter.requests[-len(long.requests):]


@pytest.mark.parametrize("pins", [Pins(small_ratio=0.01), Pins(small_ratio=0.9, max_freq=0)], ids=str)
def test_the_long_queues_follow_the_pinned_knobs(pins: Pins) -> None:
    probe = long_queues("s3fifo", pins)
    assert probe is not None
    small_cap = round(probe.config.capacity * probe.config.small_ratio)
    assert (probe.config.small_ratio, probe.config.max_freq) == (pins.small_ratio, 3 if pins.max_freq is None else pins.max_freq)
    assert max(small_cap, probe.config.capacity - small_cap) > 256 and min(small_cap, probe.config.capacity - small_cap) >= 1
    assert long_queues("s3fifo", Pins(small_ratio=1e-9)) is None  # no capacity up to 2**13 is valid


def test_PROTO_29_an_in_process_implementation_receives_its_configuration_as_new_objects() -> None:
    adapter = Recording()
    sent = AdapterConfig("lru", 2**40, 4, 0.1, 3)
    InProcessAdapter("python:recorded", lambda: adapter).configure(sent)
    received = adapter.configs[-1]
    assert received == sent and received.policy is not sent.policy and received.capacity is not sent.capacity


def test_S3_CONF_1_non_finite_ratios_are_drawn_for_in_process_adapters_only() -> None:
    from hypothesis import find, given, settings

    search = settings(database=None, max_examples=5000)
    for non_finite in (math.isnan, math.isinf):
        find(config_strategy("s3fifo", non_finite=True), lambda config: non_finite(config.small_ratio), settings=search)

    @settings(max_examples=1000, database=None, derandomize=True)
    @given(config_strategy("s3fifo", non_finite=False))
    def finite(config: AdapterConfig) -> None:
        assert math.isfinite(config.small_ratio)

    finite()


def test_REPLAY_TRACE_2_a_huge_block_size_keeps_input_lengths_and_their_sum_in_range(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = Recording()
    lengths: list[list[int]] = []  # by configuration
    configure, hit_tokens = adapter.configure, adapter.hit_tokens

    def record_configure(config: AdapterConfig) -> None:
        lengths.append([])
        configure(config)

    def record_hit_tokens(hash_ids: list[int], input_length: int) -> int:
        lengths[-1].append(input_length)
        return hit_tokens(hash_ids, input_length)

    adapter.configure, adapter.hit_tokens = record_configure, record_hit_tokens  # type: ignore[method-assign]
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from kvspec.conformance.certification.block import machine

    class HugeBlocks(machine_for(Implementation.of(adapter), "lru")):  # type: ignore[misc]
        pass

    original = machine.config_strategy
    monkeypatch.setattr(machine, "config_strategy", lambda *args, **kwargs: original(*args, **kwargs).map(
        lambda config: replace(config, block_size=2**62 + 1, capacity=4)))
    run_state_machine_as_test(HugeBlocks, settings=settings(max_examples=30, stateful_step_count=10, database=None, derandomize=True,
                                                            suppress_health_check=list(HealthCheck)))
    assert all(sum(each) <= INT64_MAX for each in lengths) and any(length > 2**62 + 1 for each in lengths for length in each)


def corpus_cases(kind: str) -> list[dict[str, Any]]:
    return [json.loads((CORPUS / entry["path"]).read_text()) for entry in read_manifest(CORPUS) if entry["kind"] == kind]


def test_FIX_6_the_replay_cases_hold_ids_across_the_whole_domain_and_repeated_ids() -> None:
    requests = [step["hash_ids"] for case in corpus_cases("replay") for step in case["requests"]]
    ids = {h for request in requests for h in request}
    assert min(ids) == INT64_MIN and max(ids) == INT64_MAX and any(h < 0 for h in ids)
    assert any(h >= 2**53 for h in ids) and any(2**32 <= h < 2**53 for h in ids)
    for case in corpus_cases("replay"):
        if "2**32 * n" in case["title"] and "repeated" in case["title"]:
            case_ids = {h for step in case["requests"] for h in step["hash_ids"]}
            assert len({h % 2**32 for h in case_ids}) == 1 < len(case_ids)
    assert any(len(set(request)) < len(request) for request in requests)  # REPLAY-TRACE-4
    configs = [case["config"] for case in corpus_cases("replay")]
    assert {INT64_MAX, INT64_MIN} <= {c["capacity"] for c in configs} & {c["block_size"] for c in configs}
    assert {sys.float_info.max, -sys.float_info.max} <= {c["small_ratio"] for c in configs}
    long = [case for case in corpus_cases("replay") if "long queues" in case["title"]]
    assert {case["config"]["policy"] for case in long} == {"s3fifo", "lru", "fifo"}
    assert all(len(case["requests"][0]["hash_ids"]) > case["config"]["capacity"] for case in long)


def test_FIX_7_the_benefit_cases_hold_keys_across_the_whole_domain() -> None:
    keys = {step["request"]["key"] for case in corpus_cases("benefit") for step in case["operations"] if "key" in step["request"]}
    assert {0, 2**64 - 1} <= keys and any(2**32 <= key < 2**53 for key in keys) and any(2**63 <= key for key in keys)
    assert len({float(key) for key in keys}) < len(keys)


@pytest.mark.untyped
def test_BEN_SCORE_4_a_score_of_negative_zero_is_found_in_the_state() -> None:
    """-0.0 == +0.0 as numbers: the state's scores are checked for the sign apart (findings F-19).
    An entry never observed, under a floor of -0.0, scores -0.0 here where the spec's is +0.0."""

    class SignedZeroFloor(CanonicalBenefit):
        def score(self, key: int) -> float | None:
            value = super().score(key)
            item = self.items[key]
            return -0.0 if value == 0.0 and item.ow == 0.0 and math.copysign(1.0, self.config.min_reuse_probability) < 0 else value

    (finding,) = certify_policy(SignedZeroFloor(), "benefit", "quick", 0).findings
    assert finding.divergence is not None and finding.divergence.clauses[0] == "BEN-SCORE-4", finding.message
