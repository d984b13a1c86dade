"""Hypothesis strategies for traces that look like Mooncake ones, and for replay configs.

A Mooncake hash id is a chained prefix hash: the same id always sits at the same position
behind the same predecessor, and two requests that share their first K blocks share their
first K ids. ``conversation_traces`` builds a tree of conversations with that property: each
request starts a fresh conversation, extends an earlier request by a turn, branches off an
earlier request part-way (a shared system prompt, an edited turn), repeats an earlier request
exactly, or is a one-off scan that nobody reuses. ``input_length`` falls anywhere in
((n - 1) * block_size, n * block_size] for n blocks, so last blocks are often partial.

``arbitrary_traces`` drops the chaining: ids come from a small pool, may repeat inside one
request and may appear at any position. No real trace looks like that, but the spec does not
forbid it, and it is where "longest prefix" and "set intersection" part ways.

Ids are numbered across the whole domain (``ID_NUMBERINGS``: REPLAY-TRACE-2's signed 64 bits;
``KEY_NUMBERINGS``: BEN-KEY-1's unsigned ones), so that an implementation that keeps them in a
narrower integer or in a double sees two distinct ids as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, no_type_check

from hypothesis import strategies as st

from kvspec.conformance.core.workloads import ID_NUMBERINGS, Conversations, Request
from kvspec.reference.s3fifo import caps_are_valid, derive_caps

T = TypeVar("T")

BLOCK_SIZES = (1, 2, 3, 4, 16, 512)


def now_and_then(usual: st.SearchStrategy[T], wide: list[T], one_in: int = 4) -> st.SearchStrategy[T]:
    """One of ``wide`` once in ``one_in`` draws, ``usual`` otherwise; shrinking leads to ``usual``."""
    wide_values = st.sampled_from(wide)  # built once: Hypothesis validates each new strategy it draws from
    return st.integers(1, one_in).flatmap(lambda i: wide_values if i == one_in else usual)


@dataclass(frozen=True)
class Trace:
    block_size: int
    requests: list[Request]

    def records(self) -> list[tuple[int, object]]:
        """(line_number, TraceRecord) pairs, as kvspec.reference.replay.replay reads them."""
        from kvspec.reference import TraceRecord

        return [
            (line, TraceRecord(timestamp=0, input_length=length, output_length=0, hash_ids=list(hashes)))
            for line, (hashes, length) in enumerate(self.requests, start=1)
        ]


@no_type_check
def input_length_for(draw: st.DrawFn, n_blocks: int, block_size: int) -> int:
    """Anywhere in ((n - 1) * block_size, n * block_size]."""
    return draw(st.integers((n_blocks - 1) * block_size + 1, n_blocks * block_size))


@st.composite
@no_type_check  # typeguard cannot check Hypothesis's DrawFn protocol
def conversation_traces(
    draw: st.DrawFn,
    *,
    block_sizes: st.SearchStrategy[int] = st.sampled_from(BLOCK_SIZES),
    max_requests: int = 20,
    max_turn_blocks: int = 4,
    max_blocks: int = 12,
    max_scan_blocks: int = 10,
) -> Trace:
    """A tree of conversations with chained prefix hashes (see the module docstring)."""
    block_size = draw(block_sizes)
    conversations = Conversations(numbering=draw(st.sampled_from(ID_NUMBERINGS)))  # where ids lie does not matter to the spec
    requests: list[Request] = []
    n_requests = draw(st.integers(1, max_requests))
    for _ in range(n_requests):
        kinds = ["fresh", "scan"] if not requests else ["extend", "repeat", "branch", "fresh", "scan"]
        kind = draw(st.sampled_from(kinds))
        if kind in ("extend", "repeat", "branch"):
            # Most recent first, so that shrinking moves towards the previous request.
            parent = requests[-1 - draw(st.integers(0, len(requests) - 1))][0]
        if kind == "fresh":
            hashes = conversations.fresh(draw(st.integers(1, max_turn_blocks)))
        elif kind == "scan":
            hashes = conversations.fresh(draw(st.integers(1, max_scan_blocks)))
        elif kind == "repeat":
            hashes = list(parent)
        elif kind == "extend":
            room = max(0, max_blocks - len(parent))
            hashes = conversations.extend(parent, draw(st.integers(min(1, room), min(max_turn_blocks, room))))
        else:  # branch: keep a proper prefix of the parent (maybe empty), then diverge
            hashes = conversations.branch(parent, draw(st.integers(0, len(parent) - 1)), draw(st.integers(1, max_turn_blocks)))
        requests.append((hashes, input_length_for(draw, len(hashes), block_size)))
    return Trace(block_size, requests)


@st.composite
@no_type_check  # typeguard cannot check Hypothesis's DrawFn protocol
def arbitrary_traces(
    draw: st.DrawFn,
    *,
    block_sizes: st.SearchStrategy[int] = st.sampled_from(BLOCK_SIZES),
    max_requests: int = 20,
    max_blocks: int = 8,
    pool: int = 12,
) -> Trace:
    """Unchained ids from a small pool: reuse at any position, repeats inside a request."""
    block_size = draw(block_sizes)
    numbering = draw(st.sampled_from(ID_NUMBERINGS))
    hash_lists = draw(st.lists(st.lists(st.integers(0, pool - 1).map(numbering), min_size=1, max_size=max_blocks), min_size=1,
                               max_size=max_requests))
    return Trace(block_size, [(hashes, input_length_for(draw, len(hashes), block_size)) for hashes in hash_lists])


def traces() -> st.SearchStrategy[Trace]:
    """Mostly realistic traces (two draws in three), some arbitrary ones."""
    return st.one_of(conversation_traces(), conversation_traces(), arbitrary_traces())


@dataclass(frozen=True)
class CacheConfig:
    capacity: int
    small_ratio: float
    max_freq: int


@st.composite
@no_type_check  # typeguard cannot check Hypothesis's DrawFn protocol
def cache_configs(draw: st.DrawFn, *, max_capacity: int = 40) -> CacheConfig:
    """Valid S3FIFO configs, from the smallest (both queues one block: capacity 6 at ratio 0.1,
    2 at ratio 0.5) up to max_capacity; LRU and FIFO use the capacity alone.

    The ratio is drawn first (a usual one or any double), then a capacity valid for it: one of the
    three smallest valid ones, or any. A ratio that no capacity up to max_capacity makes valid
    (0.0, 1.0, 0.001, ...) is replaced by 0.5, which is valid at every capacity >= 2; drawing
    without a filter keeps Hypothesis from giving up on examples."""
    small_ratio = draw(st.sampled_from([0.1, 0.25, 0.5]) | st.floats(0.0, 1.0))
    valid = [c for c in range(2, max_capacity + 1) if caps_are_valid(derive_caps(c, small_ratio, 0))]  # S3-CONF-5
    if not valid:
        small_ratio = 0.5
        valid = list(range(2, max_capacity + 1))
    capacity = draw(st.sampled_from(valid[:3]) | st.sampled_from(valid))
    return CacheConfig(capacity, small_ratio, draw(st.integers(0, 4)))
