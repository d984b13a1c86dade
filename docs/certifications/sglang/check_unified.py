"""Check UnifiedRadixCache, the tree cache a default SGLang 0.5.23 server builds
(mem_cache/registry.py:146), against tests/engines/sglang_model.py, with the Python and the Rust
tree cores (unified_cache/tree_core_registry.py; the Rust one is the default, environ.py:741).

    OMP_NUM_THREADS=1 PYTHONPATH=tests/engines:docs/certifications/sglang \
        /work/engines/sglang/venv/bin/python -W ignore docs/certifications/sglang/check_unified.py

The request cycle is adapter.py's, on a UnifiedRadixCache holding full attention only. Its nodes
are not RadixCache's (the Rust core's are not Python objects), so there is no read-only lookup here:
each request's hit is the one its real ``match_prefix`` returned, compared with the model's
read-only hit asked just before; the resident count is the tree's evictable tokens over the page
size (nothing is locked between requests). The tree core keeps its own time counter
(unified_tree_core.py:126-127). Prints, for each core, how many random traces and which trace
replays (4,096 blocks) agree with the model as RadixCache has it and with the model whose split keeps the node's
creation time (unified_tree_core.py:1476).
"""

import random
import sys

from adapter import SGLangRadixCache
from check_model import random_requests, trace
from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache
from sglang_model import SGLangModel

from kvspec.adapters.interface import AdapterConfig

RANDOM_TRACES = 1000


class SGLangUnified(SGLangRadixCache):
    def __init__(self, tree_core: str) -> None:
        super().__init__()
        self.tree_core = tree_core

    def configure(self, config: AdapterConfig) -> None:
        self.cache = UnifiedRadixCache(self.params(config, tree_components=(ComponentType.FULL,), tree_core_backend=self.tree_core))
        self.config = config

    def resident_count(self) -> int:
        return self.cache.evictable_size() // self.config.block_size


def agrees(engine: SGLangUnified, model: SGLangModel, requests, policy: str, capacity: int, block_size: int) -> bool:
    config = AdapterConfig(policy=policy, capacity=capacity, block_size=block_size)
    engine.configure(config)
    model.configure(config)
    for hash_ids, length in requests:
        expected = model.hit_tokens(hash_ids, length)
        engine.access(hash_ids, input_length=length)
        model.access(hash_ids, input_length=length)
        if engine.last_match_tokens != expected or engine.resident_count() != model.resident_count():
            return False
    return True


def main() -> None:
    conversation, synthetic = trace("conversation_trace.jsonl.gz"), trace("synthetic_trace.jsonl.gz")
    for core in ("python", "rust"):
        engine = SGLangUnified(core)
        engine.configure(AdapterConfig(policy="lru", capacity=1, block_size=1))
        print(f"tree core {core}: {type(engine.cache.tree_core).__name__}", flush=True)
        for keeps in (False, True):
            rng, failed = random.Random(16), {"lru": 0, "fifo": 0}
            for _ in range(RANDOM_TRACES):
                capacity, block_size = rng.randint(1, 12), rng.randint(1, 4)
                for policy in ("lru", "fifo"):
                    requests = random_requests(rng, capacity, block_size)
                    failed[policy] += not agrees(engine, SGLangModel(keeps), requests, policy, capacity, block_size)
            replays = {
                f"{name} {policy} {capacity}": agrees(engine, SGLangModel(keeps), requests, policy, capacity, 512)
                for name, requests in (("conversation", conversation), ("synthetic", synthetic))
                for capacity in (4096,)
                for policy in ("lru", "fifo")
            }
            print(f"  model with split_keeps_creation={keeps}: random traces diverging (of {RANDOM_TRACES}) {failed}; "
                  f"trace replays agreeing {replays}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
