"""kvcache-simulator 0.1.3 (docs/certifications/kvcache-simulator/): its FIFO and LRU, driven through
the published adapter, agree in lockstep with the reference in the dialect kvcache-simulator
(reference/dialects/catalogue.py), request by request: hit tokens and resident count, on random
examples and on the start of both bundled Mooncake traces; and, read from inside one run of the
package, every request's hit tokens and the final resident count over the whole of both traces.
The package is light (one 40 KB wheel, no dependency): it is in the `test` extra, and CI runs these."""

import gzip
import json
import linecache
import os
import random
import subprocess
import sys
from importlib.metadata import version
from itertools import islice
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import AdapterConfig
from kvspec.reference import ReplayConfig, bundled_trace_path, make_policy, replay_request
from kvspec.reference.dialects import dialect_for

from certifications import adapter_of, agrees_in_dialect, kvspec, random_requests

pytest.importorskip("kvcache_sim", reason="pip install '.[test]' (kvcache-simulator 0.1.3)")

# the whole-trace test's own reading of the package, after the skip
from kvcache_sim.plan import ExecutionPlan, build_execution_plan
from kvcache_sim.policies import simulate_fifo, simulate_policy, simulate_trie_policy
from kvcache_sim.trace import parse_trace_file

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def canonical_hits(config: AdapterConfig, requests: list[tuple[list[int], int]]) -> list[int]:
    policy = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size))
    return [replay_request(policy, hash_ids, input_length, config.block_size) for hash_ids, input_length in requests]


def test_the_adapter_drives_the_version_pyproject_pins() -> None:
    """The adapter reads the package's internals, so it is pinned; the installed one is that version."""
    assert '"kvcache-simulator==0.1.3"' in PYPROJECT.read_text()
    assert version("kvcache-simulator") == "0.1.3" == load_adapter(adapter_of("kvcache-simulator", "in-process")).identity.version


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_a_quick_certification_against_its_dialect_conforms(policy: str) -> None:
    """DIALECT-7: through the published adapter, as `kvspec certify --dialect kvcache-simulator` runs it."""
    run = kvspec("certify", "--adapter", adapter_of("kvcache-simulator"), "--policy", policy, "--dialect", "kvcache-simulator")
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_kvcache_simulator_agrees_with_its_dialect_on_random_examples(policy: str) -> None:
    """Capacities -2 to 8 (the package takes any), chained and arbitrary ids; the canonical policy
    disagrees with the package on some of them, so the dialect's variation points are reached."""
    draw = random.Random(15)
    adapter = load_adapter(adapter_of("kvcache-simulator", "in-process"))
    dialect = dialect_for(policy, "kvcache-simulator")
    canonical_differs = 0
    for example in range(80):
        block_size = draw.choice([1, 3, 16])
        requests = random_requests(draw, chained=example % 2 == 0, block_size=block_size)
        config = AdapterConfig(policy, draw.randint(-2, 8), block_size)
        hits = agrees_in_dialect(adapter, config, dialect, requests)
        canonical_differs += config.capacity >= 1 and hits != canonical_hits(config, requests)
    assert canonical_differs >= 5


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("trace", ["conversation_trace", "synthetic_trace"])
def test_kvcache_simulator_agrees_with_its_dialect_on_the_start_of_a_mooncake_trace(trace: str, policy: str) -> None:
    """The first 80 requests, block size 512, at capacities 10 and 100 (the dialect and the
    canonical LRU disagree on 57 and 1 of the conversation trace's). Each of the adapter's answers
    costs a run over every request so far, so the resident count is compared after the last one."""
    with gzip.open(bundled_trace_path(f"{trace}.jsonl.gz"), "rt") as lines:
        requests = [(record["hash_ids"], record["input_length"]) for record in map(json.loads, islice(lines, 80))]
    adapter = load_adapter(adapter_of("kvcache-simulator", "in-process"))
    for capacity in (10, 100):
        agrees_in_dialect(adapter, AdapterConfig(policy, capacity, 512), dialect_for(policy, "kvcache-simulator"), requests, every_count=False)


# kvcache_sim/policies.py of 0.1.3: the first line of each simulation's loop over requests, where a
# request's iteration begins and nothing of it has run yet, and the local that holds the cache's
# residency, one byte per trie node (1: resident).
REQUEST_START = {"fifo": (simulate_fifo.__code__, 80, "in_cache"), "lru": (simulate_trie_policy.__code__, 237, "present")}
REQUEST_START_SOURCE = "if request_index >= plan.warmup_requests and not full_before_measurement:"


def resident_prefix_tokens(plan: ExecutionPlan, request: int, residency: bytearray) -> int:
    """The package's own hit rule (policies.py:86-94, :243-256): the tokens of the request's blocks
    (trie nodes) resident before its first non-resident one."""
    tokens = 0
    for event in range(plan.request_starts[request], plan.request_starts[request + 1]):
        if not residency[plan.node_for_event[event]]:
            break
        tokens += plan.tokens[event]
    return tokens


def traced_run(plan: ExecutionPlan, policy: str, capacity: int) -> tuple[list[int], int, int]:
    """One run of the package's simulation over the whole plan, watched from inside: each request's
    hit tokens, the final resident count, and the hit tokens the package reports for its measured
    window (the requests from ``plan.warmup_requests`` on).

    White box, because the package cannot say more from outside: it reports only an aggregate over
    its window, and its state lives in local variables of the function that runs the loop. So a
    ``sys.settrace`` tracer local to that one function (``simulate_fifo`` or ``simulate_trie_policy``)
    reads, on the first line of each request's iteration, the package's own residency bytearray,
    and from it that request's resident prefix, before any of the request's scan or accesses have
    run; and, as the function returns, its local ``cache_size``. Unlike the adapter (adapter.py),
    which answers each protocol question with a fresh run over every request so far (O(n^2), fine
    for certification examples, not for a trace of 12,031 requests), this is a single run, O(n), and
    it never asks the package a question: it reads the state of the run that is going on. It
    depends on 0.1.3's line numbers and local names (the pinned version): if they moved, the
    source check or the request count below fails, naming what it did not find. The tracer in
    place before (a debugger's, coverage's) is put back after."""
    code, line, residency = REQUEST_START[policy]
    found = linecache.getline(code.co_filename, line).strip()
    assert found == REQUEST_START_SOURCE, f"{code.co_filename}:{line} is {found!r}, not the start of a request's iteration in 0.1.3"
    missing = {residency, "cache_size"} - {*code.co_varnames, *code.co_cellvars}
    assert not missing, f"{code.co_name} has no local {', '.join(sorted(missing))}, as 0.1.3 has"
    hits: list[int] = []
    final: dict[str, Any] = {}

    def in_simulation(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line" and frame.f_lineno == line:
            request = len(hits)  # -1 below: a start too many, which the count check reports
            hits.append(resident_prefix_tokens(plan, request, frame.f_locals[residency]) if request < plan.request_count else -1)
        elif event == "return":
            final["cache_size"] = frame.f_locals.get("cache_size")
        return in_simulation

    def on_call(frame: FrameType, event: str, arg: object) -> Any:
        return in_simulation if frame.f_code is code else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        result = simulate_policy(plan, policy, capacity)
    finally:
        sys.settrace(previous)
    assert result.measurementMode == "fixed_window", f"{result}: the cache did not fill before the window, and the run stopped there"
    assert len(hits) == plan.request_count, f"{len(hits)} requests began at {code.co_name}:{line}, of {plan.request_count}"
    assert isinstance(final.get("cache_size"), int), f"{code.co_name} returned without a local cache_size"
    return hits, final["cache_size"], result.hitTokens


REFERENCE_IN_DIALECT = """
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path, replay
from kvspec.reference.dialects import dialect_for
trace, policy, *capacities = sys.argv[1:]
path = bundled_trace_path(trace)
records = list(TraceFile(path).records())
for capacity in map(int, capacities):
    config = ReplayConfig(policy=policy, capacity=capacity, block_size=512, dialect=dialect_for(policy, "kvcache-simulator"))
    result = replay(records, config, path=str(path), per_request=True)
    print(json.dumps({"hits": [line.hit_tokens for line in result.per_request], "final": result.final_cache_blocks}))
"""

WHOLE_TRACE_CAPACITIES = (100, 4000)


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@pytest.mark.parametrize("trace", ["conversation_trace", "synthetic_trace"])
def test_kvcache_simulator_agrees_with_its_dialect_on_the_whole_of_a_mooncake_trace(trace: str, policy: str) -> None:
    """Every request of the trace (12,031 or 3,993), block size 512, at capacities 100 and 4,000:
    the hit tokens the package's own state gives each request at its start (traced_run) and its
    final resident count equal the reference's in the dialect kvcache-simulator; and the traced
    hits of the package's measured window (its default, the last half) sum to the hit tokens it
    reports, so the reading is the package's own. The package reads the trace as its command line
    does (parse_trace_file, --block-size 512). On these traces no id follows two prefixes, so the
    FIFO dialect is the canonical FIFO; the canonical LRU differs from the LRU dialect on 387 and 8
    of the conversation trace's requests, 10 and 12 of the synthetic's. The reference replays in a
    process of its own with the contracts off: with every contract on, the LRU dialect's O(cache
    size) checks on every access make one replay of the synthetic trace alone take over a minute;
    the random examples above run it in process with every contract."""
    path = bundled_trace_path(f"{trace}.jsonl.gz")
    run = subprocess.run([sys.executable, "-c", REFERENCE_IN_DIALECT, path.name, policy, *map(str, WHOLE_TRACE_CAPACITIES)],
                         check=False, capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    plan = build_execution_plan(parse_trace_file(path, block_size=512))
    for capacity, line in zip(WHOLE_TRACE_CAPACITIES, run.stdout.splitlines(), strict=True):
        expected = json.loads(line)
        hits, resident, window_hits = traced_run(plan, policy, capacity)
        assert len(hits) == len(expected["hits"]), f"the package read {len(hits)} requests, the reference {len(expected['hits'])}"
        differing = [number for number, (actual, wanted) in enumerate(zip(hits, expected["hits"]), 1) if actual != wanted]
        assert not differing, (f"{policy} at capacity {capacity}: {len(differing)} requests differ; request {differing[0]} hits "
                               f"{hits[differing[0] - 1]} tokens, the dialect {expected['hits'][differing[0] - 1]}")
        assert resident == expected["final"], f"{policy} at capacity {capacity}: {resident} resident at the end, the dialect {expected['final']}"
        assert sum(hits[plan.warmup_requests:]) == window_hits > 0
