"""The certification machine: every request goes to the implementation and to the reference,
and they must agree after each one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

Requests are drawn as a tree of conversations (chained prefixes: fresh, extend, branch, repeat,
one-off scans), so that a shrunk counterexample is a short, realistic trace, and as arbitrary
mixes of earlier and fresh ids: an old id after a new one, a ghost hit in the middle of a
request, an id repeated within one request (REPLAY-TRACE-4). Fresh ids are numbered across the
whole domain of REPLAY-TRACE-2 (core/workloads.py ID_NUMBERINGS): small ones first, then ids that
collide in a narrower key, ids equal as doubles, both bounds, negative ids. Configurations are
drawn around every edge: the smallest valid S3FIFO caches, max_freq 0 and 1, small_ratio near 0
and 1, and now and then a value from the whole domain, 2**63 - 1 and the values the spec refuses
(REPLAY-CONF-1, REPLAY-CONF-2, S3-CONF-1, S3-CONF-5, S3-CONF-6) included, which the
implementation must refuse too; a configuration both refused is followed by another, so that an
example tries many and still sends requests, and so is one they disagree on, or one the
implementation fails at with a whole-domain knob: a configuration finding (configurations.py). Where the machine finds nothing, fixed probes
(``probes``) follow, the same in every run: each knob's whole-domain values, and queues longer
than 256 blocks.
"""

import math
import sys
from dataclasses import replace
from functools import cache

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.block.strategies import now_and_then
from kvspec.conformance.certification.findings.configurations import ConfigurationFindings
from kvspec.conformance.certification.findings.divergence import Divergence, Knobs, configuration_text
from kvspec.conformance.certification.findings.faults import Located, Location, Unshrinkable, located
from kvspec.conformance.core.workloads import ID_NUMBERINGS, Conversations, Pins, Probe, long_queues, pinned, smallest_capacity
from kvspec.reference.dialects import CANONICAL, Dialect
from kvspec.reference.validation import INT64_MAX

# Whole-domain values of each knob, the refused ones included (REPLAY-CONF-1, REPLAY-CONF-2,
# S3-CONF-1, S3-CONF-6). JSON has no NaN or infinity, so a ratio that is not finite goes only to
# an in-process adapter (PROTO-3).
WIDE_COUNTS = [INT64_MAX, 0, -1, 2**32 + 1]
WIDE_BLOCK_SIZES = [INT64_MAX, 0, -1, 2**62 + 1]
WIDE_FREQS = [INT64_MAX, -1, 2**32]
# A ratio outside [0, 1] makes small_cap or main_cap below 1 (S3-CONF-5) unless capacity ×
# small_ratio overflows to an infinity, which the largest doubles do: only they show that
# S3-CONF-1's own range check is there (without it, round() of the infinity raises).
WIDE_RATIOS = [1.5, -0.25, sys.float_info.max, -sys.float_info.max]
NON_FINITE = [math.nan, math.inf, -math.inf]
# One knob in WIDE draws from the whole domain: the probes meet each such value in every run, so the
# machine's own draws, which pair them with other values and with requests, need not be frequent.
WIDE = 6


# A request's shape: the realistic ones (a fresh conversation, its next turn, an exact repeat, a
# branch part-way, a one-off scan) and an arbitrary mix of earlier and fresh ids.
SHAPES = ["extend", "fresh", "repeat", "branch", "scan", "mix"]
NUMBERINGS = st.sampled_from(ID_NUMBERINGS)
KEEPS = st.integers(0, 12)  # how much of its parent a branch keeps
MIXES = st.lists(st.integers(0, 23), min_size=1, max_size=6)


@cache  # built once: building a strategy costs more than drawing from it
def config_strategy(policy: str, pins: Pins = Pins(), *, non_finite: bool = False) -> st.SearchStrategy[AdapterConfig]:
    """Configurations around the edges, now and then (one draw in WIDE) a knob from the whole
    domain, refused ones included; ``non_finite`` adds ratios that are NaN or infinite (for an
    in-process adapter).
    LRU and FIFO get S3FIFO's knobs too, which they must ignore (REPLAY-CONF-3)."""
    ratios = now_and_then(st.sampled_from([0.1, 0.5, 0.01, 0.99, 0.25]) | st.floats(0.0, 1.0), WIDE_RATIOS + NON_FINITE * non_finite, WIDE)
    freqs = now_and_then(st.sampled_from([0, 1, 3]) | st.integers(0, 5), WIDE_FREQS, WIDE)
    if policy != "s3fifo":
        ratios, freqs = now_and_then(st.just(0.1), WIDE_RATIOS + NON_FINITE * non_finite, WIDE), now_and_then(st.just(3), WIDE_FREQS, WIDE)
    if pins.small_ratio is not None:
        ratios = st.just(pins.small_ratio)
    if pins.max_freq is not None:
        freqs = st.just(pins.max_freq)
    # 6 first: the smallest S3FIFO cache at the first ratio, 0.1, so that shrinking leads to a valid one.
    capacities = now_and_then(st.sampled_from([6, 1, 2, 3, 5, 7, 10, 11, 15, 25]) | st.integers(1, 48), WIDE_COUNTS, WIDE)
    configs = st.builds(
        AdapterConfig,
        policy=st.just(policy),
        capacity=capacities,
        block_size=now_and_then(st.sampled_from([1, 4, 16, 512]), WIDE_BLOCK_SIZES, WIDE),
        small_ratio=ratios,
        max_freq=freqs,
    )
    # without bounds, the strategy is left as it was, so that a seed still draws what it drew
    return configs if pins.max_capacity is None and pins.max_block_size is None else configs.map(pins.bounded)


# The probes: a few fixed configurations, each with its requests, that every run sends once, after
# the machine, whatever Hypothesis's generation did (it meets a value of a fixed list by chance
# only: a quick run drawing one of 23 probes an example met 11 of them). Each costs one configure,
# the long queues a few requests; the machine's own configurations draw the same values now and
# then, with requests after them.


def usual_config(policy: str, pins: Pins = Pins()) -> AdapterConfig:
    """The smallest cache the spec accepts with the pinned knobs, or the usual ones."""
    ratio, max_freq = pinned(pins, 0.1)
    return pins.bounded(AdapterConfig(policy, smallest_capacity(ratio, 1, 6) or 6, 1, ratio, max_freq))  # type: ignore[arg-type]


WHOLE_DOMAIN = {"capacity": WIDE_COUNTS, "block_size": WIDE_BLOCK_SIZES, "small_ratio": WIDE_RATIOS + NON_FINITE, "max_freq": WIDE_FREQS}


def wide_knobs(config: AdapterConfig) -> Knobs:
    """The knobs of ``config`` that take a whole-domain value (a NaN ratio among them)."""
    return tuple((knob, getattr(config, knob)) for knob, values in WHOLE_DOMAIN.items() if any(same(v, getattr(config, knob)) for v in values))


def same(a: object, b: object) -> bool:
    """Equal, or both NaN."""
    return a == b or (a != a and b != b)


def configuration_findings(policy: str, pins: Pins = Pins()) -> ConfigurationFindings:
    return ConfigurationFindings(wide_knobs, usual_config(policy, pins))


@cache
def probes(policy: str, pins: Pins = Pins(), non_finite: bool = False) -> list[Probe]:
    """Each knob's whole-domain values with the others usual, only offered (most are refused; the
    accepted ones stand at the ends of the domain); then the long queues (``long_queues``)."""
    base = usual_config(policy, pins)
    knobs = {"capacity": WIDE_COUNTS, "block_size": WIDE_BLOCK_SIZES}
    if pins.small_ratio is None:
        knobs["small_ratio"] = WIDE_RATIOS + NON_FINITE * non_finite
    if pins.max_freq is None:
        knobs["max_freq"] = WIDE_FREQS
    offered = [Probe(pins.bounded(replace(base, **{knob: value}))) for knob, values in knobs.items() for value in values]
    long = long_queues(policy, pins)
    return [*offered, *([long] if long is not None and pins.bounded(long.config) == long.config else [])]


def probe_divergence(implementation: Implementation, policy: str, pins: Pins = Pins(), dialect: Dialect = CANONICAL,
                     configurations: ConfigurationFindings | None = None, behaviour: bool = True, fresh: bool = False) -> Divergence | None:
    """The probes, in order, on the running implementation (a fresh one after a failure, or for
    each if ``fresh``): the first Divergence of the behaviour (a Fault where the implementation
    failed), or None. Configuration findings go to ``configurations``, and the probes go on.
    Without ``behaviour``, only the configurations are offered (the machine has found the behaviour
    wanting already)."""
    configurations = configurations or configuration_findings(policy, pins)
    for probe in probes(policy, pins, implementation.in_process):
        if probe.requests and not behaviour:
            continue
        try:
            send(implementation, probe, dialect, pins, configurations, fresh)
        except Unshrinkable as stop:
            return stop.fault
        except Divergence as divergence:
            return divergence
    return None


def send(implementation: Implementation, probe: Probe, dialect: Dialect, pins: Pins, configurations: ConfigurationFindings,
         fresh: bool = False) -> None:
    """Offer the probe's configuration to both, and its requests if both accept it."""
    if not configurations.offered(probe.config):
        return
    lockstep = located_lockstep(implementation, probe.config, dialect, fresh)
    if configured(implementation, lockstep, configurations):
        for hash_ids in pins.split(probe.requests):
            lockstep.request(list(hash_ids), len(hash_ids))


def located_lockstep(implementation: Implementation, config: AdapterConfig, dialect: Dialect, fresh: bool = False) -> Lockstep:
    """A lockstep on the running implementation (a fresh one if it failed, or if ``fresh``), its faults located in it."""
    lockstep = Lockstep(started(implementation, fresh), config, dialect)  # type: ignore[arg-type]
    lockstep.adapter = Located(lockstep.adapter, lambda: location(lockstep))  # type: ignore[assignment]
    return lockstep


def configured(implementation: Implementation, lockstep: Lockstep, configurations: ConfigurationFindings) -> bool:
    """Lockstep.configure: whether both accepted the configuration. A configuration finding is kept
    in ``configurations`` (False: the example goes on with another configuration); any other
    failure is raised."""
    def offer(config: AdapterConfig) -> Divergence | None:
        try:
            located_lockstep(implementation, config, lockstep.dialect).configure()
        except Divergence as divergence:
            return divergence
        return None

    try:
        return lockstep.configure()
    except (Divergence, Unshrinkable) as stop:
        if configurations.kept(stop, lockstep.config, offer):
            return False
        raise


class CertificationMachine(RuleBasedStateMachine):
    """Subclassed by ``machine_for`` with the implementation under test and the policy to certify."""

    implementation: Implementation
    policy: str
    pins: Pins = Pins()
    dialect: Dialect = CANONICAL  # DIALECT-7: the reference's dialect
    fresh_each_example: bool = False  # a new implementation for every example, not only after a failure
    non_finite_ratios: bool = False  # an in-process implementation can be sent a NaN or infinite small_ratio
    examples: int = 0  # how many examples (configurations up to an accepted one, and its requests) have started
    rate: float = 0.0  # the examples it ran a second (certify.run)
    accepted: int = 0  # how many configurations both accepted, and so checked the behaviour on
    first_failure: Divergence | None = None
    configurations: ConfigurationFindings

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.lockstep: Lockstep | None = None
        self.conversations = Conversations()

    @initialize(data=st.data())
    def configure(self, data: st.DataObject) -> None:
        """Both accept the configuration, or both refuse it."""
        self.next_configuration(data)

    def next_configuration(self, data: st.DataObject) -> None:
        """One configuration, to both (Lockstep.configure); the lockstep if both accepted it."""
        config = data.draw(config_strategy(self.policy, self.pins, non_finite=self.non_finite_ratios), label="config")
        if not self.configurations.offered(config):
            return  # one it failed at: not waited out again
        lockstep = located_lockstep(self.implementation, config, self.dialect, self.fresh_each_example)
        if configured(self.implementation, lockstep, self.configurations):
            self.lockstep = lockstep
            type(self).accepted += 1

    def teardown(self) -> None:
        """Keep the run's first failure: an implementation that fails otherwise on a replay leaves
        Hypothesis nothing else to report (PROTO-7)."""
        failure = sys.exc_info()[1]
        if isinstance(failure, Divergence) and type(self).first_failure is None:
            type(self).first_failure = failure

    @rule(kind=st.sampled_from(SHAPES), pick=st.integers(0, 7), blocks=st.integers(1, 4), tokens=st.integers(-1, 511), data=st.data())
    def request(self, kind: str, pick: int, blocks: int, tokens: int, data: st.DataObject) -> None:
        """One request, sent to both (Lockstep.request checks everything they must agree on).
        ``pick`` chooses an earlier request, ``blocks`` how many fresh ids follow, ``tokens`` the
        size of the last block (-1: a full one); ``data`` draws what only some shapes need."""
        if self.lockstep is None:  # both refused the configuration: another replaces it (PROTO-7)
            self.next_configuration(data)
            return
        conversations = self.conversations
        # REPLAY-TRACE-2: input_length <= 2**63 - 1, and so must their sum be, the replay's
        # total_prompt_tokens (REPLAY-RESULT-3), for the counterexample to replay. A huge block size
        # allows fewer blocks.
        room, block_size = INT64_MAX - conversations.prompt_tokens, self.lockstep.config.block_size
        if room < 1:
            return  # huge blocks have used up every token a trace can hold
        hash_ids = self.pins.fitting(self.draw_request(kind, pick, blocks, data)[: (room - 1) // block_size + 1], self.lockstep.config.capacity)
        full = (len(hash_ids) - 1) * block_size
        input_length = full + 1 + tokens % min(block_size, room - full)
        self.lockstep.request(hash_ids, input_length)
        conversations.requests.append(hash_ids)
        conversations.prompt_tokens += input_length

    def draw_request(self, kind: str, pick: int, blocks: int, data: st.DataObject) -> list[int]:
        conversations = self.conversations
        earlier = conversations.requests
        if not earlier:  # the first request: how this example numbers its ids
            conversations.numbering = data.draw(NUMBERINGS, label="ids")
        if not earlier or kind == "fresh":
            return conversations.fresh(blocks)
        if kind == "scan":
            return conversations.fresh(blocks + 6)
        if kind == "mix":  # 0: a fresh id; n: the n-th most recent id seen (REPLAY-TRACE-4 repeats it)
            return [conversations.earlier(n - 1) if n else conversations.fresh(1)[0] for n in data.draw(MIXES, label="mix")]
        parent = earlier[-1 - pick % len(earlier)]
        if kind == "repeat":
            return list(parent)
        if kind == "extend":
            return conversations.extend(parent, blocks)
        return conversations.branch(parent, data.draw(KEEPS, label="keep") % len(parent), blocks)


def location(lockstep: Lockstep) -> Location:
    """Where a fault happened: the configuration, or the request being sent (the trace ends with it)."""
    n = len(lockstep.trace)
    return Location(f"request {n}" if n else f"the configuration {configuration_text(lockstep.config)}", n, lockstep.config, list(lockstep.trace))


def started(implementation: Implementation, fresh: bool) -> object:
    """The implementation for the next example: the running one, unless it failed or ``fresh``
    (PROTO-4); a failure to start is a fault at its start."""
    try:
        return implementation.start() if fresh else implementation.current()
    except AdapterFailure as failure:
        raise located(failure, Location("at its start")) from None


def machine_for(implementation: Implementation, policy: str, pins: Pins = Pins(), fresh_each_example: bool = False,
                dialect: Dialect = CANONICAL) -> type[CertificationMachine]:
    """A machine class that certifies ``implementation`` on ``policy`` (in ``dialect``), with ``pins``
    held fixed. Only an in-process implementation is sent non-finite ratios: JSON has no number for them."""
    attributes = {"implementation": implementation, "policy": policy, "pins": pins, "fresh_each_example": fresh_each_example,
                  "non_finite_ratios": implementation.in_process, "dialect": dialect, "configurations": configuration_findings(policy, pins)}
    return type(f"Certify{policy.upper()}", (CertificationMachine,), attributes)
