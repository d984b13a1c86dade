"""The certification machine of requests in flight: the lifecycle's operations (spec/lifecycle.md
section 2) of several requests interleaved in every order the spec allows, each sent to the
implementation and to the reference's pool in lockstep (lockstep.py), which must agree after every
one: the replies (k, made, hit and recomputed tokens) and, at the state level, the pools (queues,
reference counts, blocks not computed, held blocks: LIFE-INV-1's accounting and referenced-never-
evicted, LIFE-INV-2's computed-before-hit, all on the implementation's own pool).

Requests share and part from prefixes as conversations do (fresh, a next turn, a branch part-way,
an exact repeat: core/workloads.py Conversations), or mix earlier ids and fresh ones, an id twice
in one request among them; pools are small (one slot to a dozen) so that
several requests fill them with blocks in use, and now and then a request is longer than the pool
(LIFE-ALLOC-4 runs it alone). A waiting request is looked up and allocated, most often a lookup
just before its allocation, as a scheduler does (so that its hits are checked where they are
found); a running one computes in chunks, decodes, finishes, or is preempted and waits again.
Request ids are the machine's own, now and then from the whole domain of PROTO-37's counts.
Only the operations the spec's state allows are sent (PROTO-36).
"""

import sys
from dataclasses import dataclass

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.certification.block.lockstep import offered_to_both, reference_policy
from kvspec.conformance.certification.block.machine import started
from kvspec.conformance.certification.block.strategies import now_and_then
from kvspec.conformance.certification.findings.divergence import Divergence, configuration_text
from kvspec.conformance.certification.findings.faults import Located, Location
from kvspec.conformance.certification.lifecycle.lockstep import InFlight, Operation, described
from kvspec.conformance.core.workloads import ID_NUMBERINGS, Conversations, Pins
from kvspec.reference import ConfigError
from kvspec.reference.dialects import CANONICAL, Dialect
from kvspec.reference.validation import INT64_MAX

IN_FLIGHT = 6  # requests at once, at most: enough to fill a pool of a dozen slots with blocks in use
# Request ids from the whole domain (PROTO-37: a count up to 2**63 - 1), now and then: an implementation
# that keeps them narrower mistakes one request for another.
WIDE_IDS = [INT64_MAX, 0, 2**32, 2**53 + 1, 2**31]
SHAPES = ["fresh", "extend", "branch", "repeat", "long", "mix"]
MIXES = st.lists(st.integers(0, 9), min_size=1, max_size=5)  # 0: a fresh id; n: the n-th most recent id seen, repeats within a request too


@dataclass
class Phase:
    """What the machine knows of a request in flight: its blocks and whether it runs, and how many it
    has computed (the spec's state, which decides the operations PROTO-36 allows)."""

    blocks: int
    decodes: int  # the blocks its output takes: the scheduler's step decodes them, then finishes it
    running: bool = False
    computed: int = 0


def flight_configs(policy: str, pins: Pins) -> st.SearchStrategy[AdapterConfig]:
    """Valid configurations of small pools (the block machine certifies configurations over the whole
    domain): S3FIFO's knobs around the usual values, LRU's and FIFO's at their defaults."""
    ratios = st.sampled_from([0.5, 0.34, 0.1, 0.25, 0.75]) if policy == "s3fifo" and pins.small_ratio is None else st.just(
        0.1 if pins.small_ratio is None else pins.small_ratio)
    freqs = st.sampled_from([3, 0, 1]) if policy == "s3fifo" and pins.max_freq is None else st.just(3 if pins.max_freq is None else pins.max_freq)
    capacities = now_and_then(st.integers(2, 12) | st.sampled_from([1, 3, 4]), [2**16, 2**31 + 1], 12)
    return st.builds(AdapterConfig, policy=st.just(policy), capacity=capacities, block_size=st.sampled_from([4, 1, 16, 3]),
                     small_ratio=ratios, max_freq=freqs).map(pins.bounded)


class LifecycleMachine(RuleBasedStateMachine):
    """Subclassed by ``lifecycle_machine_for`` with the implementation under test and the policy."""

    implementation: Implementation
    policy: str
    pins: Pins = Pins()
    dialect: Dialect = CANONICAL
    fresh_each_example: bool = False
    examples: int = 0
    rate: float = 0.0  # the examples it ran a second (certify.run)
    accepted: int = 0  # configurations the implementation accepted, and so checked the lifecycle on
    first_failure: Divergence | None = None

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.flight: InFlight | None = None
        self.phases: dict[int, Phase] = {}
        self.conversations = Conversations()
        self.serial = 0

    @initialize(data=st.data())
    def configure(self, data: st.DataObject) -> None:
        """A valid configuration, to both."""
        self.next_configuration(data)

    @precondition(lambda self: self.flight is None)
    @rule(data=st.data())
    def configure_again(self, data: st.DataObject) -> None:
        """Another configuration, where the last was not valid for S3FIFO's small pools or the implementation refused it."""
        self.next_configuration(data)

    def next_configuration(self, data: st.DataObject) -> None:
        """One configuration, to both; one the implementation refuses leaves the example to the next
        (the block machine reports the refusal, a configuration finding)."""
        drawn = data.draw(flight_configs(self.policy, self.pins), label="config")
        try:
            reference_policy(drawn, self.dialect)
        except ConfigError:
            return  # a ratio no small pool makes valid (S3-CONF-5): another example
        adapter = started(self.implementation, self.fresh_each_example)
        flight = InFlight(Located(adapter, lambda: self.location()), drawn, self.dialect)
        self.flight = flight  # before configure: a fault there is located at the configuration
        _, _, accepted = offered_to_both(lambda: None, lambda: flight.adapter.configure(drawn))
        if not accepted:
            self.flight = None
            return
        type(self).accepted += 1

    def location(self) -> Location:
        """Where a fault happened: the configuration, or the operation being sent."""
        flight = self.flight
        assert flight is not None
        n = len(flight.operations)
        label = f"operation {n} ({described(flight.operations[-1])})" if n else f"the configuration {configuration_text(flight.config)}"
        return Location(label, n, flight.config, [], lifecycle=list(flight.operations))

    def teardown(self) -> None:
        """Every request left in flight is run to its finish, so that its accounting is checked too
        (LIFE-HIT-1 and LIFE-HIT-2 are known only then); and the run's first failure is kept
        (PROTO-7: a replay on a fresh implementation that fails otherwise)."""
        failure = sys.exc_info()[1]
        if failure is None and self.flight is not None:
            self.drain()
        elif isinstance(failure, Divergence) and type(self).first_failure is None:
            type(self).first_failure = failure

    def drain(self) -> None:
        """The running requests compute what they have left and finish; then each waiting one, in
        arrival order, is looked up, allocated, computed and finished (the allocation is made, nothing
        else being in use, LIFE-ALLOC-4; in an engine's dialect one longer than the pool is refused
        and waits on, LIFE-VLLM-10)."""
        assert self.flight is not None
        for rid in [rid for rid, phase in self.phases.items() if phase.running]:
            self.run_out(rid)
        for rid in list(self.phases):
            self.perform(("lookup", rid))
            if self.flight.perform(("allocate", rid))["made"]:
                self.run_out(rid)

    def run_out(self, rid: int) -> None:
        phase = self.phases.pop(rid)
        if phase.computed < phase.blocks:
            self.perform(("compute", rid, phase.blocks))
        self.perform(("finish", rid))

    def perform(self, operation: Operation) -> None:
        assert self.flight is not None
        self.flight.perform(operation)

    def chosen(self, pick: int, running: bool, ready: bool | None = None) -> int:
        """The ``pick``-th request (by arrival) that waits or runs; ``ready``: that has computed all its blocks, or not."""
        rids = [rid for rid, p in self.phases.items() if p.running == running and (ready is None or (p.computed == p.blocks) == ready)]
        return rids[pick % len(rids)]

    def any(self, running: bool, ready: bool | None = None) -> bool:
        return self.flight is not None and any(p.running == running and (ready is None or (p.computed == p.blocks) == ready)
                                               for p in self.phases.values())

    @precondition(lambda self: self.flight is not None and len(self.phases) < IN_FLIGHT)
    @rule(shape=st.sampled_from(SHAPES), pick=st.integers(0, 7), blocks=st.integers(1, 4), tokens=st.integers(0, 63),
          decodes=st.integers(0, 6), wide=now_and_then(st.none(), WIDE_IDS, 8), data=st.data())
    def arrive(self, shape: str, pick: int, blocks: int, tokens: int, decodes: int, wide: int | None, data: st.DataObject) -> None:
        """LIFE-ARRIVE-1: a request arrives, its blocks drawn from the conversations so far, with the
        blocks its output will take (``decodes``)."""
        assert self.flight is not None
        config, conversations = self.flight.config, self.conversations
        earlier = conversations.requests
        if not earlier:
            conversations.numbering = data.draw(st.sampled_from(ID_NUMBERINGS), label="ids")
        if not earlier or shape == "fresh":
            hash_ids = conversations.fresh(blocks)
        elif shape == "long":
            hash_ids = conversations.fresh(min(config.capacity, 12) + blocks)  # longer than the pool (LIFE-ALLOC-4: it runs alone)
        elif shape == "mix":  # an id repeated, one pool slot for both (LIFE-ALLOC-2, LIFE-ALLOC-4)
            hash_ids = [conversations.earlier(n - 1) if n else conversations.fresh(1)[0] for n in data.draw(MIXES, label="mix")]
        else:
            parent = earlier[-1 - pick % len(earlier)]
            hash_ids = (list(parent) if shape == "repeat" else conversations.extend(parent, blocks) if shape == "extend"
                        else conversations.branch(parent, data.draw(st.integers(0, len(parent) - 1), label="keep"), blocks))
        hash_ids = self.pins.fitting(hash_ids[:24], config.capacity)
        conversations.requests.append(hash_ids)
        rid = wide if wide is not None and wide not in self.phases else self.next_id()
        input_length = (len(hash_ids) - 1) * config.block_size + 1 + tokens % config.block_size
        self.perform(("arrive", rid, hash_ids, input_length))
        self.phases[rid] = Phase(len(hash_ids), decodes)

    def next_id(self) -> int:
        self.serial += 1
        while self.serial in self.phases:
            self.serial += 1
        return self.serial

    @precondition(lambda self: self.any(running=False))
    @rule(pick=st.integers(0, 7))
    def lookup(self, pick: int) -> None:
        """LIFE-LOOKUP-1: a waiting request's lookup, alone (a scheduler that looks up and waits)."""
        self.perform(("lookup", self.chosen(pick, running=False)))

    @precondition(lambda self: self.any(running=False))
    @rule(pick=st.integers(0, 7), look=now_and_then(st.just(True), [False], 5))
    def allocate(self, pick: int, look: bool) -> None:
        """LIFE-ALLOC-1 to LIFE-ALLOC-4: a waiting request's allocation, most often after its lookup."""
        assert self.flight is not None
        rid = self.chosen(pick, running=False)
        if look:
            self.perform(("lookup", rid))
        if self.flight.perform(("allocate", rid))["made"]:
            self.phases[rid].running = True

    @precondition(lambda self: self.any(running=True, ready=False))
    @rule(pick=st.integers(0, 7), chunk=st.integers(1, 24))
    def compute(self, pick: int, chunk: int) -> None:
        """LIFE-COMPUTE-1: a running request computes a chunk of its blocks."""
        rid = self.chosen(pick, running=True, ready=False)
        phase = self.phases[rid]
        upto = min(phase.blocks, phase.computed + chunk)
        self.perform(("compute", rid, upto))
        phase.computed = upto

    @precondition(lambda self: self.any(running=True, ready=True))
    @rule(pick=st.integers(0, 7))
    def decode(self, pick: int) -> None:
        """LIFE-DECODE-1: a request that has computed all its blocks decodes one more."""
        self.perform(("decode", self.chosen(pick, running=True, ready=True)))

    @precondition(lambda self: self.any(running=True, ready=True))
    @rule(pick=st.integers(0, 7))
    def finish(self, pick: int) -> None:
        """LIFE-FINISH-1, LIFE-HIT-1, LIFE-HIT-2: a request that has computed all its blocks finishes, with its accounting."""
        rid = self.chosen(pick, running=True, ready=True)
        self.perform(("finish", rid))
        del self.phases[rid]

    @precondition(lambda self: self.any(running=True))
    @rule(pick=st.integers(0, 7))
    def preempt(self, pick: int) -> None:
        """LIFE-PREEMPT-1: a running request is preempted and waits again."""
        self.preempted(self.chosen(pick, running=True))

    def preempted(self, rid: int) -> None:
        self.perform(("preempt", rid))
        phase = self.phases[rid]
        self.phases[rid] = Phase(phase.blocks, phase.decodes)

    @precondition(lambda self: self.flight is not None and self.phases)
    @rule()
    def step(self) -> None:
        """One step of a scheduler over every request in flight, in arrival order (LIFE-SERVE-3 in its
        simplest form, so that the interleavings a server makes are frequent): each running request
        computes its next block or, all computed, decodes one of its output's blocks (a decode refused
        preempts it, as LIFE-SERVE-5's refused slot does) or, none left, finishes; then each waiting one
        is looked up and allocated, until an allocation is refused (it is retried at the next step)."""
        assert self.flight is not None
        for rid, phase in list(self.phases.items()):
            if not phase.running:
                continue
            if phase.computed < phase.blocks:
                self.perform(("compute", rid, phase.computed + 1))
                phase.computed += 1
            elif not phase.decodes:
                self.perform(("finish", rid))
                del self.phases[rid]
            elif self.flight.perform(("decode", rid))["made"]:
                phase.decodes -= 1
            else:
                self.preempted(rid)
        for rid, phase in list(self.phases.items()):
            if not phase.running:
                self.perform(("lookup", rid))
                if not self.flight.perform(("allocate", rid))["made"]:
                    break
                phase.running = True


def lifecycle_machine_for(implementation: Implementation, policy: str, pins: Pins = Pins(), fresh_each_example: bool = False,
                          dialect: Dialect = CANONICAL) -> type[LifecycleMachine]:
    """A machine class that certifies ``implementation``'s requests in flight on ``policy`` (in ``dialect``)."""
    attributes = {"implementation": implementation, "policy": policy, "pins": pins, "fresh_each_example": fresh_each_example,
                  "dialect": dialect}
    return type(f"CertifyInFlight{policy.upper()}", (LifecycleMachine,), attributes)
