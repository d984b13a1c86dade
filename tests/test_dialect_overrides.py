"""spec/dialects.md, section 2: S3FIFO in a dialect is the canonical rules of reference/s3fifo.py
with each decision a variation point replaces rebound (reference/dialects/s3fifo.py OVERRIDES).

What tests/test_dialects.py replays against an independent model, these tests hold to the
structure: a dialect with no variation point runs the canonical rules, result and state, and
each override rebinds the decisions it names and nothing else."""

from types import FunctionType

import pytest

from kvspec.reference import S3FIFO, TraceFile, bundled_trace_path, s3fifo
from kvspec.reference.dialects import CANONICAL, VARIATIONS, DialectS3FIFO
from kvspec.reference.dialects.global_eviction import GLOBAL_EVICTION
from kvspec.reference.dialects.s3fifo import OVERRIDES, REBUILT, built_rules
from kvspec.reference.replay import replay_request

CLAUSES = [VARIATIONS[override.variation].clause for override in OVERRIDES]


def test_S3_DIALECT_1_to_S3_DIALECT_17_a_dialect_with_no_variation_point_is_the_canonical_S3FIFO_on_a_bundled_trace() -> None:
    """DIALECT-1: the rules rebuilt with no override replay the bundled conversation trace as the
    canonical cache does, request by request, and end in the same queues."""
    records = [(r.hash_ids, r.input_length) for _, r in TraceFile(bundled_trace_path("conversation_trace.jsonl.gz")).records()][:400]
    canonical, dialect = S3FIFO.empty(40, 0.25, 3), DialectS3FIFO.empty(CANONICAL, 40, 0.25, 3)
    for hash_ids, input_length in records:
        assert replay_request(dialect, hash_ids, input_length, 512) == replay_request(canonical, hash_ids, input_length, 512)
    assert (dialect.small, dialect.main, dialect.ghost) == (canonical.small, canonical.main, canonical.ghost)
    assert list(dialect.small) == list(canonical.small) and list(dialect.main) == list(canonical.main)
    assert list(dialect.ghost) == list(canonical.ghost)


def plain(value: object) -> object:
    """A function without its contracts' wrappers; any other value as it is."""
    while hasattr(value, "__wrapped__"):
        value = value.__wrapped__  # type: ignore[attr-defined]
    return value


def same_rule(one: object, other: object) -> bool:
    """Whether two bindings of a name decide alike: the same code, or the same value."""
    one, other = plain(one), plain(other)
    if isinstance(one, FunctionType) and isinstance(other, FunctionType):
        return one.__code__ is other.__code__
    return one is other


def test_S3_DIALECT_1_to_S3_DIALECT_17_the_rules_with_no_override_are_the_canonical_functions() -> None:
    """Every name of reference/s3fifo.py decides in the canonical dialect's rules as it does there,
    and each rule rebuilt reads the others from those rules, never from the canonical module."""
    names = built_rules(())
    assert all(same_rule(names[name], value) for name, value in vars(s3fifo).items())
    assert all(names[name].__globals__ is names for name in REBUILT)


@pytest.mark.parametrize("index", range(len(OVERRIDES)), ids=CLAUSES)
def test_S3_DIALECT_each_override_rebinds_the_decisions_it_names_and_nothing_else(index: int) -> None:
    """S3-DIALECT-3, S3-DIALECT-4, S3-DIALECT-6 and S3-DIALECT-9 to S3-DIALECT-17: with one
    override, the rules differ from the canonical ones in the names it binds alone, and each
    function it binds reads the others from the dialect's rules."""
    canonical, overridden = built_rules(()), built_rules((index,))
    changed = {name for name in overridden.keys() | canonical.keys() if not same_rule(overridden.get(name), canonical.get(name))}
    assert changed == set(OVERRIDES[index].binds)
    assert all(overridden[name].__globals__ is overridden for name in changed if isinstance(overridden[name], FunctionType))


@pytest.mark.parametrize("index", range(len(OVERRIDES)), ids=CLAUSES)
def test_S3_DIALECT_each_override_replaces_a_canonical_decision_or_is_global_evictions_own(index: int) -> None:
    """S3-DIALECT-14 alone brings rules the canonical S3FIFO has not (its admission path, spec/dialects.md:
    it changes the control flow); every other override replaces a decision reference/s3fifo.py has."""
    own = set(GLOBAL_EVICTION) - set(vars(s3fifo))
    assert own == {"make_room", "eviction_step", "promote_or_forget", "append_to_main"}
    assert set(OVERRIDES[index].binds) - set(vars(s3fifo)) <= own
