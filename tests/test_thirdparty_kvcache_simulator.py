"""kvcache-simulator 0.1.3 (docs/certifications/kvcache-simulator/): its FIFO and LRU, driven through
the published adapter, agree in lockstep with the reference in the dialect kvcache-simulator
(reference/dialects/catalogue.py), request by request: hit tokens and resident count, on random
examples and on the start of both bundled Mooncake traces. The package is light (one 40 KB wheel,
no dependency): it is in the `test` extra, and CI runs these."""

import gzip
import json
import random
from importlib.metadata import version
from itertools import islice
from pathlib import Path

import pytest

from kvspec.adapters import load_adapter
from kvspec.adapters.interface import AdapterConfig
from kvspec.reference import ReplayConfig, bundled_trace_path, make_policy, replay_request
from kvspec.reference.dialects import dialect_for

from certifications import adapter_of, agrees_in_dialect, random_requests

pytest.importorskip("kvcache_sim", reason="pip install '.[test]' (kvcache-simulator 0.1.3)")

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def canonical_hits(config: AdapterConfig, requests: list[tuple[list[int], int]]) -> list[int]:
    policy = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size))
    return [replay_request(policy, hash_ids, input_length, config.block_size) for hash_ids, input_length in requests]


def test_the_adapter_drives_the_version_pyproject_pins() -> None:
    """The adapter reads the package's internals, so it is pinned; the installed one is that version."""
    assert '"kvcache-simulator==0.1.3"' in PYPROJECT.read_text()
    assert version("kvcache-simulator") == "0.1.3" == load_adapter(adapter_of("kvcache-simulator")).identity.version


@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_kvcache_simulator_agrees_with_its_dialect_on_random_examples(policy: str) -> None:
    """Capacities -2 to 8 (the package takes any), chained and arbitrary ids; the canonical policy
    disagrees with the package on some of them, so the dialect's variation points are reached."""
    draw = random.Random(15)
    adapter = load_adapter(adapter_of("kvcache-simulator"))
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
    adapter = load_adapter(adapter_of("kvcache-simulator"))
    for capacity in (10, 100):
        agrees_in_dialect(adapter, AdapterConfig(policy, capacity, 512), dialect_for(policy, "kvcache-simulator"), requests, every_count=False)
