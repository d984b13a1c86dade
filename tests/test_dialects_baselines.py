"""LRU and FIFO in a dialect (reference/dialects/baselines.py): a test or more for every variation
point of LRU and FIFO (REPLAY-DIALECT-1 to REPLAY-DIALECT-3, LRU-DIALECT-1 to LRU-DIALECT-3).

Expected values were worked out by hand; the comments show the queue step by step, head first,
with a block under path-ids written as its path (1,2) = the block of id 2 under id 1. The last
tests replay every dialect in lockstep with an independent model written here: blocks as tuples,
recency as a clock, each variation point a flag.
"""

import random
from itertools import combinations

import pytest

from kvspec.reference import FIFO, LRU, ConfigError, ReplayConfig, TraceRecord, make_policy, replay, replay_request
from kvspec.reference.dialects import VARIATIONS, Dialect, DialectFIFO, DialectLRU, dialect_for
from kvspec.reference.dialects.baselines import ROOT
from kvspec.reference.dialects.engine import ENGINE_REPLAY
from kvspec.reference.replay import prefix_hit_blocks
from kvspec.reference.validation import INT64_MAX, INT64_MIN

KVSIM_LRU = dialect_for("lru", "kvcache-simulator")


def cache(policy: str, capacity: int, *variations: str) -> DialectLRU | DialectFIFO:
    return make_policy(ReplayConfig(policy, capacity, 1, dialect=dialect_for(policy, variations=variations)))  # type: ignore[return-value]


def requests(policy: DialectLRU | DialectFIFO, trace: list[list[int]]) -> list[int]:
    """Replay ``trace`` at block size 1: each request's hit blocks."""
    return [replay_request(policy, hash_ids, len(hash_ids), 1) for hash_ids in trace]


def probe(policy: DialectLRU | DialectFIFO, hash_ids: list[int]) -> int:
    """A request's hit blocks, asked without accessing it (REPLAY-PREFIX-3)."""
    return prefix_hit_blocks(policy.blocks(hash_ids), policy.is_resident)


def trace(*requests: list[int]) -> list[tuple[int, TraceRecord]]:
    """A trace's numbered records, at block size 1."""
    return [(n, TraceRecord(timestamp=0, input_length=len(ids), output_length=0, hash_ids=ids)) for n, ids in enumerate(requests, 1)]


def queue(policy: DialectLRU | DialectFIFO | LRU | FIFO) -> list[int]:
    """The queue, head first: LRU's recency, FIFO's arrival (in a dialect or not: an empty dialect is the canonical class)."""
    return list(policy.recency if isinstance(policy, (DialectLRU, LRU)) else policy.arrival)


def paths(policy: DialectLRU | DialectFIFO) -> list[tuple[int, ...]]:
    """The queue, head first, each block written as its path."""
    step = {block: key for key, block in policy.paths.block_of.items()}

    def path(block: int) -> tuple[int, ...]:
        parent, h = step[block]
        return (*(path(parent) if parent != ROOT else ()), h)

    return [path(b) for b in queue(policy)]


# REPLAY-DIALECT-1, REPLAY-DIALECT-2: capacity


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_1_capacity_0_is_a_cache_that_holds_nothing(policy: str) -> None:
    """REPLAY-DIALECT-1: capacity 0 is accepted; every access changes nothing, so [1], [1] hits 0
    twice and nothing is resident; a replay's result reports the capacity as 0."""
    empty = cache(policy, 0, "capacity-0-empty")
    assert requests(empty, [[1], [1], [1, 2]]) == [0, 0, 0] and empty.resident_count() == 0
    result = replay(trace([1, 2], [1, 2]), ReplayConfig(policy, 0, 1, dialect=dialect_for(policy, "libcachesim")))  # type: ignore[arg-type]
    assert (result.total_hit_tokens, result.final_cache_blocks, result.cache_capacity_blocks) == (0, 0, 0)


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_1_refuses_a_negative_capacity_and_the_canonical_spec_refuses_0(policy: str) -> None:
    """REPLAY-DIALECT-1 replaces REPLAY-CONF-1's lower bound 1 by 0, and only that."""
    with pytest.raises(ConfigError, match="REPLAY-DIALECT-1"):
        cache(policy, -1, "capacity-0-empty")
    with pytest.raises(ConfigError, match="REPLAY-CONF-1"):
        cache(policy, 0)
    assert cache(policy, INT64_MAX, "capacity-0-empty").capacity == INT64_MAX


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("capacity", [0, -1, INT64_MIN])
def test_REPLAY_DIALECT_2_every_capacity_up_to_0_holds_nothing(policy: str, capacity: int) -> None:
    """REPLAY-DIALECT-2: any capacity <= 0 down to -2^63 is accepted, as a cache that holds nothing."""
    empty = cache(policy, capacity, "capacity-nonpositive-empty", "path-ids")
    assert requests(empty, [[1, 2], [1, 2]]) == [0, 0] and empty.resident_count() == 0
    result = replay(trace([1, 2]), ReplayConfig(policy, capacity, 1, dialect=empty.dialect))  # type: ignore[arg-type]
    assert (result.final_cache_blocks, result.cache_capacity_blocks) == (0, capacity)


def test_REPLAY_DIALECT_2_refuses_what_is_not_a_signed_64_bit_integer() -> None:
    for capacity in (INT64_MIN - 1, INT64_MAX + 1, True):
        with pytest.raises(ConfigError, match="REPLAY-DIALECT-2"):
            cache("lru", capacity, "capacity-nonpositive-empty")  # type: ignore[arg-type]


# REPLAY-DIALECT-3: a block is its prefix path


def test_REPLAY_DIALECT_3_a_repeated_id_is_another_block() -> None:
    """REPLAY-DIALECT-3, FIFO, capacity 4: [1,1]: blocks (1), (1,1): [(1),(1,1)]; [1,1,1]: (1) and
    (1,1) hit, (1,1,1) misses: k = 2, [(1),(1,1),(1,1,1)]. Under REPLAY-TRACE-4 the second 1 is
    the first one again: [1]; then [1,1,1] hits all 3 blocks, and 1 block is resident."""
    fifo = cache("fifo", 4, "path-ids")
    assert requests(fifo, [[1, 1], [1, 1, 1]]) == [0, 2]
    assert paths(fifo) == [(1,), (1, 1), (1, 1, 1)]
    canonical = cache("fifo", 4)
    assert requests(canonical, [[1, 1], [1, 1, 1]]) == [0, 3] and canonical.resident_count() == 1


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_3_the_same_id_under_another_prefix_is_another_block(policy: str) -> None:
    """REPLAY-DIALECT-3, capacity 4: [1,5] leaves (1), (1,5); the request [5] names the block (5),
    which is not resident; under REPLAY-TRACE-4 it names 5, which is. The same path is the same block."""
    cached = cache(policy, 4, "path-ids")
    requests(cached, [[1, 5]])
    assert (probe(cached, [5]), probe(cached, [1, 5]), probe(cached, [1, 5, 5])) == (0, 2, 2)
    assert cached.blocks([1, 5]) == cached.blocks([1, 5]) != cached.blocks([5, 1])
    canonical = cache(policy, 4)
    requests(canonical, [[1, 5]])
    assert probe(canonical, [5]) == 1


# LRU-DIALECT-1: only leaves are evicted


def test_LRU_DIALECT_1_the_victim_is_the_least_recent_block_without_a_resident_child() -> None:
    """LRU-DIALECT-1, capacity 3: [1,2]: [(1),(1,2)]; [3]: [(1),(1,2),(3)]; [4]: full, (1) has a
    resident child, so the least recent leaf (1,2) goes: [(1),(3),(4)]; [5]: (1) is a leaf now and
    the least recent: [(3),(4),(5)]. Canonical LRU on the same paths evicts (1) first."""
    lru = cache("lru", 3, "path-ids", "lru-evict-leaves")
    requests(lru, [[1, 2], [3], [4]])
    assert paths(lru) == [(1,), (3,), (4,)]
    requests(lru, [[5]])
    assert paths(lru) == [(3,), (4,), (5,)]
    canonical = cache("lru", 3, "path-ids")
    requests(canonical, [[1, 2], [3], [4]])
    assert paths(canonical) == [(1, 2), (3,), (4,)]


# LRU-DIALECT-2: the request's own hits are not evicted


def test_LRU_DIALECT_2_a_block_the_request_found_resident_is_not_evicted() -> None:
    """LRU-DIALECT-2, capacity 2: [1,2]: [(1),(1,2)]; [1,2,3]: both hit and are protected, so
    (1,2,3) finds no victim and is not admitted: [(1),(1,2)], and a probe of [1,2,3] hits 2.
    Canonical LRU evicts (1) for it: [(1,2),(1,2,3)], where [1,2,3] hits 0."""
    lru = cache("lru", 2, "path-ids", "lru-protect-request")
    assert requests(lru, [[1, 2], [1, 2, 3]]) == [0, 2]
    assert paths(lru) == [(1,), (1, 2)] and probe(lru, [1, 2, 3]) == 2
    canonical = cache("lru", 2, "path-ids")
    requests(canonical, [[1, 2], [1, 2, 3]])
    assert paths(canonical) == [(1, 2), (1, 2, 3)] and probe(canonical, [1, 2, 3]) == 0


def test_LRU_DIALECT_2_protection_ends_with_the_request() -> None:
    """LRU-DIALECT-2: then [9] evicts the least recent, (1), which the last request protected: [(1,2),(9)]."""
    lru = cache("lru", 2, "path-ids", "lru-protect-request")
    requests(lru, [[1, 2], [1, 2, 3], [9]])
    assert paths(lru) == [(1, 2), (9,)]


def test_LRU_DIALECT_2_a_block_admitted_by_the_request_is_not_protected() -> None:
    """LRU-DIALECT-2 protects only what the request found resident: capacity 2, [1,2,3]: (1), (1,2)
    admitted; (1,2,3) evicts (1), the head: [(1,2),(1,2,3)]."""
    lru = cache("lru", 2, "path-ids", "lru-protect-request")
    requests(lru, [[1, 2, 3]])
    assert paths(lru) == [(1, 2), (1, 2, 3)]


# LRU-DIALECT-3: admitted only under a resident parent


def test_LRU_DIALECT_3_a_block_whose_parent_is_gone_is_refused() -> None:
    """LRU-DIALECT-3, capacity 1: [1,2,3]: (1) admitted; (1,2) evicts (1), its own parent, and is
    then refused; so is (1,2,3), whose parent (1,2) is not resident: the cache is empty. Canonical
    LRU ends with [(1,2,3)]. A first block's parent is the root, always resident: [1] is admitted."""
    lru = cache("lru", 1, "path-ids", "lru-admit-under-parent")
    requests(lru, [[1, 2, 3]])
    assert lru.resident_count() == 0
    canonical = cache("lru", 1, "path-ids")
    requests(canonical, [[1, 2, 3]])
    assert paths(canonical) == [(1, 2, 3)]
    requests(lru, [[1]])
    assert paths(lru) == [(1,)]


# The three together, as kvcache-simulator's LRU


def test_LRU_DIALECT_1_LRU_DIALECT_3_the_eviction_may_take_the_block_just_admitted() -> None:
    """LRU-DIALECT-1 and LRU-DIALECT-3 (kvcache-simulator), capacity 2: [1,2,3]: (1), (1,2) admitted;
    (1,2,3): the only leaf is (1,2), evicted, so (1,2,3) has no parent: [(1)], one below capacity."""
    lru = cache("lru", 2, *KVSIM_LRU)
    requests(lru, [[1, 2, 3]])
    assert paths(lru) == [(1,)]


def test_LRU_DIALECT_1_LRU_DIALECT_2_LRU_DIALECT_3_kvcache_simulators_lru() -> None:
    """kvcache-simulator, capacity 3: [1]: [(1)]; [1,2,3,4]: (1) hits and is protected; (1,2),
    (1,2,3) admitted; (1,2,3,4): the only leaf is (1,2,3), evicted, and (1,2,3,4) has no parent:
    [(1),(1,2)]: hits [0, 1], 2 resident, and [1,2,3,4] would now hit 2."""
    lru = cache("lru", 3, *KVSIM_LRU)
    assert requests(lru, [[1], [1, 2, 3, 4]]) == [0, 1]
    assert paths(lru) == [(1,), (1, 2)] and probe(lru, [1, 2, 3, 4]) == 2


# Every dialect of LRU and FIFO against an independent model


class Model:
    """LRU or FIFO written apart from the reference: a resident block maps to the clock of its last
    access (LRU) or of its admission (FIFO); a block is a tuple path (path-ids) or the hash."""

    def __init__(self, policy: str, capacity: int, dialect: Dialect) -> None:
        self.policy, self.capacity, self.dialect = policy, capacity, dialect
        self.clock = 0
        self.stamp: dict[object, int] = {}

    def blocks(self, hash_ids: list[int]) -> list[object]:
        return [tuple(hash_ids[:i + 1]) for i in range(len(hash_ids))] if "path-ids" in self.dialect else list(hash_ids)

    def hits(self, hash_ids: list[int]) -> int:
        blocks = self.blocks(hash_ids)
        return next((i for i, b in enumerate(blocks) if b not in self.stamp), len(blocks))

    def victim(self, found: set[object]) -> object | None:
        candidates = [b for b in self.stamp
                      if not ("lru-evict-leaves" in self.dialect and any(len(c) == len(b) + 1 and c[:-1] == b for c in self.stamp))
                      and not ("lru-protect-request" in self.dialect and b in found)]
        return min(candidates, key=self.stamp.__getitem__, default=None)

    def access(self, hash_ids: list[int]) -> None:
        found: set[object] = set()
        if self.capacity < 1:
            return
        for block in self.blocks(hash_ids):
            self.clock += 1
            if block in self.stamp:
                if self.policy == "lru":
                    self.stamp[block], found = self.clock, found | {block}
                continue
            if len(self.stamp) >= self.capacity:
                gone = self.victim(found)
                if gone is None:
                    continue
                del self.stamp[gone]
            if "lru-admit-under-parent" in self.dialect and len(block) > 1 and block[:-1] not in self.stamp:  # type: ignore[arg-type]
                continue
            self.stamp[block] = self.clock

    def queue(self) -> list[object]:
        return sorted(self.stamp, key=self.stamp.__getitem__)


def dialects_of(policy: str) -> list[Dialect]:
    """Every block-by-block dialect of ``policy`` the catalogue allows: each set of its variation
    points but the engine replay's that holds its requires and no exclusion."""
    ids = [v.id for v in VARIATIONS.values() if policy in v.policies and v.id not in ENGINE_REPLAY]
    chosen = []
    for size in range(len(ids) + 1):
        for subset in map(frozenset, combinations(ids, size)):
            if all(set(VARIATIONS[v].requires) <= subset and not set(VARIATIONS[v].excludes) & subset for v in subset):
                chosen.append(subset)
    return chosen


def random_trace(draw: random.Random) -> list[list[int]]:
    """Up to 10 requests of 1 to 5 ids from a pool of 2 to 4: ids repeat in a request and recur under other prefixes."""
    pool = draw.randint(2, 4)
    return [[draw.randrange(pool) for _ in range(draw.randint(1, 5))] for _ in range(draw.randint(1, 10))]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_1_2_3_LRU_DIALECT_1_2_3_every_dialect_agrees_with_the_model(policy: str) -> None:
    """REPLAY-DIALECT-1, REPLAY-DIALECT-2, REPLAY-DIALECT-3, LRU-DIALECT-1, LRU-DIALECT-2,
    LRU-DIALECT-3, alone and in every combination the catalogue allows (27 dialects of LRU, 6 of
    FIFO): each request's hit blocks, and the queue after it, head first, as the model orders it."""
    draw = random.Random(15)
    for dialect in dialects_of(policy):
        low = -2 if "capacity-nonpositive-empty" in dialect else 0 if "capacity-0-empty" in dialect else 1
        for _ in range(12):
            capacity = draw.randint(low, 5)
            reference = make_policy(ReplayConfig(policy, capacity, 1, dialect=dialect))  # type: ignore[arg-type]
            model = Model(policy, capacity, dialect)
            for hash_ids in random_trace(draw):
                assert replay_request(reference, hash_ids, len(hash_ids), 1) == model.hits(hash_ids), sorted(dialect)
                model.access(hash_ids)
                assert (paths if "path-ids" in dialect else queue)(reference) == model.queue(), (sorted(dialect), capacity)
    assert len(dialects_of(policy)) == (27 if policy == "lru" else 6)


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_a_dialect_with_no_variation_point_is_the_canonical_policy(policy: str) -> None:
    """LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1, FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1: the
    dialect classes with an empty dialect replay as reference/lru.py and reference/fifo.py do."""
    draw = random.Random(16)
    for _ in range(60):
        capacity = draw.randint(1, 5)
        dialect = (DialectLRU if policy == "lru" else DialectFIFO).empty(frozenset(), capacity)
        canonical = make_policy(ReplayConfig(policy, capacity, 1))  # type: ignore[arg-type]
        for hash_ids in random_trace(draw):
            assert replay_request(dialect, hash_ids, len(hash_ids), 1) == replay_request(canonical, hash_ids, len(hash_ids), 1)
            assert queue(dialect) == queue(canonical)
