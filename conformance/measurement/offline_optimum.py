"""The offline optimum: Belady's MIN over a trace's block accesses, the second ceiling beside the
cache that never evicts. A measurement, not a policy of spec/replay.md: it reads the whole trace
before it replays it, which no cache can.

Definition (L. A. Belady, "A study of replacement algorithms for a virtual-storage computer", IBM
Systems Journal 5(2), 1966; with bypass, as kvcache-simulator 0.1.3's ``optimal`` policy has it,
where libCacheSim 0.3.5's Belady.c always admits: cache.c:251-256):
the block accesses are every request's hash ids, in trace order and in order within the request,
as the replay accesses them (spec/replay.md section 4). The next use of an access is the index of
the next access of the same hash id, or never. A request hits its longest resident prefix, scanned
before its blocks are accessed, as in the replay. An access to a resident block is a block hit and
changes nothing but the block's next use. A missed block is admitted while the cache has room;
when it is full, the missed block is admitted only if its next use is nearer than the farthest next
use of any resident block, which it then evicts; otherwise it is not admitted (bypass). Never is
farther than any index. Finite next uses are distinct accesses, so the only ties are between
blocks never used again, whose choice changes no hit: a missed block never used again is not
admitted (kvcache-simulator's ``key <= candidate_key``, policies.py:211), and among resident ones
the block first seen last is evicted first (its trie nodes are numbered in first-seen order and
the max-heap pops the largest, plan.py:39-42, policies.py:129). kvcache-simulator's optimum
differs where kvspec keeps the replay's words: it counts next uses in requests, not accesses
(plan.py:46-55), evicts only leaves of its trie, and a bypass ends the request's admissions
(policies.py:265-266).

MIN with bypass maximises the number of block hits over every cache of the same capacity that
holds a block only from an access to it on. With longest-prefix hits it is a block-level optimum,
not a bound on prefix hits in general: a trace in which one hash id follows different predecessors
lets a cache that keeps a first block hit more prefix than MIN (tests/test_offline_optimum.py).
Where every hash id names its whole prefix (each id always follows the same predecessor, as in
the bundled Mooncake traces), it is a bound on prefix hit blocks. Every request that holds a block
holds its ancestors before it, so an ancestor's next use is always nearer: MIN evicts or bypasses a
block's descendants first, its resident blocks that are used again form whole prefixes, and its
prefix hit blocks equal its block hits. A cache that holds a block only from an access to it on
and evicts only to admit one finds each of a request's prefix blocks resident when it accesses
it (they come before the request's first miss), so its prefix hit blocks are at most its block
hits, at most MIN's. Hit tokens can still differ by partial last blocks (min(k x block_size,
input_length)).
"""

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from kvspec.reference.replay import check_block_count, checked_total, hit_tokens
from kvspec.reference.trace import TraceRecord


class OfflineOptimum(BaseModel):
    """Belady's MIN at one capacity: its hits by the replay's measure, and by the block."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    cache_capacity_blocks: int = Field(description="the capacity in blocks")
    block_size: int = Field(description="tokens per block")
    requests: int = Field(description="the requests replayed")
    total_hit_tokens: int = Field(description="the sum over requests of min(k x block_size, input_length), k its resident prefix")
    total_prompt_tokens: int = Field(description="the sum of input_length")
    hit_rate: float = Field(description="total_hit_tokens / total_prompt_tokens (0 for an empty trace)")
    block_accesses: int = Field(description="every hash id of every request")
    block_hits: int = Field(description="the accesses that found their block resident: what MIN maximises")
    final_cache_blocks: int = Field(description="the blocks resident after the last request")


@dataclass(frozen=True)
class BlockAccesses:
    """A trace as MIN reads it: each access's block, numbered in first-seen order, and its next use."""

    blocks: list[int]  # the block of each access, numbered 0, 1, ... in the order first seen
    next_use: list[int]  # the index of the next access of the same block, or len(blocks) for never
    starts: list[int]  # the index of each request's first access, and len(blocks) last
    input_lengths: list[int]
    distinct: int


def read_accesses(records: Iterable[tuple[int, TraceRecord]], block_size: int, path: str = "<trace>") -> BlockAccesses:
    """Every block access of the trace, checked as the replay checks it, and their next uses."""
    numbers: dict[int, int] = {}
    blocks: list[int] = []
    starts: list[int] = []
    lengths: list[int] = []
    prompt = 0
    for line_number, record in records:
        check_block_count(path, line_number, record, block_size)
        prompt = checked_total(path, line_number, prompt + record.input_length)
        starts.append(len(blocks))
        lengths.append(record.input_length)
        blocks.extend(numbers.setdefault(h, len(numbers)) for h in record.hash_ids)
    starts.append(len(blocks))
    return BlockAccesses(blocks, next_uses(blocks, len(numbers)), starts, lengths, len(numbers))


def next_uses(blocks: list[int], distinct: int) -> list[int]:
    """For each access, the index of the next access of its block; len(blocks) for never."""
    never = len(blocks)
    following = [never] * distinct
    result = [never] * len(blocks)
    for index in range(len(blocks) - 1, -1, -1):
        block = blocks[index]
        result[index] = following[block]
        following[block] = index
    return result


def offline_optimum(accesses: BlockAccesses, capacity: int, block_size: int) -> OfflineOptimum:
    """Replay the accesses through Belady's MIN with bypass at ``capacity`` blocks (>= 1)."""
    never_resident = -1
    resident_next = [never_resident] * accesses.distinct  # each resident block's next use
    # The farthest next use on top; lazily deleted: an entry whose block has since been evicted
    # or accessed again is skipped when it reaches the top. Among blocks never used again, the
    # largest number (first seen last) on top.
    farthest: list[tuple[int, int]] = []
    resident = hits = block_hits = 0
    blocks, next_use, starts = accesses.blocks, accesses.next_use, accesses.starts
    for request, length in enumerate(accesses.input_lengths):
        start, end = starts[request], starts[request + 1]
        k = 0
        while start + k < end and resident_next[blocks[start + k]] != never_resident:
            k += 1
        hits += hit_tokens(k, block_size, length)
        for index in range(start, end):
            block, following = blocks[index], next_use[index]
            if resident_next[block] != never_resident:
                block_hits += 1
            elif resident < capacity:
                resident += 1
            else:
                while farthest and resident_next[-farthest[0][1]] != -farthest[0][0]:
                    heapq.heappop(farthest)
                if not farthest or following >= -farthest[0][0]:
                    continue  # bypass: no resident block is used later than this one (or the cache holds none)
                resident_next[-heapq.heappop(farthest)[1]] = never_resident
            resident_next[block] = following
            heapq.heappush(farthest, (-following, -block))
    prompt = sum(accesses.input_lengths)
    return OfflineOptimum(
        cache_capacity_blocks=capacity, block_size=block_size, requests=len(accesses.input_lengths), total_hit_tokens=hits,
        total_prompt_tokens=prompt, hit_rate=hits / prompt if prompt else 0.0, block_accesses=len(blocks), block_hits=block_hits,
        final_cache_blocks=resident,
    )


def offline_optima(records: Iterable[tuple[int, TraceRecord]], capacities: Sequence[int], block_size: int,
                   path: str = "<trace>") -> list[OfflineOptimum]:
    """MIN at each capacity, from one reading of the trace."""
    accesses = read_accesses(records, block_size, path)
    return [offline_optimum(accesses, capacity, block_size) for capacity in capacities]
