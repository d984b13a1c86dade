"""spec/lifecycle.md section 6: a trace served as a server runs it (reference/serve.py, `kvspec replay --serve`).

A preemption worked out by hand; the decoding stretches summed in closed form against the same
server stepping one step at a time; the limit of one request at a time against the replay on both
bundled traces; and the errors, each a line that names the clause."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvspec.reference import ReplayConfig
from kvspec.reference.errors import ConfigError, TraceError
from kvspec.reference.serve import served, steps_to_reach
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]


def records(*requests: Request) -> list[tuple[int, Request]]:
    return list(enumerate(requests, start=1))


def lines(*requests: Request, capacity: int, policy: str = "lru", service: ServiceModel | None = None) -> list:
    config = ReplayConfig(policy, capacity, 4)
    got: list = []
    result = served(records(*requests), config, service or ServiceModel(), add=got.append)
    return [result, *sorted(got, key=lambda line: line.request)]


TWO = (Request(0, 8, 6, [1, 2]), Request(0, 8, 6, [3, 4]))  # 8 tokens (2 blocks of 4) and 6 output tokens each, both at 0


def test_LIFE_SERVE_5_a_slot_refused_preempts_the_newest_which_resumes_from_the_head() -> None:
    """TWO on 6 slots under LRU. Both fit (4 referenced) and prefill in step 1, each generating its
    first token; decoding position 8 needs a third slot each (6 in use, before step 2); position 12
    needs a fourth (before step 6): request 1 asks first, is refused (all 4 resident blocks
    referenced, 2 held), and the newest, request 2, is preempted with 5 tokens generated, which frees
    its held slot: request 1 takes it, evicting nothing. That step admits nothing (LIFE-SERVE-3);
    request 2 is allocated in the next, from the queue's head, having waited one step of request 1's
    decoding: its blocks are resident and computed, k = 2, so nothing is recomputed (LIFE-HIT-2)."""
    result, first, second = lines(*TWO, capacity=6)
    assert (result.requests, result.preemptions, result.total_recomputed_tokens, result.total_hit_tokens) == (2, 1, 0, 0)
    assert (first.preemptions, second.preemptions, first.waiting_ms) == (0, 1, 0)
    assert 0 < second.waiting_ms < first.finished_ms and result.peak_referenced_blocks == 4 and result.peak_running == 2


def test_LIFE_SERVE_5_preempted_until_its_block_is_evicted_it_recomputes_what_it_had_computed() -> None:
    """TWO on 5 slots. Before step 2, request 1 takes the fifth slot; request 2's is refused, and the
    newest is itself: preempted (1), and that step admits nothing. Step 3: it is allocated again (its
    blocks resident, computed, k = 2) and computes its last prompt token; before step 4 it asks for a
    slot for position 8, is refused and preempted (2); step 5 allocates it again. Before step 6
    request 1, at position 12, needs a second held slot: refused, it preempts request 2 (3), and takes
    the slot by evicting the evictable block nearest LRU's head, request 2's block 3 (accessed before
    4). Request 1 finishes at the end of step 6; then request 2's lookup finds k = 0: the 8 tokens it
    had computed are recomputed, once however often it was preempted (LIFE-HIT-2)."""
    result, first, second = lines(*TWO, capacity=5)
    assert (result.preemptions, first.preemptions, second.preemptions) == (3, 0, 3)
    assert (second.recomputed_tokens, result.total_recomputed_tokens, result.total_hit_tokens) == (8, 8, 0)
    assert second.waiting_ms > 0 == first.waiting_ms


def test_LIFE_SERVE_5_refused_a_slot_with_no_other_request_running_it_is_cut_short() -> None:
    """A request of 2 blocks on 2 slots, asking for 3 output tokens: its prefill generates the first;
    decoding position 8 needs a third slot, refused (both resident blocks its own), and there is no
    other request to preempt: it finishes with 1 output token, and the next request is served."""
    result, first, second = lines(Request(0, 8, 3, [1, 2]), Request(0, 4, 3, [3]), capacity=2)
    assert (result.requests, result.cut_short, result.preemptions) == (2, 1, 0)
    assert (first.output_tokens, second.output_tokens) == (1, 3)


def test_LIFE_SERVE_4_a_prefill_goes_in_chunks_of_the_budget_and_always_computes_its_last_token() -> None:
    """12 tokens with a budget of 5 a step: chunks of 5, 5 and 2, the last generating its one token (3
    steps). The same prompt a second later hits all 12 tokens (LIFE-HIT-1) and still computes its last
    one, in one step."""
    result, first, second = lines(Request(0, 12, 1, [1, 2, 3]), Request(1000, 12, 1, [1, 2, 3]), capacity=8,
                                  service=ServiceModel(step_tokens=5, max_running=4))
    assert (result.steps, first.hit_tokens, second.hit_tokens, result.total_hit_tokens) == (4, 0, 12, 12)
    assert first.output_tokens == second.output_tokens == 1


def test_LIFE_SERVE_7_a_prefix_in_flight_is_no_hit_and_is_counted_as_uncomputed() -> None:
    """Two requests sharing their first 2 blocks, both at 0: the second is admitted in the step the first
    is, whose blocks are resident and not yet computed: it hits nothing, and the 8 tokens it would have
    hit are uncomputed tokens. A third, a second later, hits those 8 tokens, computed by then."""
    result, first, second, third = lines(Request(0, 12, 1, [1, 2, 3]), Request(0, 12, 1, [1, 2, 4]), Request(1000, 12, 1, [1, 2, 5]),
                                         capacity=16)
    assert (first.hit_tokens, second.hit_tokens, third.hit_tokens) == (0, 0, 8)
    assert result.uncomputed_tokens == 8 and result.kept_in_main is None  # LRU keeps no such count


def test_LIFE_SERVE_7_s3fifo_counts_the_entries_in_use_its_small_queue_kept_in_main() -> None:
    """S3FIFO on 10 slots (S holds 1): request 1's block 1 is in S, referenced, when request 2's block 2
    is admitted in the same step; S's drain sends block 1 to M (S3-LIFE-1), where a replay sends it to G."""
    result, *_ = lines(Request(0, 4, 1, [1]), Request(0, 4, 1, [2]), capacity=10, policy="s3fifo")
    assert result.kept_in_main == 1 and result.uncomputed_tokens == 0


def test_LIFE_SERVE_3_a_refused_head_stops_the_admissions_and_none_passes_it() -> None:
    """On 4 slots, request 1 (3 blocks) runs; request 2 (3 blocks) does not fit beside it, and request 3
    (1 block), which would, waits behind it: both are admitted when request 1 finishes, in the same
    step. (Each decodes within its last block: no slot is held, none preempted.)"""
    result, first, second, third = lines(Request(0, 11, 2, [1, 2, 3]), Request(0, 11, 2, [4, 5, 6]), Request(0, 3, 2, [7]), capacity=4)
    assert result.requests == 3 and result.preemptions == 0 and result.peak_running == 2
    assert first.waiting_ms == 0 < second.waiting_ms == third.waiting_ms == first.finished_ms


STEPPED = r"""
import json
from dataclasses import asdict
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.serve import Server, served
from kvspec.reference.service import ServiceModel


def one_step_at_a_time(server, until, one_step=False):
    # Server.decode_stretch as the literal rule: one step of decoding alone
    first, _ = server.stretch_ticks()
    server.now += first
    server.steps += 1
    server.decoding_positions += server.decoders


trace, results = list(TraceFile(bundled_trace_path("conversation_trace.jsonl.gz")).requests())[:300], []
summed_stretch = Server.decode_stretch
for policy, capacity, gpus in (("s3fifo", 64, 1), ("lru", 128, 8), ("fifo", 40, 2)):
    runs = []
    for stretch in (summed_stretch, one_step_at_a_time):
        Server.decode_stretch = stretch
        lines = []
        result = served(trace, ReplayConfig(policy, capacity, 512), ServiceModel(gpus=gpus), add=lines.append)
        runs.append([asdict(result), [asdict(line) for line in lines]])
    results.append([policy, runs[0] == runs[1], runs[0][0]["requests"], runs[0][0]["steps"], runs[0][0]["preemptions"]])
print(json.dumps(results))
"""


def test_LIFE_SERVE_6_decoding_summed_in_closed_form_is_stepping_one_step_at_a_time() -> None:
    """The first 300 requests of the conversation trace, on pools small enough to preempt: every line
    and total, times included, is the same whether a stretch of decoding is summed or stepped (in a
    process of its own without contracts: stepping runs the scheduler at each of some 60,000 steps)."""
    run = subprocess.run([sys.executable, "-c", STEPPED], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert [policy for policy, *_ in results] == ["s3fifo", "lru", "fifo"]
    assert all(same and requests == 300 and steps > 10 * requests for _, same, requests, steps, _ in results), results
    assert any(preemptions for *_, preemptions in results), results


@given(st.integers(1, 10**12), st.integers(0, 10**9), st.integers(1, 10**15))
def test_LIFE_SERVE_6_steps_to_reach_is_the_fewest_steps_that_last_the_gap(first: int, growth: int, gap: int) -> None:
    n = steps_to_reach(first, growth, gap)

    def lasting(steps: int) -> int:
        return steps * first + growth * steps * (steps - 1) // 2

    assert n >= 1 and lasting(n) >= gap and (n == 1 or lasting(n - 1) < gap)


LIMIT = r"""
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path
from kvspec.reference.caches import make_policy, replayed
from kvspec.reference.in_use import queues_of
from kvspec.reference.replay import PolicyServer
from kvspec.reference.serve import Server
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

trace, results = sys.argv[1], []
# each request a day after the one before, decoding to the end of its last block: it finishes before the next arrives,
# and holds no block (LIFE-SERVE-8)
spaced = [(line, Request(86_400_000 * n, r.input_length, len(r.hash_ids) * 512 - r.input_length + 1, r.hash_ids))
          for n, (line, r) in enumerate(TraceFile(bundled_trace_path(trace)).requests())]
for policy in ("s3fifo", "lru", "fifo"):
    for capacity in (256, 4096, 65536):
        config = ReplayConfig(policy, capacity, 512)
        lines, replay_lines = [], []
        server = Server(config, ServiceModel(), lines.append)
        result = server.serve(spaced, "<spaced>")
        canonical = make_policy(config)
        replay = replayed(spaced, config, per_request=True, server=PolicyServer(canonical, 512))
        assert len(lines) == len(replay.per_request)
        differ = sum(line.hit_tokens != want.hit_tokens for line, want in zip(sorted(lines, key=lambda l: l.request), replay.per_request))
        results.append([policy, capacity, result.requests, differ, result.total_hit_tokens == replay.total_hit_tokens,
                        queues_of(server.pool.policy) == queues_of(canonical), result.preemptions])
print(json.dumps(results))
"""


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"])
def test_LIFE_SERVE_8_one_request_at_a_time_served_is_the_replay_on_both_traces(trace: str) -> None:
    """Each request arriving a day after the one before and decoding to the end of its last block: the served replay's
    hit tokens, request by request, and its queues at the end are the replay's, for each policy at 256,
    4,096 and 65,536 blocks (in a process of its own without contracts, as the full-trace replays run)."""
    run = subprocess.run([sys.executable, "-c", LIMIT, trace], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert [(policy, capacity) for policy, capacity, *_ in results] == [(p, c) for p in ("s3fifo", "lru", "fifo") for c in (256, 4096, 65536)]
    assert all(requests > 3000 and differ == 0 and same_total and same_state and not preemptions
               for _, _, requests, differ, same_total, same_state, preemptions in results), results


def test_LIFE_SERVE_2_a_request_before_the_one_before_it_is_an_error_naming_its_line() -> None:
    with pytest.raises(TraceError, match=r"<trace>:2: field timestamp: LIFE-SERVE-2"):
        served(records(Request(5, 4, 1, [1]), Request(4, 4, 1, [2])), ReplayConfig("lru", 4, 4), ServiceModel())


def test_LIFE_SERVE_5_a_request_that_generates_nothing_is_an_error_naming_its_line() -> None:
    with pytest.raises(TraceError, match=r"<trace>:1: field output_length: LIFE-SERVE-5"):
        served(records(Request(0, 4, 0, [1])), ReplayConfig("lru", 4, 4), ServiceModel())


@pytest.mark.parametrize("field", ["max_running", "step_tokens", "gpus", "flops_per_second", "memory_bytes_per_second"])
def test_LIFE_SERVE_1_each_parameter_is_a_positive_integer(field: str) -> None:
    with pytest.raises(ConfigError, match=f"LIFE-SERVE-1.*{field}"):
        ServiceModel(**{field: 0})


def test_LIFE_SERVE_1_more_running_than_tokens_a_step_is_refused() -> None:
    with pytest.raises(ConfigError, match="LIFE-SERVE-1: max_running 9 is more than step_tokens 8"):
        ServiceModel(max_running=9, step_tokens=8)
    assert ServiceModel(max_running=8, step_tokens=8).max_running == 8


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVSPEC, *args], capture_output=True, text=True, timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_LIFE_SERVE_7_kvspec_replay_serve_writes_the_result_and_every_line(tmp_path) -> None:
    """The synthetic trace served at 1,024 blocks, --per-request to a file: the lines sum to the totals,
    one per request, each request once; and the same result without the lines on standard output."""
    out = tmp_path / "served.json"
    run = kvspec("replay", "synthetic", "--serve", "--capacity", "1024", "--per-request", "--output", str(out))
    assert run.returncode == 0, run.stderr
    result = json.loads(out.read_text())
    assert result["requests"] == len(result["per_request"]) == 3993
    assert sorted(line["request"] for line in result["per_request"]) == list(range(1, 3994))
    assert sum(line["hit_tokens"] for line in result["per_request"]) == result["total_hit_tokens"]
    assert sum(line["recomputed_tokens"] for line in result["per_request"]) == result["total_recomputed_tokens"]
    assert sum(line["preemptions"] for line in result["per_request"]) == result["preemptions"]
    assert result["peak_referenced_blocks"] <= 1024 and result["service"] == {
        "max_running": 1024, "step_tokens": 8192, "gpus": 8, "flops_per_second": 4 * 10**14, "memory_bytes_per_second": 335 * 10**10}
    plain = kvspec("replay", "synthetic", "--serve", "--capacity", "1024")
    assert json.loads(plain.stdout) == {name: value for name, value in result.items() if name != "per_request"}


@pytest.mark.parametrize("args,message", [
    (["--serve", "--gpus", "0"], "LIFE-SERVE-1"),
    (["--serve", "--max-running", "two"], "LIFE-SERVE-1: max_running must be a positive integer"),
    (["--gpus", "2"], "--gpus sets the service model of a served replay: give --serve too"),
    (["--gpus", "8"], "--gpus sets the service model of a served replay: give --serve too"),
    (["--serve", "--step-tokens", "1e30", "--max-running", "1e30"], "LIFE-SERVE-1: step_tokens must be a positive integer of at most 2**63 - 1, not '1e30'"),
    (["--serve", "--gpus", "1e999999999"], "LIFE-SERVE-1: gpus must be a positive integer of at most 2**63 - 1, not '1e999999999'"),
    (["--serve", "--gpus", "9223372036854775808"], "LIFE-SERVE-1: gpus must be a positive integer of at most 2**63 - 1, not 9223372036854775808"),
    (["--serve", "--gpus", "1.5"], "LIFE-SERVE-1: gpus must be a positive integer"),
    (["--serve", "--max-running", "9", "--step-tokens", "8"], "LIFE-SERVE-1: max_running 9 is more than step_tokens 8"),
    (["--serve", "--dialect", "lmcache", "--policy", "lru", "--variation", "hit-cap-last-token"],
     "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects vllm"),
    (["--serve", "--adapter", "cmd:true"], "--serve runs the reference alone, without --adapter"),
])
def test_LIFE_SERVE_1_a_bad_service_option_is_one_line_naming_it(args: list[str], message: str) -> None:
    run = kvspec("replay", "synthetic", *args)
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr and run.stdout == "", run.stderr


def test_LIFE_SERVE_7_kvspec_sweep_serve_serves_each_policy_at_each_capacity_beside_its_replay(tmp_path) -> None:
    """`kvspec sweep --serve`: a served point for each policy and capacity, in the points' order, each
    the result `kvspec replay --serve` writes for it, and the plot drawn."""
    out, drawn = tmp_path / "sweep.json", tmp_path / "sweep.png"
    run = kvspec("sweep", "synthetic", "--serve", "--policy", "lru", "--policy", "fifo", "--capacity", "512", "--capacity", "2048",
                 "--output", str(out), "--plot", str(drawn))
    assert run.returncode == 0, run.stderr
    sweep = json.loads(out.read_text())
    assert [(p["result"]["policy"], p["result"]["cache_capacity_blocks"]) for p in sweep["served"]] == \
        [(p["result"]["policy"], p["result"]["cache_capacity_blocks"]) for p in sweep["points"]] == [("lru", 512), ("lru", 2048), ("fifo", 512), ("fifo", 2048)]
    alone = json.loads(kvspec("replay", "synthetic", "--serve", "--policy", "fifo", "--capacity", "2048").stdout)
    assert sweep["served"][3]["result"] == alone
    assert sweep["served"][3]["hit_rate"] == alone["total_hit_tokens"] / alone["total_prompt_tokens"]
    assert drawn.stat().st_size > 10_000


def test_LIFE_SERVE_1_kvspec_sweep_serve_refuses_what_it_cannot_serve() -> None:
    run = kvspec("sweep", "synthetic", "--serve", "--ablate")
    assert run.returncode == 1 and "--serve runs the reference alone, without --ablate" in run.stderr, run.stderr
    run = kvspec("sweep", "synthetic", "--serve", "--beside", "lmcache-mru")
    assert run.returncode != 0 and "invalid choice: 'lmcache-mru'" in run.stderr and "Traceback" not in run.stderr, run.stderr
