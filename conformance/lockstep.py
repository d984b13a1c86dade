"""An implementation and the reference, driven in lockstep: each request goes to both, and they
must agree after every one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

The certification machine draws the configurations and requests; `kvspec replay --adapter`
takes them from a trace file, with a Lockstep as the replay's Server. Both stop at the first
Divergence.
"""

from typing import Any

from kvspec.adapters.interface import Adapter, AdapterConfig, ConfigRefused
from kvspec.adapters.reference import snapshot_of
from kvspec.reference import ConfigError, ReplayConfig, make_policy
from kvspec.reference.replay import Policy, hit_tokens, prefix_hit_blocks

from .diagnosis import hit_token_clauses, queue_clauses, queue_difference, refusal_clauses, resident_count_clauses


class Divergence(AssertionError):
    """The implementation and the reference disagree. The message starts with the clauses (the
    diagnosis first); the fields carry what a report needs: the request (1-based; 0 for the
    configuration), expected and actual values, the configuration, and the trace up to and
    including that request."""

    def __init__(self, clauses: list[str], detail: str, *, request: int, expected: object, actual: object,
                 config: AdapterConfig | None, trace: list[tuple[list[int], int]], benefit: dict[str, Any] | None = None) -> None:
        super().__init__(f"{', '.join(clauses)}: {detail}")
        self.clauses = tuple(clauses)
        self.request = request
        self.expected = repr(expected)
        self.actual = repr(actual)
        self.config = config
        self.trace = list(trace)
        self.benefit = benefit  # the benefit policy's: its config and operations, as protocol messages (PROTO-20 to PROTO-27)


def brief(hash_ids: list[int]) -> str:
    """A request's hash ids, elided in the middle past a dozen."""
    if len(hash_ids) <= 12:
        return repr(hash_ids)
    return f"[{', '.join(map(str, hash_ids[:6]))}, ... {', '.join(map(str, hash_ids[-3:]))}] ({len(hash_ids)} blocks)"


class Lockstep:
    """``adapter`` and the reference, on one configuration."""

    def __init__(self, adapter: Adapter, config: AdapterConfig) -> None:
        self.adapter = adapter
        self.config = config
        self.reference: Policy | None = None
        self.trace: list[tuple[list[int], int]] = []

    def diverge(self, clauses: list[str], detail: str, expected: object, actual: object) -> Divergence:
        return Divergence(clauses, detail, request=len(self.trace), expected=expected, actual=actual, config=self.config, trace=self.trace)

    def configure(self) -> bool:
        """Configure both; True if both accepted, False if both refused (REPLAY-CONF-1, S3-CONF-5)."""
        config = self.config
        try:
            self.reference = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq))
            refused_by = None
        except ConfigError as error:
            refused_by = error.clause
        try:
            self.adapter.configure(config)
            accepted = True
        except ConfigRefused:
            accepted = False
        if refused_by is not None and accepted:
            raise self.diverge(refusal_clauses(config, refused_by), f"the configuration {config} must be refused, and the implementation accepted it", "refused", "accepted")
        if refused_by is None and not accepted:
            raise self.diverge(refusal_clauses(config, None), f"the configuration {config} is valid, and the implementation refused it", "accepted", "refused")
        return accepted

    def request(self, hash_ids: list[int], input_length: int) -> int:
        """One request, sent to both; hit tokens, resident count and (at the state level) every
        queue must agree. The hit tokens."""
        reference, adapter = self.reference, self.adapter
        assert reference is not None, "configure() accepted no configuration"
        block_size = self.config.block_size
        self.trace.append((hash_ids, input_length))
        where = f"request {len(self.trace)} (hash_ids {brief(hash_ids)}, input_length {input_length})"
        expected = hit_tokens(prefix_hit_blocks(hash_ids, reference.is_resident), block_size, input_length)
        state_level = adapter.level == "state"
        before = adapter.snapshot() if state_level else None  # at the state level, the two agree here
        actual = adapter.hit_tokens(hash_ids, input_length)
        if actual != expected:
            clauses = hit_token_clauses((hash_ids, input_length), block_size, snapshot_of(reference), actual)
            raise self.diverge(clauses, f"{where}: expected {expected} hit tokens, got {actual}", expected, actual)
        if state_level and adapter.snapshot() != before:
            raise self.diverge(["REPLAY-PREFIX-3", "REPLAY-POLICY-1"], f"{where}: the hit-token check changed the cache", before, adapter.snapshot())
        for h in hash_ids:
            reference.access(h)
        adapter.access(hash_ids)
        if state_level:  # the queues first: their difference is the more telling diagnosis
            spec_after, queues = snapshot_of(reference), adapter.snapshot()
            if queues != spec_after:
                assert before is not None
                clauses = queue_clauses(self.config, hash_ids, before, spec_after, queues)
                raise self.diverge(clauses, f"after {where}: {queue_difference(spec_after, queues)}", spec_after, queues)
        want, got = reference.resident_count(), adapter.resident_count()
        if want != got:
            clauses = resident_count_clauses(len(snapshot_of(reference).ghost), want, got)
            raise self.diverge(clauses, f"after {where}: expected {want} resident blocks, got {got}", want, got)
        return actual

    def resident_count(self) -> int:
        """REPLAY-RESULT-4: the implementation's, which request() has checked against the reference's."""
        return self.adapter.resident_count()
