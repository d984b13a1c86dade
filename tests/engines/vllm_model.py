"""An independent model of vLLM 0.33.0's v1 prefix cache under the engine replay (one kvspec request
= one vLLM request run to completion with its prompt only), written from vLLM's source, not from
kvspec's reference: its block objects with reference counts, its free queue with holes, its map from
block hash to blocks; and, for the lifecycle (spec/dialects.md LIFE-VLLM-10 to LIFE-VLLM-16), several
requests in flight, each with its block table, its cached count and its tokens, as adapter.py drives
the real manager. It is an in-process adapter (python:tests/engines/vllm_model.py:adapter) that
imports nothing of vLLM; docs/certifications/vllm/check_model.py replays it beside the real engine.
Paths are vllm/v1/core/ of the installed wheel unless said; /work/notes/engines/vllm.md has the rules.

A block's hash is vLLM's chained hash of (parent hash, its tokens) (kv_cache_utils.py:707-737); a
kvspec block at position i with hash id h holds [h] * block_size tokens, so the hash is the pair
(parent path, h), interned here as an integer: equal exactly when the prefixes of hash ids are.
"""

from collections import OrderedDict
from typing import NoReturn

from kvspec.adapters.interface import Accounting, AdapterConfig, AdapterFailure, ConfigRefused, Finished, Identity, Level, Snapshot


class Block:
    """KVCacheBlock (kv_cache_utils.py:161-210): an id, a reference count, the hash it holds if any."""

    __slots__ = ("block_hash", "block_id", "ref_cnt")

    def __init__(self, block_id: int) -> None:
        self.block_id, self.ref_cnt, self.block_hash = block_id, 0, None


class FreeQueue:
    """FreeKVCacheBlockQueue (kv_cache_utils.py:258-505): free blocks, head first. It starts as blocks
    1..capacity in id order (the pool pops block 0 as its null block, block_pool.py:176-191). Only
    blocks holding a hash are ever taken out of its middle (touch, block_pool.py:806-807), only
    hashless ones put at its front (block_pool.py:837-845) and only hashed ones at its end (:847), so
    the blocks never used yet stay one run in id order between the two: that run is kept as a
    counter, so that a pool of any size costs nothing until used."""

    def __init__(self, capacity: int) -> None:
        self.front: list[Block] = []  # prepended, hashless; head first
        self.next_unused, self.last_id = 1, capacity  # the run of blocks never used
        self.back: OrderedDict[int, Block] = OrderedDict()  # appended; head first; touch leaves holes

    def __len__(self) -> int:
        return len(self.front) + (self.last_id - self.next_unused + 1) + len(self.back)

    def popleft(self) -> Block:
        if self.front:
            return self.front.pop(0)
        if self.next_unused <= self.last_id:
            self.next_unused += 1
            return Block(self.next_unused - 1)
        return self.back.popitem(last=False)[1]

    def remove(self, block: Block) -> None:
        del self.back[block.block_id]  # a block in the queue with a hash was appended

    def prepend_n(self, blocks: list[Block]) -> None:
        self.front[:0] = blocks

    def append_n(self, blocks: list[Block]) -> None:
        for block in blocks:
            self.back[block.block_id] = block


class HashToBlocks:
    """BlockHashToBlockMap (block_pool.py:36-134): a hash maps to every block holding it, in the
    order they were inserted (no de-duplication, :49-53); a lookup takes the first (:63-72)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[int, Block]] = {}

    def get_one_block(self, block_hash: int) -> Block | None:
        holders = self.blocks.get(block_hash)
        return next(iter(holders.values())) if holders else None

    def insert(self, block_hash: int, block: Block) -> None:
        self.blocks.setdefault(block_hash, {})[block.block_id] = block

    def pop(self, block_hash: int, block_id: int) -> None:
        holders = self.blocks[block_hash]
        del holders[block_id]
        if not holders:
            del self.blocks[block_hash]

    def count(self) -> int:
        return sum(len(holders) for holders in self.blocks.values())


class InFlight:
    """A vLLM Request in flight (request.py) and what the manager keeps of it (single_type_kv_cache_manager.py:
    req_to_blocks, num_cached_block), with the lifecycle's accounting."""

    def __init__(self, number: int, hash_ids: list[int], input_length: int) -> None:
        self.number, self.hash_ids, self.input_length = number, hash_ids, input_length
        self.num_tokens, self.num_computed_tokens = input_length, 0
        self.block_hashes: list[int] = []
        self.blocks: list[Block] = []
        self.num_cached, self.running, self.computed = 0, False, 0
        self.accounting = Accounting()


class VllmModel:
    """One vLLM pool of capacity + 1 blocks with one full-attention group, driven as
    docs/certifications/vllm/adapter.py drives the real one, its lifecycle too."""

    identity = Identity(name="model of vLLM 0.33.0's v1 prefix cache", language="python", version="0.33.0")
    level: Level = "results"
    policies = ("lru",)
    lifecycle = True

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.in_flight: dict[int, InFlight] = {}
        self.requests = 0

    def configure(self, config: AdapterConfig) -> None:
        self.config = None
        if config.policy not in self.policies:
            raise ConfigRefused("vLLM's prefix cache has one eviction order")
        if config.capacity < 1 or config.block_size < 1:
            raise ConfigRefused("REPLAY-CONF-1, REPLAY-CONF-2: vLLM refuses a pool without blocks and a block size below 1")
        self.free_queue = FreeQueue(config.capacity)
        self.cached = HashToBlocks()
        self.paths: dict[tuple[int, object], int] = {}  # (parent hash, hash id or a generated block) -> hash
        self.in_flight = {}
        self.config = config

    def block_hashes(self, hash_ids: list[int], input_length: int) -> list[int]:
        """Request.block_hashes: full blocks only (kv_cache_utils.py:985-990)."""
        hashes, parent = [], -1
        for h in hash_ids[: input_length // self.settings().block_size]:
            parent = self.paths.setdefault((parent, h), len(self.paths))
            hashes.append(parent)
        return hashes

    def longest_hit(self, hashes: list[int], input_length: int) -> list[Block]:
        """find_longest_cache_hit with max_length = L - 1 (kv_cache_manager.py:301-306,
        single_type_kv_cache_manager.py:794-800)."""
        hit = []
        for block_hash in hashes[: (input_length - 1) // self.settings().block_size]:
            block = self.cached.get_one_block(block_hash)
            if block is None:
                break
            hit.append(block)
        return hit

    def fits(self, hit: list[Block], input_length: int) -> bool:
        """get_num_blocks_to_allocate (single_type_kv_cache_manager.py:214-266) against the free
        blocks (kv_cache_manager.py:584-588): a hit block in the free queue counts as needed."""
        new = -(-input_length // self.settings().block_size) - len(hit)
        return new + sum(block.ref_cnt == 0 for block in hit) <= len(self.free_queue)

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        hit = self.longest_hit(self.block_hashes(hash_ids, input_length), input_length)
        return len(hit) * self.settings().block_size if self.fits(hit, input_length) else 0

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        block_size = self.settings().block_size
        length = len(hash_ids) * block_size if input_length is None else input_length
        hashes = self.block_hashes(hash_ids, length)
        hit = self.longest_hit(hashes, length)
        if not self.fits(hit, length):
            return  # allocate_slots returns None, having changed nothing
        self.touch(hit)
        blocks = hit + self.get_new_blocks(-(-length // block_size) - len(hit))
        for i in range(len(hit), len(hashes)):  # cache_full_blocks (block_pool.py:265-303)
            self.insert_block_hash(hashes[i], blocks[i])
        self.free_blocks(blocks[::-1])  # free in reverse (single_type_kv_cache_manager.py:599)

    def touch(self, blocks: list[Block]) -> None:
        """block_pool.py:801-808."""
        for block in blocks:
            if block.ref_cnt == 0:
                self.free_queue.remove(block)
            block.ref_cnt += 1

    def get_new_blocks(self, n: int) -> list[Block]:
        """block_pool.py:718-731: the free queue's head, each evicted from the map as it is taken."""
        taken = []
        for _ in range(n):
            block = self.free_queue.popleft()
            if block.block_hash is not None:
                self.cached.pop(block.block_hash, block.block_id)
                block.block_hash = None
            block.ref_cnt += 1
            taken.append(block)
        return taken

    def insert_block_hash(self, block_hash: int, block: Block) -> None:
        """block_pool.py:666-686; a new block never holds a hash yet."""
        block.block_hash = block_hash
        self.cached.insert(block_hash, block)

    def free_blocks(self, ordered: list[Block]) -> None:
        """block_pool.py:816-847: hashless blocks to the front, hashed ones to the end, each group
        in the order freed."""
        first, last = [], []
        for block in ordered:
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                (first if block.block_hash is None else last).append(block)
        self.free_queue.prepend_n(first)
        self.free_queue.append_n(last)

    # the lifecycle: several requests in flight, driven as adapter.py drives the real manager ----------

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """A new Request (request.py:61-173): WAITING, nothing computed, the hashes of its full blocks."""
        self.requests += 1
        flight = InFlight(self.requests, hash_ids, input_length)
        self.update_block_hashes(flight)
        self.in_flight[rid] = flight

    def update_block_hashes(self, flight: "InFlight") -> None:
        """Request.update_block_hashes (request.py:285-288): a hash for each new full block, chained on the
        one before (kv_cache_utils.py:953-1036); a block holding a generated token, whose id no prompt and
        no other request holds, hashes apart from every other."""
        block_size = self.settings().block_size
        for i in range(len(flight.block_hashes), flight.num_tokens // block_size):
            parent = flight.block_hashes[-1] if flight.block_hashes else -1
            tokens = flight.hash_ids[i] if (i + 1) * block_size <= flight.input_length else ("generated", flight.number, i)
            flight.block_hashes.append(self.paths.setdefault((parent, tokens), len(self.paths)))

    def lookup(self, rid: int) -> int:
        """get_computed_blocks over its tokens so far (kv_cache_manager.py:296-307: at most num_tokens - 1)."""
        flight = self.in_flight[rid]
        return len(self.longest_hit(flight.block_hashes, flight.num_tokens))

    def allocate(self, rid: int) -> bool:
        """allocate_slots(full_sequence_must_fit=True, delay_cache_blocks=True) (kv_cache_manager.py:531-614):
        the whole sequence must fit, its hits touched, blocks for all its tokens taken, none cached."""
        flight, block_size = self.in_flight[rid], self.settings().block_size
        hit = self.longest_hit(flight.block_hashes, flight.num_tokens)
        if not self.fits(hit, flight.num_tokens):
            return False
        self.touch(hit)
        flight.blocks = hit + self.get_new_blocks(-(-flight.num_tokens // block_size) - len(hit))
        flight.num_cached, flight.num_computed_tokens, flight.running = len(hit), len(hit) * block_size, True
        flight.accounting.admitted(min(len(hit) * block_size, flight.input_length))
        flight.computed = 0
        return True

    def compute(self, rid: int, upto: int) -> None:
        """cache_blocks (single_type_kv_cache_manager.py:477-542) up to upto blocks' tokens, or all its
        tokens at the last block: its full blocks not cached yet."""
        flight = self.in_flight[rid]
        tokens = upto * self.settings().block_size if upto < len(flight.hash_ids) else flight.num_tokens
        self.cache_blocks(flight, tokens)
        flight.num_computed_tokens = max(flight.num_computed_tokens, tokens)
        flight.computed = upto

    def cache_blocks(self, flight: "InFlight", tokens: int) -> None:
        full = min(tokens, flight.num_tokens) // self.settings().block_size
        for i in range(flight.num_cached, full):
            self.insert_block_hash(flight.block_hashes[i], flight.blocks[i])
        flight.num_cached = max(flight.num_cached, full)

    def decode(self, rid: int) -> bool:
        """allocate_slots(request, block_size) for a running request (single_type_kv_cache_manager.py:214-266:
        the blocks it lacks), then block_size generated tokens, computed, and its full blocks cached."""
        flight, block_size = self.in_flight[rid], self.settings().block_size
        lacking = -(-(flight.num_computed_tokens + block_size) // block_size) - len(flight.blocks)
        if lacking > len(self.free_queue):
            return False
        flight.blocks += self.get_new_blocks(lacking)
        flight.num_tokens += block_size
        self.update_block_hashes(flight)
        flight.num_computed_tokens += block_size
        self.cache_blocks(flight, flight.num_computed_tokens)
        return True

    def finish(self, rid: int) -> Finished:
        """free (single_type_kv_cache_manager.py:591-599): its blocks in reverse; its accounting."""
        flight = self.in_flight.pop(rid)
        self.free_blocks(flight.blocks[::-1])
        return flight.accounting.finished()

    def preempt(self, rid: int) -> None:
        """free, then _preempt_request (sched/scheduler.py:1799-1822): nothing computed, its tokens kept."""
        flight = self.in_flight[rid]
        self.free_blocks(flight.blocks[::-1])
        flight.accounting.computed_before = min(flight.num_computed_tokens, flight.input_length)
        flight.blocks, flight.num_cached, flight.num_computed_tokens, flight.running, flight.computed = [], 0, 0, False, 0

    def lifecycle_state(self) -> NoReturn:
        raise AdapterFailure("the results level has no lifecycle state")

    def resident_count(self) -> int:
        """Blocks holding a hash; a hash held twice counts twice."""
        self.settings()
        return self.cached.count()

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.config = None

    def settings(self) -> AdapterConfig:
        if self.config is None:
            raise ConfigRefused("no cache is configured")
        return self.config


def adapter() -> VllmModel:
    return VllmModel()
