"""The mutant gallery (kvspec.conformance.galleries.mutants): the canonical implementation agrees with the
reference, and every mutant of seed 000's common mistakes (spec/s3fifo.md section 8) differs
from the reference on a small hand-made trace.

An adapter is observed after each request as (hit tokens, resident count, snapshot); hit tokens
come from the prefix scan before the request's accesses, the other two after. The comments show
the queues step by step as ``S=[hash:freq, ...]`` (head first), ``M=[...]`` and ``G=[...]``.
"""

import math
import re
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.reference import snapshot_of
from kvspec.conformance.galleries import mutants
from kvspec.conformance.galleries.mutants import FACTORIES, MUTANTS, CanonicalS3FIFO, canonical
from kvspec.reference import ConfigError, ReplayConfig, TraceFile, bundled_trace_path, make_policy, replay_request

Request = tuple[list[int], int]  # (hash_ids, input_length)
Observation = tuple[int, int, Snapshot]  # (hit tokens, resident count, snapshot)
SPEC = Path(__file__).resolve().parent.parent / "spec" / "s3fifo.md"


def blocks(*requests: list[int]) -> list[Request]:
    """Requests of one-token blocks (block_size 1): hit tokens count hit blocks."""
    return [(hash_ids, len(hash_ids)) for hash_ids in requests]


def observe_reference(config: AdapterConfig, trace: list[Request]) -> list[Observation]:
    policy = make_policy(
        ReplayConfig(
            policy=config.policy,
            capacity=config.capacity,
            block_size=config.block_size,
            small_ratio=config.small_ratio,
            max_freq=config.max_freq,
        )
    )
    observed = []
    for hash_ids, input_length in trace:
        hit = replay_request(policy, hash_ids, input_length, config.block_size)
        observed.append((hit, policy.resident_count(), snapshot_of(policy)))
    return observed


def observe(adapter: CanonicalS3FIFO, config: AdapterConfig, trace: list[Request]) -> list[Observation]:
    """Drive ``adapter`` as the suite does; also checks that hit_tokens changes no queue."""
    adapter.configure(config)
    observed = []
    for hash_ids, input_length in trace:
        before = adapter.snapshot()
        hit = adapter.hit_tokens(hash_ids, input_length)
        assert adapter.snapshot() == before, "REPLAY-PREFIX-3: the scan changed the queues"
        adapter.access(hash_ids)
        observed.append((hit, adapter.resident_count(), adapter.snapshot()))
    adapter.close()
    return observed


def first_difference(expected: list[Observation], actual: list[Observation]) -> tuple[int, str] | None:
    """(request index from 0, the first field that differs there), or None if all agree."""
    assert len(expected) == len(actual)
    for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
        for field, a, b in zip(("hit_tokens", "resident_count", "snapshot"), want, got, strict=True):
            if a != b:
                return i, field
    return None


# ---------------------------------------------------------------------------------------------
# (a) The canonical implementation agrees with the reference.
# ---------------------------------------------------------------------------------------------

HAND_TRACES: dict[str, tuple[AdapterConfig, list[Request]]] = {
    # Ghost hits, S -> M promotions and second chance on a full M (small_cap 1, main_cap 2).
    "second-chance": (AdapterConfig("s3fifo", 3, 1, 0.3, 3), blocks([1], [1], [2], [3], [2], [3], [4], [1], [5], [1, 2, 3, 4, 5])),
    # Hot prefix, cold tails, repeated hashes inside one request (REPLAY-TRACE-4).
    "hot-prefix": (
        AdapterConfig("s3fifo", 10, 1, 0.1, 3),
        blocks([1, 2, 3], [1, 2, 4], [1, 2, 5, 5, 5], [1, 6, 7, 8, 9, 10, 11], [1, 2, 3], [2, 1], [12, 1, 2]),
    ),
    # Partial last blocks: block_size 4, the hits clamped to input_length.
    "partial-blocks": (AdapterConfig("s3fifo", 12, 4, 0.25, 2), [([1, 2], 5), ([1, 2, 3], 9), ([1, 2, 3], 12), ([1], 1), ([4, 1], 6)]),
    # max_freq 0: no second chance at all; ratio 0.5.
    "max-freq-0": (AdapterConfig("s3fifo", 6, 1, 0.5, 0), blocks([1, 2, 3], [1, 2, 3, 4], [5, 6, 7, 1], [1, 2], [8, 9, 10, 11])),
    # Freqs that saturate and then drain through many requeues.
    "saturate": (
        AdapterConfig("s3fifo", 8, 1, 0.25, 1),
        blocks([1, 1, 1, 2, 2], [3, 3, 4], [5, 6, 7, 8], [1, 2, 3], [9, 10, 11, 12, 13], [1, 5]),
    ),
    "lru": (AdapterConfig("lru", 3, 1), blocks([1, 2, 3], [1, 4], [2, 1], [3, 4, 1])),
    "fifo": (AdapterConfig("fifo", 3, 1), blocks([1, 2, 3], [1, 4], [2, 1], [3, 4, 1])),
}


@pytest.mark.parametrize("name", HAND_TRACES)
def test_canonical_agrees_with_the_reference_on_hand_made_traces(name: str) -> None:
    config, trace = HAND_TRACES[name]
    assert observe(canonical(), config, trace) == observe_reference(config, trace)


@pytest.fixture(scope="module")
def mooncake_300() -> list[Request]:
    """The first 300 requests of the bundled Mooncake conversation trace."""
    records = islice(TraceFile(bundled_trace_path()).records(), 300)
    return [(list(record.hash_ids), record.input_length) for _, record in records]


@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_canonical_agrees_with_the_reference_on_mooncake(mooncake_300: list[Request], policy: Any) -> None:
    """Capacity 64, block_size 512: every request's hit tokens, resident count and queues."""
    config = AdapterConfig(policy, 64, 512)
    expected = observe_reference(config, mooncake_300)
    assert first_difference(expected, observe(canonical(), config, mooncake_300)) is None
    assert sum(hit for hit, _, _ in expected) > 0, "the trace should exercise hits"


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(2, 12),
    small_ratio=st.sampled_from([0.1, 0.25, 0.3, 0.5, 0.75]),
    max_freq=st.integers(0, 3),
    block_size=st.integers(1, 3),
    requests=st.lists(st.lists(st.integers(0, 15), min_size=1, max_size=6), min_size=1, max_size=12),
    data=st.data(),
)
def test_canonical_agrees_with_the_reference_on_random_traces(
    capacity: int, small_ratio: float, max_freq: int, block_size: int, requests: list[list[int]], data: Any
) -> None:
    config = AdapterConfig("s3fifo", capacity, block_size, small_ratio, max_freq)
    trace = [(r, data.draw(st.integers((len(r) - 1) * block_size + 1, len(r) * block_size))) for r in requests]
    try:
        expected = observe_reference(config, trace)
    except ConfigError:
        with pytest.raises(ConfigRefused):
            canonical().configure(config)
        return
    assert observe(canonical(), config, trace) == expected


CONFIGS = [
    AdapterConfig("s3fifo", capacity, 1, ratio, max_freq)
    for capacity in range(1, 21)
    for ratio in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0)
    for max_freq in (0, 3)
] + [
    AdapterConfig("s3fifo", 10, 1, math.nan),
    AdapterConfig("s3fifo", 10, 1, -0.1),
    AdapterConfig("s3fifo", 10, 1, 1.5),
    AdapterConfig("s3fifo", 10, 1, 0.1, -1),
    AdapterConfig("s3fifo", 0, 1),
    AdapterConfig("s3fifo", 10, 0),
    AdapterConfig("lru", 0, 1),
    AdapterConfig("lru", 1, 1, math.nan, -1),  # LRU ignores S3FIFO's knobs (REPLAY-CONF-3)
    AdapterConfig("fifo", 1, 1, 2.0),
]


def test_canonical_refuses_exactly_what_the_reference_refuses() -> None:
    """REPLAY-CONF-1 to REPLAY-CONF-3, S3-CONF-1, S3-CONF-5, S3-CONF-6."""
    for config in CONFIGS:
        try:
            observe_reference(config, [])
            refused = False
        except ConfigError:
            refused = True
        adapter = canonical()
        if refused:
            with pytest.raises(ConfigRefused):
                adapter.configure(config)
        else:
            adapter.configure(config)


# ---------------------------------------------------------------------------------------------
# (b) Every mutant differs from the reference, on a trace derived by hand.
#
# Each case: (config, trace, where the mutant first differs: (request index from 0, field)).
# Configs: capacity 10 at 0.1 gives small_cap 1, main_cap = ghost_cap = 9; capacity 10 at 0.5
# gives 5 and 5; capacity 3 at 0.3 gives round(0.8999999999999999) = 1 and main_cap 2.
# ---------------------------------------------------------------------------------------------

C10 = AdapterConfig("s3fifo", 10, 1, 0.1, 3)
C10_HALF = AdapterConfig("s3fifo", 10, 1, 0.5, 3)

# Shared by the two second-chance mistakes (small_cap 1, main_cap 2, ghost_cap 2):
#   [1]  S=[1:0]          [1]  S=[1:1]
#   [2]  pop 1 (freq 1) -> M=[1:1]; S=[2:0]
#   [3]  pop 2 (freq 0) -> G=[2]; S=[3:0]
#   [2]  ghost hit: G=[]; M=[1:1, 2:0]
#   [3]  S=[3:1]
#   [4]  pop 3 (freq 1) -> M, which is full. Reference: head 1 has freq 1, requeued at the tail
#        as 1:0 (M=[2:0, 1:0]); head 2 has freq 0 -> G=[2]; M=[1:0, 3:1]. Plain FIFO and
#        requeue-at-head both evict the hot 1 instead: G=[1], M=[2:0, 3:1]. First difference:
#        the queues after request 6.
#   [1]  reference hits 1 block (1 is in M); the mutants hit 0 (1 is in G).
SECOND_CHANCE = blocks([1], [1], [2], [3], [2], [3], [4], [1])

MUTANT_CASES: dict[str, tuple[AdapterConfig, list[Request], tuple[int, str]]] = {
    # [1]: reference S=[1:0]; LRU holds 1 in its one queue: the queues differ at once. Then [2]:
    # reference sends 1 (freq 0) to G; LRU keeps both. [1]: reference hits 0, LRU hits 1.
    "lru-instead-of-s3fifo": (C10, blocks([1], [2], [1]), (0, "snapshot")),
    # block_size 4. ([1], 3): S=[1:0]. ([1], 3) again: k = 1, reference min(4, 3) = 3 tokens,
    # the mutant 1 * 4 = 4.
    "no-min-clamp": (AdapterConfig("s3fifo", 10, 4, 0.1, 3), [([1], 3), ([1], 3)], (1, "hit_tokens")),
    # [1]: S=[1:0]. [2]: 1 (freq 0) -> G=[1]; S=[2:0]. [1]: 1 is only in G, so the reference
    # hits 0 and the mutant, counting G as resident, 1.
    "ghost-counted-as-resident": (C10, blocks([1], [2], [1]), (2, "hit_tokens")),
    # [1, 1, 1, 1, 1]: admitted at 0, then four increments: the reference saturates at
    # max_freq 3 (S=[1:3]), the mutant reaches S=[1:4].
    "freq-not-saturated": (C10, blocks([1, 1, 1, 1, 1]), (0, "snapshot")),
    "plain-fifo-main": (AdapterConfig("s3fifo", 3, 1, 0.3, 3), SECOND_CHANCE, (6, "snapshot")),
    "requeue-at-head": (AdapterConfig("s3fifo", 3, 1, 0.3, 3), SECOND_CHANCE, (6, "snapshot")),
    # [2]: S=[2:0]. [1, 2]: 1 is not resident, so the reference's prefix is 0; the intersection
    # {1, 2} & {2} has one block, so the mutant reports 1.
    "set-intersection": (C10_HALF, blocks([2], [1, 2]), (1, "hit_tokens")),
    # [2]: S=[2:0]. [1, 2]: prefix 0 for both. The reference accesses 2, already resident after
    # the miss on 1: S=[2:1, 1:0]. The mutant skips 2 (past the prefix window): S=[2:0, 1:0].
    "freq-only-on-prefix-hits": (C10_HALF, blocks([2], [1, 2]), (1, "snapshot")),
    # [1]: S=[1:0], G=[]: both count 1. [2]: 1 -> G=[1]; S=[2:0]: the reference counts 1, the
    # mutant 2.
    "ghost-in-final-size": (C10, blocks([1], [2]), (1, "resident_count")),
    # [1]: S=[1:0]. [1]: S=[1:1]. [2]: 1 (freq 1) promoted: reference M=[1:1], mutant M=[1:0].
    "freq-reset-on-promotion": (C10, blocks([1], [1], [2]), (2, "snapshot")),
    # Capacity 15 at 0.1: round(1.5) = 2 but int(1.5) = 1. [1]: S=[1:0] for both. [2]: the
    # reference has room, S=[1:0, 2:0] (2 resident); the mutant sends 1 to G (1 resident).
    "int-small-cap": (AdapterConfig("s3fifo", 15, 1, 0.1, 3), blocks([1], [2], [1]), (1, "resident_count")),
    # [1], [2], [3]: each pushes the previous block (freq 0) out of S into G. The reference's G
    # holds 9, G=[1, 2]; the mutant's holds small_cap = 1, G=[2].
    "ghost-cap-is-small-cap": (C10, blocks([1], [2], [3]), (2, "snapshot")),
}


def test_every_mutant_has_a_discriminating_trace() -> None:
    assert set(MUTANT_CASES) == set(MUTANTS)
    assert set(FACTORIES) == set(MUTANTS)


@pytest.mark.parametrize("name", MUTANT_CASES)
def test_the_mutant_differs_from_the_reference(name: str) -> None:
    config, trace, where = MUTANT_CASES[name]
    expected = observe_reference(config, trace)
    assert observe(canonical(), config, trace) == expected, "the canonical implementation must agree on the case"
    assert first_difference(expected, observe(FACTORIES[name](), config, trace)) == where


def section_8_table() -> dict[str, str]:
    """mistake -> the clause it breaks, from spec/s3fifo.md section 8."""
    table = SPEC.read_text(encoding="utf-8").split("## 8.")[1]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", table, re.MULTILINE)
    return {mistake: clause for mistake, clause in rows if mistake not in ("mistake", "---")}


def test_the_gallery_has_one_mutant_a_mistake_of_section_8() -> None:
    table = section_8_table()
    assert sorted(cls.mistake for cls in MUTANTS.values()) == sorted(table)
    assert all(table[cls.mistake] == cls.breaks for cls in MUTANTS.values())


@pytest.mark.parametrize("name", MUTANTS)
def test_the_factory_builds_the_mutant_and_its_docstring_cites_the_clause(name: str) -> None:
    """Each mutant names the clause that spec/s3fifo.md section 8 maps its mistake to."""
    cls = MUTANTS[name]
    adapter = getattr(mutants, name.replace("-", "_"))()
    assert type(adapter) is cls and cls.name == name and adapter.level == "state"
    assert name in adapter.identity.name
    assert cls.__doc__ is not None and f"Breaks {cls.breaks}." in cls.__doc__


def test_canonical_factory() -> None:
    assert type(canonical()) is CanonicalS3FIFO


@pytest.mark.parametrize("capacity", [6, 7, 8, 9])
def test_int_small_cap_refuses_where_round_gives_1_instead_of_looping(capacity: int) -> None:
    """S3-CONF-2, S3-CONF-5: int(capacity * 0.1) = 0 here but round() gives 1; the mutant refuses
    the configuration rather than drain an empty S forever, and the canonical one accepts it."""
    config = AdapterConfig("s3fifo", capacity, 1, 0.1, 3)
    canonical().configure(config)
    with pytest.raises(ConfigRefused, match="S3-CONF-5"):
        mutants.int_small_cap().configure(config)


def test_the_published_gallery_table_has_a_row_for_every_mutant_with_its_clause() -> None:
    """docs/mutant-gallery.md comes from bench/bench_certify.py; a mutant added since must be measured."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "mutant-gallery.md").read_text(encoding="utf-8")
    for name, cls in MUTANTS.items():
        assert f"| {name} | {cls.mistake} | {cls.breaks} | " in page, name
