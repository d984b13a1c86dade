"""An independent model of the engine replay (spec/dialects.md, section 7: REPLAY-DIALECT-4 to
REPLAY-DIALECT-8) over LRU and FIFO in any of their dialects, written from the spec's text and not
from reference/dialects/, for tests/test_engine_replay.py to replay the reference against: in
lockstep, through the certification machine, and over the adapter protocol.

A block is its hash id, or under path-ids the tuple of the request's ids up to it; a resident block
maps to the clock of its last access (LRU) or of its admission (FIFO), so the queue, head first, is
the resident blocks sorted by clock. A request's pins and its found blocks are sets that live as
long as the request runs. A partial block's slot is its parent's path ended by a fresh Slot object,
so that it is a child of that parent and no request ever names it.
"""

from kvspec.adapters.interface import AdapterConfig, ConfigRefused, Identity, Snapshot

INT64_MAX = 2**63 - 1


class Slot:
    """REPLAY-DIALECT-8: the last step of a slot's path; each one equal only to itself."""


class EngineModel:
    def __init__(self, policy: str, capacity: int, block_size: int, dialect: frozenset[str]) -> None:
        self.policy, self.capacity, self.block_size, self.dialect = policy, capacity, block_size, dialect
        self.clock = 0
        self.stamp: dict[object, int] = {}
        self.starved = 0  # admissions that found every resident block pinned (REPLAY-DIALECT-6)
        self.slot_evictions = 0  # partial blocks' slots that evicted a block (REPLAY-DIALECT-8)

    def blocks(self, hash_ids: list[int]) -> list[object]:
        if "path-ids" in self.dialect:
            return [tuple(hash_ids[:i + 1]) for i in range(len(hash_ids))]
        return list(hash_ids)

    def skipped(self, n: int) -> bool:
        """REPLAY-DIALECT-5: more blocks than the capacity."""
        return "too-long-skipped" in self.dialect and n > self.capacity

    def cached(self, n: int, input_length: int) -> int:
        """REPLAY-DIALECT-7: a partial last block is left out."""
        return n - 1 if "full-blocks-only" in self.dialect and input_length < n * self.block_size else n

    def hit_blocks(self, hash_ids: list[int], input_length: int) -> int:
        n = len(hash_ids)
        if self.skipped(n):
            return 0
        looked_up = self.blocks(hash_ids)[:self.cached(n, input_length)]
        k = next((i for i, b in enumerate(looked_up) if b not in self.stamp), len(looked_up))
        if "hit-cap-last-token" in self.dialect:
            k = min(k, (input_length - 1) // self.block_size)
        return k

    def run(self, hash_ids: list[int], input_length: int) -> None:
        n = len(hash_ids)
        if self.skipped(n) or self.capacity < 1:
            return
        blocks, cached = self.blocks(hash_ids), self.cached(n, input_length)
        pinned: set[object] = set()
        found: set[object] = set()
        for block in blocks[:cached]:
            self.access(block, pinned, found)
        if cached < n and "partial-block-slot" in self.dialect:
            resident = len(self.stamp)
            slot = (*blocks[-1][:-1], Slot())  # type: ignore[misc]
            self.access(slot, pinned, found)
            self.stamp.pop(slot, None)
            self.slot_evictions += len(self.stamp) < resident

    def access(self, block: object, pinned: set[object], found: set[object]) -> None:
        self.clock += 1
        if block in self.stamp:
            found.add(block)
            if self.policy == "lru":
                self.stamp[block] = self.clock
        elif self.admitted(block, pinned, found):
            self.stamp[block] = self.clock
        if "pin-request" in self.dialect and block in self.stamp:
            pinned.add(block)

    def admitted(self, block: object, pinned: set[object], found: set[object]) -> bool:
        """Make room for a missed block (one eviction) and say whether it then joins the tail."""
        if len(self.stamp) >= self.capacity:
            victim = self.victim(pinned, found)
            if victim is None:
                self.starved += 1
                return False
            del self.stamp[victim]
        parent_gone = "lru-admit-under-parent" in self.dialect and len(block) > 1 and block[:-1] not in self.stamp  # type: ignore[arg-type]
        return not parent_gone

    def victim(self, pinned: set[object], found: set[object]) -> object | None:
        def candidate(b: object) -> bool:
            if b in pinned or ("lru-protect-request" in self.dialect and b in found):
                return False
            return not ("lru-evict-leaves" in self.dialect and any(c[:-1] == b for c in self.stamp))  # type: ignore[index]

        return min(filter(candidate, self.stamp), key=self.stamp.__getitem__, default=None)

    def queue(self) -> list[object]:
        return sorted(self.stamp, key=self.stamp.__getitem__)


def capacity_floor(dialect: frozenset[str]) -> int:
    """REPLAY-CONF-1, REPLAY-DIALECT-1, REPLAY-DIALECT-2: the least capacity accepted."""
    return -(2**63) if "capacity-nonpositive-empty" in dialect else 0 if "capacity-0-empty" in dialect else 1


class EngineModelAdapter:
    """The model as an implementation under test (kvspec's Adapter interface): at the state level
    where its queue holds hash ids, at the results level under path-ids."""

    policies = ("lru", "fifo")

    def __init__(self, dialect: frozenset[str]) -> None:
        self.dialect = dialect
        self.identity = Identity(name=f"engine model of {', '.join(sorted(dialect))}", language="python", version="0")
        self.level = "results" if "path-ids" in dialect else "state"
        self.model: EngineModel | None = None
        self.accessed_with: list[int | None] = []  # each access's input_length, as received

    def configure(self, config: AdapterConfig) -> None:
        self.model = None
        if config.policy not in self.policies or not capacity_floor(self.dialect) <= config.capacity <= INT64_MAX \
                or not 1 <= config.block_size <= INT64_MAX:
            raise ConfigRefused(f"refused: {config}")
        self.model = EngineModel(config.policy, config.capacity, config.block_size, self.dialect)

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        assert self.model is not None
        return min(self.model.hit_blocks(hash_ids, input_length) * self.model.block_size, input_length)

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        assert self.model is not None
        self.accessed_with.append(input_length)
        self.model.run(hash_ids, len(hash_ids) * self.model.block_size if input_length is None else input_length)

    def resident_count(self) -> int:
        assert self.model is not None
        return len(self.model.stamp)

    def snapshot(self) -> Snapshot:
        assert self.model is not None
        return Snapshot(main=tuple((b, 0) for b in self.model.queue()))  # type: ignore[misc]

    def close(self) -> None:
        self.model = None


class DeafToInputLength(EngineModelAdapter):
    """An adapter written before PROTO-10 carried input_length: its access takes none."""

    def access(self, hash_ids: list[int]) -> None:  # type: ignore[override]
        super().access(hash_ids)


# The factories `python:engine_model.py:NAME` names (PROTO-18).

VLLM_LIKE = frozenset({"path-ids", "hit-cap-last-token", "too-long-skipped", "pin-request", "full-blocks-only", "partial-block-slot"})
FULL_BLOCKS_BY_HASH = frozenset({"full-blocks-only", "hit-cap-last-token", "pin-request"})
PINNED_BY_PATH = frozenset({"path-ids", "hit-cap-last-token", "too-long-skipped", "pin-request"})


def vllm_like() -> EngineModelAdapter:
    return EngineModelAdapter(VLLM_LIKE)


def pinned_by_path() -> EngineModelAdapter:
    return EngineModelAdapter(PINNED_BY_PATH)
