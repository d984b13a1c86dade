"""The engines' caches (spec/dialects.md, REPLAY-DIALECT-9 and section 8): hand-derived examples of
allocate-then-put, lru-reverse-touch, radix-lru-leaves, radix-fifo-leaves and lru-free-queue, and
the catalogue's requires and excludes for them.

Expected values were worked out by hand from the clauses' text. Docstrings write a request as
[ids] (its input_length is n × block_size unless L= says otherwise), a queue head first, and a
block under path-ids as its path, (1,2) = the block of id 2 under id 1. A radix tree is written as
nested nodes, each keyed by the ids of its run, with (last access, creation) stamps; the spec fixes
only the order of the clock's readings (LRU-DIALECT-5: each read once, never the same value twice),
so the stamps compared are their ranks among the stamps the tree holds, 1 the oldest. A node made by
a request is stamped last access then creation, and then once more by the request's second stamp,
so a new leaf reads (c + 1, c): its creation, then the second stamp.
"""

from pathlib import Path

import pytest
from test_dialects_baselines import queue

from kvspec.reference import ConfigError, ReplayConfig, make_policy, replay_request
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.baselines import ROOT, Paths
from kvspec.reference.dialects.engine import EngineReplay
from kvspec.reference.dialects.radix import Node, RadixCache, descendants
from kvspec.reference.dialects.vllm import BlockPool

SPEC = Path(__file__).resolve().parent.parent / "spec" / "dialects.md"
ENGINE_CACHE = ("path-ids", "too-long-skipped", "pin-request")  # section 8: each engine's point requires the three
RADIX_LRU = (*ENGINE_CACHE, "radix-lru-leaves")
RADIX_FIFO = (*ENGINE_CACHE, "radix-fifo-leaves")
FREE_QUEUE = (*ENGINE_CACHE, "lru-free-queue")
Request = tuple[list[int], int]  # hash_ids, input_length


def engine(policy: str, capacity: int, block_size: int, *variations: str, name: str | None = None):  # type: ignore[no-untyped-def]
    """An empty cache of ``policy`` in the dialect named ``name`` with ``variations``."""
    return make_policy(ReplayConfig(policy, capacity, block_size, dialect=dialect_for(policy, name, variations)))  # type: ignore[arg-type]


def served(cache, *requests: list[int] | Request) -> list[int]:  # type: ignore[no-untyped-def]
    """Each request's hit tokens, replayed in order; a request given as ids alone is whole blocks."""
    hits = []
    for request in requests:
        hash_ids, input_length = request if isinstance(request, tuple) else (request, len(request) * cache.block_size)
        hits.append(replay_request(cache, hash_ids, input_length, cache.block_size))
    return hits


def ids_of(paths: Paths, block: int) -> tuple[int, ...]:
    """A block named as its path (REPLAY-DIALECT-3)."""
    step = {b: key for key, b in paths.block_of.items()}
    parent, h = step[block]
    return (*(ids_of(paths, parent) if parent != ROOT else ()), h)


def tree(cache: RadixCache) -> dict[tuple[int, ...], tuple]:
    """The radix tree under the root: each node keyed by its run's ids, as (last access, creation),
    with its children after them when it has any; stamps as ranks, 1 the oldest."""
    nodes = descendants(cache.root)
    rank = {s: r for r, s in enumerate(sorted({s for n in nodes for s in (n.last_access, n.created)}), 1)}

    def below(node: Node) -> dict[tuple[int, ...], tuple]:
        return {tuple(ids_of(cache.paths, b)[-1] for b in child.run):
                (rank[child.last_access], rank[child.created], *([below(child)] if child.children else []))
                for child in node.children.values()}

    return below(cache.root)


def free_queue(pool: BlockPool) -> list[tuple[int, ...]]:
    """LRU-DIALECT-6's free queue, head first, each slot as the path it holds."""
    return [ids_of(pool.paths, path) for path in pool.queue.values()]


# REPLAY-DIALECT-9: allocate-then-put


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_9_every_block_is_allocated_before_any_is_put(policy: str) -> None:
    """REPLAY-DIALECT-9, capacity 3: [1,2,3]: three slots fit, then put: [1,2,3]. [4,5,6,7], k = 0:
    4 finds 3 resident + 0 allocated = 3, full: evict the head 1; 5: 2 + 1: evict 2; 6: 1 + 2: evict
    3; 7: 0 + 3, full, and nothing left to evict: 7 is not stored. Put 4, 5, 6: [4,5,6]. A block
    put as soon as it had its slot would have been the head when 7 came: block by block, 7 evicts 4:
    [5,6,7]."""
    cache = engine(policy, 3, 1, "allocate-then-put")
    assert served(cache, [1, 2, 3], [4, 5, 6, 7]) == [0, 0]
    assert queue(cache.cache) == [4, 5, 6]
    canonical = make_policy(ReplayConfig(policy, 3, 1))  # type: ignore[arg-type]
    served_canonical = [replay_request(canonical, ids, len(ids), 1) for ids in ([1, 2, 3], [4, 5, 6, 7])]
    assert served_canonical == [0, 0] and queue(canonical) == [5, 6, 7]


def test_REPLAY_DIALECT_9_the_store_stops_when_nothing_is_left_to_evict_even_its_own_hits() -> None:
    """REPLAY-DIALECT-9 with LRU-DIALECT-4, LRU, capacity 3, nothing pinned: [1,2]: [1,2].
    [1,2,3,4,5,6] hits k = 2, touched last first: [2,1]. Allocate 3: 2 + 0 < 3; 4: 2 + 1, full:
    evict the head, the deepest hit 2: [1]; 5: 1 + 2: evict 1: []; 6: 0 + 3, full, nothing to evict:
    6 is not stored. Put 3, 4, 5: [3,4,5]; 2 hit blocks, 2 tokens. [1,2,3] then hits 0."""
    cache = engine("lru", 3, 1, "allocate-then-put", "lru-reverse-touch")
    assert served(cache, [1, 2], [1, 2, 3, 4, 5, 6]) == [0, 2]
    assert queue(cache.cache) == [3, 4, 5]
    assert served(cache, [1, 2, 3]) == [0]


@pytest.mark.parametrize(("touch", "left", "probe"), [(("lru-reverse-touch",), [1, 3, 4], 1), ((), [2, 3, 4], 0)])
def test_REPLAY_DIALECT_9_lru_evicts_the_deepest_hit_first_after_the_reverse_touch(touch: tuple[str, ...], left: list[int], probe: int) -> None:
    """REPLAY-DIALECT-9, LRU, capacity 3: [1,2]: [1,2]. [1,2,3,4] hits 2. With LRU-DIALECT-4 the
    touch is 2 then 1: [2,1]; allocate 3: 2 + 0 < 3; 4: 2 + 1, full: evict the head, the deepest hit
    2: [1]; put 3, 4: [1,3,4], and [1,2] then hits 1 block. With LRU-ACCESS-1's forward touch: [1,2],
    the head 1 goes: [2,3,4], and [1,2] hits 0 (its first block is gone)."""
    cache = engine("lru", 3, 1, "allocate-then-put", *touch)
    assert served(cache, [1, 2], [1, 2, 3, 4]) == [0, 2]
    assert queue(cache.cache) == left
    assert served(cache, [1, 2]) == [probe]


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_9_a_block_resident_past_a_miss_is_left_where_it_is(policy: str) -> None:
    """REPLAY-DIALECT-9 on hash ids, capacity 4: [1], [2]: [1,2]. [9,1] hits 0 (9 is not resident),
    and both blocks after the hit are allocated: 9: 2 + 0 < 4; 1 (resident): 2 + 1 < 4. Put 9 at the
    tail: [1,2,9]; 1 is resident, so it is left where it is: [1,2,9], 3 resident. Block by block,
    LRU would move 1 to the tail: [2,9,1]."""
    cache = engine(policy, 4, 1, "allocate-then-put")
    assert served(cache, [1], [2], [9, 1]) == [0, 0, 0]
    assert queue(cache.cache) == [1, 2, 9] and cache.resident_count() == 3


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_REPLAY_DIALECT_9_a_block_its_own_request_evicted_is_appended_again(policy: str) -> None:
    """REPLAY-DIALECT-9 on hash ids, capacity 3: [1], [2]: [1,2]. [9,1]: allocate 9: 2 + 0 < 3;
    allocate 1 (resident): 2 + 1, full: evict the head, which is 1 itself: [2]. Put 9: [2,9]; 1 is
    no longer resident: appended: [2,9,1]. Had the resident 1 taken no slot, nothing would have
    been evicted: [1,2,9]."""
    cache = engine(policy, 3, 1, "allocate-then-put")
    assert served(cache, [1], [2], [9, 1]) == [0, 0, 0]
    assert queue(cache.cache) == [2, 9, 1]


@pytest.mark.parametrize(("policy", "touch", "left"), [("fifo", (), [2, 3, 4]), ("lru", (), [1, 2, 4]), ("lru", ("lru-reverse-touch",), [2, 1, 4])])
def test_REPLAY_DIALECT_9_fifo_hits_change_nothing(policy: str, touch: tuple[str, ...], left: list[int]) -> None:
    """REPLAY-DIALECT-9, capacity 3: [1,2], [3]: [1,2,3]. [1,2,4] hits 2. FIFO-ACCESS-1: the hits
    change nothing, [1,2,3]; allocate 4: 3 + 0, full: evict the head, its own hit 1: put 4: [2,3,4].
    LRU's forward touch: [3,1,2], 3 goes: [1,2,4]; its reverse touch: [3,2,1]: [2,1,4]."""
    cache = engine(policy, 3, 1, "allocate-then-put", *touch)
    assert served(cache, [1, 2], [3], [1, 2, 4]) == [0, 0, 2]
    assert queue(cache.cache) == left


@pytest.mark.parametrize("name", ["lmcache-lru", "lmcache-fifo"])
def test_REPLAY_DIALECT_9_capacity_0_stores_nothing(name: str) -> None:
    """REPLAY-DIALECT-9 with REPLAY-DIALECT-1 (LMCache's dialects take capacity-0-empty): at
    capacity 0 the first allocation finds 0 + 0 = 0 filling the cache and nothing to evict, so
    nothing is stored: [1,2] twice hits 0, and nothing is resident."""
    policy = name.split("-")[1]
    cache = engine(policy, 0, 1, name=name)
    assert served(cache, [1, 2], [1, 2]) == [0, 0] and cache.resident_count() == 0


# LRU-DIALECT-4: lru-reverse-touch


@pytest.mark.parametrize(("touch", "after_hit", "probe"), [(("lru-reverse-touch",), [4, 3, 2, 1], 4), ((), [4, 1, 2, 3], 0)])
def test_LRU_DIALECT_4_after_a_hit_the_first_block_is_the_most_recent(touch: tuple[str, ...], after_hit: list[int], probe: int) -> None:
    """LRU-DIALECT-4 under REPLAY-DIALECT-9, LRU, capacity 5, block size 2: [1,2,3], [4]:
    [1,2,3,4]. [1,2,3] hits 3 blocks, 6 tokens, touched 3, 2, 1: [4,3,2,1], the first block the most
    recent (LRU-ACCESS-1's forward touch: [4,1,2,3]). [5,6]: 5 takes the last free slot, 6 evicts 4:
    [3,2,1,5,6]; [7] evicts 3: [2,1,5,6,7]; so [1,2,3] hits 2 blocks, 4 tokens. Forward: [5,6] evicts
    4, [7] evicts 1, and [1,2,3] hits 0."""
    cache = engine("lru", 5, 2, "allocate-then-put", *touch)
    assert served(cache, [1, 2, 3], [4], [1, 2, 3]) == [0, 0, 6]
    assert queue(cache.cache) == after_hit
    assert served(cache, [5, 6], [7], [1, 2, 3]) == [0, 0, probe]


def test_LRU_DIALECT_4_in_lmcaches_dialect_on_paths() -> None:
    """LRU-DIALECT-4 in lmcache-lru (path-ids, full-blocks-only), capacity 4, block size 2:
    [1,2,3] L=5 caches its whole blocks only: [(1),(1,2)]. [1,2,3] L=6: k = 2, touched (1,2) then
    (1): [(1,2),(1)]; allocate (1,2,3): 2 + 0 < 4; put: [(1,2),(1),(1,2,3)]; 4 tokens."""
    cache = engine("lru", 4, 2, name="lmcache-lru")
    assert isinstance(cache, EngineReplay)
    assert served(cache, ([1, 2, 3], 5), ([1, 2, 3], 6)) == [0, 4]
    assert [ids_of(cache.cache.paths, b) for b in queue(cache.cache)] == [(1, 2), (1,), (1, 2, 3)]


# LRU-DIALECT-5 and FIFO-DIALECT-1: the radix cache


def test_LRU_DIALECT_5_a_lookup_ending_inside_a_node_splits_it() -> None:
    """LRU-DIALECT-5, capacity 8: [1,2,3]: one new leaf, stamped last access t1, creation t2, then
    the second stamp t3: {(1,2,3): (t3, t2)}, ranks (2, 1). [1,2] hits 2 blocks: the lookup stamps
    the node it enters, t4, and ends inside it: the split makes (1,2) a new node with fresh stamps
    (t5, t6) above (3), which keeps its own: (t4, t2). Nothing to free; the insert stamps (1,2) (t7),
    adds nothing, and the second stamp t8: (1,2) = (t8, t6), (3) = (t4, t2): ranks t2 1, t4 2, t6 3,
    t8 4."""
    cache = engine("lru", 8, 1, *RADIX_LRU)
    served(cache, [1, 2, 3])
    assert tree(cache) == {(1, 2, 3): (2, 1)}
    assert served(cache, [1, 2]) == [2]
    assert tree(cache) == {(1, 2): (4, 3, {(3,): (2, 1)})}
    assert served(cache, [1, 2, 3]) == [3]


def test_LRU_DIALECT_5_the_node_a_lookup_ends_inside_is_stamped_before_its_split() -> None:
    """LRU-DIALECT-5, capacity 3: [1,2] (stamped a), [5] (b > a): full. [1] hits 1: the lookup's
    reading c stamps (1,2), which it ends inside, then splits it: (1) fresh above (2), which keeps
    its stamps, so its last access is c > b. [7]: needed 1, free 0: the least recently stamped
    leaf is (5), not (2): {(1) {(2)}, (7)}. Stamps: (2) made at t1, last c = t2; (1) made at t3,
    last t4 (the second stamp); (7) t5, t6. Had (2) kept a, it would have gone."""
    cache = engine("lru", 3, 1, *RADIX_LRU)
    assert served(cache, [1, 2], [5], [1], [7]) == [0, 0, 1, 0]
    assert tree(cache) == {(1,): (4, 3, {(2,): (2, 1)}), (7,): (6, 5)}


def test_LRU_DIALECT_5_a_leaf_is_evicted_whole() -> None:
    """LRU-DIALECT-5, capacity 4: [1,2,3], then [5]: 4 resident. [6]: needed 1, free 0: the least
    recently stamped leaf, (1,2,3), goes whole, 3 blocks for a shortfall of 1: {(5), (6)}, 2
    resident, and [1,2] misses."""
    cache = engine("lru", 4, 1, *RADIX_LRU)
    served(cache, [1, 2, 3], [5], [6])
    assert tree(cache) == {(5,): (2, 1), (6,): (4, 3)} and cache.resident_count() == 2
    assert served(cache, [1, 2]) == [0]


def test_LRU_DIALECT_5_a_parent_left_childless_is_a_leaf_with_its_own_stamp() -> None:
    """LRU-DIALECT-5, capacity 5: [1,2]: (1,2). [1,3] hits 1: the lookup stamps (1,2) (a) and
    splits it: (1) fresh above (2), which keeps a; the insert adds (3) under (1), and the second
    stamp b marks (1) and (3): (1) {(2) a, (3) b}, (1) at b. [4]: (4) at c > b. [7,8,9,10]: needed 4,
    free 1, shortfall 3: leaves (2) a, (3) b, (4) c: (2) goes, then (3); (1) is now a leaf, at its
    own b < c, so it goes next: 3 freed. {(4), (7,8,9,10)}. Had (1) not become a candidate, (4)
    would have gone and (1) stayed."""
    cache = engine("lru", 5, 1, *RADIX_LRU)
    assert served(cache, [1, 2], [1, 3], [4], [7, 8, 9, 10]) == [0, 1, 0, 0]
    assert tree(cache) == {(4,): (2, 1), (7, 8, 9, 10): (4, 3)}


@pytest.mark.parametrize(("block_size", "expected"), [(2, {(5,): (2, 1), (6,): (4, 3)}), (1, {(1, 2): (2, 1), (5,): (4, 3), (6,): (6, 5)})])
def test_LRU_DIALECT_5_a_page_more_when_block_size_exceeds_1(block_size: int, expected: dict[tuple[int, ...], tuple]) -> None:
    """LRU-DIALECT-5, capacity 4: [1,2], [5]: 3 resident. [6]: needed = n − k + 1 = 2 at block size
    2, free 1: the least recent leaf (1,2) goes whole: {(5), (6)}. At block size 1, needed = 1 = free:
    nothing is evicted: {(1,2), (5), (6)}."""
    cache = engine("lru", 4, block_size, *RADIX_LRU)
    served(cache, [1, 2], [5], [6])
    assert tree(cache) == expected


def test_LRU_DIALECT_5_the_hit_path_is_locked_while_its_request_runs() -> None:
    """LRU-DIALECT-5, capacity 2, block size 2: [1]: needed 1 + 1 = 2 = free: (1). [1,2]: k = 1;
    (1) is stamped and locked; needed 1 + 1 = 2, free 1: the only leaf, (1), is locked: nothing is
    evicted. The insert adds (2) under (1), and the second stamp marks both: (1) = (t3, t1), (2) =
    (t3, t2). Unlocked, (1) would have gone and [1,2] come back as one leaf (1,2)."""
    cache = engine("lru", 2, 2, *RADIX_LRU)
    assert served(cache, [1], [1, 2]) == [0, 2]
    assert tree(cache) == {(1,): (3, 1, {(2,): (3, 2)})}


def test_FIFO_DIALECT_1_the_hit_path_is_locked_though_it_is_the_oldest() -> None:
    """FIFO-DIALECT-1, capacity 3: [1,2], [5]: full. [1,2,3] hits 2: (1,2), the oldest leaf, is
    locked; needed 1, free 0: the oldest unlocked leaf, (5), goes. (3) is added under (1,2), and
    both are stamped: (1,2) = (t3, t1), (3) = (t3, t2)."""
    cache = engine("fifo", 3, 1, *RADIX_FIFO)
    assert served(cache, [1, 2], [5], [1, 2, 3]) == [0, 0, 2]
    assert tree(cache) == {(1, 2): (3, 1, {(3,): (3, 2)})}


@pytest.mark.parametrize(("policy", "expected"), [("lru", {(1, 2): (2, 1), (7,): (4, 3)}), ("fifo", {(5,): (2, 1), (7,): (4, 3)})])
def test_FIFO_DIALECT_1_evicts_the_oldest_creation_and_LRU_DIALECT_5_the_oldest_stamp(policy: str, expected: dict[tuple[int, ...], tuple]) -> None:
    """Capacity 3: [1,2], [5]: full. [1,2] hits 2 and stamps (1,2) again. [7]: needed 1, free 0.
    LRU-DIALECT-5: the least recently stamped leaf is (5): {(1,2), (7)}. FIFO-DIALECT-1: the oldest
    creation is (1,2), and it goes whole: {(5), (7)}, 2 resident."""
    cache = engine(policy, 3, 1, *(RADIX_LRU if policy == "lru" else RADIX_FIFO))
    assert served(cache, [1, 2], [5], [1, 2], [7]) == [0, 0, 2, 0]
    assert tree(cache) == expected and cache.resident_count() == sum(len(ids) for ids in expected)


def test_FIFO_DIALECT_1_a_splits_upper_part_is_younger() -> None:
    """FIFO-DIALECT-1, capacity 4: [1,2] (made at c1), [5] (c2). [1] hits 1 and splits (1,2): (1)
    is new, made at c3; (2) keeps c1. [7,8,9]: needed 3, free 1, shortfall 2: the oldest leaf (2)
    goes; (1) is a leaf now, made at c3 > c2, so (5) goes next: {(1), (7,8,9)}. Had the upper part
    kept (1,2)'s creation, (1) would have gone before (5)."""
    cache = engine("fifo", 4, 1, *RADIX_FIFO)
    assert served(cache, [1, 2], [5], [1], [7, 8, 9]) == [0, 0, 1, 0]
    assert tree(cache) == {(1,): (2, 1), (7, 8, 9): (4, 3)}


def test_LRU_DIALECT_5_a_hit_of_0_blocks_stamps_and_locks_nothing() -> None:
    """LRU-DIALECT-5 in sglang-lru (hit-cap-last-token), capacity 2: [1] L=1, [2] L=1: {(1), (2)}.
    [1] L=1: (1) is resident, but the hit is capped at ⌊0/1⌋ = 0 blocks: nothing is stamped or
    locked. needed 1, free 0: the least recent leaf is (1), which goes; the insert makes (1) anew:
    {(2), (1)}, 2 resident. A lookup that had stamped (1) would have evicted (2) instead."""
    cache = engine("lru", 2, 1, name="sglang-lru")
    assert served(cache, [1], [2], [1]) == [0, 0, 0]
    assert tree(cache) == {(2,): (2, 1), (1,): (4, 3)} and cache.resident_count() == 2


# LRU-DIALECT-6: vLLM's free queue


def test_LRU_DIALECT_6_hit_slots_come_back_deepest_first_and_empty_slots_go_first() -> None:
    """LRU-DIALECT-6, capacity 6: [1,2,3] takes 3 empty slots and frees them deepest first:
    [(1,2,3),(1,2),(1)], 3 empty. [4] takes an empty slot: [(1,2,3),(1,2),(1),(4)], 2 empty. [1,2]
    hits 2: their slots leave the queue and come back deepest first: [(1,2,3),(4),(1,2),(1)]
    (LRU-ACCESS-1's order would end (1),(1,2)). [5,6,7]: the 2 empty slots first, then the head
    (1,2,3): [(4),(1,2),(1),(5,6,7),(5,6),(5)], 6 resident; [1,2,3] hits 2."""
    pool = engine("lru", 6, 1, *FREE_QUEUE)
    assert served(pool, [1, 2, 3]) == [0] and free_queue(pool) == [(1, 2, 3), (1, 2), (1,)] and pool.empty == 3
    assert served(pool, [4], [1, 2]) == [0, 2]
    assert free_queue(pool) == [(1, 2, 3), (4,), (1, 2), (1,)] and pool.empty == 2
    assert served(pool, [5, 6, 7]) == [0]
    assert free_queue(pool) == [(4,), (1, 2), (1,), (5, 6, 7), (5, 6), (5,)] and pool.empty == 0
    assert served(pool, [1, 2, 3]) == [2]


def test_LRU_DIALECT_6_a_hit_slot_is_not_evicted_by_its_own_request() -> None:
    """LRU-DIALECT-6, capacity 3: [1,2]: [(1,2),(1)], 1 empty; [9]: [(1,2),(1),(9)]. [1,2,3] hits 2:
    their slots leave the queue, [(9)]; its one slot is the head (9): the queue's head was (1,2),
    but it is out. Then [(1,2,3),(1,2),(1)]."""
    pool = engine("lru", 3, 1, *FREE_QUEUE)
    assert served(pool, [1, 2], [9], [1, 2, 3]) == [0, 0, 2]
    assert free_queue(pool) == [(1, 2, 3), (1, 2), (1,)]


# vLLM's own: the capped last block is computed again in a slot of its own (docs/certifications/vllm).
COPY_A_LOOKUP_TAKES = [[1, 2], [3], [1, 2], [1, 2, 4], [5], [3, 6]]


def test_LRU_DIALECT_6_a_path_held_twice_counts_twice_and_the_lookup_takes_the_earlier_copy() -> None:
    """LRU-DIALECT-6 in vllm (hit-cap-last-token), capacity 5, slots numbered as they are filled:
    [1,2]: s1 (1), s2 (1,2): [s2,s1], 3 empty. [3]: [s2,s1,s3]. [1,2]: k = 2 capped at 1: s1 leaves;
    one slot, empty, s4, holds (1,2) again (held twice): [s2,s3,s4,s1], 4 resident for 3 paths.
    [1,2,4]: k = 2: s1 and the earlier copy s2 leave: [s3,s4]; s5 (empty, the last) holds (1,2,4):
    [s3,s4,s5,s2,s1]. [5]: the head s3 goes, (3) with it: [s4,s5,s2,s1,s6]. [3,6] hits 0; its two
    slots are s4 and s5: (1,2) is still in s2, (1,2,4) is gone. Hits 0,0,1,2,0,0 tokens; [1,2,7]
    hits 2. Had [1,2,4] taken the newer copy s4, [5] would have evicted s2, (3) would have stayed,
    and [3,6] would have hit 1."""
    pool = engine("lru", 5, 1, name="vllm")
    assert served(pool, *COPY_A_LOOKUP_TAKES[:3]) == [0, 0, 1]
    assert free_queue(pool) == [(1, 2), (3,), (1, 2), (1,)] and pool.resident_count() == 4 and len(pool.slots_of) == 3
    assert served(pool, *COPY_A_LOOKUP_TAKES[3:]) == [2, 0, 0]
    assert free_queue(pool) == [(1, 2), (1,), (5,), (3, 6), (3,)]
    assert served(pool, [1, 2, 7]) == [2]


def test_LRU_DIALECT_6_evicting_one_copy_leaves_the_path_resident() -> None:
    """LRU-DIALECT-6 in vllm, capacity 3: [1] L=1: s1 (1): [s1]. [1] L=1 again: k capped at 0; one
    slot, empty, s2, holds (1) again: [s1,s2], 2 resident. [7,8]: k = 0; its two slots: the empty
    one, then the head s1: (1) is still held by s2; [(7,8),(7)] joins: [s2,(7,8),(7)]. [1,5] hits
    (1): 1 token."""
    pool = engine("lru", 3, 1, name="vllm")
    assert served(pool, [1], [1]) == [0, 0] and pool.resident_count() == 2 and free_queue(pool) == [(1,), (1,)]
    assert served(pool, [7, 8]) == [0] and free_queue(pool) == [(1,), (7, 8), (7,)]
    assert served(pool, [1, 5]) == [1]


def test_LRU_DIALECT_6_the_partial_blocks_slot_returns_empty() -> None:
    """LRU-DIALECT-6 in vllm, capacity 3, block size 2: [1,2] L=3 takes 2 empty slots, caches (1)
    only (REPLAY-DIALECT-7), and its partial block's slot is empty again: [(1)], 2 empty. [5,6] takes
    the 2 empty slots, evicting nothing: [(1),(5,6),(5)]; [1,3] L=3 hits (1): 2 tokens."""
    pool = engine("lru", 3, 2, name="vllm")
    assert served(pool, ([1, 2], 3)) == [0] and free_queue(pool) == [(1,)] and pool.empty == 2
    assert served(pool, [5, 6]) == [0] and free_queue(pool) == [(1,), (5, 6), (5,)]
    assert served(pool, ([1, 3], 3)) == [2]


# The catalogue: DIALECT-2 to DIALECT-5

ENGINE_POINTS = {"radix-lru-leaves": "lru", "radix-fifo-leaves": "fifo", "lru-free-queue": "lru"}
# Section 8: what each engine's point excludes, with what each of those requires (DIALECT-3), so
# that the set is refused for the exclusion alone; FIFO has no LRU point.
BLOCK_BY_BLOCK = {"capacity-0-empty": (), "capacity-nonpositive-empty": (), "lru-evict-leaves": (), "lru-protect-request": (),
                  "lru-admit-under-parent": (), "partial-block-slot": ("full-blocks-only",), "allocate-then-put": (),
                  "lru-reverse-touch": ("allocate-then-put",)}


def test_DIALECT_3_lru_reverse_touch_requires_allocate_then_put() -> None:
    with pytest.raises(ConfigError, match="DIALECT-3"):
        dialect_for("lru", variations=("lru-reverse-touch",))
    assert dialect_for("lru", variations=("lru-reverse-touch", "allocate-then-put")) == {"lru-reverse-touch", "allocate-then-put"}


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_DIALECT_4_allocate_then_put_excludes_partial_block_slot(policy: str) -> None:
    with pytest.raises(ConfigError, match="DIALECT-4"):
        dialect_for(policy, variations=("allocate-then-put", "partial-block-slot", "full-blocks-only", "path-ids"))


@pytest.mark.parametrize("point", ENGINE_POINTS)
def test_DIALECT_3_each_engine_point_requires_path_ids_too_long_skipped_and_pin_request(point: str) -> None:
    policy = ENGINE_POINTS[point]
    assert dialect_for(policy, variations=(point, *ENGINE_CACHE)) == {point, *ENGINE_CACHE}
    for missing in ENGINE_CACHE:
        with pytest.raises(ConfigError, match="DIALECT-3"):
            dialect_for(policy, variations=(point, *(v for v in ENGINE_CACHE if v != missing)))


@pytest.mark.parametrize(("point", "excluded"), [(p, x) for p in ENGINE_POINTS for x in BLOCK_BY_BLOCK
                                                 if ENGINE_POINTS[p] == "lru" or not x.startswith("lru-")])
def test_DIALECT_4_each_engine_point_excludes_the_rules_of_a_queue_of_blocks(point: str, excluded: str) -> None:
    policy = ENGINE_POINTS[point]
    unpinned = tuple(v for v in ENGINE_CACHE if v != "pin-request")  # allocate-then-put excludes pin-request too
    base = unpinned if "allocate-then-put" in (excluded, *BLOCK_BY_BLOCK[excluded]) else ENGINE_CACHE
    assert dialect_for(policy, variations=(*base, excluded, *BLOCK_BY_BLOCK[excluded]))  # a dialect without the engine's point
    with pytest.raises(ConfigError, match="DIALECT-4"):
        dialect_for(policy, variations=(point, *ENGINE_CACHE, excluded, *BLOCK_BY_BLOCK[excluded]))


def test_DIALECT_2_and_4_the_engine_points_belong_to_their_policy_and_never_meet() -> None:
    """radix-fifo-leaves is FIFO's, radix-lru-leaves, lru-free-queue and lru-reverse-touch LRU's
    (DIALECT-2). lru-free-queue and radix-lru-leaves replace the same LRU clauses differently
    (DIALECT-4)."""
    for point, policy in [("radix-fifo-leaves", "lru"), ("radix-lru-leaves", "fifo"), ("lru-free-queue", "fifo")]:
        with pytest.raises(ConfigError, match="DIALECT-2"):
            dialect_for(policy, variations=(point, *ENGINE_CACHE))
    with pytest.raises(ConfigError, match="DIALECT-2"):
        dialect_for("fifo", variations=("lru-reverse-touch", "allocate-then-put"))
    with pytest.raises(ConfigError, match="DIALECT-4"):
        dialect_for("lru", variations=("lru-free-queue", "radix-lru-leaves", *ENGINE_CACHE))


def known_engines() -> list[tuple[str, str, frozenset[str]]]:
    """Section 8's table of known engines: each engine's name, a policy and its variation points (a
    row with no name is the engine's above it)."""
    table = SPEC.read_text().split("### Known engines")[1].split("\n\n")[1]
    rows, name = [], ""
    for line in table.splitlines()[2:]:
        first, policy, points = (cell.strip() for cell in line.strip("|").split("|"))
        name = first.split("`")[1] if first else name
        rows.append((name, policy, frozenset(p.strip() for p in points.split(","))))
    return rows


@pytest.mark.parametrize(("name", "policy", "points"), known_engines())
def test_DIALECT_5_each_known_engine_is_named_as_the_spec_lists_it(name: str, policy: str, points: frozenset[str]) -> None:
    """DIALECT-5: each engine's dialect of a policy is the spec table's row, by the engine's name and
    (vLLM aside, which has LRU alone) by the name with the policy's, and builds the cache its points
    choose. Capacity 4, block size 1: [1,2] twice hits 2 blocks, capped at ⌊1/1⌋ = 1 block under
    hit-cap-last-token."""
    names = [name] if name == "vllm" else [name, f"{name}-{policy}"]
    kind = BlockPool if "lru-free-queue" in points else RadixCache if {"radix-lru-leaves", "radix-fifo-leaves"} & points else EngineReplay
    for named in names:
        assert dialect_for(policy, named) == points
        cache = engine(policy, 4, 1, name=named)
        assert isinstance(cache, kind)
        assert served(cache, [1, 2], [1, 2]) == [0, 1 if "hit-cap-last-token" in points else 2]


def test_DIALECT_5_the_spec_names_seven_engine_dialects() -> None:
    assert [(name, policy) for name, policy, _ in known_engines()] == [
        ("vllm", "lru"), ("sglang", "lru"), ("sglang", "fifo"), ("sglang-unified", "lru"), ("sglang-unified", "fifo"), ("lmcache", "lru"),
        ("lmcache", "fifo")]


@pytest.mark.parametrize(("name", "evicted"), [("sglang-fifo", "(3,8)"), ("sglang-unified-fifo", "(1,2)")])
def test_FIFO_DIALECT_2_a_split_keeps_the_creation_stamp_of_the_node_it_splits(name: str, evicted: str) -> None:
    """FIFO-DIALECT-2 against FIFO-DIALECT-1, capacity 6, block size 1. [1,2,9]: leaf A = (1,2,9),
    created first; [3,8]: leaf B, created after A. [1,2]: the lookup's 1 hit block (capped) splits
    A into (1) above (2,9); the insert of (1,2) splits (2,9) into (2) above (9): each upper part is
    created fresh (FIFO-DIALECT-1), or takes A's creation (FIFO-DIALECT-2). [4,5]: 1 block short:
    the oldest leaf is (9), A's remainder, evicted; (2) is a leaf now. [6]: 1 block short: FIFO-DIALECT-1
    evicts B, older than the fresh (2), 2 blocks, leaving 5; FIFO-DIALECT-2 evicts (2), as old as A,
    1 block, leaving 6 with B still there."""
    cache = engine("fifo", 6, 1, name=name)
    assert served(cache, [1, 2, 9], [3, 8], [1, 2], [4, 5], [6]) == [0, 0, 1, 0, 0]
    resident = {"(3,8)": cache.is_resident(cache.blocks([3, 8])[1]), "(1,2)": cache.is_resident(cache.blocks([1, 2])[1])}
    assert not resident[evicted] and all(kept for path, kept in resident.items() if path != evicted)
    assert cache.resident_count() == (5 if name == "sglang-fifo" else 6)


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_DIALECT_4_REPLAY_DIALECT_9_allocate_then_put_pins_nothing_so_it_excludes_pin_request(policy: str) -> None:
    """REPLAY-DIALECT-9 excludes pin-request (DIALECT-4): LMCache stores with nothing pinned, so a
    dialect that asked for both would promise pins it never takes."""
    with pytest.raises(ConfigError, match="DIALECT-4: allocate-then-put and pin-request"):
        dialect_for(policy, variations=("allocate-then-put", "pin-request"))
