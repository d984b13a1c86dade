"""Between the reference's values and the protocol's messages (spec/adapter-protocol.md section 5),
both ways, and the words a reply of the wrong shape is reported in (PROTO-16).

The protocol server (serve.py) writes replies with these, and answers the benefit policy's requests
through answer_benefit and the lifecycle's through answer_lifecycle, as the fixtures' generator and runner do; the subprocess adapter (process.py) reads
them back; the in-process adapter (inprocess.py) does both, so that an implementation in kvspec's
process is held to exactly the types one in another process is.
"""

import json
from dataclasses import asdict
from typing import Any

from pydantic import ValidationError

from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision

from .benefit import BenefitAdapter, BenefitState, EntryView
from .interface import AdapterConfig, ConfigRefused, LifecycleAdapter, LifecycleState, described
from .lifecycle_messages import (
    AllocateRequest,
    ArriveRequest,
    ComputeRequest,
    DecodeRequest,
    FinishRequest,
    LookupRequest,
    PreemptRequest,
)
from .protocol import (
    REQUEST,
    BenefitStateReply,
    BenefitStateRequest,
    ChooseVictimsRequest,
    ConfigureBenefitRequest,
    ConsiderAdmissionRequest,
    ObservePressureRequest,
    RecordHitRequest,
    RecordMissRequest,
    RemoveRequest,
    SelectProbationCapVictimsRequest,
    WireCapRepair,
    WireCost,
    WireDecision,
    from_double,
    to_double,
)


def config_json(config: AdapterConfig) -> str:
    """PROTO-7: the configuration as the configure request carries it."""
    return json.dumps(asdict(config))


def as_received(config: AdapterConfig) -> AdapterConfig:
    """PROTO-29: the configuration as an implementation in a process of its own receives it, every
    value a new object parsed from JSON (a NaN or infinite ratio too), never one of kvspec's own
    constants, which a comparison by identity (``policy is "lru"``) would match."""
    return AdapterConfig(**json.loads(config_json(config)))


def wire_cost(cost: CostSample) -> WireCost:
    return WireCost(cold_prefill_cost=to_double(cost.cold_prefill_cost), restore_cost=to_double(cost.restore_cost))


def cost_of(wire: WireCost) -> CostSample:
    return CostSample(from_double(wire.cold_prefill_cost), from_double(wire.restore_cost))


def cap_json(cap: CapRepair | None) -> dict[str, Any] | None:
    return None if cap is None else {"status": cap.status, "victims": list(cap.victims), "shortfall": cap.shortfall}


def decision_json(decision: Decision | None) -> dict[str, Any] | None:
    return None if decision is None else {"kind": decision.kind, "reason": decision.reason, "cap": cap_json(decision.cap)}


def state_json(state: BenefitState) -> dict[str, Any]:
    """PROTO-28: a state as the benefit_state reply carries it, without its seq."""
    return {
        "clock": state.clock,
        "entries": [
            {"key": e.key, "state": e.state, "hits": e.hits, "misses": e.misses, "rw": to_double(e.rw), "ow": to_double(e.ow),
             "last_observation": e.last_observation, "score": None if e.score is None else to_double(e.score)}
            for e in state.entries
        ],
        "ghosts": [{"key": key, "hits": hits, "rw": to_double(rw), "ow": to_double(ow), "last_observation": last}
                   for key, hits, rw, ow, last in state.ghosts],
        "probation_charge": state.probation_charge,
    }


def cap_of(wire: WireCapRepair) -> CapRepair:
    return CapRepair(wire.status, tuple(wire.victims), wire.shortfall)


def decision_of(wire: WireDecision) -> Decision:
    return Decision(wire.kind, wire.reason, None if wire.cap is None else cap_of(wire.cap))


def state_of(reply: BenefitStateReply) -> BenefitState:
    entries = tuple(
        EntryView(e.key, e.state, e.hits, e.misses, from_double(e.rw), from_double(e.ow), e.last_observation,
                  None if e.score is None else from_double(e.score))
        for e in reply.entries
    )
    ghosts = tuple((g.key, g.hits, from_double(g.rw), from_double(g.ow), g.last_observation) for g in reply.ghosts)
    return BenefitState(reply.clock, entries, ghosts, reply.probation_charge)


def summary(error: ValidationError) -> str:
    """A reply's first problems, each on its field, a wrong type named as such (PROTO-16)."""
    parts = [problem(e) for e in error.errors()[:3]]
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "<reply>"
    due = DUE.get(error["type"])
    if due is not None:
        return f"{where}: a wrong type: {described(error['input'])} where {due} is due"
    if error["type"] in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"{where}: {error['input']!r} is out of range ({error['msg'].lower()})"
    return f"{where}: {error['msg']}"


# pydantic's error types for a value of the wrong type, and what was due instead.
DUE = {"int_type": "an integer", "string_type": "a string", "bool_type": "a boolean", "float_type": "a number", "list_type": "an array",
       "tuple_type": "an array", "dict_type": "an object", "model_type": "an object", "int_from_float": "an integer"}


def reply_json(cmd: str, result: Any) -> dict[str, Any]:
    """PROTO-21 to PROTO-28: what the reply to ``cmd`` carries of its result, without its seq."""
    if cmd in ("consider_admission", "record_hit"):
        return {"decision": decision_json(result)}
    if cmd in ("record_miss", "observe_pressure"):
        return {"ok": True}
    if cmd == "choose_victims":
        return {"keys": list(result.keys), "freed": result.freed}
    if cmd in ("select_probation_cap_victims", "remove"):
        return {"cap": cap_json(result)}
    assert cmd == "benefit_state", cmd
    return state_json(result)


def received(request: dict[str, Any]) -> Any:
    """A request as an implementation in a process of its own receives it (PROTO-16: through JSON, strictly)."""
    return REQUEST.validate_json(json.dumps({**request, "seq": 0}))


def answer_benefit(adapter: BenefitAdapter, request: Any) -> dict[str, Any]:
    """The reply to one benefit-policy request, without its seq (PROTO-20 to PROTO-28)."""
    if isinstance(request, ConfigureBenefitRequest):  # PROTO-20
        wire = request.config
        config = BenefitConfig(**{**wire.model_dump(), "min_reuse_probability": from_double(wire.min_reuse_probability),
                                  "decay_factor": from_double(wire.decay_factor)})
        try:
            adapter.configure_benefit(config)
        except ConfigRefused as refused:
            return {"ok": False, "refused": str(refused)}
        return {"ok": True}
    if isinstance(request, ConsiderAdmissionRequest):  # PROTO-21
        shared = [(segment_id, size) for segment_id, size in request.shared]
        result: Any = adapter.consider_admission(request.key, request.exclusive_bytes, shared, cost_of(request.cost), frozenset(request.pinned))
    elif isinstance(request, RecordHitRequest):  # PROTO-22
        result = adapter.record_hit(request.key, cost_of(request.cost))
    elif isinstance(request, RecordMissRequest):  # PROTO-23
        result = adapter.record_miss(request.key)
    elif isinstance(request, ObservePressureRequest):  # PROTO-24
        result = adapter.observe_pressure(from_double(request.pressure))
    elif isinstance(request, ChooseVictimsRequest):  # PROTO-25
        result = adapter.choose_victims(request.bytes_to_free, frozenset(request.pinned))
    elif isinstance(request, SelectProbationCapVictimsRequest):  # PROTO-26
        result = adapter.select_probation_cap_victims(frozenset(request.pinned))
    elif isinstance(request, RemoveRequest):  # PROTO-27
        result = adapter.remove(request.key, frozenset(request.pinned))
    else:
        assert isinstance(request, BenefitStateRequest)  # PROTO-28
        result = adapter.benefit_state()
    return reply_json(request.cmd, result)


def lifecycle_state_json(state: LifecycleState) -> dict[str, Any]:
    """PROTO-44: a pool's state as the lifecycle_state reply carries it, without its seq (FIX-18's ``state``)."""
    return {"small": [list(e) for e in state.small], "main": [list(e) for e in state.main], "ghost": list(state.ghost),
            "refs": [list(item) for item in state.refs], "pending": list(state.pending), "held": state.held}


def lifecycle_reply_json(cmd: str, result: Any) -> dict[str, Any]:
    """PROTO-37 to PROTO-44: what the reply to ``cmd`` carries of its result, without its seq."""
    if cmd == "lookup":
        return {"k": result}
    if cmd in ("allocate", "decode"):
        return {"made": result}
    if cmd == "finish":  # an object with the two counts: the Pool's Request, or a Finished
        return {"hit_tokens": result.hit_tokens, "recomputed_tokens": result.recomputed_tokens}
    if cmd == "lifecycle_state":
        return lifecycle_state_json(result)
    assert cmd in ("arrive", "compute", "preempt"), cmd
    return {"ok": True}


def answer_lifecycle(adapter: LifecycleAdapter, request: Any) -> dict[str, Any]:
    """The reply to one lifecycle request, without its seq (PROTO-37 to PROTO-44)."""
    if isinstance(request, ArriveRequest):  # PROTO-37
        result: Any = adapter.arrive(request.id, list(request.hash_ids), request.input_length)
    elif isinstance(request, ComputeRequest):  # PROTO-40
        result = adapter.compute(request.id, request.upto)
    elif isinstance(request, LookupRequest | AllocateRequest | DecodeRequest | FinishRequest | PreemptRequest):  # PROTO-38, 39, 41 to 43
        result = getattr(adapter, request.cmd)(request.id)
    else:  # PROTO-44
        result = adapter.lifecycle_state()
    return lifecycle_reply_json(request.cmd, result)
