"""The engines' dialects (spec/dialects.md, section 8) certified against independent models of the
engines (tests/engines/), written from each engine's source, not from kvspec's reference: CI's
stand-in for the engines themselves, which docs/certifications/<engine>/check_model.py holds to
the model request by request and docs/certifications/regenerate-engines certifies.

The models are certified by kvspec certify's own machine (DIALECT-7), and replayed in lockstep with
the reference over the start of both bundled Mooncake traces at a capacity small enough to evict.
"""

import json
from collections.abc import Callable
from itertools import islice
from pathlib import Path

import pytest
from engines import lmcache_model, sglang_model, vllm_model
from test_cli import kvspec

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig
from kvspec.conformance.certification.block.dialect_search import points
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.certify import certify_in_flight, certify_policy
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.reference import TraceFile, bundled_trace_path
from kvspec.reference.dialects import KNOWN_DIALECTS, dialect_for, in_catalogue_order

ENGINE_MODELS = Path(__file__).parent / "engines"
ENGINES = [("vllm", "lru", vllm_model.adapter), ("sglang-lru", "lru", sglang_model.adapter), ("sglang-fifo", "fifo", sglang_model.adapter),
           ("sglang-unified-lru", "lru", sglang_model.unified_adapter), ("sglang-unified-fifo", "fifo", sglang_model.unified_adapter),
           ("lmcache-lru", "lru", lmcache_model.adapter), ("lmcache-fifo", "fifo", lmcache_model.adapter)]
CLAUSES = {"vllm": "LRU-DIALECT-6", "sglang-lru": "LRU-DIALECT-5", "sglang-fifo": "FIFO-DIALECT-1", "sglang-unified-lru": "LRU-DIALECT-5",
           "sglang-unified-fifo": "FIFO-DIALECT-2", "lmcache-lru": "LRU-DIALECT-4", "lmcache-fifo": "REPLAY-DIALECT-9"}


def test_every_engine_dialect_is_named_and_has_a_model() -> None:
    """DIALECT-5: each engine of section 8 is a known dialect, by the engine's name and by the
    engine's and the policy's, and each has its model here."""
    assert {name for name, _, _ in ENGINES} == {name for name in KNOWN_DIALECTS
                                                if name == "vllm" or name.startswith(("sglang", "lmcache")) and name.endswith(("-lru", "-fifo"))}
    for name, policy, _ in ENGINES:
        assert KNOWN_DIALECTS[name] == {policy: KNOWN_DIALECTS[name if name == "vllm" else name.rsplit("-", 1)[0]][policy]}


@pytest.mark.untyped  # the models replay the conversation trace typed, below
@pytest.mark.parametrize(("name", "policy", "model"), ENGINES, ids=[name for name, _, _ in ENGINES])
def test_REPLAY_DIALECT_4_to_9_LRU_DIALECT_4_to_6_FIFO_DIALECT_1_2_each_engine_model_conforms_to_its_dialect(
        name: str, policy: str, model: Callable[[], object]) -> None:
    """DIALECT-7, and each engine's own clause (CLAUSES): the model of the engine conforms to its
    dialect, under the machine that found the canonical policies' mistakes."""
    outcome = certify_policy(model(), policy, dialect=dialect_for(policy, name))
    assert outcome.conforms, (CLAUSES[name], outcome.findings[0].message if outcome.findings else "")


IN_FLIGHT = [(name, policy, model) for name, policy, model in ENGINES if getattr(model(), "lifecycle", False) is True]


@pytest.mark.parametrize(("name", "policy", "model"), IN_FLIGHT, ids=[name for name, _, _ in IN_FLIGHT])
def test_each_engine_model_that_offers_the_lifecycle_conforms_in_flight_to_its_dialect(name: str, policy: str, model: Callable[[], object]) -> None:
    """LIFE-VLLM-10 to LIFE-VLLM-16 (spec/dialects.md section 9): the model of the engine's pool in flight
    conforms to its dialect's, under the machine that catches the engines' own bugs in flight."""
    outcome = certify_in_flight(Implementation.in_process(model, name), policy, dialect=dialect_for(policy, name))
    assert outcome.conforms and outcome.in_flight and outcome.accepted, outcome.message
    assert {name for name, _, _ in IN_FLIGHT} >= {"vllm"}


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl.gz", pytest.param("synthetic_trace.jsonl.gz", marks=pytest.mark.untyped)])
@pytest.mark.parametrize(("name", "policy", "model"), ENGINES, ids=[name for name, _, _ in ENGINES])
def test_each_engine_model_agrees_with_its_dialect_on_the_mooncake_traces(name: str, policy: str, model: Callable[[], object], trace: str) -> None:
    """Section 8: the model and the reference in the engine's dialect, in lockstep over the first
    800 requests of a bundled trace at 64 blocks of 512 tokens (requests longer than the cache
    included): every hit, and the resident count after every request."""
    lockstep = Lockstep(model(), AdapterConfig(policy, 64, 512), dialect_for(policy, name))  # type: ignore[arg-type]
    assert lockstep.configure()
    hits = [lockstep.request(record.hash_ids, record.input_length) for _, record in islice(TraceFile(bundled_trace_path(trace)).records(), 800)]
    assert sum(hits) > 0


def test_replay_takes_an_engines_one_policy_and_gives_its_own_totals(tmp_path: Path) -> None:
    """DIALECT-5, DIALECT-6: `kvspec replay --dialect vllm` replays vLLM's LRU without --policy, and
    its result is the dialect's: the totals a replay in the reference gives (the model agrees with
    it above), with `dialect` listing the variation points."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"timestamp": 0, "input_length": length, "output_length": 0, "hash_ids": ids}) + "\n"
                             for ids, length in [([1, 2], 2), ([1, 2], 2), ([1, 2, 3], 3)]))
    result = json.loads(kvspec("replay", str(trace), "--dialect", "vllm", "--capacity", "4", "--block-size", "1").stdout)
    assert (result["policy"], result["dialect"]) == ("lru", in_catalogue_order(frozenset(KNOWN_DIALECTS["vllm"]["lru"])))
    # [1,2]: nothing hit, both cached, the queue (1,2) (1); [1,2] again: the cap leaves 1 hit block,
    # (1,2) is computed again and held twice: (1,2) (1,2) (1); [1,2,3]: 2 hit blocks, (1,2,3) cached: 4 slots hold a block
    assert (result["total_hit_tokens"], result["final_cache_blocks"]) == (0 + 1 + 2, 4)


def test_DIALECT_8_a_candidate_that_gets_the_hits_right_scores_above_one_that_does_not() -> None:
    """DIALECT-8, spec/dialects.md section 6 step 2: vLLM's model, capacity 6, block size 1, [1]
    twice. Canonical LRU: the configuration (1), request 1 whole (2), request 2's hit tokens differ
    (1 expected, vLLM's cap gives 0): 3. hit-cap-last-token: the same, and request 2's hit tokens
    agree (1) though its resident count does not (vLLM holds (1) twice): 4."""
    implementation = Implementation.of(vllm_model.adapter())
    lockstep = Lockstep(implementation.current(), AdapterConfig("lru", 6, 1))
    assert lockstep.configure()
    with pytest.raises(Divergence) as failed:
        for _ in range(2):
            lockstep.request([1], 1)
    evidence = [failed.value]
    assert (sum(points(implementation, frozenset(), evidence)), sum(points(implementation, frozenset({"hit-cap-last-token"}), evidence))) == (3, 4)


def test_keep_going_replays_an_engine_dialect_to_the_end(tmp_path: Path) -> None:
    """`kvspec replay --adapter --keep-going` in an engine's dialect (REPLAY-DIALECT-4 to 9, PROTO-10):
    vLLM's model against SGLang's dialect, 300 requests of the conversation trace at 64 blocks; the
    implementation's own totals are those of vLLM's dialect replayed alone (the model agrees with
    it above)."""
    trace = tmp_path / "t.jsonl"
    records = [record for _, record in islice(TraceFile(bundled_trace_path()).records(), 300)]
    trace.write_text("".join(record.model_dump_json() + "\n" for record in records))
    run = kvspec("replay", str(trace), "--adapter", f"in-process:{ENGINE_MODELS / 'vllm_model.py'}:adapter", "--dialect", "sglang-lru", "--keep-going",
                 "--capacity", "64", contracts="0")
    report = json.loads(run.stdout)
    alone = json.loads(kvspec("replay", str(trace), "--dialect", "vllm", "--capacity", "64", contracts="0").stdout)
    assert run.returncode == 3 and report["diverged_requests"] > 0 and report["requests"] == 300
    assert (report["implementation"]["total_hit_tokens"], report["implementation"]["final_cache_blocks"]) == (
        alone["total_hit_tokens"], alone["final_cache_blocks"])


def test_FIX_12_verify_skips_the_cases_past_the_bounds_an_engine_can_build(tmp_path: Path) -> None:
    """FIX-12: `fixtures verify --max-capacity --max-block-size` skips the replay cases of a larger
    pool, saying which bound each is past, and replays the rest: vLLM's model through vLLM's
    dialect corpus, every case replayed passing."""
    corpus = tmp_path / "vllm"
    kvspec("fixtures", "generate", "--dialect", "vllm", str(corpus), contracts="0")
    run = kvspec("fixtures", "verify", str(corpus), "--adapter", f"in-process:{ENGINE_MODELS / 'vllm_model.py'}:adapter", "--max-capacity", "65536",
                 "--max-block-size", "65536", "--output", str(tmp_path / "out.json"), contracts="0")
    results = json.loads((tmp_path / "out.json").read_text())
    skipped = [r for r in results if r["verdict"] == "skip"]
    assert run.returncode == 0 and skipped and all("is past --max-" in r["detail"] for r in skipped)
    assert {r["verdict"] for r in results} == {"pass", "skip"}
