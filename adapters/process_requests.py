"""The Adapter and BenefitAdapter methods of an implementation in its own process (adapters/process.py),
each one request of spec/adapter-protocol.md and the reply it expects: the cache's (PROTO-7 to
PROTO-12), the benefit policy's (PROTO-20 to PROTO-28) and the lifecycle's (PROTO-37 to PROTO-44). How a request travels and what a broken
reply is are process.py's.
"""

from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter, ValidationError

from kvspec.reference import KvspecError
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims

from .benefit import BenefitState
from .interface import AdapterConfig, ConfigRefused, Finished, LifecycleState, Level, Snapshot, printable
from .lifecycle_messages import (
    OfRequest,
    AllocateRequest,
    ArriveRequest,
    ComputeRequest,
    DecodeRequest,
    FinishReply,
    FinishRequest,
    LifecycleStateReply,
    LifecycleStateRequest,
    LookupReply,
    LookupRequest,
    MadeReply,
    PreemptRequest,
)
from .protocol import (
    CONFIGURE_REPLY,
    AccessReply,
    AccessRequest,
    BenefitStateReply,
    BenefitStateRequest,
    CapRepairReply,
    ChooseVictimsRequest,
    ConfigureBenefitRequest,
    ConfigureRequest,
    ConsiderAdmissionRequest,
    DecisionReply,
    HitTokensReply,
    HitTokensRequest,
    ObservePressureRequest,
    RecordHitRequest,
    RecordMissRequest,
    RefusedReply,
    RemoveRequest,
    ResidentCountReply,
    ResidentCountRequest,
    SelectProbationCapVictimsRequest,
    SnapshotReply,
    SnapshotRequest,
    VictimsReply,
    WireBenefitConfig,
    WireConfig,
    to_double,
)
from .wire import cap_of, decision_of, state_of, wire_cost

# Built once: building a TypeAdapter costs more than a round trip.
HIT_TOKENS_REPLY: TypeAdapter[Any] = TypeAdapter(HitTokensReply)
ACCESS_REPLY: TypeAdapter[Any] = TypeAdapter(AccessReply)
RESIDENT_COUNT_REPLY: TypeAdapter[Any] = TypeAdapter(ResidentCountReply)
SNAPSHOT_REPLY: TypeAdapter[Any] = TypeAdapter(SnapshotReply)
DECISION_REPLY: TypeAdapter[Any] = TypeAdapter(DecisionReply)
VICTIMS_REPLY: TypeAdapter[Any] = TypeAdapter(VictimsReply)
CAP_REPAIR_REPLY: TypeAdapter[Any] = TypeAdapter(CapRepairReply)
BENEFIT_STATE_REPLY: TypeAdapter[Any] = TypeAdapter(BenefitStateReply)
LOOKUP_REPLY: TypeAdapter[Any] = TypeAdapter(LookupReply)
MADE_REPLY: TypeAdapter[Any] = TypeAdapter(MadeReply)
FINISH_REPLY: TypeAdapter[Any] = TypeAdapter(FinishReply)
LIFECYCLE_STATE_REPLY: TypeAdapter[Any] = TypeAdapter(LifecycleStateReply)


class ProcessRequests:
    """The methods ProcessAdapter offers, over its ``_call``: one request, its one reply checked."""

    name: str
    level: Level
    _seq: int
    _call: Callable[..., Any]  # ProcessAdapter's: send one request, read its reply (PROTO-1, PROTO-2, PROTO-15)

    def _state_level(self, what: str) -> None:
        """PROTO-6: ``what`` is asked only of a "state"-level implementation; asking another is kvspec's own error."""
        if self.level != "state":
            raise KvspecError(f"{self.name}: PROTO-6: {what} is asked only of a state-level implementation, and this one is {self.level!r}")

    # The Adapter methods ------------------------------------------------------------------------

    def configure(self, config: AdapterConfig) -> None:
        """PROTO-7, PROTO-8."""
        try:
            wire = WireConfig.model_validate(
                {
                    "policy": config.policy,
                    "capacity": config.capacity,
                    "block_size": config.block_size,
                    "small_ratio": float(config.small_ratio),
                    "max_freq": config.max_freq,
                }
            )
        except (ValidationError, TypeError, ValueError, OverflowError) as error:
            raise KvspecError(f"{self.name}: this config cannot be sent over the adapter protocol: {error}") from error
        reply = self._call(
            ConfigureRequest(cmd="configure", seq=self._seq, config=wire), CONFIGURE_REPLY, 'a configure reply ({"ok": ...})'
        )
        if isinstance(reply, RefusedReply):
            raise ConfigRefused(printable(reply.refused))

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """PROTO-9."""
        request = HitTokensRequest(cmd="hit_tokens", seq=self._seq, hash_ids=hash_ids, input_length=input_length)
        reply: HitTokensReply = self._call(request, HIT_TOKENS_REPLY, 'a hit_tokens reply ({"hit_tokens": t})')
        return reply.hit_tokens

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        """PROTO-10: ``input_length`` only when given."""
        fields = {} if input_length is None else {"input_length": input_length}
        self._call(
            AccessRequest(cmd="access", seq=self._seq, hash_ids=hash_ids, **fields), ACCESS_REPLY, 'an access reply ({"ok": true})'
        )

    def resident_count(self) -> int:
        """PROTO-11."""
        request = ResidentCountRequest(cmd="resident_count", seq=self._seq)
        reply: ResidentCountReply = self._call(request, RESIDENT_COUNT_REPLY, 'a resident_count reply ({"resident_count": c})')
        return reply.resident_count

    def snapshot(self) -> Snapshot:
        """PROTO-12: asked only of a "state"-level implementation (PROTO-6)."""
        self._state_level("a snapshot")
        reply: SnapshotReply = self._call(
            SnapshotRequest(cmd="snapshot", seq=self._seq), SNAPSHOT_REPLY, 'a snapshot reply ({"small", "main", "ghost"})'
        )
        return Snapshot(small=tuple(reply.small), main=tuple(reply.main), ghost=tuple(reply.ghost))

    # The BenefitAdapter methods (PROTO-20 to PROTO-28) -----------------------------------------

    def configure_benefit(self, config: BenefitConfig) -> None:
        """PROTO-20, PROTO-8."""
        try:
            wire = WireBenefitConfig.model_validate(
                {**vars(config), "min_reuse_probability": to_double(config.min_reuse_probability), "decay_factor": to_double(config.decay_factor)}
            )
        except (ValidationError, TypeError, ValueError, OverflowError) as error:
            raise KvspecError(f"{self.name}: this config cannot be sent over the adapter protocol: {error}") from error
        request = ConfigureBenefitRequest(cmd="configure_benefit", seq=self._seq, config=wire)
        reply = self._call(request, CONFIGURE_REPLY, 'a configure_benefit reply ({"ok": ...})')
        if isinstance(reply, RefusedReply):
            raise ConfigRefused(printable(reply.refused))

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        """PROTO-21."""
        request = ConsiderAdmissionRequest(cmd="consider_admission", seq=self._seq, key=key, exclusive_bytes=exclusive_bytes,
                                           shared=shared, cost=wire_cost(cost), pinned=sorted(pinned))
        reply: DecisionReply = self._call(request, DECISION_REPLY, 'a consider_admission reply ({"decision": {...}})')
        if reply.decision is None:
            self._fail("consider_admission", request.seq, "a null decision", 'a consider_admission reply ({"decision": {...}})', "PROTO-21")
        return decision_of(reply.decision)

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        """PROTO-22."""
        request = RecordHitRequest(cmd="record_hit", seq=self._seq, key=key, cost=wire_cost(cost))
        reply: DecisionReply = self._call(request, DECISION_REPLY, 'a record_hit reply ({"decision": {...} or null})')
        return None if reply.decision is None else decision_of(reply.decision)

    def record_miss(self, key: int) -> None:
        """PROTO-23."""
        self._call(RecordMissRequest(cmd="record_miss", seq=self._seq, key=key), ACCESS_REPLY, 'a record_miss reply ({"ok": true})')

    def observe_pressure(self, pressure: float) -> None:
        """PROTO-24."""
        request = ObservePressureRequest(cmd="observe_pressure", seq=self._seq, pressure=to_double(pressure))
        self._call(request, ACCESS_REPLY, 'an observe_pressure reply ({"ok": true})')

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        """PROTO-25."""
        request = ChooseVictimsRequest(cmd="choose_victims", seq=self._seq, bytes_to_free=bytes_to_free, pinned=sorted(pinned))
        reply: VictimsReply = self._call(request, VICTIMS_REPLY, 'a choose_victims reply ({"keys": [...], "freed": n})')
        return Victims(tuple(reply.keys), reply.freed)

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        """PROTO-26."""
        request = SelectProbationCapVictimsRequest(cmd="select_probation_cap_victims", seq=self._seq, pinned=sorted(pinned))
        expected = 'a select_probation_cap_victims reply ({"cap": {...}})'
        reply: CapRepairReply = self._call(request, CAP_REPAIR_REPLY, expected)
        if reply.cap is None:
            self._fail("select_probation_cap_victims", request.seq, "a null cap repair", expected, "PROTO-26")
        return cap_of(reply.cap)

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        """PROTO-27."""
        request = RemoveRequest(cmd="remove", seq=self._seq, key=key, pinned=sorted(pinned))
        reply: CapRepairReply = self._call(request, CAP_REPAIR_REPLY, 'a remove reply ({"cap": {...} or null})')
        return None if reply.cap is None else cap_of(reply.cap)

    def benefit_state(self) -> BenefitState:
        """PROTO-28: asked only of a "state"-level implementation (PROTO-6)."""
        self._state_level("the state")
        request = BenefitStateRequest(cmd="benefit_state", seq=self._seq)
        reply: BenefitStateReply = self._call(request, BENEFIT_STATE_REPLY, 'a benefit_state reply ({"clock", "entries", "ghosts", ...})')
        return state_of(reply)

    # The LifecycleAdapter methods (PROTO-37 to PROTO-44), sent only to an implementation that offers them (PROTO-35) -------

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """PROTO-37."""
        request = ArriveRequest(cmd="arrive", seq=self._seq, id=rid, hash_ids=hash_ids, input_length=input_length)
        self._call(request, ACCESS_REPLY, 'an arrive reply ({"ok": true})')

    def lookup(self, rid: int) -> int:
        """PROTO-38."""
        reply: LookupReply = self._call(LookupRequest(cmd="lookup", seq=self._seq, id=rid), LOOKUP_REPLY, 'a lookup reply ({"k": k})')
        return reply.k

    def allocate(self, rid: int) -> bool:
        """PROTO-39."""
        return self._made(AllocateRequest(cmd="allocate", seq=self._seq, id=rid))

    def _made(self, request: OfRequest) -> bool:
        """PROTO-39, PROTO-41: whether the allocation, or the decode block, is made."""
        reply: MadeReply = self._call(request, MADE_REPLY, f'the reply to {request.cmd} ({{"made": true or false}})')
        return reply.made

    def compute(self, rid: int, upto: int) -> None:
        """PROTO-40."""
        self._call(ComputeRequest(cmd="compute", seq=self._seq, id=rid, upto=upto), ACCESS_REPLY, 'a compute reply ({"ok": true})')

    def decode(self, rid: int) -> bool:
        """PROTO-41."""
        return self._made(DecodeRequest(cmd="decode", seq=self._seq, id=rid))

    def finish(self, rid: int) -> Finished:
        """PROTO-42."""
        request = FinishRequest(cmd="finish", seq=self._seq, id=rid)
        reply: FinishReply = self._call(request, FINISH_REPLY, 'a finish reply ({"hit_tokens": h, "recomputed_tokens": r})')
        return Finished(reply.hit_tokens, reply.recomputed_tokens)

    def preempt(self, rid: int) -> None:
        """PROTO-43."""
        self._call(PreemptRequest(cmd="preempt", seq=self._seq, id=rid), ACCESS_REPLY, 'a preempt reply ({"ok": true})')

    def lifecycle_state(self) -> LifecycleState:
        """PROTO-44: asked only of a "state"-level implementation (PROTO-6)."""
        self._state_level("the pool's state")
        request = LifecycleStateRequest(cmd="lifecycle_state", seq=self._seq)
        reply: LifecycleStateReply = self._call(request, LIFECYCLE_STATE_REPLY, 'a lifecycle_state reply ({"small", "main", "ghost", "refs", ...})')
        return LifecycleState(tuple(reply.small), tuple(reply.main), tuple(reply.ghost), tuple(reply.refs), tuple(reply.pending), reply.held)
