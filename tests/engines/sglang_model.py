"""An independent model of SGLang 0.5.23's RadixCache with its token-to-KV pool allocator, as one
request at a time drives it (notes: /work/notes/engines/sglang.md), written from SGLang's source,
not from kvspec's reference, so that CI can certify kvspec's sglang dialects against it without
SGLang. docs/certifications/sglang/check_model.py checks it against the real engine.

A block is a page of block_size tokens; a page is named by its hash id, since the adapter's token
ids repeat a block's hash id and only full pages are ever in the tree. The tree holds runs of pages
(nodes), children keyed by their first page; ``clock`` stands for ``time.monotonic()``, one tick per
call, in the order SGLang makes its calls, so every comparison of two stamps comes out as it does
there. Line numbers are radix_cache.py's unless said.
"""

import heapq
import itertools

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot


class Node:
    def __init__(self, tick, pages: list[int], parent: "Node | None") -> None:
        self.last_access = tick()  # TreeNode.__init__ stamps both, in this order (259-260)
        self.created = tick()
        self.pages = pages
        self.parent = parent
        self.children: dict[int, Node] = {}
        self.locks = 0


class RadixModel:
    """The tree, the free pages, and one request's cycle."""

    def __init__(self, policy: str, capacity: int, block_size: int, split_keeps_creation: bool = False) -> None:
        self.clock = itertools.count(1)
        self.split_keeps_creation = split_keeps_creation
        self.policy, self.capacity, self.block_size = policy, capacity, block_size
        self.root = Node(self.tick, [], None)
        self.root.locks = 1  # never evicted (348)
        self.cached_pages = 0

    def tick(self) -> int:
        return next(self.clock)

    def priority(self, node: Node) -> tuple[int, int]:
        """evict_policy.py:18 and 28; on a tie the heap compares nodes by last access (277-278)."""
        first = node.last_access if self.policy == "lru" else node.created
        return first, node.last_access

    def split(self, node: Node, at: int) -> Node:
        """_split_node (677-700): a new node takes the first ``at`` pages, with fresh stamps."""
        upper = Node(self.tick, node.pages[:at], node.parent)
        upper.locks = node.locks
        if self.split_keeps_creation:  # UnifiedRadixCache's split (unified_cache/unified_tree_core.py:1476)
            upper.created = node.created
        node.parent.children[upper.pages[0]] = upper
        node.pages = node.pages[at:]
        node.parent = upper
        upper.children[node.pages[0]] = node
        return upper

    def walk(self, pages: list[int], stamp: bool, split: bool) -> tuple[int, Node]:
        """_match_prefix_helper (651-675) and _insert_helper's descent (716-745): the pages matched and
        the node they end on; one stamp for the start node and every child entered, before any split."""
        now = self.tick() if stamp else None
        node, matched = self.root, 0
        if stamp:
            node.last_access = now
        while matched < len(pages) and pages[matched] in node.children:
            child = node.children[pages[matched]]
            if stamp:
                child.last_access = now
            common = 0
            while common < len(child.pages) and matched + common < len(pages) and child.pages[common] == pages[matched + common]:
                common += 1
            matched += common
            if common < len(child.pages):
                return matched, (self.split(child, common) if split else node)
            node = child
        return matched, node

    def match(self, pages: list[int], stamp: bool = True) -> tuple[int, Node]:
        if not pages:  # an empty key returns before any stamp (403-409)
            return 0, self.root
        return self.walk(pages, stamp, split=stamp)

    def insert(self, pages: list[int]) -> int:
        """insert (428-448): the pages already there; the rest become one new leaf."""
        matched, node = self.walk(pages, stamp=True, split=True)
        if matched < len(pages):
            leaf = Node(self.tick, pages[matched:], node)
            node.children[leaf.pages[0]] = leaf
            self.cached_pages += len(leaf.pages)
        return matched

    def lock(self, node: Node, delta: int) -> None:
        while node is not self.root:  # inc_lock_ref / dec_lock_ref (582-616)
            node.locks += delta
            node = node.parent

    def evict(self, pages: int) -> None:
        """evict (552-580): whole unlocked leaves, least priority first, until ``pages`` are freed;
        a parent left childless and unlocked joins the heap at once."""
        heap = [(self.priority(n), id(n), n) for n in self.nodes() if not n.children and n.locks == 0]
        heapq.heapify(heap)
        freed = 0
        while freed < pages and heap:
            _, _, leaf = heapq.heappop(heap)
            freed += len(leaf.pages)
            self.cached_pages -= len(leaf.pages)
            parent = leaf.parent
            del parent.children[leaf.pages[0]]
            if not parent.children and parent.locks == 0:
                heapq.heappush(heap, (self.priority(parent), id(parent), parent))

    def nodes(self) -> list[Node]:
        found, stack = [], list(self.root.children.values())
        while stack:
            node = stack.pop()
            found.append(node)
            stack.extend(node.children.values())
        return found

    def request(self, hash_ids: list[int], input_length: int) -> int:
        """One prompt, run to completion; returns the hit tokens of its own lookup."""
        size = self.block_size
        needed = -(-input_length // size)
        if needed > self.capacity:  # refused before it is looked up: nothing changes
            return 0
        hit_pages, last = self.match(hash_ids[: (input_length - 1) // size])  # limit L - 1, page-aligned
        self.lock(last, +1)
        new_pages = needed - hit_pages
        free = self.capacity - self.cached_pages  # between requests only the tree holds pages
        # allocation.py:157 asks for the new tokens; allocation.py:192 one page more per request when paged
        demand = new_pages * size if size == 1 else (input_length - hit_pages * size) + size
        shortfall = demand - free * size  # allocator/base.py:166, in tokens
        if shortfall > 0:
            self.evict(-(-shortfall // size))
        if new_pages > self.capacity - self.cached_pages:
            raise AdapterFailure("the model could not allocate a request that fits the pool")
        full = hash_ids[: input_length // size]  # checkpoint inserts the full pages only (468)
        self.insert(full)  # duplicates past the hit and the partial page go back to the pool
        self.match(full)  # checkpoint matches again (524) and moves the lock there
        self.lock(last, -1)
        return hit_pages * size


class SGLangModel:
    """The adapter interface over RadixModel, in-process."""

    identity = Identity(name="model of SGLang 0.5.23 RadixCache (tests/engines/sglang_model.py)", language="python", version="0.5.23")
    level: Level = "results"
    policies = ("lru", "fifo")

    def __init__(self, split_keeps_creation: bool = False) -> None:
        self.model: RadixModel | None = None
        self.split_keeps_creation = split_keeps_creation

    def configure(self, config: AdapterConfig) -> None:
        self.model = None
        if config.policy not in self.policies:
            raise ConfigRefused("SGLang's RadixCache is modelled with its LRU and FIFO eviction policies")
        if config.capacity < 1 or config.block_size < 1:
            raise ConfigRefused("a pool needs at least one page of at least one token")
        self.model = RadixModel(config.policy, config.capacity, config.block_size, self.split_keeps_creation)

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        model = self.configured()
        if -(-input_length // model.block_size) > model.capacity:  # refused: never looked up
            return 0
        return model.match(hash_ids[: max(input_length - 1, 0) // model.block_size], stamp=False)[0] * model.block_size

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        model = self.configured()
        model.request(hash_ids, len(hash_ids) * model.block_size if input_length is None else input_length)

    def resident_count(self) -> int:
        return self.configured().cached_pages

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.model = None

    def configured(self) -> RadixModel:
        if self.model is None:
            raise ConfigRefused("no cache is configured")
        return self.model


def adapter() -> SGLangModel:
    return SGLangModel()


def unified_adapter() -> SGLangModel:
    """UnifiedRadixCache, the 0.5.23 server's default: the same rules but for the creation time a split keeps."""
    return SGLangModel(split_keeps_creation=True)
