"""An implementation and the reference, driven in lockstep: each request goes to both, and they
must agree after every one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

The certification machine draws the configurations and requests; `kvspec replay --adapter`
takes them from a trace file, with a Lockstep as the replay's Server. Both stop at the first
Divergence; `kvspec replay --keep-going` goes on past it (conformance/certification/block/keep_going.py).
"""

from collections.abc import Callable
from typing import TypeVar

from kvspec.adapters.interface import Adapter, AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.reference import snapshot_of
from kvspec.conformance.certification.block.diagnosis import (
    Diagnosis,
    accepted_wrongly,
    consistent,
    eviction_clauses,
    hit_token_diagnosis,
    named,
    own,
    refusal_group,
    refused_wrongly,
    resident_count_diagnosis,
    results_diagnosis,
)
from kvspec.conformance.certification.block.placement import queue_diagnosis, queue_difference
from kvspec.conformance.certification.findings.clauses import configuration_clauses
from kvspec.conformance.certification.findings.divergence import Divergence, Unshrinkable, configuration_text
from kvspec.conformance.core.output import plural
from kvspec.reference import ConfigError, ReplayConfig, make_policy
from kvspec.reference.dialects import CANONICAL, VARIATIONS, Dialect, in_catalogue_order, queues_hold_hashes, replaced_clauses, runs_whole
from kvspec.reference.replay import hit_tokens
from kvspec.reference.request import Policy, lookup, serve

T = TypeVar("T")


def brief(hash_ids: list[int]) -> str:
    """A request's hash ids, elided in the middle past a dozen."""
    if len(hash_ids) <= 12:
        return repr(hash_ids)
    return f"[{', '.join(map(str, hash_ids[:6]))}, ... {', '.join(map(str, hash_ids[-3:]))}] ({len(hash_ids)} blocks)"



def offered_to_both(build: Callable[[], T], configure: Callable[[], None]) -> tuple[T | None, str | None, bool]:
    """A configuration offered to the reference (``build``) and to the implementation
    (``configure``): the reference's policy or None, the clause that refused it, and whether the
    implementation accepted it (it refuses by raising ConfigRefused)."""
    try:
        reference, refused_by = build(), None
    except ConfigError as error:
        reference, refused_by = None, error.clause
    try:
        configure()
    except ConfigRefused:
        return reference, refused_by, False
    return reference, refused_by, True


def reference_policy(config: AdapterConfig, dialect: Dialect = CANONICAL) -> Policy:
    """The reference's cache for a configuration an implementation is given (DIALECT-1: in ``dialect``)."""
    return make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq, dialect))


def dialect_diagnosis(policy: str, dialect: Dialect, configuration: bool = False) -> Diagnosis:
    """Against a dialect, the diagnoses (written for the canonical rules) do not apply: the
    difference is consistent with any rule that decides it in that dialect, those of the
    configuration for a configuration refused, those of residency otherwise."""
    replaced = set(replaced_clauses(dialect))
    if configuration:
        canonical = [c for c in configuration_clauses(policy) if c not in replaced]
        own_points = [v for v in in_catalogue_order(dialect) if any("-CONF-" in c for c in VARIATIONS[v].replaces)]
    else:
        canonical, own_points = [c for c in eviction_clauses(policy) if c not in replaced], in_catalogue_order(dialect)
    return consistent(*canonical, *(VARIATIONS[v].clause for v in own_points), evidence=f"; against the dialect {', '.join(in_catalogue_order(dialect))}")


class Lockstep:
    """``adapter`` and the reference (in ``dialect``), on one configuration."""

    def __init__(self, adapter: Adapter, config: AdapterConfig, dialect: Dialect = CANONICAL) -> None:
        self.adapter = adapter
        self.config = config
        self.dialect = dialect
        self.reference: Policy | None = None
        self.trace: list[tuple[list[int], int]] = []
        self.hits_agreed = 0  # requests whose hit tokens agreed, whatever came after (DIALECT-8's score)

    def diagnosed(self, canonical: Callable[[], Diagnosis], configuration: bool = False) -> Diagnosis:
        """The canonical rules' diagnosis, or (in a dialect) dialect_diagnosis, without the work of the other."""
        return dialect_diagnosis(self.config.policy, self.dialect, configuration) if self.dialect else canonical()

    def diverge(self, diagnosis: Diagnosis, detail: str, expected: object, actual: object) -> Divergence:
        return Divergence(diagnosis.clauses, detail + diagnosis.evidence, request=len(self.trace), expected=expected, actual=actual,
                          config=self.config, trace=self.trace, consistent_with=diagnosis.consistent_with)

    def configure(self) -> bool:
        """Configure both; True if both accepted, False if both refused (REPLAY-CONF-1, S3-CONF-5)."""
        config = self.config
        self.reference, refused_by, accepted = offered_to_both(lambda: reference_policy(config, self.dialect),
                                                               lambda: self.adapter.configure(config))
        if refused_by is not None and accepted:
            raise self.diverge(named(refused_by) if self.dialect else accepted_wrongly(config, refused_by),
                               f"the configuration {configuration_text(config)} must be refused, and the implementation accepted it", "refused", "accepted")
        if refused_by is None and not accepted:
            raise self.diverge(self.diagnosed(lambda: self.refusal_diagnosis(config), configuration=True),
                               f"the configuration {configuration_text(config)} is valid, and the implementation refused it", "accepted", "refused")
        return accepted

    def refusal_diagnosis(self, config: AdapterConfig) -> Diagnosis:
        """Which knob it refuses, asked of other configurations; where it hangs at one of those, the
        refusal stays the finding, with what it is consistent with."""
        try:
            return refused_wrongly(self.adapter, config)
        except Unshrinkable:
            return consistent(*refusal_group(config), evidence="; it hung when asked to configure another cache")

    def request(self, hash_ids: list[int], input_length: int) -> int:
        """One request, sent to both: looked up, then served, the reference's through request.lookup
        and request.serve. Until the two diverge, their hit tokens, resident counts and (at the
        state level) queues must agree; past a divergence (a KeepGoing goes on) each answers from its
        own state, and only its answers are compared. The reference's hit tokens."""
        reference = self.reference
        assert reference is not None, "configure() accepted no configuration"
        checking = not self.diverged()
        if checking:
            self.trace.append((hash_ids, input_length))  # what a divergence is diagnosed on
        before = self.adapter.snapshot() if checking and self.state_level() else None  # at the state level, the two agree here
        blocks = reference.blocks(hash_ids)
        k = lookup(reference, blocks, input_length)
        expected, actual = hit_tokens(k, self.config.block_size, input_length), self.adapter.hit_tokens(hash_ids, input_length)
        if checking:
            self.looked_up(expected, actual, before)
        serve(reference, blocks, input_length, k)
        self.access(hash_ids, input_length)
        want, got = self.served(before)
        self.compared(input_length, expected, actual, want, got)
        return expected

    def access(self, hash_ids: list[int], input_length: int) -> None:
        """PROTO-10, to the implementation: with the input length in an engine's dialect, as an
        engine caches a partial last block or not (REPLAY-DIALECT-7)."""
        if runs_whole(self.dialect):
            self.adapter.access(hash_ids, input_length=input_length)
        else:
            self.adapter.access(hash_ids)

    def state_level(self) -> bool:
        """Whether the two caches' queues are compared: at the state level, where they hold hash ids."""
        return self.adapter.level == "state" and queues_hold_hashes(self.dialect)

    def where(self) -> str:
        """The request being checked, as a divergence names it."""
        hash_ids, input_length = self.trace[-1]
        return f"request {len(self.trace)} (hash_ids {brief(hash_ids)}, input_length {input_length})"

    def looked_up(self, expected: int, actual: int, before: Snapshot | None) -> None:
        """The request looked up by both: the hit tokens must agree, and (at the state level) the
        implementation's question must change nothing (REPLAY-PREFIX-3)."""
        if actual != expected:
            self.found(self.diverge(self.diagnosed(lambda: self.hit_token_diagnosis(before, actual)),
                                    f"{self.where()}: expected {plural(expected, 'hit token')}, got {actual}", expected, actual))
        elif before is not None and self.adapter.snapshot() != before:
            self.found(self.diverge(named("REPLAY-PREFIX-3", "REPLAY-POLICY-1"), f"{self.where()}: the hit-token check changed the cache",
                                    before, self.adapter.snapshot()))
        else:
            self.hits_agreed += 1

    def served(self, before: Snapshot | None) -> tuple[int, int]:
        """The request served by both: until they diverge, the queues (at the state level, the
        first and more telling difference) and the resident counts must agree. Both resident counts."""
        reference, adapter, config = self.reference, self.adapter, self.config
        assert reference is not None, "configure() accepted no configuration"
        queues = adapter.snapshot() if before is not None and not self.diverged() else None
        if queues is not None and queues != (spec_after := snapshot_of(reference)):
            assert before is not None
            diagnosis = self.diagnosed(lambda: queue_diagnosis(config, self.trace[-1], before, spec_after, queues))
            self.found(self.diverge(diagnosis, f"after {self.where()}: {queue_difference(spec_after, queues)}", spec_after, queues))
        want, got = reference.resident_count(), adapter.resident_count()
        if want != got and not self.diverged():
            diagnosis = self.diagnosed(lambda: resident_count_diagnosis(config, queues, got) if queues is not None
                                       else results_diagnosis(adapter, config, self.trace, None, got))
            self.found(self.diverge(diagnosis, f"after {self.where()}: expected {want} resident blocks, got {got}", want, got))
        return want, got

    def found(self, divergence: Divergence) -> None:
        """Where the two disagree: the lockstep stops there."""
        raise divergence

    def diverged(self) -> bool:
        """Whether the two have disagreed yet: never, for a lockstep that stops at once."""
        return False

    def compared(self, input_length: int, expected_hit: int, actual_hit: int, expected_count: int, actual_count: int) -> None:
        """A request both have run, with the hit tokens and resident count each gave: equal, for a
        lockstep that stops at the first difference."""

    def hit_token_diagnosis(self, before: Snapshot | None, actual: int) -> Diagnosis:
        """Hit tokens that differ: read against the implementation's own queues where it shows them."""
        config, (hash_ids, input_length) = self.config, self.trace[-1]
        if before is None:
            return results_diagnosis(self.adapter, config, self.trace, actual, None)
        resident = {h for h, _ in before.small + before.main}
        return hit_token_diagnosis(config, (hash_ids, input_length), resident, before.ghost, actual) or consistent(
            *own(config.policy, ["REPLAY-PREFIX-1", "REPLAY-HIT-1", "S3-QUEUE-3"]), evidence="; its own queues give its answer")

    def resident_count(self) -> int:
        """REPLAY-RESULT-4: the implementation's, which request() has checked against the reference's."""
        return self.adapter.resident_count()
