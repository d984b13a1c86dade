"""spec/dialects.md section 9, LMCache's local CPU backend in flight: a trace served over it
(reference/dialects/in_flight_lmcache.py, `kvspec replay --serve --dialect lmcache`).

Each clause on a trace worked by hand, beside vLLM's dialect or the canonical served replay where
they part; the pins on the pool itself and on its contract; random traces with every contract on;
the limit of one request at a time against the engine replay in `lmcache` on both bundled traces;
and the command line. Chunks are blocks of 4 tokens throughout."""

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import ReplayConfig
from kvspec.reference.caches import make_policy, server_for
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight_lmcache import LmcachePool, LmcacheServer, pool_holds
from kvspec.reference.serve import served
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

VLLM = dialect_for("lru", "vllm")
KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]


def serve(requests: tuple[Request, ...], capacity: int, policy: str = "lru", dialect: frozenset[str] | None = None,
          **service: int) -> list:
    """The served result of ``requests`` over chunks of 4 tokens in ``dialect`` (LMCache's of ``policy`` unless
    given), then each request's line in trace order."""
    config = ReplayConfig(policy, capacity, 4, dialect=dialect_for(policy, "lmcache") if dialect is None else dialect)
    got: list = []
    result = served(list(enumerate(requests, start=1)), config, ServiceModel(**service), add=got.append, server=server_for(config))
    return [result, *sorted(got, key=lambda line: line.request)]


def queue(server: LmcacheServer) -> list[list[int]]:
    """The store's queue, head first, each chunk as its hash-id path."""
    store = server.pool.store
    step = {block: key for key, block in store.cache.paths.block_of.items()}

    def ids(block: int) -> list[int]:
        parent, h = step[block]
        return [*ids(parent), h] if parent in step else [h]

    order = store.cache.recency if policy_of(server) == "lru" else store.cache.arrival  # type: ignore[union-attr]
    return [ids(block) for block in order]


def policy_of(server: LmcacheServer) -> str:
    return server.result.policy


def run(requests: tuple[Request, ...], capacity: int, policy: str = "lru", **service: int) -> LmcacheServer:
    config = ReplayConfig(policy, capacity, 4, dialect=dialect_for(policy, "lmcache"))
    server = LmcacheServer(config, ServiceModel(**service), None)
    server.serve(list(enumerate(requests, start=1)), "<hand>")
    return server


def test_LIFE_LMCACHE_1_nothing_refuses_a_request_for_room_since_the_running_requests_KV_is_not_in_the_store() -> None:
    """A store of 2 chunks; three prompts of 4 chunks (16 tokens) at 0, each to generate 8. Their KV is in vLLM's
    pool, not modeled: all three run at once, none is refused, preempted or cut short, and the store ends
    with 2 chunks. vLLM's dialect in a pool of 2 blocks refuses all three (max_model_len 8 tokens, LIFE-VLLM-3);
    the canonical pool runs them one at a time, each cut short when its decoding fills the pool."""
    trace = tuple(Request(0, 16, 8, [n, n + 1, n + 2, n + 3]) for n in (10, 20, 30))
    lmcache, *lines = serve(trace, 2)
    assert (lmcache.refused, lmcache.preemptions, lmcache.cut_short, lmcache.peak_running, lmcache.final_cache_blocks) == (0, 0, 0, 3, 2)
    assert [line.output_tokens for line in lines] == [8, 8, 8]
    assert serve(trace, 2, dialect=VLLM)[0].refused == 3
    canonical = serve(trace, 2, dialect=frozenset())[0]
    assert canonical.cut_short == 3 and canonical.peak_running == 1


def test_LIFE_LMCACHE_2_a_request_stores_no_chunk_of_its_output_where_vllm_caches_its_output_blocks() -> None:
    """A = [1, 2] of 8 tokens generating 20: its decoding stores nothing (save_decode_cache off): 2 chunks and
    own_blocks 0 at the end. vLLM's dialect caches the 6 whole blocks of its 27 computed tokens: 4 its own."""
    alone = (Request(0, 8, 20, [1, 2]),)
    lmcache = serve(alone, 16)[0]
    assert (lmcache.final_cache_blocks, lmcache.own_blocks) == (2, 0)
    vllm = serve(alone, 16, dialect=VLLM)[0]
    assert (vllm.final_cache_blocks, vllm.own_blocks) == (6, 4)


class Steps(LmcacheServer):
    """LMCache's server, keeping each step's chunks as (request, tokens)."""

    def run_step(self, chunks: list[tuple[int, int]]) -> None:
        self.seen = [*getattr(self, "seen", []), list(chunks)]
        super().run_step(chunks)


def test_LIFE_LMCACHE_3_every_resident_chunk_hits_touched_last_first_and_a_whole_prompt_hit_computes_its_last_token() -> None:
    """B repeats A's 12 tokens [1, 2, 3]: its lookup hits all 3 chunks (12 tokens; vLLM's caps at 2, 8 tokens)
    and touches them last first, so that the deepest is the least recent: the queue, head first, is
    [1, 2, 3], [1, 2], [1]. Its prefill computes the last token alone, a chunk of 1 token. Under FIFO the
    touch changes nothing: [1], [1, 2], [1, 2, 3]."""
    again = (Request(0, 12, 1, [1, 2, 3]), Request(10_000, 12, 1, [1, 2, 3]))
    lmcache, _, b = serve(again, 8)
    assert b.hit_tokens == 12 and serve(again, 8, dialect=VLLM)[2].hit_tokens == 8
    config = ReplayConfig("lru", 8, 4, dialect=dialect_for("lru", "lmcache"))
    server = Steps(config, ServiceModel(), None)
    server.serve(list(enumerate(again, start=1)), "<again>")
    assert server.seen == [[(1, 12)], [(2, 1)]]
    assert queue(server) == [[1, 2, 3], [1, 2], [1]]
    assert queue(run(again, 8, "fifo")) == [[1], [1, 2], [1, 2, 3]]


def test_LIFE_LMCACHE_4_a_pin_ends_when_its_request_reads_before_the_steps_stores_so_the_chunk_may_go() -> None:
    """FIFO, 3 chunks, 8 tokens a step. A = [1] stores [1] and finishes. Later D = [5, 6, 7] of 12 tokens and
    C = [1, 9] of 8 arrive together: D takes the step's 8 tokens and stores [5, 6] after it (the store full:
    [1], [5, 6]). Next step D's last 4 tokens and C, whose lookup hits [1] and pins it (1 chunk pinned at
    most). C reads [1] at the step's start, so the pin is gone when C's store of [1, 9] finds the store
    full: its victim is the head, [1]; then D's store of [5, 6, 7] evicts [5]. E = [1] finds nothing. Were
    the pin kept to the step's end, C's store would evict [5] instead, and E would hit [1]."""
    trace = (Request(0, 4, 1, [1]), Request(10_000, 12, 1, [5, 6, 7]), Request(10_000, 8, 1, [1, 9]), Request(20_000, 4, 1, [1]))
    lmcache, _, d, c, e = serve(trace, 3, "fifo", step_tokens=8, max_running=8)
    assert (c.hit_tokens, e.hit_tokens, lmcache.peak_referenced_blocks, lmcache.final_cache_blocks) == (4, 0, 1, 3)
    assert d.waiting_ms == 0.0 < c.waiting_ms


def test_LIFE_LMCACHE_6_the_steps_new_requests_store_first_and_a_chunk_is_stored_only_after_its_step() -> None:
    """The trace of the test above, its last request left out: after C's store of [1, 9] (evicting [1]), D's of
    [5, 6, 7] evicts [5]: the queue is [5, 6], [1, 9], [5, 6, 7], head first. D's store first would give
    [5, 6], [5, 6, 7], [1, 9]. And two requests of 9 tokens at 0 sharing [1, 2], admitted in one step: B's
    lookup finds nothing A stores after the step, so B hits 0 with 0 uncomputed tokens; vLLM caches A's blocks
    as the step is scheduled, and B hits 8 there (LIFE-VLLM-7)."""
    trace = (Request(0, 4, 1, [1]), Request(10_000, 12, 1, [5, 6, 7]), Request(10_000, 8, 1, [1, 9]))
    assert queue(run(trace, 3, "fifo", step_tokens=8, max_running=8)) == [[5, 6], [1, 9], [5, 6, 7]]
    same_step = (Request(0, 9, 1, [1, 2, 3]), Request(0, 9, 1, [1, 2, 4]))
    lmcache, _, b = serve(same_step, 8)
    assert (b.hit_tokens, lmcache.uncomputed_tokens, lmcache.final_cache_blocks) == (0, 0, 2)
    assert serve(same_step, 8, dialect=VLLM)[2].hit_tokens == 8


def test_LIFE_LMCACHE_6_a_prompt_stored_chunk_by_chunk_keeps_its_last_chunks_where_one_store_keeps_its_first() -> None:
    """LRU, 2 chunks; A = [1, 2, 3] of 12 tokens. At 4 tokens a step it stores [1], [1, 2], then [1, 2, 3], whose
    allocation evicts [1]: its last two chunks stay. In one step (the limit of LIFE-LMCACHE-8) its one store
    allocates [1] and [1, 2] and stops at [1, 2, 3], with nothing to evict: its first two stay, as the engine
    replay in lmcache keeps them (REPLAY-DIALECT-9)."""
    alone = (Request(0, 12, 1, [1, 2, 3]),)
    assert queue(run(alone, 2, step_tokens=4, max_running=4)) == [[1, 2], [1, 2, 3]]
    assert queue(run(alone, 2)) == [[1], [1, 2]]
    engine = make_policy(ReplayConfig("lru", 2, 4, dialect=dialect_for("lru", "lmcache")))
    blocks = engine.blocks([1, 2, 3])
    engine.serve(blocks, 12, engine.lookup(blocks, 12))
    assert list(engine.cache.recency) == blocks[:2]  # type: ignore[attr-defined]


def test_LIFE_LMCACHE_5_a_pinned_chunk_is_never_a_victim_and_a_store_stops_when_every_chunk_is_pinned() -> None:
    """LRU, 2 chunks. A stores [1], [1, 2]. B = [1] looks up and pins [1] (touched: the queue [1, 2], [1]).
    C's store of [3], [3, 4] allocates [3], evicting [1, 2], the least recent unpinned; for [3, 4] the one
    chunk left is [1], pinned: the allocation fails and the store stops, so [1] and [3] stay. Without the pin
    [1] would go and [3], [3, 4] stay. Once B has read, D's store of [5] may evict [1]."""
    pool = LmcachePool(make_policy(ReplayConfig("lru", 2, 4, dialect=dialect_for("lru", "lmcache"))))  # type: ignore[arg-type]
    for rid, ids in ((1, [1, 2]), (2, [1]), (3, [3, 4]), (4, [5])):
        pool.arrive(rid, ids, 4 * len(ids))
    assert pool.lookup(1) == 0
    pool.put(pool.requests[1], 2)
    assert pool.lookup(2) == 1 and pool.pins == {pool.requests[2].blocks[0]: 1}
    assert pool.lookup(3) == 0
    pool.put(pool.requests[3], 2)
    pinned, three = pool.requests[2].blocks[0], pool.requests[3].blocks[0]
    assert list(pool.store.cache.recency) == [pinned, three] and pool.store.stored == 3  # type: ignore[attr-defined]
    pool.read(2)
    assert not pool.pins and not pool.store.cache.protected
    pool.lookup(4)
    pool.put(pool.requests[4], 1)
    assert list(pool.store.cache.recency) == [three, pool.requests[4].blocks[0]]  # type: ignore[attr-defined]


def test_LIFE_LMCACHE_5_the_pool_contract_sees_a_pin_no_request_holds_and_a_pinned_chunk_gone() -> None:
    pool = LmcachePool(make_policy(ReplayConfig("fifo", 2, 4, dialect=dialect_for("fifo", "lmcache"))))  # type: ignore[arg-type]
    pool.arrive(1, [1], 4)
    pool.arrive(2, [1], 4)
    pool.lookup(1)
    pool.put(pool.requests[1], 1)
    pool.lookup(2)
    chunk = pool.requests[2].blocks[0]
    assert pool_holds(pool) and pool.pins[chunk] == 1
    pool.pins[chunk] += 1  # a pin no request's lookup took
    assert not pool_holds(pool)
    pool.pins[chunk] -= 1
    del pool.store.cache.arrival[chunk]  # type: ignore[attr-defined]  # a pinned chunk evicted
    assert not pool_holds(pool)


def test_LIFE_LMCACHE_7_a_finish_changes_nothing_of_the_store_and_each_hit_is_counted_once() -> None:
    """Under the load that preempts in the canonical pool of 4 blocks (three requests of 2 blocks at 0, each to
    generate 6), LMCache's store preempts none: each request is admitted once, and its counted hit is that
    admission's. B and C repeat A's prompt at 1 ms, after A's store: both hit its 8 tokens, recomputing none,
    and the store holds A's 2 chunks at the end, the finishes having changed nothing."""
    trace = (Request(0, 8, 6, [1, 2]), Request(1, 8, 6, [1, 2]), Request(1, 8, 6, [1, 2]), Request(1, 8, 6, [3, 4]))
    assert serve(trace, 4, dialect=frozenset(), max_running=8, step_tokens=8)[0].preemptions > 0
    lmcache, a, b, c, d = serve(trace, 4, max_running=8, step_tokens=8)
    assert (lmcache.preemptions, lmcache.total_recomputed_tokens, lmcache.total_hit_tokens) == (0, 0, 16)
    assert (a.hit_tokens, b.hit_tokens, c.hit_tokens, d.hit_tokens) == (0, 8, 8, 0)
    assert lmcache.final_cache_blocks == 4 and lmcache.peak_referenced_blocks == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(0, 3), st.integers(1, 9)),
                min_size=1, max_size=7), st.integers(0, 6), st.sampled_from(["lru", "fifo"]), st.integers(1, 12))
def test_LIFE_LMCACHE_8_every_request_is_served_with_the_pool_whole_after_every_operation(spec: list, capacity: int, policy: str,
                                                                                          step: int) -> None:
    """Random traces on small stores (capacity 0 included, REPLAY-DIALECT-1), the pool's contract
    (LIFE-LMCACHE-5) checked after every operation: every request ends, none refused, preempted or cut short,
    no pin left, the store within its capacity, and nothing uncomputed."""
    time, trace = 0, []
    for gap, ids, short, output in spec:
        time += gap
        trace.append(Request(time, max(1, len(ids) * 4 - short), output, ids))
    server = run(tuple(trace), capacity, policy, max_running=min(4, step), step_tokens=step)
    result = server.result
    assert result.requests == len(trace) and not server.pool.requests and not server.pool.pins and not server.pool.store.cache.protected
    assert (result.refused, result.preemptions, result.cut_short, result.uncomputed_tokens, result.own_blocks) == (0, 0, 0, 0, 0)
    assert result.final_cache_blocks == server.pool.store.resident_count() <= capacity
    assert result.total_hit_tokens <= sum(r.input_length // 4 * 4 for r in trace)


LIMIT = """
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy, replayed
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight_lmcache import LmcacheServer
from kvspec.reference.replay import PolicyServer
from kvspec.reference.service import ServiceModel
trace = sys.argv[1]
records = list(TraceFile(bundled_trace_path(trace)).requests())
apart = [(line, r._replace(timestamp=n * 10**7)) for n, (line, r) in enumerate(records)]  # each after the one before has finished
longest = max(r.input_length for _, r in records)
def queue(cache):  # the queue, head first, each chunk as its hash-id path (a path's parent is interned before it)
    path = {0: ()}
    for (parent, h), block in sorted(cache.paths.block_of.items(), key=lambda item: item[1]):
        path[block] = (*path[parent], h)
    return [path[b] for b in (cache.recency if hasattr(cache, "recency") else cache.arrival)]
out = []
for capacity, policy in ((256, "lru"), (4096, "lru"), (65536, "lru"), (4096, "fifo")):
    config = ReplayConfig(policy=policy, capacity=capacity, block_size=512, dialect=dialect_for(policy, "lmcache"))
    lines = []
    server = LmcacheServer(config, ServiceModel(max_running=1024, step_tokens=longest), lines.append)  # one chunk a prompt
    served = server.serve(apart, trace)
    engine = make_policy(config)
    replay = replayed(records, config, per_request=True, server=PolicyServer(engine, 512))
    hits = [l.hit_tokens for l in sorted(lines, key=lambda l: l.request)], [r.hit_tokens for r in replay.per_request]
    queues = queue(server.pool.store.cache), queue(engine.cache)
    out.append({"capacity": capacity, "policy": policy, "same_hits": hits[0] == hits[1], "hit": sum(hits[1]),
                "same_queue": queues[0] == queues[1], "final": [served.final_cache_blocks, replay.final_cache_blocks, len(queues[1])]})
print(json.dumps(out))
"""


def test_LIFE_LMCACHE_8_one_request_at_a_time_served_in_lmcache_is_the_engine_replay_on_both_traces() -> None:
    """Each request arriving after the one before has finished, its prompt in one chunk, generating what the
    trace says (LMCache stores none of it): the served replay in `lmcache` and the engine replay in `lmcache`
    (REPLAY-DIALECT-9, LRU-DIALECT-4) hit the same tokens request by request and leave the same queue, in
    order, at 256, 4,096 and 65,536 blocks (FIFO at 4,096) on both bundled traces (about 10 s in all)."""
    for trace in ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"):
        done = subprocess.run([sys.executable, "-c", LIMIT, trace], capture_output=True, text=True, timeout=900,
                              env={**os.environ, "KVSPEC_CONTRACTS": "0"})
        assert done.returncode == 0, done.stderr
        for got in json.loads(done.stdout):
            where = (trace, got["capacity"], got["policy"])
            assert got["same_hits"] and got["hit"] > 0, where
            assert got["same_queue"] and got["final"][0] == got["final"][1] == got["final"][2], where


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVSPEC, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_LIFE_LMCACHE_1_kvspec_replay_serve_dialect_lmcache_reports_the_dialect_under_lru_and_fifo() -> None:
    for policy, last in (("lru", "lru-reverse-touch"), ("fifo", "allocate-then-put")):
        done = kvspec("replay", "synthetic", "--serve", "--dialect", "lmcache", "--policy", policy, "--capacity", "512")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["policy"] == policy and result["dialect"][-1] == last and result["requests"] > 0
        assert (result["refused"], result["preemptions"], result["own_blocks"], result["uncomputed_tokens"]) == (0, 0, 0, 0)
    done = kvspec("replay", "synthetic", "--serve", "--capacity", "512", "--dialect", "lmcache", "--policy", "lru",
                  "--variation", "hit-cap-last-token")
    assert done.returncode == 1 and "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects vllm" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_LIFE_LMCACHE_8_kvspec_sweep_serve_beside_lmcache_serves_it_too_and_refuses_an_unknown_name(tmp_path) -> None:
    """Beside LMCache's LRU, each served point is what `kvspec replay --serve --dialect lmcache` gives."""
    out = tmp_path / "sweep.json"
    done = kvspec("sweep", "synthetic", "--serve", "--policy", "lru", "--beside", "lmcache-lru", "--capacity", "512", "--output", str(out))
    assert done.returncode == 0, done.stderr
    sweep = json.loads(out.read_text())
    assert [p.get("beside") for p in sweep["served"]] == [None, "lmcache-lru"]
    alone = json.loads(kvspec("replay", "synthetic", "--serve", "--dialect", "lmcache", "--policy", "lru", "--capacity", "512").stdout)
    assert sweep["served"][1]["result"] == alone
    done = kvspec("sweep", "synthetic", "--serve", "--policy", "lru", "--beside", "lmcache-mru", "--capacity", "512")
    assert done.returncode != 0 and "lmcache-mru" in done.stderr and "Traceback" not in done.stderr, done.stderr
