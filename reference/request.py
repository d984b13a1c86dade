"""One request's step (spec/replay.md, section 4): its lookup, which changes nothing, then its
service, on any kind of cache.

Every caller takes a request through ``lookup`` then ``serve`` (the replay, the lockstep and
keep-going, the fixtures, the comparison), and these two functions hold the contracts of the step
whatever the cache. A block policy (S3FIFO, LRU, FIFO, and their dialects) implements them as
``prefix_lookup`` and ``access_every_block``; an engine's cache (reference/dialects/engine.py) as
its own hit-block rule and its run of the request whole.
"""

import pickle
from abc import ABC, abstractmethod
from collections.abc import Callable

from .contracts import ensure, require, snapshot


class Policy(ABC):
    """REPLAY-POLICY-1: what a replay needs of a cache, of whatever kind.

    A base class that each cache names, not a Protocol: typeguard checks an argument typed with a
    Protocol member by member at every call, which took a third of a typed certification's time."""

    __slots__ = ()

    @abstractmethod
    def blocks(self, hash_ids: list[int]) -> list[int]: ...
    @abstractmethod
    def is_resident(self, h: int) -> bool: ...
    @abstractmethod
    def lookup(self, blocks: list[int], input_length: int) -> int: ...
    @abstractmethod
    def serve(self, blocks: list[int], input_length: int, k: int) -> None: ...
    @abstractmethod
    def resident_count(self) -> int: ...
    @abstractmethod
    def state_invariants_hold(self) -> bool: ...


class BlockPolicy(Policy):
    """A policy served block by block (REPLAY-ACCESS-1)."""

    __slots__ = ()

    @abstractmethod
    def access(self, h: int) -> None: ...


@ensure(lambda hash_ids, result: 0 <= result <= len(hash_ids), "REPLAY-PREFIX-1")
@ensure(lambda hash_ids, is_resident, result: all(is_resident(h) for h in hash_ids[:result]), "REPLAY-PREFIX-1: every prefix block is resident")
@ensure(
    lambda hash_ids, is_resident, result: result == len(hash_ids) or not is_resident(hash_ids[result]),
    "REPLAY-PREFIX-2: the scan stops at the first miss",
)
def prefix_hit_blocks(hash_ids: list[int], is_resident: Callable[[int], bool]) -> int:
    """REPLAY-PREFIX-1 to REPLAY-PREFIX-3: k, the length of the resident prefix from index 0."""
    # crosshair: off
    # (CrossHair would pass an is_resident that answers differently each time it is asked;
    # REPLAY-POLICY-1 rules that out, and no precondition can say so.)
    k = 0
    for h in hash_ids:
        if not is_resident(h):
            break  # REPLAY-PREFIX-2: no skip-ahead past a miss
        k += 1
    return k


def prefix_lookup(policy: BlockPolicy, blocks: list[int], input_length: int) -> int:
    """A block policy's lookup: its resident prefix, scanned before any access (REPLAY-PREFIX-3)."""
    return prefix_hit_blocks(blocks, policy.is_resident)


def access_every_block(policy: BlockPolicy, blocks: list[int], input_length: int, k: int) -> None:
    """A block policy's service: every block accessed, hit or miss, in order (REPLAY-ACCESS-1)."""
    access = policy.access
    for h in blocks:
        access(h)


def state_of(policy: Policy) -> bytes:
    """The whole state of a cache, in its order, for the contract that a lookup changes none of it
    (pickle walks any dataclass, and a radix tree whose nodes point back at their parents, once)."""
    return pickle.dumps(policy)


@snapshot(lambda policy, blocks: policy.is_resident(blocks[0]), "first_resident")
@snapshot(state_of, "state", per_access_state=True)
@require(lambda blocks: len(blocks) >= 1, "REPLAY-TRACE-2: at least one block")
@ensure(lambda policy, blocks, result: 0 <= result <= prefix_hit_blocks(blocks, policy.is_resident),
        "REPLAY-PREFIX-1: the hit blocks are at most the resident prefix")
@ensure(lambda OLD, result: OLD.first_resident or result == 0, "REPLAY-INV-3: a request whose first block is not resident hits 0")
@ensure(lambda OLD, policy: state_of(policy) == OLD.state, "REPLAY-PREFIX-3, REPLAY-POLICY-1: the lookup changes nothing",
        per_access_state=True)
def lookup(policy: Policy, blocks: list[int], input_length: int) -> int:
    """REPLAY-PREFIX-1 to REPLAY-PREFIX-3: the request's hit blocks, as ``policy`` finds them."""
    return policy.lookup(blocks, input_length)


@require(lambda blocks, k: 0 <= k <= len(blocks), "REPLAY-PREFIX-1: k of the request's blocks")
@ensure(lambda policy: policy.state_invariants_hold(), "S3-QUEUE-2, S3-FREQ-1, S3-INV-1..3, LRU-CAP-1, FIFO-CAP-1, the dialect's own, REPLAY-DIALECT-6")
def serve(policy: Policy, blocks: list[int], input_length: int, k: int) -> None:
    """The request served, after its lookup found k hit blocks."""
    policy.serve(blocks, input_length, k)


def step(policy: Policy, hash_ids: list[int], input_length: int) -> int:
    """A request's whole step: its blocks, as ``policy`` names them, looked up, then served; its hit blocks."""
    blocks = policy.blocks(hash_ids)
    k = lookup(policy, blocks, input_length)
    serve(policy, blocks, input_length, k)
    return k
