"""spec/dialects.md section 9: a trace served over vLLM's block pool (reference/dialects/in_flight.py,
`kvspec replay --serve --dialect vllm`).

Each clause on a trace worked by hand, beside the canonical served replay where they part; the pool's
own state on its contract; the limit of one request at a time against the engine replay in `vllm` on
both bundled traces at three capacities; and the command line."""

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from kvspec.reference import ReplayConfig
from kvspec.reference.caches import server_for
from kvspec.reference.dialects import CANONICAL, dialect_for
from kvspec.reference.dialects.in_flight import VllmPool, VllmServer, pool_holds
from kvspec.reference.serve import served
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

VLLM = dialect_for("lru", "vllm")
KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]


def serve(requests: tuple[Request, ...], capacity: int, dialect: frozenset[str] = VLLM) -> list:
    """The served result of ``requests`` over blocks of 4 tokens, then each request's line in trace order."""
    config = ReplayConfig("lru", capacity, 4, dialect=dialect)
    got: list = []
    result = served(list(enumerate(requests, start=1)), config, ServiceModel(), add=got.append, server=server_for(config))
    return [result, *sorted(got, key=lambda line: line.request)]


def test_LIFE_VLLM_7_a_block_is_cached_when_its_step_is_scheduled_so_a_request_in_the_same_step_hits_it() -> None:
    """Two requests of 9 tokens at 0, sharing two whole blocks. A is admitted first and its chunk caches
    [1] and [1, 2] as the step is scheduled; B, admitted in that step, hits both (8 tokens), whose KV the
    step is still computing: 8 uncomputed tokens. Canonically B hits nothing (LIFE-LOOKUP-1), and its
    8 tokens are the uncomputed ones too. B references A's two slots and one of its own: 4 slots."""
    same_step = (Request(0, 9, 1, [1, 2, 3]), Request(0, 9, 1, [1, 2, 4]))
    vllm, _, b = serve(same_step, 8)
    assert (b.hit_tokens, vllm.uncomputed_tokens, vllm.peak_referenced_blocks) == (8, 8, 4)
    canonical, _, b = serve(same_step, 8, CANONICAL)
    assert (b.hit_tokens, canonical.uncomputed_tokens) == (0, 8)


def test_LIFE_VLLM_8_a_finished_request_frees_its_deepest_block_first_so_its_prefix_outlives_it() -> None:
    """3 slots. A = [1, 2] frees [1, 2] then [1] to the free queue's tail; C = [5, 7] takes the empty
    slot and then the head, [1, 2]; D = [1, 2, 6] of 9 tokens then hits [1] (4 tokens). The canonical
    LRU evicts [1], the least recent, and D hits nothing."""
    trace = (Request(0, 8, 1, [1, 2]), Request(10_000, 8, 1, [5, 7]), Request(20_000, 9, 1, [1, 2, 6]))
    assert [line.hit_tokens for line in serve(trace, 3)[1:]] == [0, 0, 4]
    assert [line.hit_tokens for line in serve(trace, 3, CANONICAL)[1:]] == [0, 0, 0]


def test_LIFE_VLLM_4_the_last_token_is_never_a_hit_and_LIFE_VLLM_7_a_block_recomputed_past_it_is_cached_twice() -> None:
    """B repeats A's 8 tokens: its hit stops at one block ((8 - 1) // 4), and its second block, computed
    again, is cached in a slot of its own beside A's: 3 slots hold a block. Canonically B hits all 8."""
    again = (Request(0, 8, 1, [1, 2]), Request(10_000, 8, 1, [1, 2]))
    vllm, _, b = serve(again, 4)
    assert (b.hit_tokens, vllm.final_cache_blocks) == (4, 3)
    canonical, _, b = serve(again, 4, CANONICAL)
    assert (b.hit_tokens, canonical.final_cache_blocks) == (8, 2)


def test_LIFE_VLLM_3_a_prompt_of_max_model_len_is_refused_and_an_output_stops_there() -> None:
    """2 slots of 4 tokens: max_model_len 8. A prompt of 8 is refused (hits 0, generates nothing, its
    line written); one of 5 tokens asking 10 generates 3. Canonically the first runs and the second is
    cut short at its slots' end (LIFE-SERVE-5)."""
    trace = (Request(0, 8, 1, [1, 2]), Request(0, 5, 10, [3, 4]))
    vllm, refused, capped = serve(trace, 2)
    assert (vllm.refused, vllm.requests, refused.output_tokens, refused.hit_tokens, capped.output_tokens, vllm.cut_short) == (1, 2, 0, 0, 3, 0)
    canonical, first, second = serve(trace, 2, CANONICAL)
    assert (canonical.refused, first.output_tokens, second.output_tokens, canonical.cut_short) == (None, 1, 4, 1)


def test_LIFE_VLLM_6_a_refused_slot_preempts_the_newest_and_LIFE_VLLM_2_its_output_blocks_are_cached() -> None:
    """5 slots; two requests of one block that each generate 9 tokens need 3 slots each. At the third,
    B (the newest) is refused and preempts itself, once; A finishes. The blocks their output fills are
    cached (each a block of its own), so all 5 slots hold a block at the end. Canonically output blocks
    are held, not cached, and B is preempted twice."""
    decoding = (Request(0, 4, 9, [1]), Request(0, 4, 9, [2]))
    vllm, a, b = serve(decoding, 5)
    assert (vllm.preemptions, b.preemptions, a.output_tokens, b.output_tokens, vllm.final_cache_blocks) == (1, 1, 9, 9, 5)
    assert vllm.own_blocks == 4  # LIFE-VLLM-9: each computes 12 tokens, 3 whole blocks, 2 its own; B's, recomputed, named once
    canonical, _, b = serve(decoding, 5, CANONICAL)
    assert (canonical.preemptions, canonical.final_cache_blocks, canonical.own_blocks) == (2, 2, None)


def test_LIFE_VLLM_6_a_resumed_request_recomputes_its_prompt_and_its_output_in_one_chunk() -> None:
    """2 slots of 4 tokens (max_model_len 8). A = 2 tokens generating 6 (12 capped); B = 3 tokens at 2 ms
    prefills, generates a token, and is preempted when A needs its second slot. Once A finishes, B's
    prefill of 4 tokens (it hits nothing: (4 - 1) // 4 blocks) is one chunk, its prompt and its token,
    as vLLM's scheduler counts it (scheduler.py:1306): 10 steps. Ended at its prompt's end, as
    LIFE-SERVE-4 ends a canonical chunk, it would take 11."""
    vllm, _, b = serve((Request(1, 2, 12, [1]), Request(2, 3, 5, [3])), 2)
    assert (vllm.steps, b.preemptions, b.recomputed_tokens, b.output_tokens) == (10, 1, 3, 5)


def test_LIFE_VLLM_5_the_whole_sequence_must_fit_and_a_hit_at_count_0_takes_a_free_slot() -> None:
    """A pool of 4 with A = [1, 2] cached and free: B = [1, 2, 3] of 12 tokens hits 2 blocks (at count 0),
    needs 1 slot more, and so 3 of the free queue's 4: it fits. With 1 slot taken by C running, the same
    B needs 3 of the 3 left: it fits; with 2 taken, it waits for C to finish."""
    pool = VllmPool(VLLM, 4, 4, 4)
    pool.arrive(1, [1, 2], 8)
    assert pool.allocate(1, 0, 8) and pool.take(1, 2)
    pool.cache(1, 8, 0)
    pool.finish(1)
    pool.arrive(2, [1, 2, 3], 12)
    assert pool.lookup(2, 12) == 2 and pool.needed(pool.requests[2], 2, 12) == 3
    pool.arrive(3, [9, 8], 8)
    assert pool.allocate(3, 0, 8) and pool.take(3, 1) and pool.allocate(2, 2, 12)
    pool.release(2)
    assert pool.take(3, 2) and not pool.allocate(2, 2, 12)


def test_LIFE_VLLM_1_the_pool_contract_sees_a_slot_lost_and_a_count_that_no_table_names() -> None:
    pool = VllmPool(VLLM, 3, 4, 3)
    pool.arrive(1, [1], 4)
    assert pool.allocate(1, 0, 4) and pool.take(1, 1)
    assert pool_holds(pool)
    pool.empty -= 1
    assert not pool_holds(pool)
    pool.empty += 1
    pool.refs[pool.requests[1].table[0]] += 1
    assert not pool_holds(pool)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(st.integers(1, 4), min_size=1, max_size=4), st.integers(0, 3), st.integers(1, 9)),
                min_size=1, max_size=6), st.integers(1, 8))
def test_LIFE_VLLM_9_every_request_is_served_with_the_pool_whole_after_every_operation(spec: list, capacity: int) -> None:
    """Random traces on small pools, the pool's contract (LIFE-VLLM-1) checked after every operation:
    every request ends, served or refused, nothing is referenced at the end, and the hits are capped."""
    time, trace = 0, []
    for gap, ids, short, output in spec:
        time += gap
        trace.append(Request(time, max(1, len(ids) * 4 - short), output, ids))
    config = ReplayConfig("lru", capacity, 4, dialect=VLLM)
    server = VllmServer(config, ServiceModel(max_running=4, step_tokens=8), None)
    result = server.serve(list(enumerate(trace, start=1)), "<random>")
    assert result.requests == len(trace) and not server.pool.refs and not server.pool.requests
    assert result.refused == sum(1 for r in trace if r.input_length >= capacity * 4)
    assert result.total_hit_tokens <= sum((r.input_length - 1) // 4 * 4 for r in trace)
    assert result.final_cache_blocks == len(server.pool.block_of) <= capacity


LIMIT = """
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import replayed
from kvspec.reference.dialects import EngineCache, dialect_for
from kvspec.reference.dialects.in_flight import VllmServer
from kvspec.reference.replay import PolicyServer
from kvspec.reference.caches import make_policy
from kvspec.reference.service import ServiceModel
trace, capacity = sys.argv[1], int(sys.argv[2])
records = list(TraceFile(bundled_trace_path(trace)).requests())
config = ReplayConfig(policy="lru", capacity=capacity, block_size=512, dialect=dialect_for("lru", "vllm"))
apart = [(line, r._replace(timestamp=n * 10**7, output_length=1)) for n, (line, r) in enumerate(records)]
lines = []
server = VllmServer(config, ServiceModel(), lines.append)
served = server.serve(apart, trace)
engine = make_policy(config)
replay = replayed(records, config, per_request=True, server=PolicyServer(engine, 512))
pool = server.pool
def named(paths, blocks):  # each block as its hash ids from the first: the paths' ints differ where one interned a request the other did not
    step = {block: key for key, block in paths.block_of.items()}
    def ids(block):
        parent, h = step[block]
        return [*ids(parent), h] if parent in step else [h]
    return [ids(block) for block in blocks]
print(json.dumps({"served": [l.hit_tokens for l in sorted(lines, key=lambda l: l.request)], "replay": [r.hit_tokens for r in replay.per_request],
                  "queues": [named(pool.paths, [pool.block_of[s] for s in pool.queue]), named(engine.paths, engine.queue.values())],
                  "empty": [pool.empty, engine.empty],
                  "refused": served.refused, "long": sum(1 for _, r in records if r.input_length >= capacity * 512)}))
"""


def test_LIFE_VLLM_9_one_request_at_a_time_served_in_vllm_is_the_engine_replay_on_both_traces() -> None:
    """Each request arriving after the one before has finished and generating one token: the served
    replay in `vllm` and the engine replay in `vllm` (LRU-DIALECT-6) hit the same tokens request by
    request and leave the same free queue, at 256, 4,096 and 65,536 blocks on both bundled traces. A
    prompt of max_model_len tokens or more is refused by the one and skipped by the other (none is
    exactly max_model_len on either trace)."""
    for trace in ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"):
        for capacity in (256, 4096, 65536):
            run = subprocess.run([sys.executable, "-c", LIMIT, trace, str(capacity)], capture_output=True, text=True, timeout=600,
                                 env={**os.environ, "KVSPEC_CONTRACTS": "0"})
            assert run.returncode == 0, run.stderr
            got = json.loads(run.stdout)
            assert got["served"] == got["replay"], (trace, capacity)
            assert got["queues"][0] == got["queues"][1] and got["empty"][0] == got["empty"][1], (trace, capacity)
            assert got["refused"] == got["long"], (trace, capacity)
            assert any(got["replay"]), (trace, capacity)


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVSPEC, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_LIFE_VLLM_1_kvspec_replay_serve_dialect_vllm_reports_the_dialect_and_refuses_the_others() -> None:
    run = kvspec("replay", "synthetic", "--serve", "--dialect", "vllm", "--capacity", "512")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["policy"] == "lru" and result["dialect"][-1] == "lru-free-queue" and result["refused"] == 0 and result["requests"] > 0
    for args in (["--dialect", "lmcache", "--policy", "lru", "--variation", "hit-cap-last-token"],
                 ["--policy", "lru", "--variation", "pin-request"]):
        run = kvspec("replay", "synthetic", "--serve", "--capacity", "512", *args)
        assert run.returncode == 1 and "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects vllm" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr and run.stdout == ""


def test_LIFE_VLLM_1_kvspec_sweep_serve_beside_vllm_and_sglang_serves_them_too(tmp_path) -> None:
    """Beside vLLM and SGLang's LRU (LIFE-SGLANG-1), each served point is what `kvspec replay --serve` gives."""
    out = tmp_path / "sweep.json"
    run = kvspec("sweep", "synthetic", "--serve", "--policy", "lru", "--beside", "vllm", "--beside", "sglang-lru", "--capacity", "512",
                 "--output", str(out))
    assert run.returncode == 0, run.stderr
    sweep = json.loads(out.read_text())
    assert [(p.get("beside"), p["result"].get("dialect") is not None) for p in sweep["served"]] == [(None, False), ("vllm", True), ("sglang-lru", True)]
    alone = json.loads(kvspec("replay", "synthetic", "--serve", "--dialect", "vllm", "--capacity", "512").stdout)
    assert sweep["served"][1]["result"] == alone
    alone = json.loads(kvspec("replay", "synthetic", "--serve", "--dialect", "sglang", "--policy", "lru", "--capacity", "512").stdout)
    assert sweep["served"][2]["result"] == alone
