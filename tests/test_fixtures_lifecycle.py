"""Lifecycle cases (spec/fixtures.md FIX-18), replayed as a consumer replays them: each case's
operations on a pool built from its config, every result and state compared. The reference's Pool
passes every case; each gallery case is failed by a Pool with the engine's bug its provenance
reports, at the operation worked out by hand below (the first whose result or state the bug
changes). The buggy pools run with the contracts off, in a process of their own: the reference's
contracts would stop most of them before the case could."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kvspec.conformance.galleries.canonical_lifecycle import config_of, performed
from kvspec.reference.in_use import InUseLRU, InUseS3FIFO
from kvspec.reference.lifecycle import Pool, Request
from kvspec.reference.replay import hit_tokens

CORPUS = Path(__file__).resolve().parent.parent / "spec" / "fixtures"


def cases() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(CORPUS.glob("lifecycle/*.json"))]


def state(pool: Pool) -> dict[str, Any]:
    """FIX-18's state, read from the pool's own fields."""
    policy = pool.policy
    if isinstance(policy, InUseS3FIFO):
        small, main, ghost = [list(e) for e in policy.small.items()], [list(e) for e in policy.main.items()], list(policy.ghost)
    else:
        small, main, ghost = [], [[h, 0] for h in (policy.recency if isinstance(policy, InUseLRU) else policy.arrival)], []
    return {"small": small, "main": main, "ghost": ghost, "refs": sorted([h, n] for h, n in policy.refs.items()),
            "pending": sorted(pool.pending), "held": pool.held}


def first_divergence(pool_class: type[Pool], case: dict[str, Any], states: bool = True) -> tuple[int, str] | None:
    """Step 8 of what a consumer checks: the first operation (numbered from 1, with its op) whose
    result or (with ``states``) state is not the case's, or None."""
    pool = pool_class.empty(config_of(case))
    for number, step in enumerate(case["operations"], start=1):
        if performed(pool, step) != step["expect"] or (states and state(pool) != step["state"]):
            return number, step["op"]
    return None


# The engines' bugs, each as a Pool that has it -----------------------------------------------

class SameStepRegistration(Pool):
    """vLLM #37152: blocks usable as soon as they are allocated, before their forward pass."""

    def allocate(self, rid: int) -> bool:
        made = super().allocate(rid)
        self.pending.difference_update(self.requests[rid].referenced)
        return made


class EvictsInUse(Pool):
    """vLLM #37076, LMCache #222: eviction that does not look at reference counts."""

    def access_blocks(self, request: Request) -> None:
        refs, self.policy.refs = self.policy.refs, {}
        try:
            super().access_blocks(request)
        finally:
            self.policy.refs = refs


class LastMatchUnlocked(Pool):
    """mini-sglang #52: the lock walk stops one node short, leaving the last hit block unreferenced."""

    def allocate(self, rid: int) -> bool:
        k = self.lookup(rid)
        made = super().allocate(rid)
        request = self.requests[rid]
        if made and k:
            last = request.blocks[k - 1]
            request.referenced.remove(last)
            self.policy.refs[last] -= 1
            if not self.policy.refs[last]:
                del self.policy.refs[last]
        return made


class DetachedKeepLocks(Pool):
    """SGLang #29291: a preempted request's locks on the nodes it detaches are never released."""

    def preempt(self, rid: int) -> None:
        request = self.requests[rid]
        request.referenced = [h for h in request.referenced if h not in self.pending]
        super().preempt(rid)


class SharedCountDropped(Pool):
    """mllm #656: a finishing request makes its blocks evictable whoever else still holds them."""

    def release(self, request: Request) -> None:
        for h in request.referenced:
            self.policy.refs.pop(h, None)
        request.referenced = []
        super().release(request)


class ResumedLookupCounted(Pool):
    """vLLM #25780: a resumed request's lookup is counted as prefix hits."""

    def count_hits(self, request: Request, k: int) -> None:
        if request.hit_tokens is None:
            super().count_hits(request, k)
        else:
            request.hit_tokens += hit_tokens(k, self.block_size, request.input_length)


class RetriesCounted(Pool):
    """vLLM #43736: the hits of each lookup before a refused allocation are counted too."""

    def allocate(self, rid: int) -> bool:
        k = self.lookup(rid)
        made = super().allocate(rid)
        if not made:
            request = self.requests[rid]
            self.__dict__.setdefault("refused", {})[rid] = self.__dict__.get("refused", {}).get(rid, 0) + hit_tokens(
                k, self.block_size, request.input_length)
        return made

    def finish(self, rid: int) -> Request:
        request = super().finish(rid)
        request.hit_tokens = (request.hit_tokens or 0) + self.__dict__.get("refused", {}).pop(rid, 0)
        return request


class ChunksCounted(Pool):
    """SGLang #2555: each chunk of a chunked prefill counts the blocks computed before it as hits."""

    def compute(self, rid: int, upto: int) -> None:
        before = self.requests[rid].computed
        super().compute(rid, upto)
        self.__dict__.setdefault("chunks", {})[rid] = self.__dict__.get("chunks", {}).get(rid, 0) + before * self.block_size

    def finish(self, rid: int) -> Request:
        request = super().finish(rid)
        request.hit_tokens = (request.hit_tokens or 0) + self.__dict__.get("chunks", {}).pop(rid, 0)
        return request


# Each gallery case (by the words of its id), the bug, and the first operation it changes, in the
# state and in the results alone, worked out from the case's comment in
# conformance/fixtures/lifecycle_cases.py (operations numbered from 1).
GALLERY = {
    # request 1's allocation leaves 1, 2, 3 computed; request 2's lookup then finds 1, 2: k 2, not 0
    "same-step-registration": (SameStepRegistration, (3, "allocate"), (5, "lookup")),
    # request 3's block 4 evicts 1, the head, in use; resumed, [1] finds nothing
    "use-after-free": (EvictsInUse, (12, "allocate"), (17, "lookup")),
    # request 2 references 1 and 3, not 2; request 4's block 5 evicts 2; request 5 finds [1] alone
    "lock-walk-off-by-one": (LastMatchUnlocked, (8, "allocate"), (22, "lookup")),
    # block 2 stays referenced and not computed, so request 2's 3 blocks do not fit
    "detached-release": (DetachedKeepLocks, (5, "preempt"), (8, "allocate")),
    # block 1's count of 2 is dropped; request 5's block 6 evicts it; request 6 finds nothing
    "evictable-size-accounting": (SharedCountDropped, (8, "finish"), (27, "lookup")),
    # block 1 leaves S for G, not M; request 3's [1] finds nothing
    "chunk-being-read": (EvictsInUse, (6, "allocate"), (12, "lookup")),
    # the resumed lookup finds nothing and the state is alike: the finish counts 8 hit tokens, not 0
    "recomputation-after-preemption": (ResumedLookupCounted, (14, "finish"), (14, "finish")),
    # the two refused allocations' 4 hit tokens each are counted too: 12, not 4
    "retry-after-allocation-failure": (RetriesCounted, (19, "finish"), (19, "finish")),
    # the chunks after the first count 4 and 8 tokens: 12 hit tokens, not 0
    "chunked-prefill": (ChunksCounted, (7, "finish"), (7, "finish")),
}

DIVERGENCES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import test_fixtures_lifecycle as t
print(json.dumps({c["id"]: [t.first_divergence(bug, c), t.first_divergence(bug, c, states=False)]
                  for c in t.cases() for words, (bug, *_) in t.GALLERY.items() if f"-{words}-" in c["id"]}))
"""


def test_FIX_18_the_reference_pool_replays_every_lifecycle_case_result_and_state() -> None:
    corpus = cases()
    assert {case["config"]["policy"] for case in corpus} == {"s3fifo", "lru", "fifo"} and all(case["level"] == "state" for case in corpus)
    assert [case["id"] for case in corpus if first_divergence(Pool, case) is not None] == []


def test_FIX_18_each_engine_failure_fails_its_gallery_case_where_the_bug_first_shows() -> None:
    """The buggy pools in a process with the contracts off; each gallery case names its report and
    the clause the bug breaks."""
    gallery = {case["id"]: case for case in cases() if case["provenance"].startswith(("vllm-project/", "sgl-project/", "LMCache/", "Ubiquitous"))}
    assert len(gallery) == len(GALLERY) and all(": LIFE-" in case["title"] and " #" in case["provenance"] for case in gallery.values())
    run = subprocess.run([sys.executable, "-c", DIVERGENCES, str(Path(__file__).parent)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    found = {case_id: (tuple(state_level), tuple(results_level)) for case_id, (state_level, results_level) in json.loads(run.stdout).items()}
    expected = {case_id: tuple(wheres) for case_id in gallery for words, (_, *wheres) in GALLERY.items() if f"-{words}-" in case_id}
    assert found == expected
