"""spec/dialects.md section 9, SGLang's radix cache in flight: a trace served over it
(reference/dialects/in_flight_radix.py, `kvspec replay --serve --dialect sglang`).

Each clause on a trace worked by hand, beside the canonical served replay where they part; the pool's
own state on its contract; random traces with every contract on; the limit of one request at a time
against the engine replay in `sglang` on both bundled traces at three capacities; and the command line.
Pages are blocks of 4 tokens throughout, so `max_req_len` is 4 × capacity − 1 (LIFE-SGLANG-2)."""

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import ReplayConfig
from kvspec.reference.caches import server_for
from kvspec.reference.dialects import CANONICAL, dialect_for
from kvspec.reference.dialects.in_flight_radix import SglangPool, SglangServer, pool_holds
from kvspec.reference.dialects.radix import RadixCache, descendants
from kvspec.reference.serve import served
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

SGLANG = dialect_for("lru", "sglang")
VLLM = dialect_for("lru", "vllm")
KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]


def serve(requests: tuple[Request, ...], capacity: int, dialect: frozenset[str] = SGLANG, **service: int) -> list:
    """The served result of ``requests`` over blocks of 4 tokens, then each request's line in trace order."""
    config = ReplayConfig("lru", capacity, 4, dialect=dialect)
    got: list = []
    result = served(list(enumerate(requests, start=1)), config, ServiceModel(**service), add=got.append, server=server_for(config))
    return [result, *sorted(got, key=lambda line: line.request)]


def test_LIFE_SGLANG_7_a_page_is_inserted_after_its_step_runs_so_a_request_in_the_same_step_hits_nothing() -> None:
    """Two requests of 9 tokens at 0 sharing [1, 2], admitted in one step. A's pages enter the tree only
    after the step has run, so B's match finds nothing: 0 hit, and 0 uncomputed tokens (every page in the
    tree is computed). Both rows hold 3 pages (6 in use); A's [1, 2] is inserted, and B's copies of the
    same two pages are freed at its own insertion: the tree ends with 2 pages. vLLM caches A's blocks at
    the schedule, so B hits 8 there (uncomputed); canonically B hits 0 and its 8 tokens are uncomputed."""
    same_step = (Request(0, 9, 1, [1, 2, 3]), Request(0, 9, 1, [1, 2, 4]))
    sglang, _, b = serve(same_step, 8)
    assert (b.hit_tokens, sglang.uncomputed_tokens, sglang.peak_referenced_blocks, sglang.final_cache_blocks) == (0, 0, 6, 2)
    assert [serve(same_step, 8, d)[2].hit_tokens for d in (VLLM, CANONICAL)] == [8, 0]
    assert serve(same_step, 8, CANONICAL)[0].uncomputed_tokens == 8


def test_LIFE_SGLANG_7_a_prompt_prefilled_in_two_chunks_is_two_nodes_where_the_engine_replay_has_one() -> None:
    """A of 12 tokens, [1, 2, 3], with 8 tokens a step: the first chunk computes 8 tokens and inserts
    [1, 2]; the second the last 4, and the finish inserts [3] under it. The engine replay inserts [1, 2, 3]
    as one leaf (LRU-DIALECT-5), which is why the limit (LIFE-SGLANG-9) asks for one chunk a prompt."""
    config = ReplayConfig("lru", 8, 4, dialect=SGLANG)
    server = SglangServer(config, ServiceModel(max_running=8, step_tokens=8), None)
    server.serve([(1, Request(0, 12, 1, [1, 2, 3]))], "<chunks>")
    assert sorted(len(n.run) for n in descendants(server.pool.tree.root)) == [1, 2]
    whole = SglangServer(config, ServiceModel(max_running=8, step_tokens=16), None)
    whole.serve([(1, Request(0, 12, 1, [1, 2, 3]))], "<one chunk>")
    assert [len(n.run) for n in descendants(whole.pool.tree.root)] == [3]


def test_LIFE_SGLANG_4_the_last_token_is_never_a_hit_and_a_page_computed_again_is_not_inserted_twice() -> None:
    """B repeats A's 8 tokens: its match stops at one page ((8 - 1) // 4), its second page is computed
    again, and its insertion finds [1, 2] in the tree, so its copy is freed: 2 pages at the end. vLLM caches
    the copy beside A's (3 slots); canonically B hits all 8."""
    again = (Request(0, 8, 1, [1, 2]), Request(10_000, 8, 1, [1, 2]))
    sglang, _, b = serve(again, 4)
    assert (b.hit_tokens, sglang.final_cache_blocks) == (4, 2)
    assert serve(again, 4, VLLM)[0].final_cache_blocks == 3 and serve(again, 4, CANONICAL)[2].hit_tokens == 8


def test_LIFE_SGLANG_2_a_prompt_of_max_req_len_less_5_is_refused_and_an_output_stops_at_max_req_len() -> None:
    """4 pages: max_req_len 15. A prompt of 10 tokens (15 - 5) is refused: it hits 0 and generates
    nothing, its line written. One of 5 tokens asking 20 generates 15 - 1 - 5 = 9, and its finish inserts
    the 3 whole pages of its 13 computed tokens ([3], then 2 of its own: LIFE-SGLANG-8). Canonically the
    first runs and the second is cut short (LIFE-SERVE-5) after 12 tokens, its held pages freed (2 left)."""
    trace = (Request(0, 10, 1, [1, 2, 3]), Request(0, 5, 20, [3, 4]))
    sglang, refused, capped = serve(trace, 4)
    assert (sglang.refused, sglang.requests, refused.output_tokens, refused.hit_tokens, capped.output_tokens) == (1, 2, 0, 0, 9)
    assert (sglang.cut_short, sglang.final_cache_blocks) == (0, 3)
    canonical, first, second = serve(trace, 4, CANONICAL)
    assert (canonical.refused, first.output_tokens, second.output_tokens, canonical.cut_short, canonical.final_cache_blocks) == (None, 1, 12, 1, 2)


def test_LIFE_SGLANG_5_a_request_waits_while_the_running_ones_output_left_is_reserved() -> None:
    """5 pages (20 tokens); A = [1] and B = [2], 4 tokens each, at 0, each to generate 9. A needs
    4 + 9 = 13 < 20 and is admitted, its row one page. B needs 13, against (4 free + 0 evictable) × 4 less
    A's 9 tokens left = 7: refused, it waits until A finishes, so nothing is preempted. Canonically (and in
    vLLM) both are admitted, and B is preempted (twice canonically, once in vLLM)."""
    decoding = (Request(0, 4, 9, [1]), Request(0, 4, 9, [2]))
    sglang, a, b = serve(decoding, 5)
    assert (sglang.preemptions, a.output_tokens, b.output_tokens, a.waiting_ms, sglang.peak_running) == (0, 9, 9, 0.0, 1)
    assert b.waiting_ms > 0
    assert serve(decoding, 5, CANONICAL)[0].preemptions == 2 and serve(decoding, 5, VLLM)[0].preemptions == 1


def test_LIFE_SGLANG_6_a_refused_page_preempts_the_newest_and_LIFE_SGLANG_8_what_it_inserted_stays() -> None:
    """5 pages; A, B, C = [1], [2], [3], 4 tokens each at 0, each to generate 2. Each needs 4 + 2 = 6:
    A against 20, B against 16 - 2 = 14, C against 12 - 4 = 8: all admitted, one page each, and the step
    that prefills them inserts [1], [2], [3] (locked). To decode, each needs a second page: A and B take
    the 2 free, C finds no unlocked leaf to evict and, the newest, is preempted: its row has no page
    outside the tree, its lock is dropped, and [3] stays, evictable. A and B finish; C's match (5 tokens:
    at most 1 page) hits [3], so it recomputes nothing (its counted hit is its first match's, 0)."""
    trace = (Request(0, 4, 2, [1]), Request(0, 4, 2, [2]), Request(0, 4, 2, [3]))
    sglang, a, b, c = serve(trace, 5)
    assert (sglang.preemptions, c.preemptions, c.hit_tokens, c.recomputed_tokens, sglang.peak_referenced_blocks) == (1, 1, 0, 0, 5)
    assert [line.output_tokens for line in (a, b, c)] == [2, 2, 2] and sglang.cut_short == 0


def test_LIFE_SGLANG_6_a_resumed_request_recomputes_its_prompt_and_its_output_in_one_chunk() -> None:
    """4 pages; A = [1] and B = [11] of 4 tokens and C = [21] of 1, at 0, each to generate 2. A needs 4 + 2
    = 6 against 16, B 6 against 12 - 2 = 10, C 3 against 8 - 4 = 4: all admitted, one page each, and the
    first step prefills them and generates a token each. To decode, A takes the free page; B finds none
    ([1] and [11] locked) and C, the newest, is retracted, its row freed. A and B then finish (step 2). C's
    prefill is its prompt's token and the one it generated: 2 tokens, none a hit ((2 - 1) // 4 pages), one
    chunk, as SGLang's extend runs from the match to the end of its output (schedule_policy.py:1603-1604):
    its second token in step 3, 3 steps. Ended at the prompt's end, as LIFE-SERVE-4 ends a canonical chunk,
    it would take a step more for the token it had generated: 4."""
    trace = (Request(0, 4, 2, [1]), Request(0, 4, 2, [11]), Request(0, 1, 2, [21]))
    sglang, a, b, c = serve(trace, 4)
    assert (sglang.steps, sglang.preemptions, c.preemptions, c.recomputed_tokens) == (3, 1, 1, 0)
    assert [line.output_tokens for line in (a, b, c)] == [2, 2, 2] and sglang.cut_short == 0


def test_LIFE_SGLANG_8_a_finish_inserts_its_output_pages_which_the_canonical_pool_frees() -> None:
    """A = [1] of 4 tokens generating 9 computes 12 tokens: its finish inserts 3 whole pages, [1] and 2 of
    its own, which stay in the tree. Canonically its output's blocks are held and freed: 1 block left."""
    alone = (Request(0, 4, 9, [1]),)
    assert serve(alone, 8)[0].final_cache_blocks == 3 and serve(alone, 8, CANONICAL)[0].final_cache_blocks == 1


def test_LIFE_SGLANG_3_a_lock_counts_the_requests_on_a_node_and_a_split_carries_it() -> None:
    """8 pages. A = [1, 2] runs and inserts [1, 2]: one node, count 1. B = [1, 3] matches [1] (its cap
    is 1 page), splitting the node: the upper part [1] takes the count 1, and B's lock makes it 2. No
    eviction takes a locked node; once A ends, [2] (count 0) goes and [1] (B's) stays."""
    pool = SglangPool(RadixCache.empty(SGLANG, 8, 4, "lru"))
    pool.arrive(1, [1, 2], 8)
    k, node = pool.match(1, 8)
    pool.allocate(1, k, node)
    assert pool.take(1, 2, True)
    pool.checkpoint(1, 8)
    pool.arrive(2, [1, 3], 8)
    k, upper = pool.match(2, 8)
    assert k == 1 and upper.locked == 1 and pool_holds(pool)
    pool.allocate(2, k, upper)
    lower = next(iter(upper.children.values()))
    assert (upper.locked, lower.locked, pool.protected, pool.evictable()) == (2, 1, 2, 0)
    pool.tree.evict(8)
    assert len(pool.tree.resident) == 2
    pool.finish(1)
    pool.tree.evict(8)
    assert list(pool.tree.resident.values()) == [upper] and upper.locked == 1 and pool_holds(pool)


def test_LIFE_SGLANG_1_the_pool_contract_sees_a_lock_no_request_holds_and_a_page_lost() -> None:
    pool = SglangPool(RadixCache.empty(SGLANG, 4, 4, "lru"))
    pool.arrive(1, [1], 4)
    pool.allocate(1, 0, pool.tree.root)
    assert pool.take(1, 1, True)
    pool.checkpoint(1, 4)
    assert pool_holds(pool)
    node = pool.requests[1].node
    assert node is not None
    node.locked += 1
    assert not pool_holds(pool)
    node.locked -= 1
    pool.held += 1
    assert not pool_holds(pool)
    pool.held -= 1
    pool.protected -= 1  # evictable + protected no longer the tree's size (mllm #656)
    assert not pool_holds(pool)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(0, 3), st.integers(1, 9)),
                min_size=1, max_size=6), st.integers(1, 8), st.sampled_from([("lru", "sglang"), ("fifo", "sglang"), ("fifo", "sglang-unified")]))
def test_LIFE_SGLANG_9_every_request_is_served_with_the_pool_whole_after_every_operation(spec: list, capacity: int,
                                                                                         dialect: tuple[str, str]) -> None:
    """Random traces on small pools, the pool's contract (LIFE-SGLANG-1) checked after every operation:
    every request ends, served or refused, nothing is locked or held at the end, and the hits are capped."""
    time, trace = 0, []
    for gap, ids, short, output in spec:
        time += gap
        trace.append(Request(time, max(1, len(ids) * 4 - short), output, ids))
    config = ReplayConfig(dialect[0], capacity, 4, dialect=dialect_for(*dialect))
    server = SglangServer(config, ServiceModel(max_running=4, step_tokens=8), None)
    result = server.serve(list(enumerate(trace, start=1)), "<random>")
    assert result.requests == len(trace) and not server.pool.requests and server.pool.held == server.pool.protected == 0
    assert not any(n.locked for n in descendants(server.pool.tree.root))
    assert result.refused == sum(1 for r in trace if r.input_length >= capacity * 4 - 6)
    assert result.total_hit_tokens <= sum((r.input_length - 1) // 4 * 4 for r in trace)
    assert result.final_cache_blocks == len(server.pool.tree.resident) <= capacity and result.uncomputed_tokens == 0


LIMIT = """
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy, replayed
from kvspec.reference.dialects import dialect_for
from kvspec.reference.dialects.in_flight_radix import SglangServer
from kvspec.reference.dialects.radix import descendants
from kvspec.reference.replay import PolicyServer
from kvspec.reference.service import ServiceModel
trace, capacity, policy, name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
records = list(TraceFile(bundled_trace_path(trace)).requests())
config = ReplayConfig(policy=policy, capacity=capacity, block_size=512, dialect=dialect_for(policy, name))
apart = [(line, r._replace(timestamp=n * 10**7, output_length=1)) for n, (line, r) in enumerate(records)]
longest = max(r.input_length for _, r in records)
lines = []
server = SglangServer(config, ServiceModel(max_running=1024, step_tokens=longest), lines.append)  # one chunk a prompt
served = server.serve(apart, trace)
engine = make_policy(config)
replay = replayed(records, config, per_request=True, server=PolicyServer(engine, 512))
def tree(cache):  # each node: its run as hash-id paths, and the ranks of its two stamps
    step = {block: key for key, block in cache.paths.block_of.items()}
    def ids(block):
        parent, h = step[block]
        return [*ids(parent), h] if parent in step else [h]
    nodes = descendants(cache.root)
    rank = lambda key: {id(n): i for i, n in enumerate(sorted(nodes, key=key))}
    last, created = rank(lambda n: n.last_access), rank(lambda n: n.created)
    return sorted([[ids(b) for b in n.run], last[id(n)], created[id(n)]] for n in nodes)
print(json.dumps({"served": [l.hit_tokens for l in sorted(lines, key=lambda l: l.request)], "replay": [r.hit_tokens for r in replay.per_request],
                  "trees": [tree(server.pool.tree), tree(engine)], "refused": served.refused,
                  "long": sum(1 for _, r in records if r.input_length >= capacity * 512 - 6),
                  "skipped": sum(1 for _, r in records if len(r.hash_ids) > capacity)}))
"""


def test_LIFE_SGLANG_9_one_request_at_a_time_served_in_sglang_is_the_engine_replay_on_both_traces() -> None:
    """Each request arriving after the one before has finished, generating one token, its prompt in one
    chunk: the served replay in `sglang` and the engine replay in `sglang` (LRU-DIALECT-5, and under FIFO
    FIFO-DIALECT-1; `sglang-unified`'s FIFO with FIFO-DIALECT-2) hit the same tokens request by request and leave the same tree (its runs and the order
    of its stamps), at 256, 4,096 and 65,536 blocks (FIFO at 4,096) on both bundled traces. A prompt of max_req_len - 5
    tokens or more is refused by the one, and one of more blocks than the pool skipped by the other: on
    both traces they are the same requests (none has a prompt within 6 tokens of a pool's worth)."""
    for trace in ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"):
        for capacity, policy, name in ((256, "lru", "sglang"), (4096, "lru", "sglang"), (65536, "lru", "sglang"), (4096, "fifo", "sglang"),
                                       (4096, "fifo", "sglang-unified")):
            run = subprocess.run([sys.executable, "-c", LIMIT, trace, str(capacity), policy, name], capture_output=True, text=True, timeout=900,
                                 env={**os.environ, "KVSPEC_CONTRACTS": "0"})
            assert run.returncode == 0, run.stderr
            got = json.loads(run.stdout)
            assert got["served"] == got["replay"], (trace, capacity, name, policy)
            assert got["trees"][0] == got["trees"][1], (trace, capacity, name, policy)
            assert got["refused"] == got["long"] == got["skipped"], (trace, capacity, policy)
            assert any(got["replay"]), (trace, capacity, policy)


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVSPEC, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_LIFE_SGLANG_1_kvspec_replay_serve_dialect_sglang_reports_the_dialect_and_refuses_a_variation() -> None:
    for policy, name, last in (("lru", "sglang", "radix-lru-leaves"), ("fifo", "sglang-unified", "split-keeps-creation")):
        run = kvspec("replay", "synthetic", "--serve", "--dialect", name, "--policy", policy, "--capacity", "512")
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        assert result["policy"] == policy and result["dialect"][-1] == last and result["uncomputed_tokens"] == 0 and result["requests"] > 0
    run = kvspec("replay", "synthetic", "--serve", "--capacity", "512", "--dialect", "lmcache", "--policy", "fifo",
                 "--variation", "hit-cap-last-token")
    assert run.returncode == 1 and "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects vllm, sglang" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""

