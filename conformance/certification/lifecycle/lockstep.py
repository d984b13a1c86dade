"""An implementation's pool and the reference's, driven in lockstep by the lifecycle's operations
(PROTO-37 to PROTO-43): each operation goes to both, and what each returns must agree; at the
state level the pools must agree after every operation too (PROTO-44). The first difference
raises a Divergence whose diagnosis (diagnosis.py) names the lifecycle clause it breaks.
"""

import json
from typing import Any

from kvspec.adapters.interface import AdapterConfig
from kvspec.adapters.reference import pool_state
from kvspec.adapters.wire import lifecycle_reply_json, lifecycle_state_json
from kvspec.conformance.certification.block.diagnosis import Diagnosis
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.certification.lifecycle.diagnosis import Json, Operation, reply_diagnosis, state_diagnosis
from kvspec.reference import ReplayConfig
from kvspec.reference.caches import pool_for
from kvspec.reference.dialects import CANONICAL, Dialect, in_catalogue_order



def replay_config(config: AdapterConfig, dialect: Dialect = CANONICAL) -> ReplayConfig:
    return ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq, dialect)  # type: ignore[arg-type]


def answered(pool: Any, operation: Operation) -> Json:
    """PROTO-37 to PROTO-43: one operation on a pool (the reference's, or an implementation's: they
    have the same methods), and its reply as the protocol carries it."""
    op, rid, *args = operation
    return lifecycle_reply_json(op, getattr(pool, op)(rid, *args))


def described(operation: Operation) -> str:
    """An operation as a divergence names it: ``allocate 3``, ``compute 2 upto 3``, ``arrive 1 [1, 2] 8 tokens``."""
    op, rid, *args = operation
    if op == "arrive":
        return f"arrive {rid} (hash_ids {args[0]}, input_length {args[1]})"
    return f"compute {rid} upto {args[0]}" if op == "compute" else f"{op} {rid}"


class InFlight:
    """``adapter`` (which offers the lifecycle) and the reference's pool for ``config`` (in
    ``dialect``), configured alike: the operations sent so far, and (at the state level) the
    pool the implementation showed after the last one, which agreed with the spec's."""

    def __init__(self, adapter: Any, config: AdapterConfig, dialect: Dialect = CANONICAL) -> None:
        self.adapter = adapter
        self.config = config
        self.dialect = dialect
        self.reference_config = replay_config(config, dialect)
        self.dialect_name = ", ".join(in_catalogue_order(dialect))
        self.reference = pool_for(self.reference_config)()
        self.operations: list[Operation] = []
        self.state_level = adapter.level == "state" and not dialect  # a dialect's pool is not the canonical queues (DIALECT-7)
        self.shown: Json | None = lifecycle_state_json(pool_state(self.reference)) if self.state_level else None  # the empty pool

    def perform(self, operation: Operation) -> Json:
        """One operation to both: their replies must agree, and at the state level their pools after
        it (LIFE-INV-1: the reference counts, resident and held blocks, blocks not computed). The reference's reply."""
        self.operations.append(operation)
        expected, actual = answered(self.reference, operation), answered(self.adapter, operation)
        if actual != expected:
            raise self.diverge(reply_diagnosis(self, expected, actual), f"expected {json.dumps(expected)}, got {json.dumps(actual)}", expected,
                               actual)
        if self.state_level:
            want, got = lifecycle_state_json(pool_state(self.reference)), lifecycle_state_json(self.adapter.lifecycle_state())
            if got != want:
                field = next(name for name in want if want[name] != got[name])
                raise self.diverge(state_diagnosis(self, want, got), f"the pool after it: expected {field} {json.dumps(want[field])}, got "
                                   f"{json.dumps(got[field])}", want, got)
            self.shown = got
        return expected

    def diverge(self, diagnosis: Diagnosis, detail: str, expected: object, actual: object) -> Divergence:
        where = f"operation {len(self.operations)} ({described(self.operations[-1])})"
        return Divergence(diagnosis.clauses, f"{where}: {detail}{diagnosis.evidence}", request=len(self.operations), expected=expected,
                          actual=actual, config=self.config, trace=[], consistent_with=diagnosis.consistent_with,
                          lifecycle=list(self.operations))
