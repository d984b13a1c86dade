"""SGLang's radix cache (spec/dialects.md, LRU-DIALECT-5, FIFO-DIALECT-1 and FIFO-DIALECT-2): a radix tree of runs
of blocks, stamped by a logical clock, that evicts whole leaves.

Each node holds a run of one or more blocks; a block is its prefix path (REPLAY-DIALECT-3), and a
node's children are keyed by the first block of their runs. A request looks its prefix up (which
stamps the nodes it enters and splits the one it ends inside), allocates a slot for each block
past its hit (evicting least-stamped unlocked leaves, whole, first), inserts its whole blocks
(stamping, splitting, and adding the rest as one new leaf) and stamps its path once more.
"""

import heapq
from dataclasses import dataclass, field

from ..validation import check_count
from .baselines import Paths, dialect_blocks
from .catalogue import Dialect
from .engine import EngineCache, cached_blocks, skipped


@dataclass(slots=True, eq=False)
class Node:
    """A run of blocks, the clock's stamps of its last access and its creation, and its children."""

    run: list[int]
    parent: "Node | None"
    last_access: int
    created: int
    children: dict[int, "Node"] = field(default_factory=dict)
    locked: int = 0  # SGLang's lock_ref: the requests whose matched path runs through it (LIFE-SGLANG-3)


def descendants(node: Node) -> list[Node]:
    """Every node under ``node``."""
    found, todo = [], list(node.children.values())
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(child.children.values())
    return found


def radix_state_holds(cache: "RadixCache") -> bool:
    """LRU-CAP-1 and FIFO-CAP-1 over the tree's blocks; each resident block in exactly one node;
    each child keyed by its run's first block; nothing locked between requests (LRU-DIALECT-5)."""
    nodes = descendants(cache.root)
    held = [b for node in nodes for b in node.run]
    return (len(held) == len(set(held)) == len(cache.resident) and set(held) == cache.resident.keys()
            and len(held) <= max(cache.capacity, 0) and all(node.run and key == node.run[0] for parent in [cache.root, *nodes]
                                                            for key, node in parent.children.items())
            and cache.leaves == {node for node in nodes if not node.children} and not any(node.locked for node in nodes))


@dataclass(slots=True, eq=False)
class RadixCache(EngineCache):
    """One radix cache (LRU-DIALECT-5, FIFO-DIALECT-1), in a dialect with the engine replay's points."""

    dialect: Dialect
    capacity: int
    block_size: int
    policy: str
    paths: Paths = field(default_factory=Paths)
    root: Node = field(default_factory=lambda: Node([], None, 0, 0))
    resident: dict[int, Node] = field(default_factory=dict)  # each resident block's node
    leaves: set[Node] = field(default_factory=set)  # the nodes without children, the root aside
    clock: int = 0
    stored: int = 0  # the blocks its requests stored (EngineCache.serve)

    @classmethod
    def empty(cls, dialect: Dialect, capacity: int, block_size: int, policy: str) -> "RadixCache":
        return cls(dialect, check_count(capacity, 1, "REPLAY-CONF-1", "capacity"), block_size, policy)

    blocks = dialect_blocks
    state_invariants_hold = radix_state_holds

    def is_resident(self, h: int) -> bool:
        """A block is resident while a node of the tree holds it."""
        return h in self.resident

    def resident_count(self) -> int:
        return len(self.resident)

    def tick(self) -> int:
        """LRU-DIALECT-5: the clock, one tick a reading, so that no two readings tie."""
        self.clock += 1
        return self.clock

    def new_node(self, run: list[int], parent: Node) -> Node:
        """A node, stamped last access then creation, each a reading of its own (LRU-DIALECT-5)."""
        last_access = self.tick()
        node = Node(run, parent, last_access, self.tick())
        parent.children[run[0]] = node
        self.leaves.discard(parent)
        self.leaves.add(node)
        for b in run:
            self.resident[b] = node
        return node

    def split(self, node: Node, at: int) -> Node:
        """LRU-DIALECT-5: the first ``at`` blocks of ``node`` become a new node above it, with fresh
        stamps; ``node`` keeps the rest, and its own stamps."""
        assert node.parent is not None
        del node.parent.children[node.run[0]]
        upper = self.new_node(node.run[:at], node.parent)
        upper.locked = node.locked  # radix_cache.py:684: a lock taken below runs through the upper part too
        if "split-keeps-creation" in self.dialect:
            upper.created = node.created  # FIFO-DIALECT-2: the upper part is as old as the node it was
        node.run, node.parent = node.run[at:], upper
        upper.children[node.run[0]] = node
        self.leaves.discard(upper)
        return upper

    def walk(self, blocks: list[int]) -> list[Node]:
        """LRU-DIALECT-5: follow ``blocks`` (all resident, in order) from the root, stamping every node
        entered with one reading of the clock before the split of the node they end inside; the
        nodes of the path, the last one ending at the last block."""
        now, path, node, i = self.tick(), [], self.root, 0
        while i < len(blocks):
            node = node.children[blocks[i]]
            node.last_access = now
            matched = 0
            while matched < len(node.run) and i + matched < len(blocks) and node.run[matched] == blocks[i + matched]:
                matched += 1
            if matched < len(node.run):
                node = self.split(node, matched)
            path.append(node)
            i += matched
        return path

    def insert(self, blocks: list[int]) -> None:
        """LRU-DIALECT-5: walk the request's whole blocks as far as they are resident, then add the
        rest as one new leaf under the last node reached."""
        k = 0
        while k < len(blocks) and blocks[k] in self.resident:
            k += 1
        path = self.walk(blocks[:k])
        if k < len(blocks):
            self.new_node(blocks[k:], path[-1] if path else self.root)

    def evict(self, wanted: int) -> None:
        """LRU-DIALECT-5, FIFO-DIALECT-1: remove unlocked leaves whole, the least stamped first (LRU:
        by last access, FIFO: by creation), until ``wanted`` blocks are freed or none is left; a
        parent left without children and unlocked is a leaf from then on."""
        key = (lambda n: n.last_access) if self.policy == "lru" else (lambda n: n.created)
        leaves = [(key(n), n.created, id(n), n) for n in self.leaves if not n.locked]
        heapq.heapify(leaves)
        freed = 0
        while freed < wanted and leaves:
            leaf = heapq.heappop(leaves)[3]
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.run[0]]
            self.leaves.discard(leaf)
            for b in leaf.run:
                del self.resident[b]
            freed += len(leaf.run)
            if parent is not self.root and not parent.children:
                self.leaves.add(parent)
                if not parent.locked:
                    heapq.heappush(leaves, (key(parent), parent.created, id(parent), parent))

    def run(self, blocks: list[int], input_length: int, k: int) -> int:
        """LRU-DIALECT-5, FIFO-DIALECT-1: look up the k hit blocks (stamping), lock their path,
        free the slots the rest need (one more when block_size > 1), insert the whole blocks,
        stamp the path once more and unlock. The blocks stored."""
        if skipped(len(blocks), self.capacity, self.dialect):
            return 0  # REPLAY-DIALECT-5
        path = self.walk(blocks[:k]) if k else []  # nothing is stamped for a hit of 0 blocks
        for node in path:
            node.locked += 1
        needed = len(blocks) - k + (self.block_size > 1)  # a page more than the request needs, when pages hold more than a token
        free = self.capacity - len(self.resident)
        if needed > free:
            self.evict(needed - free)
        whole = blocks[:cached_blocks(len(blocks), input_length, self.block_size, self.dialect)]
        before = len(self.resident)
        if whole:
            self.insert(whole)
            self.walk(whole)
        for node in path:
            node.locked -= 1  # the request ends
        return len(self.resident) - before

