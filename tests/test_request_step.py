"""One request step (reference/request.py): every kind of cache is looked up, then served, through
request.lookup and request.serve, by every caller, with the same contracts (issue 30)."""

import inspect
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import icontract
import pytest

from kvspec.adapters.interface import AdapterConfig
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.certification.block.keep_going import KeepGoing
from kvspec.reference import LRU, ReplayConfig, make_policy, replay
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import replay_blocks
from kvspec.reference.dialects import RadixCache, dialect_for
from kvspec.reference.request import Policy, lookup, prefix_hit_blocks, serve, state_of, step
from kvspec.reference.trace import TraceRecord

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 4
CAPACITY = 20  # blocks: at the default small_ratio 0.1 (the comparison's, BEN-PREFIX-6), an S of two, which libcachesim's admits to
# Each kind of cache make_policy builds: the canonical policies, a dialect S3FIFO, an LRU of prefix
# paths served block by block, and the engines' caches, each run whole.
KINDS = {
    "s3fifo": ("s3fifo", None), "lru": ("lru", None), "fifo": ("fifo", None),
    "s3fifo (libcachesim)": ("s3fifo", "libcachesim"), "lru (kvcache-simulator)": ("lru", "kvcache-simulator"),
    "lru (vllm)": ("lru", "vllm"), "lru (sglang)": ("lru", "sglang"), "fifo (sglang)": ("fifo", "sglang"),
    "lru (lmcache)": ("lru", "lmcache"), "fifo (lmcache)": ("fifo", "lmcache"),
}
# Conversations that share prefixes, grow turn by turn, end in a partial block, and overflow the cache.
REQUESTS = [([1, 2, 3], 10), ([1, 2, 3, 4], 16), ([5, 6], 8), ([1, 2, 7], 9), ([1, 2, 3, 4, 8], 17), ([5, 6, 9, 10, 11, 12], 21),
            ([1, 2, 3], 12), ([13], 1), (list(range(20, 36)), 63), ([5, 6, 9], 11)]


def config_of(kind: str) -> ReplayConfig:
    policy, dialect = KINDS[kind]
    return ReplayConfig(policy, CAPACITY, BLOCK, dialect=dialect_for(policy, dialect) if dialect else frozenset())  # type: ignore[arg-type]


def records() -> Iterator[tuple[int, TraceRecord]]:
    for line, (hash_ids, input_length) in enumerate(REQUESTS, start=1):
        yield line, TraceRecord(timestamp=line, input_length=input_length, output_length=1, hash_ids=hash_ids)


@contextmanager
def steps_taken() -> Iterator[list[str]]:
    """The calls of request.lookup and request.serve inside the block, in order."""
    names = {inspect.unwrap(function).__code__: name for name, function in (("lookup", lookup), ("serve", serve))}
    taken: list[str] = []
    previous = sys.getprofile()

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in names:  # type: ignore[attr-defined]
            taken.append(names[frame.f_code])  # type: ignore[attr-defined]

    sys.setprofile(profile)
    try:
        yield taken
    finally:
        sys.setprofile(previous)


def in_lockstep(kind: str) -> None:
    """The requests through a KeepGoing: the reference in the kind's dialect beside the canonical reference adapter."""
    config = config_of(kind)
    given = AdapterConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq)
    lockstep = KeepGoing(ReferenceAdapter(), given, config.dialect, lambda: 1, lambda divergent: None)
    assert lockstep.configure()
    for hash_ids, input_length in REQUESTS:
        lockstep.request(hash_ids, input_length)


CALLERS: dict[str, Callable[[str], object]] = {
    "replay": lambda kind: replay(records(), config_of(kind)),
    "compare": lambda kind: replay_blocks(records(), config_of(kind).policy, CAPACITY * Model().block_bytes(BLOCK), BLOCK, Model(),
                                          dialect=config_of(kind).dialect),
    "lockstep": in_lockstep,
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_cache_takes_the_same_step_in_every_caller(kind: str, caller: str) -> None:
    """Issue 30: the replay (and with it the fixtures, which record a replay), the comparison and the
    lockstep (keep-going is one) take each request through request.lookup, then request.serve, and
    nothing else, whatever the kind of cache."""
    with steps_taken() as taken:
        CALLERS[caller](kind)
    assert taken == ["lookup", "serve"] * len(REQUESTS)


def warmed(kind: str) -> Policy:
    """A cache of the kind after all but the last request, one of whose blocks is resident."""
    policy = make_policy(config_of(kind))
    for hash_ids, input_length in REQUESTS[:-1]:
        step(policy, hash_ids, input_length)
    return policy


@pytest.mark.parametrize("kind", KINDS)
def test_REPLAY_PREFIX_3_a_lookup_changes_nothing_in_any_kind_of_cache(kind: str) -> None:
    """REPLAY-PREFIX-3, REPLAY-POLICY-1: the lookup leaves the whole state as it found it (its
    queues in their order, an engine's tree and clock), and finds at most the resident prefix
    (REPLAY-PREFIX-1) of the last request, which earlier ones began."""
    policy = warmed(kind)
    hash_ids, input_length = REQUESTS[-1]
    blocks = policy.blocks(hash_ids)
    before = state_of(policy)
    k = policy.lookup(blocks, input_length)
    assert state_of(policy) == before
    assert 0 <= k <= prefix_hit_blocks(blocks, policy.is_resident) and policy.resident_count() > 0


class ClaimsEveryBlock(LRU):
    """A planted mistake: the lookup claims every block of the request."""

    def lookup(self, blocks: list[int], input_length: int) -> int:
        return len(blocks)


class LooksUpByAccessing(LRU):
    """A planted mistake: the lookup finds the right prefix, but accesses (requeues) its first block."""

    def lookup(self, blocks: list[int], input_length: int) -> int:
        k = prefix_hit_blocks(blocks, self.is_resident)
        if k:
            self.access(blocks[0])
        return k


class ServesPastCapacity(LRU):
    """A planted mistake: the service admits every block and evicts none."""

    def serve(self, blocks: list[int], input_length: int, k: int) -> None:
        for h in blocks:
            self.recency[h] = True


class StampsOnLookup(RadixCache):
    """A planted mistake in an engine: the lookup stamps the nodes of the prefix it finds (SGLang's
    match does, in the run; a question must not)."""

    def lookup(self, blocks: list[int], input_length: int) -> int:
        k = super().lookup(blocks, input_length)
        if k:
            self.walk(blocks[:k])
        return k


def test_REPLAY_INV_3_a_lookup_that_hits_a_request_whose_first_block_is_not_resident_is_refused() -> None:
    """REPLAY-INV-3, with REPLAY-PREFIX-1's bound (which the first implies here): an empty cache hits nothing."""
    with pytest.raises(icontract.ViolationError, match="REPLAY-PREFIX-1: the hit blocks are at most the resident prefix|REPLAY-INV-3"):
        lookup(ClaimsEveryBlock.empty(4), [1, 2], 8)


def test_REPLAY_PREFIX_1_a_lookup_past_the_resident_prefix_is_refused() -> None:
    """REPLAY-PREFIX-1: with 1 and 2 resident, [1, 9, 2] hits one block, not three."""
    policy = ClaimsEveryBlock.empty(4)
    LRU.serve(policy, [1, 2], 8, 0)  # a block policy's service, past the planted lookup
    with pytest.raises(icontract.ViolationError, match="REPLAY-PREFIX-1: the hit blocks are at most the resident prefix"):
        lookup(policy, [1, 9, 2], 12)


def test_REPLAY_PREFIX_3_a_lookup_that_changes_the_queue_is_refused() -> None:
    """REPLAY-PREFIX-3, REPLAY-POLICY-1: its hit blocks are right, but 1 is no longer the least recent."""
    policy = LooksUpByAccessing.empty(4)
    LRU.serve(policy, [1, 2], 8, 0)
    with pytest.raises(icontract.ViolationError, match="REPLAY-PREFIX-3, REPLAY-POLICY-1: the lookup changes nothing"):
        lookup(policy, [1, 2], 8)


def test_REPLAY_PREFIX_3_an_engine_whose_lookup_stamps_its_tree_is_refused() -> None:
    """REPLAY-PREFIX-3: the contract reads the whole state of an engine's cache, its radix tree and clock too."""
    policy = StampsOnLookup.empty(dialect_for("lru", "sglang"), 8, BLOCK, "lru")
    step(policy, [1, 2, 3], 12)
    with pytest.raises(icontract.ViolationError, match="REPLAY-PREFIX-3, REPLAY-POLICY-1: the lookup changes nothing"):
        lookup(policy, policy.blocks([1, 2, 3]), 12)


def test_the_state_invariants_hold_after_every_serve() -> None:
    """LRU-CAP-1 (and each policy's own invariants): a service that overfills the cache is refused."""
    with pytest.raises(icontract.ViolationError, match="LRU-CAP-1"):
        serve(ServesPastCapacity.empty(2), [1, 2, 3], 12, 0)


FIGURES = r"""
import json, sys
from kvspec.reference import ReplayConfig, TraceFile, bundled_trace_path, replay
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import replay_blocks
from kvspec.reference.dialects import dialect_for

docs, wrong, compared = sys.argv[1], [], 0
sweep = json.load(open(f"{docs}/hit-rate-conversation.json"))
ablation = json.load(open(f"{docs}/dialects-ablation.json"))
results = [point["result"] for point in sweep["points"] if point["result"]["cache_capacity_blocks"] == 256]
results += [point["result"] for trace in ablation["traces"] for row in trace["rows"] if row["name"] == "libcachesim"
            for point in row["points"] if point["capacity"] == 256]
for want in results:
    trace = "synthetic_trace.jsonl.gz" if want["requests"] == 3993 else "conversation_trace.jsonl.gz"
    config = ReplayConfig(want["policy"], 256, 512, 0.1, 3, frozenset(want.get("dialect") or ()))
    got = replay(TraceFile(bundled_trace_path(trace)).records(), config).model_dump(exclude_none=True)
    wrong += [] if got == {k: v for k, v in want.items() if v is not None} else [(trace, want, got)]
    compared += 1
for name in ("conversation", "synthetic"):
    compare = json.load(open(f"{docs}/prefix-{name}.json"))
    sides = [(side, frozenset()) for side in compare["sides"] if side["policy"] != "benefit"]
    sides += [(each["side"], frozenset(each["variations"])) for each in compare["dialect_sides"]]
    for want, dialect in sides:
        if want["capacity_bytes"] == 16 << 30:
            got = replay_blocks(TraceFile(bundled_trace_path(compare["trace"])).records(), want["policy"], want["capacity_bytes"], 512,
                                Model(), dialect=dialect).model_dump()
            wrong += [] if got == want else [(name, want, got)]
            compared += 1
print(json.dumps({"compared": compared, "wrong": wrong}))
"""


def test_the_step_replays_the_bundled_traces_to_the_committed_figures() -> None:
    """Through the step, both bundled traces replay to the figures docs/ commits: the sweep's (the
    canonical policies and the engines' dialects, at 256 blocks), the dialect ablation's
    libcachesim S3FIFO, and the comparison's hit tokens, saved prefill, bytes written and peak
    bytes at 16 GiB, block policies and engines alike (the blocks an engine stores, as it counts
    them). Without contracts, as the commands that made them ran (the step's own are proven above,
    and cost the full traces minutes)."""
    run = subprocess.run([sys.executable, "-c", FIGURES, str(ROOT / "docs")], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"compared": 8 + 2 + 2 * (3 + 5), "wrong": []}
