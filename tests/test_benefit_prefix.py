"""spec/benefit.md sections 19 and 20: the cost model of a prefix, and the benefit policy as the
prefix cache of a Mooncake trace beside S3FIFO, LRU and FIFO at the same byte capacity.

Expected figures come from outside the code under test: the model's published shape, sums over
positions taken one token at a time, the unbounded-cache figures measured in
../shared/data/mooncake/README.md, and set-based simulations written here."""

import gzip
import itertools
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kvspec.reference import ConfigError, ReplayConfig, TraceFile, bundled_trace_path, replay
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CostSample
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import ledger_bytes, prefix_config, replay_benefit, replay_blocks, segment_id, serve_request
from kvspec.reference.dialects import KNOWN_DIALECTS, dialect_for
from kvspec.reference.trace import TraceRecord

GIB = 2**30
MODEL = Model()
BLOCK = 64 * 2**20  # 512 tokens x 128 KiB


def record(hash_ids: list[int], input_length: int) -> TraceRecord:
    return TraceRecord(timestamp=0, input_length=input_length, output_length=1, hash_ids=hash_ids)


def numbered(records: list[TraceRecord]) -> list[tuple[int, TraceRecord]]:
    return list(enumerate(records, start=1))


def excerpt(name: str, n: int) -> list[tuple[int, TraceRecord]]:
    return list(itertools.islice(TraceFile(bundled_trace_path(name)).records(), n))


# Section 19: the cost model ------------------------------------------------------------------


def test_BEN_MODEL_1_the_defaults_are_llama_3_1_8b_and_every_field_must_be_a_positive_integer() -> None:
    # Llama-3.1-8B's config.json: num_hidden_layers 32, hidden_size 4096, num_key_value_heads 8,
    # head_dim 4096 / 32 attention heads = 128; bf16 is 2 bytes.
    assert (MODEL.layers, MODEL.hidden, MODEL.kv_heads, MODEL.head_dim, MODEL.bytes_per_element) == (32, 4096, 8, 4096 // 32, 2)
    for field, bad in (("layers", 0), ("parameters", -1), ("hidden", 4096.0), ("restore_bytes_per_second", True)):
        with pytest.raises(ConfigError, match=f"BEN-MODEL-1: {field} must be a positive integer"):
            Model(**{field: bad})


def test_BEN_MODEL_2_a_block_is_a_whole_page_of_kv() -> None:
    per_token = 32 * 2 * 8 * 128 * 2  # per layer, a key and a value of 8 heads x 128 dims, 2 bytes each
    assert MODEL.kv_bytes_per_token() == per_token == 128 * 2**10
    assert MODEL.block_bytes(512) == BLOCK == 512 * per_token
    assert MODEL.block_bytes(16) == 16 * per_token


@pytest.mark.parametrize("tokens", [0, 1, 2, 7, 512, 1000])
def test_BEN_MODEL_3_prefill_is_the_sum_over_positions(tokens: int) -> None:
    one_at_a_time = sum(2 * MODEL.parameters + 4 * MODEL.layers * MODEL.hidden * p for p in range(tokens))
    assert MODEL.prefill_flops(tokens) == one_at_a_time


def test_BEN_MODEL_4_cost_samples_in_milliseconds_clamped_to_the_prompt() -> None:
    flops = sum(2 * MODEL.parameters + 4 * MODEL.layers * MODEL.hidden * p for p in range(700))
    cost = MODEL.cost_of_prefix(2, 512, 700)  # two blocks, but the prompt has 700 tokens
    assert cost == CostSample(float(flops) / 4e11, float(2 * BLOCK) / 2.5e7)
    assert MODEL.cost_of_prefix(2, 512, 5000).cold_prefill_cost > cost.cold_prefill_cost  # 1,024 tokens now
    assert MODEL.cost_of_prefix(0, 512, 700) == CostSample(0.0, 0.0)
    # cold grows with the square of the position, restore with the bytes: a later block is worth more
    first, second = MODEL.cost_of_prefix(1, 512, 4096), MODEL.cost_of_prefix(2, 512, 4096)
    assert second.cold_prefill_cost - first.cold_prefill_cost > first.cold_prefill_cost
    assert second.restore_cost == 2 * first.restore_cost


# Section 20: the prefix cache ----------------------------------------------------------------


def test_BEN_PREFIX_1_blocks_are_segments_and_a_request_s_full_blocks_are_its_entry() -> None:
    assert segment_id(-1) == 2**64 - 1 and segment_id(5) == 5
    policy = BenefitPolicy(prefix_config(100 * GIB))
    serve_request(policy, record([10, 11, -3], 1100), 100 * GIB, 512, MODEL)  # two full blocks and a partial one
    assert sorted(policy.ledger) == [10, 11] and list(policy.entries) == [11]
    entry = policy.entries[11]
    assert entry.segments == [10, 11] and entry.exclusive_bytes == 0 and policy.ledger[10].size == BLOCK
    serve_request(policy, record([20], 300), 100 * GIB, 512, MODEL)  # no full block: nothing offered
    assert list(policy.entries) == [11] and 20 not in policy.ledger
    serve_request(policy, record([7, -5], 1024), 100 * GIB, 512, MODEL)  # all full: keyed by the negative id, unsigned
    assert segment_id(-5) in policy.entries


def test_BEN_PREFIX_2_hits_are_the_kept_prefix_clamped_to_the_prompt() -> None:
    policy = BenefitPolicy(prefix_config(100 * GIB))
    assert serve_request(policy, record([1, 2, 3], 1100), 100 * GIB, 512, MODEL) == (0, 2 * BLOCK)
    assert serve_request(policy, record([1, 2, 3], 1100), 100 * GIB, 512, MODEL) == (2, 0)  # the partial block was not kept
    assert serve_request(policy, record([1, 9], 600), 100 * GIB, 512, MODEL)[0] == 1


def test_BEN_PREFIX_3_every_reused_prefix_state_counts_a_hit_and_two_promote() -> None:
    policy = BenefitPolicy(prefix_config(100 * GIB))
    serve_request(policy, record([1], 512), 100 * GIB, 512, MODEL)  # turn 1: entry 1
    serve_request(policy, record([1, 2], 1024), 100 * GIB, 512, MODEL)  # turn 2 reuses turn 1's state; entry 2
    assert policy.entries[1].hits == 1 and policy.entries[1].last_cost == MODEL.cost_of_prefix(1, 512, 1024)
    serve_request(policy, record([1, 2, 3], 1536), 100 * GIB, 512, MODEL)  # turn 3 reuses both
    assert (policy.entries[1].hits, policy.entries[2].hits) == (2, 1)
    assert (policy.entries[1].state, policy.entries[2].state) == ("admitted", "probation")  # persistence_hit_threshold 2


def test_BEN_PREFIX_4_the_ledger_stays_within_the_capacity_on_the_real_trace() -> None:
    capacity = 40 * BLOCK
    policy = BenefitPolicy(prefix_config(capacity))
    written = 0
    for _, each in excerpt("conversation_trace.jsonl.gz", 300):
        k, wrote = serve_request(policy, each, capacity, 512, MODEL)
        written += wrote
        assert ledger_bytes(policy) <= capacity or len(policy.entries) == 1  # only an entry larger than the cache may stay
        assert k <= each.input_length // 512
    assert written > capacity  # it evicted


def test_BEN_PREFIX_5_probation_gets_a_tenth_of_the_capacity() -> None:
    assert prefix_config(64 * GIB).probation_byte_budget == 64 * GIB // 10
    assert replace(prefix_config(1000), probation_byte_budget=BenefitConfig().probation_byte_budget) == BenefitConfig()  # the rest: defaults


@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_BEN_PREFIX_6_the_block_policies_are_spec_replay_at_the_capacity_in_blocks(policy: str) -> None:
    records = excerpt("synthetic_trace.jsonl.gz", 200)
    side = replay_blocks(records, policy, 50 * BLOCK + BLOCK // 2)
    expected = replay(records, ReplayConfig(policy=policy, capacity=50))  # type: ignore[arg-type]
    assert (side.hit_tokens, side.prompt_tokens, side.requests) == (expected.total_hit_tokens, expected.total_prompt_tokens, expected.requests)
    with pytest.raises(ConfigError, match="BEN-PREFIX-6: a capacity of 1000 bytes holds no 67108864-byte block"):
        replay_blocks(records, policy, 1000)


def never_evicting(policy: str) -> dict[str, object]:
    """The whole synthetic trace at 500,000 blocks, in a process of its own with
    the contracts off, as the CLI runs: typeguard's every-item checks of a ledger of 40,000
    segments, on every call, would take hours."""
    program = ("import sys\nfrom kvspec.reference import TraceFile, bundled_trace_path\n"
               "from kvspec.reference.benefit.prefix import replay_benefit, replay_blocks\n"
               "records = TraceFile(bundled_trace_path('synthetic_trace.jsonl.gz')).records()\n"
               "side = replay_benefit(records, 500_000 * 2**26) if sys.argv[1] == 'benefit' else replay_blocks(records, sys.argv[1], 500_000 * 2**26)\n"
               "print(side.model_dump_json())")
    run = subprocess.run([sys.executable, "-c", program, policy], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"}, check=True)
    return json.loads(run.stdout)


def test_BEN_PREFIX_7_measures_against_a_cache_that_never_evicts() -> None:
    """The unbounded figures of ../shared/data/mooncake/README.md, and a set that keeps every full
    block. The trace has 43,924 distinct blocks: a tenth of 500,000 is a probation budget that
    never binds (BEN-PREFIX-5), so the benefit policy evicts nothing either."""
    lru = never_evicting("lru")
    assert (lru["hit_tokens"], lru["prompt_tokens"]) == (39_852_661, 61_194_628)
    assert lru["bytes_written"] == 43_924 * BLOCK  # every distinct block, written once
    kept: set[int] = set()
    hits = written = 0
    saved = 0.0
    for _, each in TraceFile(bundled_trace_path("synthetic_trace.jsonl.gz")).records():
        k = next((i for i, h in enumerate(each.hash_ids) if h not in kept), len(each.hash_ids))
        hits += min(k * 512, each.input_length)
        cost = MODEL.cost_of_prefix(k, 512, each.input_length)
        saved += max(cost.cold_prefill_cost - cost.restore_cost, 0.0)
        full = each.hash_ids[: each.input_length // 512]
        written += len(set(full) - kept) * BLOCK
        kept.update(full)
    benefit = never_evicting("benefit")
    assert (benefit["hit_tokens"], benefit["bytes_written"], benefit["requests"]) == (hits, written, 3_993)
    assert benefit["saved_prefill_ms"] == saved > 0  # the same additions in the same order
    assert lru["hit_tokens"] > hits  # the never-evicting LRU also keeps the partial last blocks


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_BEN_PREFIX_7_kvspec_compare_trace_prints_writes_and_plots_every_policy(tmp_path: Path) -> None:
    output, figure = tmp_path / "prefix.json", tmp_path / "prefix.svg"
    run = kvspec("compare", "synthetic", "--capacity-bytes", "4GiB", "--capacity-bytes", str(8 * GIB), "--output", str(output),
                 "--plot", str(figure))
    assert run.returncode == 0, run.stderr
    result = json.loads(output.read_text())
    assert result["trace"] == "synthetic_trace.jsonl.gz" and result["model"] == "Llama-3.1-8B" and result["block_bytes"] == BLOCK
    assert [(s["policy"], s["capacity_bytes"]) for s in result["sides"]] == [
        (policy, capacity) for capacity in (4 * GIB, 8 * GIB) for policy in ("benefit", "s3fifo", "lru", "fifo")]
    for side in result["sides"]:
        assert f"{side['hit_tokens']:,}" in run.stdout and side["prompt_tokens"] == 61_194_628
    assert figure.read_text().startswith("<?xml")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["synthetic", "--capacity-bytes", "1MiB"], "BEN-PREFIX-6: a capacity of 1048576 bytes holds no"),
        (["/nonexistent.jsonl"], "/nonexistent.jsonl: cannot read the trace"),
        (["--capacity-bytes", "1GiB", "--capacity-bytes", "2GiB"], "BEN-CMP-1: the seeded traces take one --capacity-bytes"),
        (["--capacity-bytes", str(2**90)], f"--capacity-bytes {2**90}: BEN-CMP-1: a capacity is an integer in [1, 2**63 - 1] bytes"),
        (["synthetic", "--capacity-bytes", "0"], "--capacity-bytes 0: BEN-CMP-1: a capacity is an integer in [1, 2**63 - 1] bytes"),
    ],
)
def test_BEN_PREFIX_6_bad_compare_arguments_are_clear_errors(args: list[str], message: str, tmp_path: Path) -> None:
    run = kvspec("compare", *args, "--output", str(tmp_path / "out.json"))
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out.json").exists()


def test_BEN_PREFIX_6_a_trace_without_requests_compares_with_no_hit_rate(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    run = kvspec("compare", str(tmp_path / "empty.jsonl"), "--capacity-bytes", "1GiB")
    assert run.returncode == 0 and run.stderr == ""
    *sides, optimum, never_evicts = run.stdout.splitlines()[2:]
    assert [line.split()[2:5] for line in sides] == [[policy, "0", "n/a"] for policy in ("benefit", "s3fifo", "lru", "fifo")]
    assert optimum.split()[2:6] == ["offline", "optimum", "0", "n/a"] and never_evicts == "a cache that never evicts: n/a"


def test_DIALECT_5_kvspec_compare_trace_replays_each_dialect_beside_the_canonical_policies(tmp_path: Path) -> None:
    """Two --dialect: each dialect's policies (the catalogue's, built here with dialect_for) after
    the canonical ones, named in the table and the JSON; and the two ceilings, the cache that never
    evicts worked out here with a set of the blocks seen. 60 requests, about 1,800 blocks, through 32."""
    lines = itertools.islice(gzip.open(bundled_trace_path("synthetic_trace.jsonl.gz"), "rt"), 60)
    trace = tmp_path / "excerpt.jsonl"
    trace.write_text("".join(lines))
    run = kvspec("compare", str(trace), "--capacity-bytes", "2GiB", "--dialect", "kvcache-simulator",
                 "--dialect", "libcachesim", "--output", str(tmp_path / "out.json"))
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    records = list(TraceFile(trace).records())
    expected = [(name, replay_blocks(records, policy, capacity, dialect=dialect_for(policy, name)).model_dump())
                for capacity in (2 * GIB,) for name in ("kvcache-simulator", "libcachesim") for policy in KNOWN_DIALECTS[name]]
    assert [(side["dialect"], side["side"]) for side in result["dialect_sides"]] == expected
    for name, side in expected:
        assert f"{side['policy']} ({name})" in run.stdout
    assert [o["cache_capacity_blocks"] for o in result["offline_optimum"]] == [2 * GIB // BLOCK]
    seen: set[int] = set()
    hits = prompt = 0
    for _, each in records:
        k = next((i for i, h in enumerate(each.hash_ids) if h not in seen), len(each.hash_ids))
        hits, prompt = hits + min(k * 512, each.input_length), prompt + each.input_length
        seen.update(each.hash_ids)
    assert result["unbounded_hit_rate"] == hits / prompt


def test_DIALECT_5_compare_takes_a_dialect_only_with_a_trace() -> None:
    run = kvspec("compare", "--dialect", "libcachesim")
    assert run.returncode == 1 and "--dialect and --variation replay a Mooncake trace's block policies in a dialect; they need a TRACE" in run.stderr


def test_BEN_CMP_1_a_capacity_with_a_unit_and_a_bad_one() -> None:
    run = kvspec("compare", "--capacity-bytes", "12 parsecs")
    assert run.returncode == 1 and "BEN-CMP-1: capacity must be a number of bytes, not '12 parsecs'" in run.stderr


def test_BEN_PREFIX_7_peak_bytes_is_the_most_ever_resident() -> None:
    capacity = 6 * BLOCK
    requests = numbered([record([1, 2, 3], 1536), record([4, 5], 1024), record([6, 7, 8, 9], 2048)])
    fifo = replay_blocks(requests, "fifo", capacity)
    assert fifo.peak_bytes == 6 * BLOCK and fifo.bytes_written == 9 * BLOCK  # full after the third request
    benefit = replay_benefit(requests[:2], 100 * GIB)
    assert benefit.peak_bytes == 5 * BLOCK and benefit.bytes_written == 5 * BLOCK


def test_BEN_PREFIX_7_the_published_figures_are_what_the_reference_computes(tmp_path: Path) -> None:
    """docs/prefix-synthetic.json (docs/prefix-cache.md), recomputed at its smallest capacity."""
    published = json.loads((Path(__file__).resolve().parent.parent / "docs" / "prefix-synthetic.json").read_text())
    run = kvspec("compare", "synthetic", "--capacity-bytes", "16GiB", "--output", str(tmp_path / "now.json"))
    assert run.returncode == 0, run.stderr
    now = json.loads((tmp_path / "now.json").read_text())["sides"]
    assert now == [side for side in published["sides"] if side["capacity_bytes"] == 16 * GIB]
