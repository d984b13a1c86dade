"""The engine replay (spec/dialects.md, section 7; reference/dialects/engine.py): a test or more for
each of REPLAY-DIALECT-4 to REPLAY-DIALECT-8, on LRU and FIFO, with the catalogue's refusals.

Expected values were worked out by hand from the clauses' text; the docstrings show the queue step
by step, head first, a request written [ids] L=input_length, a block under path-ids written as its
path, (1,2) = the block of id 2 under id 1, and a partial block's slot as s. Then the reference is
replayed in lockstep with tests/engine_model.py, a model written from the spec's text alone, in
every combination of the engine-replay points (with and without path-ids, and with LRU's own
variation points), and the model is certified as an implementation under test against engine
dialects, in process and over the adapter protocol (PROTO-10: access carries input_length under
full-blocks-only).
"""

import json
import os
import random
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest
from engine_model import PINNED_BY_PATH, VLLM_LIKE, DeafToInputLength, EngineModel, EngineModelAdapter, capacity_floor
from jsonschema import Draft202012Validator
from test_dialects_baselines import paths, queue

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig
from kvspec.adapters.process import ProcessAdapter
from kvspec.adapters.protocol import AccessRequest
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.findings.faults import Fault
from kvspec.reference import ConfigError, ReplayConfig, TraceRecord, make_policy, replay, replay_request
from kvspec.reference.dialects import dialect_for

TESTS = Path(__file__).resolve().parent
ACCESS_SCHEMA = TESTS.parent / "spec" / "schemas" / "adapter" / "access-request.schema.json"
Request = tuple[list[int], int]  # hash_ids, input_length


def engine(policy: str, capacity: int, block_size: int, *variations: str):  # type: ignore[no-untyped-def]
    """An empty cache of ``policy`` in the dialect of ``variations`` (an EngineReplay when one is the engine replay's)."""
    return make_policy(ReplayConfig(policy, capacity, block_size, dialect=dialect_for(policy, variations=variations)))  # type: ignore[arg-type]


def served(cache, *requests: Request, block_size: int | None = None) -> list[int]:  # type: ignore[no-untyped-def]
    """Each request's hit tokens, replayed in order (at the engine replay's block size, or ``block_size`` for a canonical cache)."""
    size = block_size or cache.block_size
    return [replay_request(cache, hash_ids, input_length, size) for hash_ids, input_length in requests]


def order(cache) -> list[object]:  # type: ignore[no-untyped-def]
    """The queue the cache runs each request on, head first; under path-ids each block as its path."""
    inner = getattr(cache, "cache", cache)  # an EngineReplay's queue is its LRU's or FIFO's
    return paths(inner) if "path-ids" in getattr(inner, "dialect", ()) else queue(inner)


def records(block_size: int, *requests: Request) -> list[tuple[int, TraceRecord]]:
    return [(n, TraceRecord(timestamp=0, input_length=length, output_length=0, hash_ids=ids)) for n, (ids, length) in enumerate(requests, 1)]


# REPLAY-DIALECT-4: hit-cap-last-token


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_4_a_request_whose_every_block_is_resident_hits_all_but_its_last(policy: str) -> None:
    """REPLAY-DIALECT-4, block size 1, capacity 4: [1,2,3] L=3 hits 0: [1,2,3]; [1,2,3] L=3: k = 3,
    capped at ⌊(3−1)/1⌋ = 2: 2 tokens (canonically 3); [1,2,9] L=3: k = 2, under the cap: 2; a
    request of one block, [7] L=1 twice, hits ⌊0/1⌋ = 0 both times (canonically 0, then 1).
    Block size 4: [1,2,3] L=9, then L=9 and L=12: k = 3 capped at ⌊8/4⌋ = ⌊11/4⌋ = 2: 8 tokens each
    (canonically min(12, 9) = 9 and 12)."""
    capped = engine(policy, 4, 1, "hit-cap-last-token")
    assert served(capped, ([1, 2, 3], 3), ([1, 2, 3], 3), ([1, 2, 9], 3)) == [0, 2, 2]
    assert served(engine(policy, 4, 1, "hit-cap-last-token"), ([7], 1), ([7], 1)) == [0, 0]
    assert served(engine(policy, 4, 1), ([1, 2, 3], 3), ([1, 2, 3], 3), ([7], 1), ([7], 1), block_size=1) == [0, 3, 0, 1]
    assert served(engine(policy, 4, 4, "hit-cap-last-token"), ([1, 2, 3], 9), ([1, 2, 3], 9), ([1, 2, 3], 12)) == [0, 8, 8]
    assert served(engine(policy, 4, 4), ([1, 2, 3], 9), ([1, 2, 3], 9), ([1, 2, 3], 12), block_size=4) == [0, 9, 12]


def test_REPLAY_DIALECT_4_lru_accesses_the_capped_block() -> None:
    """REPLAY-DIALECT-4 caps the hit, not the accesses: LRU, capacity 4: [1,2,3]: [1,2,3]; [4]:
    [1,2,3,4]; [1,2,3] hits 2, and all three are accessed: [4,1,2,3] (had the capped 3 not been,
    [3,4,1,2]); so [5] evicts 4: [1,2,3,5]."""
    lru = engine("lru", 4, 1, "hit-cap-last-token")
    assert served(lru, ([1, 2, 3], 3), ([4], 1), ([1, 2, 3], 3)) == [0, 0, 2]
    assert order(lru) == [4, 1, 2, 3]
    served(lru, ([5], 1))
    assert order(lru) == [1, 2, 3, 5]


def test_REPLAY_DIALECT_4_fifo_finds_the_capped_block_resident() -> None:
    """REPLAY-DIALECT-4, FIFO, capacity 3: [1,2,3]: [1,2,3]; [1,2,3] hits 2, and its capped 3 is
    accessed as a hit (FIFO-ACCESS-1), not admitted again: [1,2,3], 3 resident."""
    fifo = engine("fifo", 3, 1, "hit-cap-last-token")
    assert served(fifo, ([1, 2, 3], 3), ([1, 2, 3], 3)) == [0, 2]
    assert order(fifo) == [1, 2, 3] and fifo.resident_count() == 3


# REPLAY-DIALECT-5: too-long-skipped


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_5_a_request_longer_than_the_cache_hits_0_and_changes_nothing(policy: str) -> None:
    """REPLAY-DIALECT-5, capacity 2: [1]: [1]; [2]: [1,2]; [2,1,5], 3 blocks > 2, is not run: it
    hits 0 though its prefix 2,1 is resident (canonically 2), and the queue is still [1,2] (under
    LRU, run, it would have put 2 and 1 in another order); [2,1], 2 blocks, runs: it hits 2."""
    skipping = engine(policy, 2, 1, "too-long-skipped")
    assert served(skipping, ([1], 1), ([2], 1), ([2, 1, 5], 3)) == [0, 0, 0]
    assert order(skipping) == [1, 2] and skipping.resident_count() == 2
    assert served(skipping, ([2, 1], 2)) == [2]
    assert served(engine(policy, 2, 1), ([1], 1), ([2], 1), ([2, 1, 5], 3), block_size=1) == [0, 0, 2]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_5_a_partial_last_block_counts(policy: str) -> None:
    """REPLAY-DIALECT-5 counts the request's blocks, its partial last one too: capacity 2, block
    size 2, with full-blocks-only: [1,2,3] L=5 has 3 blocks > 2 and is not run: nothing is
    resident. Without too-long-skipped it caches its 2 full blocks: [1,2]."""
    skipping = engine(policy, 2, 2, "too-long-skipped", "full-blocks-only")
    assert served(skipping, ([1, 2, 3], 5)) == [0] and skipping.resident_count() == 0
    running = engine(policy, 2, 2, "full-blocks-only")
    served(running, ([1, 2, 3], 5))
    assert order(running) == [1, 2]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_5_a_replay_of_requests_none_of_which_fits(policy: str) -> None:
    """REPLAY-DIALECT-5, DIALECT-6: capacity 1, [1,2] twice: neither runs: 0 hit tokens, 0 resident;
    the result names its dialect."""
    result = replay(records(1, ([1, 2], 2), ([1, 2], 2)), ReplayConfig(policy, 1, 1, dialect=frozenset({"too-long-skipped"})))  # type: ignore[arg-type]
    assert (result.total_hit_tokens, result.final_cache_blocks, result.dialect) == (0, 0, ["too-long-skipped"])


# REPLAY-DIALECT-6: pin-request


def test_REPLAY_DIALECT_6_fifo_keeps_the_hits_at_its_head() -> None:
    """REPLAY-DIALECT-6, FIFO, capacity 3: [1,2]: [1,2]; [3]: [1,2,3]; [1,2,4]: 1 and 2 hit and are
    pinned; 4 finds the queue full, and the candidate nearest the head is 3: [1,2,4] (canonically
    the head 1 goes: [2,3,4]). The pins end with the request: [5] evicts the head, 1: [2,4,5]."""
    pinned = engine("fifo", 3, 1, "pin-request")
    assert served(pinned, ([1, 2], 2), ([3], 1), ([1, 2, 4], 3)) == [0, 0, 2]
    assert order(pinned) == [1, 2, 4]
    served(pinned, ([5], 1))
    assert order(pinned) == [2, 4, 5]
    canonical = engine("fifo", 3, 1)
    served(canonical, ([1, 2], 2), ([3], 1), ([1, 2, 4], 3), block_size=1)
    assert order(canonical) == [2, 3, 4]


def test_REPLAY_DIALECT_6_only_a_block_the_request_has_reached_is_pinned() -> None:
    """REPLAY-DIALECT-6, FIFO, capacity 3: [2], [1], [7]: [2,1,7]; [1,9,2] hits 1 block: 1 hits and
    is pinned; 9 evicts the oldest unpinned, 2, which the request has not reached yet: [1,7,9]; 2
    then evicts 7: [1,9,2]."""
    pinned = engine("fifo", 3, 1, "pin-request")
    assert served(pinned, ([2], 1), ([1], 1), ([7], 1), ([1, 9, 2], 3)) == [0, 0, 0, 1]
    assert order(pinned) == [1, 9, 2]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_6_a_request_longer_than_the_cache_caches_the_blocks_that_fit(policy: str) -> None:
    """REPLAY-DIALECT-6 without too-long-skipped, capacity 2: [1,2,3]: 1 and 2 are admitted and
    pinned; 3 finds no candidate and is not admitted: [1,2] (canonically 3 evicts 1: [2,3]). Again,
    [1,2,3] hits 2 and leaves [1,2]."""
    pinned = engine(policy, 2, 1, "pin-request")
    assert served(pinned, ([1, 2, 3], 3)) == [0] and order(pinned) == [1, 2]
    assert served(pinned, ([1, 2, 3], 3)) == [2] and order(pinned) == [1, 2]
    canonical = engine(policy, 2, 1)
    served(canonical, ([1, 2, 3], 3), block_size=1)
    assert order(canonical) == [2, 3]


def test_REPLAY_DIALECT_6_lru_keeps_its_hits_when_the_request_fills_the_cache() -> None:
    """REPLAY-DIALECT-6, LRU, capacity 2: [1,2]: [1,2]; [1,2,3]: 1, 2 hit and are pinned, 3 finds
    no candidate: [1,2], and a probe of [1,2,3] hits 2. Canonical LRU: [1,2,3] leaves [2,3]."""
    pinned = engine("lru", 2, 1, "pin-request")
    assert served(pinned, ([1, 2], 2), ([1, 2, 3], 3)) == [0, 2] and order(pinned) == [1, 2]
    canonical = engine("lru", 2, 1)
    served(canonical, ([1, 2], 2), ([1, 2, 3], 3), block_size=1)
    assert order(canonical) == [2, 3]


def test_REPLAY_DIALECT_6_with_lru_evict_leaves_a_pinned_leaf_is_no_candidate() -> None:
    """REPLAY-DIALECT-6 with LRU-DIALECT-1, capacity 2: [1,2,3]: (1), (1,2) admitted and pinned;
    (1,2,3): the only leaf, (1,2), is pinned and (1) has a resident child: no candidate, not
    admitted: [(1),(1,2)]. Without the pins the leaf (1,2) goes: [(1),(1,2,3)]."""
    pinned = engine("lru", 2, 1, "path-ids", "lru-evict-leaves", "pin-request")
    served(pinned, ([1, 2, 3], 3))
    assert order(pinned) == [(1,), (1, 2)]
    leaves = engine("lru", 2, 1, "path-ids", "lru-evict-leaves")
    served(leaves, ([1, 2, 3], 3), block_size=1)
    assert order(leaves) == [(1,), (1, 2, 3)]


# REPLAY-DIALECT-7: full-blocks-only


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_7_a_partial_last_block_is_never_looked_up_nor_cached(policy: str) -> None:
    """REPLAY-DIALECT-7, block size 2, capacity 4: [1,2,3] L=5 (5 < 3×2: 3 is partial) hits 0 and
    caches 1 and 2 only: [1,2]; [1,2,3] L=6 (whole) hits 2 blocks, 4 tokens, and caches 3:
    [1,2,3]; [1,2,3] L=5 again: the scan ends before its partial 3, resident as it is: k = 2, 4
    tokens (canonically k = 3, min(6, 5) = 5); and only 1 and 2 are accessed: FIFO's queue is
    still [1,2,3], LRU's [3,1,2]."""
    full_only = engine(policy, 4, 2, "full-blocks-only")
    assert served(full_only, ([1, 2, 3], 5)) == [0] and order(full_only) == [1, 2]
    assert served(full_only, ([1, 2, 3], 6), ([1, 2, 3], 5)) == [4, 4]
    assert order(full_only) == ([1, 2, 3] if policy == "fifo" else [3, 1, 2])
    assert served(engine(policy, 4, 2), ([1, 2, 3], 6), ([1, 2, 3], 5), block_size=2) == [0, 5]


def test_REPLAY_DIALECT_7_lru_does_not_access_the_partial_block() -> None:
    """REPLAY-DIALECT-7, LRU, block size 2, capacity 4: [1,2,3] L=6: [1,2,3]; [4] L=2: [1,2,3,4];
    [1,2,3] L=5 accesses 1 and 2 only: [3,4,1,2] (canonically [4,1,2,3]); [5] L=2 evicts 3: [4,1,2,5]."""
    lru = engine("lru", 4, 2, "full-blocks-only")
    served(lru, ([1, 2, 3], 6), ([4], 2), ([1, 2, 3], 5))
    assert order(lru) == [3, 4, 1, 2]
    served(lru, ([5], 2))
    assert order(lru) == [4, 1, 2, 5]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_7_a_request_of_one_partial_block_changes_nothing_and_a_full_one_is_cached(policy: str) -> None:
    """REPLAY-DIALECT-7, block size 2, capacity 2: [7] L=1: nothing is cached; [7] L=2 hits 0
    and caches 7: [7]; [1,2] L=4, both whole: [7,1] then, full, 2 evicts the head 7 (LRU's least
    recent, FIFO's oldest): [1,2]."""
    full_only = engine(policy, 2, 2, "full-blocks-only")
    assert served(full_only, ([7], 1)) == [0] and full_only.resident_count() == 0
    assert served(full_only, ([7], 2)) == [0] and order(full_only) == [7]
    served(full_only, ([1, 2], 4))
    assert order(full_only) == [1, 2]


def test_REPLAY_DIALECT_7_a_repeated_id_as_the_partial_block_is_not_looked_up() -> None:
    """REPLAY-DIALECT-7 under REPLAY-TRACE-4 (hash ids), FIFO, block size 2: [1,1] L=3 caches its
    first block, 1: [1]; [1,1] L=3 again: both positions name the resident block 1, but the scan
    ends before the partial one: k = 1, 2 tokens (canonically k = 2, min(4, 3) = 3)."""
    fifo = engine("fifo", 4, 2, "full-blocks-only")
    assert served(fifo, ([1, 1], 3), ([1, 1], 3)) == [0, 2] and order(fifo) == [1]
    assert served(engine("fifo", 4, 2), ([1, 1], 3), ([1, 1], 3), block_size=2) == [0, 3]


# REPLAY-DIALECT-8: partial-block-slot

SLOT = ("path-ids", "full-blocks-only", "partial-block-slot")


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_8_the_slot_evicts_one_block_when_full_and_is_freed(policy: str) -> None:
    """REPLAY-DIALECT-8, block size 2, capacity 2: [1] L=2: [(1)]; [5] L=2: [(1),(5)]; [9] L=1, one
    partial block: its slot finds the queue full and evicts the head (1) (least recent, oldest):
    [(5),s]; the request ends and s is freed: [(5)], 2 resident before, 1 evicted, 1 after. With
    full-blocks-only alone nothing is evicted: [(1),(5)]. At capacity 4, [1] L=2, [9] L=1: the
    slot fits, so nothing is evicted: [(1)]."""
    slotted = engine(policy, 2, 2, *SLOT)
    served(slotted, ([1], 2), ([5], 2), ([9], 1))
    assert order(slotted) == [(5,)] and slotted.resident_count() == 1
    unslotted = engine(policy, 2, 2, "path-ids", "full-blocks-only")
    served(unslotted, ([1], 2), ([5], 2), ([9], 1))
    assert order(unslotted) == [(1,), (5,)]
    roomy = engine(policy, 4, 2, *SLOT)
    served(roomy, ([1], 2), ([9], 1))
    assert order(roomy) == [(1,)]


@pytest.mark.parametrize(("policy", "pins", "left"), [("lru", (), [(1,)]), ("fifo", (), [(5,)]), ("fifo", ("pin-request",), [(1,)])])
def test_REPLAY_DIALECT_8_the_slot_is_taken_after_the_requests_other_accesses(policy: str, pins: tuple[str, ...], left: list[object]) -> None:
    """REPLAY-DIALECT-8, block size 2, capacity 2: [1] L=2, [5] L=2: [(1),(5)]; [1,2] L=3 hits (1),
    2 tokens, then its slot takes a slot. LRU: the hit made (1) the most recent, [(5),(1)], so the
    slot evicts (5): [(1),s], then [(1)]. FIFO: the hit leaves (1) at the head, and the slot
    evicts it: [(5),s], then [(5)]; with pin-request (1) is pinned and (5) goes: [(1)]."""
    cache = engine(policy, 2, 2, *SLOT, *pins)
    assert served(cache, ([1], 2), ([5], 2), ([1, 2], 3)) == [0, 0, 2]
    assert order(cache) == left


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_8_a_slot_among_pinned_blocks_evicts_nothing(policy: str) -> None:
    """REPLAY-DIALECT-8 with REPLAY-DIALECT-6, block size 2, capacity 2: [1,2] L=4: [(1),(1,2)];
    [1,2,3] L=5: (1) and (1,2) hit and are pinned; the slot finds no candidate and takes none:
    [(1),(1,2)]. Without the pins the slot evicts (1) (LRU's least recent after the two hits,
    FIFO's head): [(1,2)]."""
    pinned = engine(policy, 2, 2, *SLOT, "pin-request")
    assert served(pinned, ([1, 2], 4), ([1, 2, 3], 5)) == [0, 4]
    assert order(pinned) == [(1,), (1, 2)]
    unpinned = engine(policy, 2, 2, *SLOT)
    served(unpinned, ([1, 2], 4), ([1, 2, 3], 5))
    assert order(unpinned) == [(1, 2)]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_8_no_later_request_finds_the_slot(policy: str) -> None:
    """REPLAY-DIALECT-8, block size 2, capacity 4: [1,2] L=3 caches (1), and its slot is freed: 1
    resident; [1,2] L=4 hits (1) only, 2 tokens (the slot was never (1,2)), and caches (1,2):
    [(1),(1,2)]. A replay's final_cache_blocks counts no slot: [1] L=2, [9] L=1 at capacity 2 end
    with 1 block resident."""
    cache = engine(policy, 4, 2, *SLOT)
    served(cache, ([1, 2], 3))
    assert cache.resident_count() == 1
    assert served(cache, ([1, 2], 4)) == [2] and order(cache) == [(1,), (1, 2)]
    result = replay(records(2, ([1], 2), ([9], 1)), ReplayConfig(policy, 2, 2, dialect=dialect_for(policy, variations=SLOT)))  # type: ignore[arg-type]
    assert result.final_cache_blocks == 1


# The catalogue: DIALECT-2, DIALECT-3

ENGINE_POINTS = ("hit-cap-last-token", "too-long-skipped", "pin-request", "full-blocks-only", "partial-block-slot")


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_DIALECT_3_partial_block_slot_without_full_blocks_only_or_path_ids_is_refused(policy: str) -> None:
    """REPLAY-DIALECT-8 requires full-blocks-only and path-ids: a set without either is refused,
    named or built directly; with both it is a dialect."""
    for variations in (("partial-block-slot",), ("partial-block-slot", "full-blocks-only"), ("partial-block-slot", "path-ids")):
        with pytest.raises(ConfigError, match="DIALECT-3"):
            dialect_for(policy, variations=variations)
        with pytest.raises(ConfigError, match="DIALECT-3"):
            make_policy(ReplayConfig(policy, 4, 2, dialect=frozenset(variations)))  # type: ignore[arg-type]
    assert served(engine(policy, 4, 2, *SLOT), ([1, 2], 3)) == [0]


@pytest.mark.parametrize("point", ENGINE_POINTS)
def test_DIALECT_2_the_engine_replay_points_are_lru_and_fifo_points_alone(point: str) -> None:
    """REPLAY-DIALECT-4 to REPLAY-DIALECT-7 need nothing else (each makes a dialect of LRU and FIFO
    alone); none is S3FIFO's."""
    alone = (point,) if point != "partial-block-slot" else SLOT
    for policy in ("lru", "fifo"):
        assert dialect_for(policy, variations=alone) == frozenset(alone)
    with pytest.raises(ConfigError, match="DIALECT-2"):
        dialect_for("s3fifo", variations=(point,))


# Every engine dialect of LRU and FIFO against the model


def engine_dialects(policy: str) -> list[frozenset[str]]:
    """Every set of the engine-replay points (one at least), with and without path-ids, and under
    path-ids with every set of LRU's own points; as the spec's requires allow (partial-block-slot:
    full-blocks-only and path-ids; LRU's: path-ids)."""
    lru_points = ("lru-evict-leaves", "lru-protect-request", "lru-admit-under-parent") if policy == "lru" else ()
    chosen = []
    for points in (set(c) for size in range(1, 6) for c in combinations(ENGINE_POINTS, size)):
        if "partial-block-slot" in points and "full-blocks-only" not in points:
            continue
        if "partial-block-slot" not in points:
            chosen.append(frozenset(points))
        chosen += [frozenset({*points, "path-ids", *c}) for size in range(len(lru_points) + 1) for c in combinations(lru_points, size)]
    return chosen


def random_requests(draw: random.Random, block_size: int) -> list[Request]:
    """Up to 8 requests of 1 to 5 ids from a pool of 2 to 4, each with an input_length REPLAY-TRACE-3 allows, its last block often partial."""
    pool = draw.randint(2, 4)
    requests = []
    for _ in range(draw.randint(1, 8)):
        ids = [draw.randrange(pool) for _ in range(draw.randint(1, 5))]
        requests.append((ids, (len(ids) - 1) * block_size + draw.randint(1, block_size)))
    return requests


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_4_to_8_every_engine_dialect_agrees_with_the_model(policy: str) -> None:
    """REPLAY-DIALECT-4 to REPLAY-DIALECT-8 in every combination, with and without path-ids, LRU's
    with every set of LRU-DIALECT-1 to LRU-DIALECT-3 (199 dialects of LRU, 38 of FIFO), capacities
    1 to 6 (0 to 6 with capacity-0-empty, which some get), block sizes 1 to 3: each request's hit
    tokens, the queue after it, head first, and its resident count. The draws reach what the
    clauses decide: capped hits, skipped requests, admissions with every block pinned, partial
    blocks and their slots; and REPLAY-DIALECT-6's remark holds: with too-long-skipped, no
    admission ever finds every block pinned."""
    draw = random.Random(16)
    dialects = engine_dialects(policy)
    assert len(dialects) == (199 if policy == "lru" else 38)
    reached = {"capped": 0, "skipped": 0, "starved": 0, "slot evictions": 0}
    for dialect in dialects:
        if draw.random() < 0.2:
            dialect |= {"capacity-0-empty"}
        for _ in range(4):
            block_size = draw.randint(1, 3)
            capacity = draw.randint(max(capacity_floor(dialect), 0), 6)
            reference = make_policy(ReplayConfig(policy, capacity, block_size, dialect=dialect))  # type: ignore[arg-type]
            model = EngineModel(policy, capacity, block_size, dialect)
            for hash_ids, input_length in random_requests(draw, block_size):
                k = model.hit_blocks(hash_ids, input_length)
                expected = min(k * block_size, input_length)
                assert replay_request(reference, hash_ids, input_length, block_size) == expected, (sorted(dialect), capacity, hash_ids)
                reached["capped"] += "hit-cap-last-token" in dialect and k == len(hash_ids) - 1 and all(
                    b in model.stamp for b in model.blocks(hash_ids))
                reached["skipped"] += model.skipped(len(hash_ids)) and capacity > 0
                model.run(hash_ids, input_length)
                assert order(reference) == model.queue(), (sorted(dialect), capacity, block_size)
                assert reference.resident_count() == len(model.stamp)
            reached["starved"] += model.starved
            reached["slot evictions"] += model.slot_evictions
            assert not ({"too-long-skipped", "pin-request"} <= dialect and model.starved)
    assert min(reached.values()) >= 20, reached


# Through the certification machine, and over the protocol (PROTO-10)


CERTIFY_APART = """
import json
from engine_model import FULL_BLOCKS_BY_HASH, VLLM_LIKE, EngineModelAdapter
from kvspec.conformance.certification.certify import certify_policy
for model, policy, dialect in [(VLLM_LIKE, "lru", VLLM_LIKE), (FULL_BLOCKS_BY_HASH, "fifo", FULL_BLOCKS_BY_HASH),
                               (VLLM_LIKE - {"partial-block-slot"}, "fifo", VLLM_LIKE)]:
    outcome = certify_policy(EngineModelAdapter(model), policy, dialect=dialect)
    first = outcome.findings[0].divergence if outcome.findings else None
    print(json.dumps([outcome.conforms, outcome.examples, outcome.message, first and (first.trace, first.config.block_size)]))
"""


def test_REPLAY_DIALECT_7_the_model_certifies_against_engine_dialects() -> None:
    """DIALECT-7, PROTO-10: certified against a dialect with full-blocks-only, the model (told each
    request's input_length with its access) conforms: vLLM's engine-replay points with path-ids, LRU,
    at the results level; full-blocks-only, hit-cap-last-token and pin-request on hash ids, FIFO, at
    the state level, where every queue is compared. The model without partial-block-slot does not
    conform to vLLM's points: the machine finds a request with a partial last block whose slot
    evicts, and a resident count that differs after it. In a Python of its own, without typeguard's
    checks and the reference's contracts (which make an in-process certification several times
    slower and do not change what it draws; the lockstep above runs the reference with them), as
    tests/support.py's certify_report does."""
    run = subprocess.run([sys.executable, "-c", CERTIFY_APART], cwd=TESTS, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    (vllm, vllm_examples, message, _), (by_hash, by_hash_examples, _, _), (slotless, _, failure, (trace, block_size)) = map(
        json.loads, run.stdout.splitlines())
    assert vllm and by_hash, message
    assert min(vllm_examples, by_hash_examples) >= 100
    ids, input_length = trace[-1]
    assert not slotless and "resident blocks" in failure and input_length < len(ids) * block_size, failure


def test_PROTO_10_an_access_that_takes_no_input_length_is_the_implementations_failure() -> None:
    """PROTO-10, PROTO-29: in a dialect of the engine replay the suite sends input_length; an
    adapter whose access takes none raises, and that is a Fault of the implementation's at its
    first request, not an error of kvspec's. In a block-by-block dialect, the same adapter is never
    sent one, and agrees: path-ids alone, capacity 3, block size 2: [1,2] L=3 caches (1), (1,2),
    hits 0; [1,2] L=4: k = 2: 4 tokens; [1,2,3] L=6: k = 2: 4 tokens."""
    deaf = Implementation.in_process(lambda: DeafToInputLength(VLLM_LIKE))  # not an Adapter by its type, as it is meant to be
    outcome = certify_policy(deaf, "lru", dialect=VLLM_LIKE)
    (finding,) = outcome.findings
    assert isinstance(finding.divergence, Fault) and finding.divergence.clauses == ("PROTO-29",), finding.message
    assert "access" in finding.message and "input_length" in finding.message
    block_by_block = frozenset({"path-ids"})
    lockstep = Lockstep(Implementation.in_process(lambda: DeafToInputLength(block_by_block)).start(), AdapterConfig("lru", 3, 2), block_by_block)
    assert lockstep.configure()
    assert [lockstep.request(ids, length) for ids, length in [([1, 2], 3), ([1, 2], 4), ([1, 2, 3], 6)]] == [0, 4, 4]


@pytest.mark.parametrize("dialect", [VLLM_LIKE, frozenset({"path-ids", "hit-cap-last-token", "pin-request"}), frozenset({"path-ids"})])
def test_PROTO_10_input_length_goes_with_the_access_only_in_the_engine_replay(dialect: frozenset[str]) -> None:
    """PROTO-10: the lockstep hands the adapter each request's input_length with its access in a
    dialect of the engine replay (any of REPLAY-DIALECT-4 to REPLAY-DIALECT-9), and never in a
    block-by-block one."""
    adapter = EngineModelAdapter(dialect)
    lockstep = Lockstep(Implementation.of(adapter).start(), AdapterConfig("fifo", 3, 2), dialect)
    assert lockstep.configure()
    requests = [([1, 2], 3), ([1, 2], 4), ([5], 1)]
    for ids, length in requests:
        lockstep.request(ids, length)
    sent = [length for _, length in requests] if dialect != {"path-ids"} else [None] * len(requests)
    assert adapter.accessed_with == sent


def test_PROTO_10_the_access_message_carries_input_length_only_when_given() -> None:
    """PROTO-10, PROTO-16: an access as the process adapter writes it has no input_length unless
    one is given; both forms match the access-request schema."""
    plain = json.loads(AccessRequest(cmd="access", seq=3, hash_ids=[1, 2]).model_dump_json(exclude_unset=True))
    given = json.loads(AccessRequest(cmd="access", seq=3, hash_ids=[1, 2], input_length=3).model_dump_json(exclude_unset=True))
    assert plain == {"cmd": "access", "seq": 3, "hash_ids": [1, 2]}
    assert given == {**plain, "input_length": 3}
    validator = Draft202012Validator(json.loads(ACCESS_SCHEMA.read_text()))
    assert validator.is_valid(plain) and validator.is_valid(given) and not validator.is_valid({**plain, "input_length": 0})


@pytest.mark.parametrize("dialect", [VLLM_LIKE, PINNED_BY_PATH])
def test_PROTO_10_the_model_served_over_the_protocol_is_told_input_length(dialect: frozenset[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """PROTO-10, PROTO-17: the model behind `python -m kvspec.adapters.serve` agrees in lockstep,
    block size 2, capacity 3, each access line on the wire carrying input_length (a dialect of the
    engine replay, with full-blocks-only or without). vLLM's points: [1,2] L=3 caches (1) only (its slot is
    freed), which it could not tell without L (at L=4 it would cache (1,2) too, and its resident
    count, 2, would differ); [1,2] L=4: k = 1, 2 tokens, [(1),(1,2)]; [1,2,3,4] L=7, 4 blocks > 3,
    is skipped: 0; [1,2,3] L=5: k = 2, 4 tokens; 2 resident. Without full-blocks-only: [1,2] L=3
    caches both, 0; [1,2] L=4: k = 2 capped at 1: 2 tokens; skipped: 0; [1,2,3] L=5: 4 tokens, and
    caches (1,2,3): 3 resident."""
    written: list[bytes] = []
    write = ProcessAdapter._write
    monkeypatch.setattr(ProcessAdapter, "_write", lambda self, data, deadline: (written.append(data), write(self, data, deadline))[1])
    factory = "vllm_like" if dialect == VLLM_LIKE else "pinned_by_path"
    served_model = Implementation(f"cmd:{sys.executable} -m kvspec.adapters.serve python:{TESTS / 'engine_model.py'}:{factory}").start()
    try:
        lockstep = Lockstep(served_model, AdapterConfig("lru", 3, 2), dialect)
        assert lockstep.configure()
        hits = [lockstep.request(ids, length) for ids, length in [([1, 2], 3), ([1, 2], 4), ([1, 2, 3, 4], 7), ([1, 2, 3], 5)]]
        assert hits == [0, 2, 0, 4] and lockstep.resident_count() == (2 if dialect == VLLM_LIKE else 3)
    finally:
        served_model.close()
    accesses = [message for message in map(json.loads, written) if message["cmd"] == "access"]
    assert [message.get("input_length") for message in accesses] == [3, 4, 7, 5]
