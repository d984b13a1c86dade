"""spec/lifecycle.md section 7: the benefit policy's prefix cache served with requests in flight
(reference/benefit/served.py, `kvspec compare TRACE --serve`).

A pool worked out by hand, in which an entry a running request references is passed over; the
limit of one request at a time against `kvspec compare TRACE`'s benefit row; and the command."""

import json
import os
import subprocess
import sys

from dataclasses import asdict, replace

import pytest

from kvspec.reference.benefit import BenefitPolicy
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.served import BenefitPool, served_benefit
from kvspec.reference.errors import ConfigError
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

KVSPEC = [sys.executable, "-m", "kvspec.conformance.cli"]
BLOCK = Model().block_bytes(4)  # 4-token blocks: 524,288 bytes each


def pool_of(blocks: int) -> BenefitPool:
    """A pool of ``blocks`` slots whose probation budget holds every entry (BEN-PREFIX-5's tenth of a few blocks holds
    none, and the cap would remove each state as it is offered)."""
    return BenefitPool.of(blocks * BLOCK, 4, Model(), lambda config: BenefitPolicy(replace(config, probation_byte_budget=2**40)))


def served_alone(pool: BenefitPool, rid: int, hash_ids: list[int], tokens: int) -> None:
    """A request allocated, its blocks all computed, and finished (its state offered, LIFE-BEN-6)."""
    pool.arrive(rid, hash_ids, tokens)
    assert pool.allocate(rid)
    pool.compute(rid, len(hash_ids))
    pool.finish(rid)


def two_states_and_a_reader(slots: int) -> BenefitPool:
    """Entries 2 (blocks 1, 2) and 5 (block 5), both on probation without a hit, 2 the older; then request 3
    of blocks [1, 9] running alone, referencing block 1 and holding 9 to compute."""
    pool = pool_of(slots)
    served_alone(pool, 1, [1, 2], 8)
    served_alone(pool, 2, [5], 4)
    assert set(pool.benefit.entries) == {2, 5} and set(pool.benefit.ledger) == {1, 2, 5}
    pool.arrive(3, [1, 9], 8)
    assert pool.allocate(3)
    assert pool.requests[3].hit_blocks == 1 and pool.policy.refs == {1: 1} and pool.held == 1
    return pool


def test_LIFE_BEN_4_an_entry_holding_a_referenced_block_is_pinned_and_the_next_victim_is_taken() -> None:
    """LIFE-BEN-4, LIFE-BEN-5: unpinned, the victim would be entry 2, the older (BEN-VICTIM-2); request 3 references
    its block 1, so entry 2 is pinned, and request 4's room is made by removing entry 5."""
    pool = two_states_and_a_reader(4)
    assert pool.benefit.choose_victims(BLOCK).keys == (2,)  # the rule's own choice, no key pinned
    assert pool.pinned() == frozenset({2})
    pool.arrive(4, [6], 4)
    assert pool.allocate(4)  # 3 resident + 1 held + 1 new = 5 > 4 slots: one block's room made
    assert set(pool.benefit.entries) == {2} and set(pool.benefit.ledger) == {1, 2}
    assert pool.policy.resident_count() + pool.held == 4 and pool.held == 2  # blocks 9 and 6, held to compute


def test_LIFE_BEN_3_an_allocation_making_room_keeps_the_entry_it_hits() -> None:
    """LIFE-BEN-3, LIFE-BEN-4: request 4 hits entry 2's blocks, and needs a slot for block 8 while request 3 holds block
    7: entry 2, the older without a hit, would be the victim; pinned for request 4's own hits, entry 5 goes instead."""
    pool = pool_of(4)
    served_alone(pool, 1, [1, 2], 8)
    served_alone(pool, 2, [5], 4)
    pool.arrive(3, [7], 4)
    assert pool.allocate(3)
    pool.arrive(4, [1, 2, 8], 12)
    assert pool.benefit.choose_victims(BLOCK).keys == (2,) and pool.pinned([1, 2]) == frozenset({2})
    assert pool.allocate(4) and pool.requests[4].hit_blocks == 2
    assert set(pool.benefit.entries) == {2} and pool.policy.refs == {1: 1, 2: 1} and pool.benefit.entries[2].hits == 1


def test_LIFE_BEN_5_room_that_only_a_pinned_entry_could_make_is_refused_and_changes_nothing() -> None:
    """LIFE-BEN-3, LIFE-BEN-5: at 3 slots request 3 runs alone beyond them (3 resident + 1 held); request 4 needs two
    blocks' room, entry 5 alone frees one, entry 2 is pinned: refused, nothing removed, no hit counted. When request 3
    ends, its offer's loop (LIFE-BEN-6) removes entry 2, pinned no more, and request 4 runs."""
    pool = two_states_and_a_reader(3)
    assert pool.policy.resident_count() + pool.held == 4  # LIFE-BEN-1: beyond the slots while it runs alone
    pool.arrive(4, [6], 4)
    assert not pool.allocate(4)
    assert set(pool.benefit.entries) == {2, 5} and pool.requests[4].hit_tokens is None and not pool.requests[4].running
    pool.compute(3, 2)
    pool.finish(3)  # offers entry 9 (blocks 1, 9): 4 blocks in 3 slots, and entry 2, the oldest without a hit, goes
    assert set(pool.benefit.entries) == {5, 9} and set(pool.benefit.ledger) == {1, 5, 9}
    assert pool.allocate(4)


def test_LIFE_BEN_2_a_block_being_computed_is_no_hit_and_the_ledger_is_what_a_lookup_finds() -> None:
    """LIFE-BEN-2, LIFE-BEN-6: request 1's blocks enter the ledger when it finishes, not before: request 2, allocated
    while request 1 runs, hits nothing, and holds its own copy of each block (LIFE-BEN-1)."""
    pool = pool_of(8)
    pool.arrive(1, [1, 2], 8)
    assert pool.allocate(1)
    pool.compute(1, 2)
    pool.arrive(2, [1, 2], 8)
    assert pool.lookup(2) == 0 and pool.allocate(2) and pool.held == 4
    pool.finish(1)
    assert set(pool.benefit.ledger) == {1, 2}
    pool.arrive(3, [1, 2], 8)
    assert pool.lookup(3) == 2


def test_LIFE_BEN_7_a_preempted_request_offers_nothing_and_frees_what_it_held() -> None:
    pool = pool_of(8)
    pool.arrive(1, [1, 2], 8)
    assert pool.allocate(1)
    pool.compute(1, 2)
    pool.preempt(1)
    assert pool.benefit.ledger == {} and pool.held == 0 and pool.requests[1].computed_before == 2
    assert pool.allocate(1) and pool.requests[1].recomputed_tokens == 8  # LIFE-HIT-2: it found none of what it had computed


def test_LIFE_BEN_1_a_capacity_that_holds_no_block_is_refused() -> None:
    with pytest.raises(ConfigError, match="LIFE-BEN-1"):
        BenefitPool.of(BLOCK - 1, 4, Model())


def test_LIFE_BEN_3_hits_are_recorded_at_the_allocation_and_counted_once() -> None:
    """Request 2 of the pool allocated twice (preempted between): record_hit gives entry 2 a hit at each allocation
    made (BEN-PREFIX-3), LIFE-HIT-1 counts its hit tokens once; and served, the second of two requests hits both blocks."""
    pool = pool_of(8)
    served_alone(pool, 1, [1, 2], 8)
    pool.arrive(2, [1, 2, 3], 12)
    assert pool.allocate(2) and pool.benefit.entries[2].hits == 1
    pool.preempt(2)
    assert pool.allocate(2) and pool.benefit.entries[2].hits == 2 and pool.requests[2].hit_tokens == 8
    result = served_benefit([(1, Request(0, 8, 1, [1, 2])), (2, Request(1000, 8, 1, [1, 2]))], 40 * BLOCK, ServiceModel(), block_size=4)
    assert (result.policy, result.requests, result.total_hit_tokens, result.cache_capacity_blocks, result.final_cache_blocks) == \
        ("benefit", 2, 8, 40, 2)  # 40 slots: a probation budget of 4 blocks (BEN-PREFIX-5) keeps the 2-block state


LIMIT = """
import json, sys
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
from kvspec.reference import TraceFile, bundled_trace_path
from kvspec.reference.benefit.prefix import replay_benefit
from kvspec.reference.benefit.served import served_benefit
from kvspec.reference.service import ServiceModel
from kvspec.reference.trace import Request

# each request a day after the one before, decoding to the end of its last block (LIFE-BEN-8, as LIFE-SERVE-8)
spaced = [(line, Request(86_400_000 * n, r.input_length, len(r.hash_ids) * 512 - r.input_length + 1, r.hash_ids))
          for n, (line, r) in enumerate(TraceFile(bundled_trace_path(sys.argv[1])).requests())]
capacity = int(sys.argv[2])
row = replay_benefit(spaced, capacity, policy_class=IndexedBenefitPolicy)
lines = []
served = served_benefit(spaced, capacity, ServiceModel(), add=lines.append, policy_class=IndexedBenefitPolicy)
print(json.dumps([row.hit_tokens, served.total_hit_tokens, served.requests, row.requests, served.preemptions, served.final_cache_blocks,
                  row.peak_bytes // (64 * 2**20)]))
"""


def test_LIFE_BEN_8_one_request_at_a_time_served_is_compares_benefit_row_on_the_conversation_trace() -> None:
    """At 16 GiB (256 blocks, which the ledger fills: its peak is all of them, and the policy evicts): the served hit
    tokens are those of `kvspec compare TRACE`'s benefit row (in a process of its own without contracts, as the
    full-trace replays run)."""
    run = subprocess.run([sys.executable, "-c", LIMIT, "conversation_trace.jsonl.gz", str(16 * 2**30)], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    row_hits, served_hits, served_requests, row_requests, preemptions, final_blocks, peak_blocks = json.loads(run.stdout)
    assert served_hits == row_hits == 7_747_584 and served_requests == row_requests > 12_000 and preemptions == 0
    assert final_blocks <= 256 and peak_blocks == 256


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KVSPEC, *args], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def test_LIFE_BEN_8_kvspec_compare_serve_serves_every_policy_beside_its_replay(tmp_path) -> None:
    """`kvspec compare TRACE --serve`: a served side for each policy at each capacity, in the sides' order, each block
    policy's the result `kvspec replay --serve` writes at the capacity's blocks; the table and the plot."""
    out, drawn = tmp_path / "compare.json", tmp_path / "compare.png"
    run = kvspec("compare", "synthetic", "--serve", "--capacity-bytes", "64GiB", "--output", str(out), "--plot", str(drawn))
    assert run.returncode == 0, run.stderr
    assert "served as a server runs the trace" in run.stdout
    result = json.loads(out.read_text())
    assert [(s["result"]["policy"], s["capacity_bytes"]) for s in result["served"]] == \
        [(s["policy"], s["capacity_bytes"]) for s in result["sides"]] == [(p, 64 * 2**30) for p in ("benefit", "s3fifo", "lru", "fifo")]
    alone = json.loads(kvspec("replay", "synthetic", "--serve", "--policy", "fifo", "--capacity", "1024").stdout)
    assert {name: value for name, value in result["served"][3]["result"].items() if value is not None} == alone
    benefit = result["served"][0]
    assert benefit["result"]["cache_capacity_blocks"] == 1024 and 0 < benefit["hit_rate"] < 1
    assert drawn.stat().st_size > 10_000


def small_trace(path) -> str:
    """30 requests 20 ms apart, of 1 to 6 blocks of 512 tokens, some sharing a prefix of one or two blocks, generating up
    to 700 tokens each: at 8 and 16 blocks they overlap, evict and preempt."""
    import random

    rng, lines = random.Random(7), []
    for number in range(30):
        shared = rng.choice([[1, 2], [1, 3], [4], []])
        hash_ids = (shared + [100 + 10 * number + j for j in range(rng.randint(1, 5))])[:6]
        lines.append(json.dumps({"timestamp": 20 * number, "input_length": 512 * (len(hash_ids) - 1) + rng.randint(1, 512),
                                 "output_length": rng.randint(1, 700), "hash_ids": hash_ids}))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_LIFE_VLLM_1_and_LIFE_SGLANG_1_kvspec_compare_serve_dialect_serves_each_engine_beside_the_others(tmp_path, monkeypatch) -> None:
    """`kvspec compare TRACE --serve --dialect vllm --dialect sglang` at 512 MiB and 1 GiB (8 and 16 blocks of 64 MiB): after
    the four canonical served rows of each capacity, vLLM's LRU and SGLang's LRU and FIFO, each the result of the reference's
    served replay over the engine's own pool at those blocks (server_for), named by its dialect; the table and the plot,
    where each is dotted beside its line one request at a time, in its colour, as `kvspec sweep --serve --beside` draws it."""
    from kvspec.conformance.measurement import comparison
    from kvspec.reference import ReplayConfig, TraceFile
    from kvspec.reference.caches import server_for
    from kvspec.reference.dialects import dialect_for
    from kvspec.reference.models import ServedResult
    from kvspec.reference.serve import served

    trace, out = small_trace(tmp_path / "small.jsonl"), tmp_path / "compare.json"
    run = kvspec("compare", trace, "--serve", "--dialect", "vllm", "--dialect", "sglang", "--capacity-bytes", "512MiB",
                 "--capacity-bytes", "1GiB", "--output", str(out))
    assert run.returncode == 0, run.stderr
    assert "lru (vllm)" in run.stdout.split("served as a server runs the trace")[1]
    result = json.loads(out.read_text())
    rows = [(s.get("dialect"), s["result"]["policy"], s["capacity_bytes"]) for s in result["served"]]
    each = [(None, "benefit"), (None, "s3fifo"), (None, "lru"), (None, "fifo"), ("vllm", "lru"), ("sglang", "lru"), ("sglang", "fifo")]
    assert rows == [(*row, capacity) for capacity in (2**29, 2**30) for row in each]
    for row in result["served"]:
        if row.get("dialect") is None:
            continue
        blocks = {2**29: 8, 2**30: 16}[row["capacity_bytes"]]
        config = ReplayConfig(row["result"]["policy"], blocks, 512, dialect=dialect_for(row["result"]["policy"], row["dialect"]))
        direct = served(TraceFile(trace).requests(), config, ServiceModel(), path=trace, server=server_for(config))
        expected = ServedResult(**{name: value for name, value in asdict(direct).items() if name != "per_request"})
        assert ServedResult.model_validate_json(json.dumps(row["result"])) == expected
        assert row["result"]["dialect"] == sorted(config.dialect, key=row["result"]["dialect"].index)
    vllm_lru, canonical_lru = result["served"][11], result["served"][9]
    assert vllm_lru["result"]["preemptions"] != canonical_lru["result"]["preemptions"]  # the engine's pool, not the canonical one
    drawn: list = []
    monkeypatch.setattr(comparison, "save", lambda figure, path: drawn.append(figure))
    comparison.plot_trace(comparison.TraceComparison.model_validate_json(out.read_text()), tmp_path / "compare.png")
    lines = {line.get_label(): line for line in drawn[0].axes[0].get_lines()}
    for solid, (dialect, policy) in {"LRU (vllm)": ("vllm", "lru"), "LRU (sglang)": ("sglang", "lru"),
                                     "FIFO (sglang)": ("sglang", "fifo")}.items():
        dotted, line = lines[f"{solid}, served"], lines[solid]
        assert (dotted.get_color(), dotted.get_marker(), dotted.get_markerfacecolor()) == (line.get_color(), line.get_marker(), "none")
        rates = [100 * s["hit_rate"] for s in result["served"] if (s.get("dialect"), s["result"]["policy"]) == (dialect, policy)]
        assert list(dotted.get_ydata()) == rates and list(dotted.get_xdata()) == [0.5, 1]


@pytest.mark.parametrize("args,message", [
    (["synthetic", "--gpus", "2"], "--gpus sets the service model of a served replay: give --serve too"),
    (["synthetic", "--serve", "--dialect", "libcachesim"], "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects"),
    (["synthetic", "--serve", "--variation", "path-ids"], "LIFE-VLLM-1: a served replay takes the canonical policies and the dialects"),
    (["--serve"], "--serve serves a Mooncake trace's requests at their timestamps: give a TRACE"),
    (["synthetic", "--serve", "--max-running", "9", "--step-tokens", "8"], "LIFE-SERVE-1: max_running 9 is more than step_tokens 8"),
    (["synthetic", "--serve", "--gpus", "1.5"], "LIFE-SERVE-1: gpus must be a positive integer"),
])
def test_LIFE_BEN_8_kvspec_compare_serve_refuses_what_it_cannot_serve_in_one_line(args: list[str], message: str) -> None:
    run = kvspec("compare", *args)
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr and run.stdout == "", run.stderr
