"""spec/dialects.md section 9, LIFE-VLLM-10 to LIFE-VLLM-16: the protocol's lifecycle operations on vLLM's
pool in flight (reference/dialects/in_flight_lifecycle.py, reached by reference/caches.py pool_for).

Each clause on a handful of operations worked by hand over blocks of 4 tokens; the pool's contract over
random interleavings; the limit of one request at a time against the engine replay in `vllm`; and the
reference against tests/engines/vllm_model.py's independent model of vLLM's manager over random
interleavings, as docs/certifications/vllm/check_lifecycle.py holds it against the real one."""

import pytest
from engines.vllm_model import VllmModel
from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.adapters.interface import AdapterConfig

from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy, pool_for, replayed
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight import pool_holds
from kvspec.reference.dialects.in_flight_lifecycle import VllmLifecycle
from kvspec.reference.errors import ConfigError, KvspecError
from kvspec.reference.replay import PolicyServer
from kvspec.reference.trace import Request

VLLM = dialect_for("lru", "vllm")


def empty(capacity: int, block_size: int = 4) -> VllmLifecycle:
    pool = pool_for(ReplayConfig("lru", capacity, block_size, dialect=VLLM))()
    assert isinstance(pool, VllmLifecycle)
    return pool


def run(pool: VllmLifecycle, rid: int, hash_ids: list[int], input_length: int) -> tuple[int, int]:
    """arrive, allocate (made), compute all, finish: its hit and recomputed tokens."""
    pool.arrive(rid, hash_ids, input_length)
    assert pool.allocate(rid)
    pool.compute(rid, len(hash_ids))
    done = pool.finish(rid)
    return done.hit_tokens, done.recomputed_tokens


def queue(pool: VllmLifecycle) -> list[int | None]:
    """The free queue, head first: None for an empty slot, else the slot's block."""
    inner = pool.pool
    return [None] * inner.empty + [inner.block_of[slot] for slot in inner.queue]


def test_LIFE_VLLM_10_pool_for_gives_vllms_pool_with_no_max_model_len_and_refuses_other_dialects() -> None:
    """3 slots. A = [1, 2, 3] of 12 tokens is capacity × block_size, which the served replay refuses
    (LIFE-VLLM-3): here it is allocated (3 slots), and decoding past it is refused by the pool alone (no
    slot free). B = [4, 5, 6, 7] needs 4 slots: never allocated, left waiting, holding nothing. An id
    in flight cannot arrive again, and a dialect without a lifecycle is a ConfigError naming the clause."""
    pool = empty(3)
    pool.arrive(1, [1, 2, 3], 12)
    pool.arrive(2, [4, 5, 6, 7], 16)
    assert pool.allocate(1) and len(pool.pool.requests[1].table) == 3
    pool.compute(1, 3)
    assert not pool.decode(1)
    pool.finish(1)
    assert not pool.allocate(2) and not pool.allocate(2)
    assert pool.pool.requests[2].table == [] and pool.pool.free() == 3
    with pytest.raises(KvspecError, match="LIFE-ARRIVE-1"):
        pool.arrive(2, [1], 4)
    with pytest.raises(ConfigError, match="LIFE-VLLM-10"):
        pool_for(ReplayConfig("lru", 3, 4, dialect=dialect_for("lru", "sglang")))


def test_LIFE_VLLM_11_a_resumed_requests_lookup_finds_its_own_output_past_its_prompt() -> None:
    """4 slots. A = [1, 2] of 8 tokens computes its two blocks and decodes twice: t = 16, its own blocks at
    positions 2 and 3 cached. Preempted, its lookup over 16 tokens hits at most (16 - 1) // 4 = 3 blocks:
    [1], [1, 2] and its own block 2, past its prompt (n - 1 = 1 for LIFE-LOOKUP-1). The lookup changes
    nothing: the free queue is the same after it."""
    pool = empty(4)
    pool.arrive(1, [1, 2], 8)
    assert pool.lookup(1) == 0 and pool.allocate(1)
    pool.compute(1, 2)
    assert pool.decode(1) and pool.decode(1)
    pool.preempt(1)
    before = queue(pool)
    assert pool.lookup(1) == 3 and queue(pool) == before


def test_LIFE_VLLM_12_an_allocation_takes_every_slot_at_once_and_caches_nothing_until_a_compute() -> None:
    """4 slots. A = [1, 2, 3] of 12 tokens is allocated: 3 slots, nothing cached, so B = [1, 2, 3] finds
    nothing; A computes 1 block: B finds [1]; all 3: B finds (12 - 1) // 4 = 2. B's allocation needs 3 - 2
    slots (its hits are at count 1, A's) and 1 is free: made, hit 8 tokens. C = [5] then needs 1 slot of
    none free: refused, and nothing changes (no hit counted: it is made later with its own)."""
    pool = empty(4)
    pool.arrive(1, [1, 2, 3], 12)
    assert pool.allocate(1)
    assert len(pool.pool.requests[1].table) == 3 and pool.pool.resident_count() == 0
    pool.arrive(2, [1, 2, 3], 12)
    assert pool.lookup(2) == 0
    pool.compute(1, 1)
    assert pool.lookup(2) == 1
    pool.compute(1, 3)
    assert pool.lookup(2) == 2
    assert pool.allocate(2) and pool.pool.free() == 0
    pool.arrive(3, [5], 4)
    cached = dict(pool.pool.block_of)
    assert not pool.allocate(3)
    assert pool.pool.block_of == cached and pool.pool.requests[3].hit_tokens is None
    pool.compute(2, 3)
    assert (pool.finish(2).hit_tokens, pool.finish(1).hit_tokens) == (8, 0)


def test_LIFE_VLLM_13_a_compute_caches_whole_blocks_only_and_at_the_prompts_end_the_output_recomputed() -> None:
    """4 slots. A = [1, 2, 3] of 10 tokens: compute(1) caches [1]; compute(3) caches its whole blocks of 10
    tokens, [1] and [1, 2], not the partial [1, 2, 3]: 2 slots hold a block. B = [1, 2, 3] of 12 tokens then
    hits 2, and its compute(1) caches nothing again (still 2), its compute(3) [1, 2, 3] (3).
    Then 3 slots: C = [9] of 4 tokens computes [9], decodes (its own block at position 1 cached) and is
    preempted; resumed, its lookup over 8 tokens hits 1 block, and its compute(1), at n, caches its own
    block again in the slot it took, beside the one that holds it: 3 slots hold a block."""
    pool = empty(4)
    pool.arrive(1, [1, 2, 3], 10)
    assert pool.allocate(1)
    pool.compute(1, 1)
    assert pool.pool.resident_count() == 1
    pool.compute(1, 3)
    assert pool.pool.resident_count() == 2
    pool.finish(1)
    pool.arrive(2, [1, 2, 3], 12)
    assert pool.lookup(2) == 2 and pool.allocate(2)
    pool.compute(2, 1)
    assert pool.pool.resident_count() == 2
    pool.compute(2, 3)
    assert pool.pool.resident_count() == 3
    pool = empty(3)
    pool.arrive(1, [9], 4)
    assert pool.allocate(1)
    pool.compute(1, 1)
    assert pool.decode(1) and pool.pool.resident_count() == 2
    pool.preempt(1)
    assert pool.lookup(1) == 1 and pool.allocate(1)
    pool.compute(1, 1)
    assert pool.pool.resident_count() == 3 and len(pool.pool.slots_of) == 2


def test_LIFE_VLLM_14_a_decode_is_one_slot_more_its_filled_block_cached_or_refused_changing_nothing() -> None:
    """2 slots. A = [1] of 3 tokens computes nothing cacheable (no whole block). A decode: 7 tokens, 2
    slots, and its first block, now whole and its own (LIFE-VLLM-2), cached, which B = [1] of 8 tokens does
    not find. A second decode needs a third slot: refused, nothing changes. A's finish frees its hashless
    slot to the free queue's head and its own block to the tail."""
    pool = empty(2)
    pool.arrive(1, [1], 3)
    assert pool.allocate(1)
    pool.compute(1, 1)
    assert pool.pool.resident_count() == 0
    assert pool.decode(1)
    assert len(pool.pool.requests[1].table) == 2 and pool.pool.resident_count() == 1
    pool.arrive(2, [1], 8)
    assert pool.lookup(2) == 0
    cached = dict(pool.pool.block_of)
    assert not pool.decode(1)
    assert len(pool.pool.requests[1].table) == 2 and pool.pool.block_of == cached
    own = pool.pool.requests[1].blocks[0]
    pool.finish(1)
    assert queue(pool) == [None, own]


def test_LIFE_VLLM_15_a_preempted_request_counts_the_prompt_tokens_it_computed_and_its_resumption_misses() -> None:
    """3 slots. A = [1, 2, 3] of 12 tokens computes all 3 blocks and is preempted: 12 prompt tokens
    computed; its slots join the queue deepest first. B = [7, 8] takes the head two, evicting [1, 2, 3] and
    [1, 2]. A's lookup hits [1]; its allocation needs 3 - 1 + 1 (the hit at count 0) = 3 slots of 1 free:
    refused. B finishes; A is made with k = 1: 12 - 4 = 8 recomputed tokens, its hit tokens its first
    allocation's, 0."""
    pool = empty(3)
    pool.arrive(1, [1, 2, 3], 12)
    assert pool.allocate(1)
    pool.compute(1, 3)
    pool.preempt(1)
    pool.arrive(2, [7, 8], 8)
    assert pool.allocate(2)
    pool.compute(2, 2)
    assert pool.lookup(1) == 1 and not pool.allocate(1)
    pool.finish(2)
    assert pool.allocate(1)
    pool.compute(1, 3)
    done = pool.finish(1)
    assert (done.hit_tokens, done.recomputed_tokens) == (0, 8)
    with pytest.raises(KvspecError, match="LIFE-ALLOC-2"):
        pool.preempt(1)


def test_LIFE_VLLM_15_finish_and_decode_wait_for_every_block_computed() -> None:
    """PROTO-36 as the canonical Pool refuses it: a finish or a decode before the last block is computed,
    and a compute that does not move forward, are the caller's errors."""
    pool = empty(4)
    pool.arrive(1, [1, 2], 8)
    assert pool.allocate(1)
    pool.compute(1, 1)
    with pytest.raises(KvspecError, match="LIFE-VLLM-15"):
        pool.finish(1)
    with pytest.raises(KvspecError, match="LIFE-VLLM-14"):
        pool.decode(1)
    with pytest.raises(KvspecError, match="LIFE-VLLM-13"):
        pool.compute(1, 1)


def allowed(pool: VllmLifecycle, ids: int) -> list[tuple[str, int]]:
    """Every operation the pool's state allows (PROTO-36), of request ids 0 to ids - 1."""
    ops = []
    for rid in range(ids):
        flight, request = pool.flights.get(rid), pool.pool.requests.get(rid)
        if request is None:
            ops.append(("arrive", rid))
        elif not request.running:
            ops += [("lookup", rid), ("allocate", rid)]
        else:
            ops += [("preempt", rid), *((op, rid) for op in (("compute",) if flight.computed < flight.count else ("decode", "finish")))]
    return ops


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 6))
def test_LIFE_VLLM_10_every_interleaving_keeps_the_pool_whole_and_every_hit_capped(data: st.DataObject, capacity: int) -> None:
    """Random interleavings of 40 operations over 4 request ids on small pools, each one the state allows
    (PROTO-36): the pool's contract (LIFE-VLLM-1) holds after every operation, a made allocation holds a
    slot for each of its tokens' blocks (its contract), and a finished request hits at most its capped
    blocks."""
    pool = empty(capacity)
    for _ in range(40):
        op, rid = data.draw(st.sampled_from(allowed(pool, 4)))
        if op == "arrive":
            ids = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=capacity + 2))
            pool.arrive(rid, ids, len(ids) * 4 - data.draw(st.integers(0, 3)))
        elif op == "compute":
            pool.compute(rid, data.draw(st.integers(pool.flights[rid].computed + 1, pool.flights[rid].count)))
        elif op == "finish":
            done = pool.finish(rid)
            assert done.hit_tokens <= (done.input_length - 1) // 4 * 4
        else:
            getattr(pool, op)(rid)
        assert pool_holds(pool.pool)


def hash_path(pool_paths, block: int) -> list[int]:
    """A block as its hash ids from the first, whichever pool interned it."""
    step = {b: key for key, b in pool_paths.block_of.items()}
    parent, h = step[block]
    return [*hash_path(pool_paths, parent), h] if parent in step else [h]


@pytest.mark.parametrize("capacity", [16, 128])
def test_LIFE_VLLM_16_one_request_at_a_time_the_lifecycle_is_the_engine_replay_in_vllm(capacity: int) -> None:
    """The first 600 requests of the conversation trace at block size 512 (321 longer than 16 blocks, 21
    longer than 128), one at a time (arrive, allocate, compute(n), finish; a request longer than the pool
    refused and left waiting): the same hit tokens request by request as the engine replay in `vllm`,
    and the same free queue at the end."""
    records = list(TraceFile(bundled_trace_path("conversation_trace.jsonl.gz")).requests())[:600]
    config = ReplayConfig("lru", capacity, 512, dialect=VLLM)
    engine = make_policy(config)
    replay = replayed(records, config, per_request=True, server=PolicyServer(engine, 512))
    pool, hits = empty(capacity, 512), []
    for rid, (_, record) in enumerate(records):
        pool.arrive(rid, record.hash_ids, record.input_length)
        if not pool.allocate(rid):
            hits.append(0)
            continue
        pool.compute(rid, len(record.hash_ids))
        hits.append(pool.finish(rid).hit_tokens)
    assert hits == [line.hit_tokens for line in replay.per_request] and any(hits)
    inner = pool.pool
    assert inner.empty == engine.empty
    assert [hash_path(inner.paths, inner.block_of[s]) for s in inner.queue] == [hash_path(engine.paths, b) for b in engine.queue.values()]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(1, 3), min_size=1, max_size=5), st.integers(0, 3)), min_size=1, max_size=12),
       st.integers(1, 6))
def test_LIFE_VLLM_16_one_request_at_a_time_on_random_small_traces(spec: list, capacity: int) -> None:
    """The same limit on random small traces (shared prefixes, partial last blocks, requests longer than
    the pool), hit tokens request by request."""
    records = [(n, Request(n, max(1, len(ids) * 4 - short), 1, ids)) for n, (ids, short) in enumerate(spec)]
    config = ReplayConfig("lru", capacity, 4, dialect=VLLM)
    replay = replayed(records, config, per_request=True, server=PolicyServer(make_policy(config), 4))
    pool, hits = empty(capacity), []
    for rid, record in records:
        pool.arrive(rid, record.hash_ids, record.input_length)
        made = pool.allocate(rid)
        if made:
            pool.compute(rid, len(record.hash_ids))
        hits.append(pool.finish(rid).hit_tokens if made else 0)
    assert hits == [line.hit_tokens for line in replay.per_request]


class Paired:
    """The model's block hashes named by the reference's blocks at the same positions of the same requests."""

    def __init__(self, model: VllmModel, pool: VllmLifecycle) -> None:
        self.model, self.pool, self.name_of, self.hash_of = model, pool, {}, {}

    def pair(self, rid: int) -> None:
        """LIFE-VLLM-2: one name a hash and one hash a name."""
        for block_hash, block in zip(self.model.in_flight[rid].block_hashes, self.pool.pool.requests[rid].blocks, strict=False):
            assert self.name_of.setdefault(block_hash, block) == block and self.hash_of.setdefault(block, block_hash) == block_hash

    def pools(self) -> tuple[object, object]:
        """(the model's, the reference's): the free queue head first (None: holding no block) and the cached blocks."""
        queue = self.model.free_queue
        held = [None if b.block_hash is None else self.name_of[b.block_hash] for b in [*queue.front, *queue.back.values()]]
        model_queue = held[:len(queue.front)] + [None] * (queue.last_id - queue.next_unused + 1) + held[len(queue.front):]
        model_cached = sorted(self.name_of[h] for h, holders in self.model.cached.blocks.items() for _ in holders)
        inner = self.pool.pool
        reference_queue = [None] * inner.empty + [inner.block_of[slot] for slot in inner.queue]
        return (model_queue, model_cached), (reference_queue, sorted(inner.block_of.values()))


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(1, 8), st.integers(1, 3))
def test_LIFE_VLLM_10_to_16_the_reference_is_the_independent_model_of_vllms_manager(data: st.DataObject, capacity: int,
                                                                                  block_size: int) -> None:
    """Random interleavings of 60 operations over 5 request ids, each one the state allows (shared and
    divergent prefixes from 3 hash ids, partial last blocks, requests longer than the pool, nearly full
    pools): the reference and the model answer alike (k, made, hit and recomputed tokens), and after
    every operation their free queues, head to tail, and their cached blocks are the same, each model
    hash named by one reference block."""
    model, pool = VllmModel(), empty(capacity, block_size)
    model.configure(AdapterConfig("lru", capacity, block_size, 0.1, 3))
    paired = Paired(model, pool)
    for _ in range(60):
        op, rid = data.draw(st.sampled_from(allowed(pool, 5)))
        args: tuple = ()
        if op == "arrive":
            ids = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=capacity + 2))
            args = (ids, len(ids) * block_size - data.draw(st.integers(0, block_size - 1)))
        elif op == "compute":
            flight = pool.flights[rid]
            args = (data.draw(st.integers(flight.computed + 1, flight.count)),)
        theirs, ours = getattr(model, op)(rid, *args), getattr(pool, op)(rid, *args)
        if op == "finish":
            theirs, ours = (theirs.hit_tokens, theirs.recomputed_tokens), (ours.hit_tokens, ours.recomputed_tokens)
        else:
            paired.pair(rid)
        assert theirs == ours, (op, rid, args)
        assert paired.pools()[0] == paired.pools()[1], (op, rid, args)
