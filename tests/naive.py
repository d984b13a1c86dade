"""A deliberately naive second implementation of the replay, written from seed 000's text.

It shares no code with kvspec.reference and must never import it: the tests compare the two,
and a comparison with itself would prove nothing. Everything is spelled out with plain lists,
head (oldest) at index 0, tail (newest) at the end:

- S3FIFO: ``small`` and ``main`` are lists of ``[hash, freq]`` pairs, ``ghost`` a list of hashes.
- LRU: a list of hashes, least recently used first.
- FIFO: a list of hashes, first admitted first.

Finding a hash in a list is a linear scan, which makes a full Mooncake trace slow; so each
cache keeps one dict beside its lists, ``where``, that only says which list (if any) holds a
hash and, for S and M, which ``[hash, freq]`` pair is its entry. The lists stay the truth: every
rule below reads and writes them exactly as the seed states it, and ``index_is_consistent``
recomputes the dict from the lists so that the tests can check that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


class NaiveS3FIFO:
    """S3FIFO as seed 000 states it, step by step."""

    def __init__(self, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> None:
        self.small_cap = round(capacity * small_ratio)  # banker's rounding, as the seed says
        self.main_cap = capacity - self.small_cap
        self.ghost_cap = self.main_cap  # ghost_cap = main_cap, not small_cap
        if self.small_cap < 1 or self.main_cap < 1:
            raise ValueError(f"capacity {capacity} at small_ratio {small_ratio}: small_cap {self.small_cap}, main_cap {self.main_cap}")
        if max_freq < 0:
            raise ValueError(f"max_freq {max_freq} < 0")
        self.max_freq = max_freq
        self.small: list[list[int]] = []  # [hash, freq] pairs, head first
        self.main: list[list[int]] = []  # [hash, freq] pairs, head first
        self.ghost: list[int] = []  # hashes, head first
        # The index: hash -> ("S", pair) | ("M", pair) | ("G", None).
        self.where: dict[int, tuple[str, list[int] | None]] = {}

    # -- the replay's view -------------------------------------------------------------
    def is_resident(self, h: int) -> bool:
        """Resident iff in S or M; a ghost is not resident."""
        return h in self.where and self.where[h][0] in ("S", "M")

    def in_ghost(self, h: int) -> bool:
        return h in self.where and self.where[h][0] == "G"

    def resident_count(self) -> int:
        """final_cache_blocks = |S| + |M|, never |G|."""
        return len(self.small) + len(self.main)

    def state(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[int]]:
        """The queues, head first: S and M as (hash, freq), G as hashes."""
        return [(h, f) for h, f in self.small], [(h, f) for h, f in self.main], list(self.ghost)

    # -- the access rule ---------------------------------------------------------------
    def access(self, h: int) -> None:
        if self.in_queue(h, "S"):
            pair = self.entry(h)
            pair[1] = min(pair[1] + 1, self.max_freq)  # saturating increment
        elif self.in_queue(h, "M"):
            pair = self.entry(h)
            pair[1] = min(pair[1] + 1, self.max_freq)  # saturating increment, no move
        elif self.in_queue(h, "G"):
            self.ghost.remove(h)  # remove from G ...
            del self.where[h]
            self.admit_to_main(h, 0)  # ... and admit to the tail of M with freq 0
        else:
            self.admit_to_small(h)  # brand new: tail of S with freq 0

    def admit_to_small(self, h: int) -> None:
        while len(self.small) >= self.small_cap:
            victim, victim_freq = self.small.pop(0)
            del self.where[victim]
            if victim_freq >= 1:
                self.admit_to_main(victim, victim_freq)  # freq preserved, not reset
            else:
                self.insert_to_ghost(victim)
        pair = [h, 0]
        self.small.append(pair)
        self.where[h] = ("S", pair)

    def admit_to_main(self, h: int, freq: int) -> None:
        while len(self.main) >= self.main_cap:
            victim, victim_freq = self.main[0]  # peek the head
            if victim_freq >= 1:
                self.main.pop(0)
                pair = [victim, victim_freq - 1]
                self.main.append(pair)  # second chance: back at the tail, one less
                self.where[victim] = ("M", pair)
                continue
            self.main.pop(0)
            del self.where[victim]
            self.insert_to_ghost(victim)
            break  # exactly one real eviction
        pair = [h, freq]
        self.main.append(pair)
        self.where[h] = ("M", pair)

    def insert_to_ghost(self, h: int) -> None:
        if self.in_queue(h, "G"):
            self.ghost.remove(h)  # re-appended below with fresh recency
        elif len(self.ghost) >= self.ghost_cap:
            head = self.ghost.pop(0)
            del self.where[head]
        self.ghost.append(h)
        self.where[h] = ("G", None)

    # -- the index ---------------------------------------------------------------------
    def in_queue(self, h: int, name: str) -> bool:
        return h in self.where and self.where[h][0] == name

    def entry(self, h: int) -> list[int]:
        pair = self.where[h][1]
        assert pair is not None
        return pair

    def index_is_consistent(self) -> bool:
        """The dict says exactly what a linear scan of the lists says."""
        expected: dict[int, tuple[str, int]] = {}
        for name, queue in (("S", self.small), ("M", self.main)):
            for pair in queue:
                if pair[0] in expected:
                    return False
                expected[pair[0]] = (name, id(pair))
        for h in self.ghost:
            if h in expected:
                return False
            expected[h] = ("G", id(None))
        actual = {h: (name, id(pair)) for h, (name, pair) in self.where.items()}
        return actual == expected


class NaiveFIFO:
    """FIFO: a hit changes nothing; a miss evicts the head (first admitted) when full."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity {capacity} < 1")
        self.capacity = capacity
        self.order: list[int] = []  # first admitted first
        self.members: set[int] = set()  # the index: exactly the hashes in ``order``

    def is_resident(self, h: int) -> bool:
        return h in self.members

    def access(self, h: int) -> None:
        if h in self.members:
            return
        if len(self.order) >= self.capacity:
            self.members.discard(self.order.pop(0))
        self.order.append(h)
        self.members.add(h)

    def resident_count(self) -> int:
        return len(self.order)

    def state(self) -> list[int]:
        return list(self.order)

    def index_is_consistent(self) -> bool:
        return len(set(self.order)) == len(self.order) and set(self.order) == self.members


class NaiveLRU(NaiveFIFO):
    """LRU: FIFO, except that a hit moves the block to the tail (least recently used first)."""

    def access(self, h: int) -> None:
        if h in self.members:
            self.order.remove(h)
            self.order.append(h)
            return
        super().access(h)


NaivePolicy = NaiveS3FIFO | NaiveLRU | NaiveFIFO


def make_naive(policy: str, capacity: int, small_ratio: float = 0.1, max_freq: int = 3) -> NaivePolicy:
    if policy == "s3fifo":
        return NaiveS3FIFO(capacity, small_ratio, max_freq)
    if policy == "lru":
        return NaiveLRU(capacity)
    if policy == "fifo":
        return NaiveFIFO(capacity)
    raise ValueError(f"unknown policy {policy!r}")


def naive_request(cache: NaivePolicy, hash_ids: list[int], input_length: int, block_size: int) -> int:
    """One request: longest resident prefix from index 0, then access every block in order."""
    k = 0
    while k < len(hash_ids) and cache.is_resident(hash_ids[k]):
        k += 1  # stops at the first miss
    for h in hash_ids:
        cache.access(h)
    return min(k * block_size, input_length)


@dataclass
class NaiveResult:
    hit_tokens: list[int] = field(default_factory=list)  # one per request
    prompt_tokens: list[int] = field(default_factory=list)  # one per request
    final_cache_blocks: int = 0
    cache: NaivePolicy | None = None


def naive_replay(
    requests: Iterable[tuple[list[int], int]],
    policy: str,
    capacity: int,
    block_size: int = 512,
    small_ratio: float = 0.1,
    max_freq: int = 3,
) -> NaiveResult:
    """Replay ``(hash_ids, input_length)`` pairs in order against one empty cache."""
    cache = make_naive(policy, capacity, small_ratio, max_freq)
    result = NaiveResult(cache=cache)
    for hash_ids, input_length in requests:
        result.hit_tokens.append(naive_request(cache, hash_ids, input_length, block_size))
        result.prompt_tokens.append(input_length)
    result.final_cache_blocks = cache.resident_count()
    return result
