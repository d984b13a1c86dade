"""An implementation and the reference, driven in lockstep: each request goes to both, and they
must agree after every one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

The certification machine draws the configurations and requests; `kvspec replay --adapter`
takes them from a trace file, with a Lockstep as the replay's Server. Both stop at the first
Divergence; `kvspec replay --keep-going` goes on past it (conformance/certification/keep_going.py).
"""

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

from kvspec.adapters.benefit import BenefitState
from kvspec.adapters.interface import Adapter, AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.protocol import to_double
from kvspec.adapters.reference import snapshot_of
from kvspec.adapters.wire import cap_json, decision_json, state_json
from kvspec.conformance.certification.diagnosis import (
    Diagnosis,
    accepted_wrongly,
    consistent,
    eviction_clauses,
    hit_token_diagnosis,
    named,
    own,
    queue_diagnosis,
    queue_difference,
    refusal_group,
    refused_wrongly,
    resident_count_diagnosis,
    results_diagnosis,
)
from kvspec.conformance.core.output import plural
from kvspec.reference import ConfigError, ReplayConfig, make_policy
from kvspec.reference.benefit import CapRepair, Decision, Victims
from kvspec.reference.dialects import CANONICAL, VARIATIONS, Dialect, in_catalogue_order, queues_hold_hashes, replaced_clauses, runs_whole

CONFIG_CLAUSES = ("REPLAY-CONF-1", "REPLAY-CONF-2", "REPLAY-CONF-3")
S3_CONFIG_CLAUSES = ("S3-CONF-1", "S3-CONF-2", "S3-CONF-3", "S3-CONF-4", "S3-CONF-5", "S3-CONF-6")
from kvspec.reference.replay import hit_tokens
from kvspec.reference.request import Policy, lookup, serve

T = TypeVar("T")


class Divergence(AssertionError):
    """The implementation and the reference disagree. The message starts with the clauses (the
    diagnosis first); the fields carry what a report needs: the request (1-based; 0 for the
    configuration), expected and actual values, the configuration, and the trace up to and
    including that request. ``consistent_with`` holds those of ``clauses`` that the evidence is
    only consistent with (a break of each would explain the difference, and the implementation's
    own state does not single one out); the others are shown broken on it."""

    def __init__(self, clauses: list[str], detail: str, *, request: int, expected: object, actual: object,
                 config: AdapterConfig | None, trace: list[tuple[list[int], int]], benefit: dict[str, Any] | None = None,
                 consistent_with: tuple[str, ...] = ()) -> None:
        super().__init__(f"{', '.join(clauses)}: {qualifier(clauses, consistent_with)}{detail}")
        self.clauses = tuple(clauses)
        self.consistent_with = tuple(c for c in clauses if c in consistent_with)
        self.request = request
        self.expected = shown(expected)
        self.actual = shown(actual)
        self.config = config
        self.trace = list(trace)
        self.benefit = benefit  # the benefit policy's: its config and operations, as protocol messages (PROTO-20 to PROTO-27)


class Unshrinkable(BaseException):
    """A fault whose every replay would wait out a deadline: ends the Hypothesis run unshrunk.
    A BaseException, so that Hypothesis lets it through instead of shrinking it (faults.py)."""

    def __init__(self, fault: Divergence) -> None:
        super().__init__(str(fault))
        self.fault = fault


def configuration_fields(config: AdapterConfig) -> dict[str, str | int | float]:
    """PROTO-7's fields; a ratio JSON has no number for (in-process only) as PROTO-19's strings."""
    return {**asdict(config), "small_ratio": to_double(config.small_ratio)}


def configuration_text(config: AdapterConfig) -> str:
    """The configuration as the configure request carries it (PROTO-7)."""
    return json.dumps(configuration_fields(config))


def shown(value: object) -> str:
    """A value as the protocol's JSON writes it (spec/adapter-protocol.md): a configuration, a
    snapshot, a benefit reply or state, a count; a tuple of them as a list."""
    if isinstance(value, AdapterConfig):
        return configuration_text(value)
    if isinstance(value, Snapshot):
        return json.dumps({"small": [list(e) for e in value.small], "main": [list(e) for e in value.main], "ghost": list(value.ghost)})
    if isinstance(value, BenefitState):
        return json.dumps(state_json(value))
    if isinstance(value, Decision):
        return json.dumps(decision_json(value))
    if isinstance(value, CapRepair):
        return json.dumps(cap_json(value))
    if isinstance(value, Victims):
        return json.dumps({"keys": list(value.keys), "freed": value.freed})
    if isinstance(value, tuple | list):
        return f"[{', '.join(map(shown, value))}]"
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def alternatives(clauses: list[str]) -> str:
    return clauses[0] if len(clauses) == 1 else f"{', '.join(clauses[:-1])} or {clauses[-1]}"


def qualifier(clauses: list[str], consistent_with: tuple[str, ...]) -> str:
    """How sure the diagnosis is, after the clauses: nothing when each is shown broken."""
    shown = [c for c in clauses if c not in consistent_with]
    only = [c for c in clauses if c in consistent_with]
    if not only:
        return ""
    if not shown:
        return f"consistent with {'it' if len(only) == 1 else 'either' if len(only) == 2 else 'any'}; "
    return f"{', '.join(shown)} broken, consistent with {alternatives(only)}; "


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
        canonical = [c for c in (*CONFIG_CLAUSES, *(S3_CONFIG_CLAUSES if policy == "s3fifo" else ())) if c not in replaced]
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
