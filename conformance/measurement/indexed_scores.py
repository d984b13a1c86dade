"""The scored part of the victim order (spec/benefit.md BEN-VICTIM-2) for the indexed benefit
policy (indexed_benefit.py): a heap of (score, key), refreshed lazily.

An entry's score (BEN-SCORE-1 to BEN-SCORE-5) changes when the entry is admitted, hit or missed,
when pressure decays every weight (BEN-DECAY-2), and when a segment it references gains or loses
a reference (its fractional bytes, BEN-LEDGER-3). The policy marks those entries and segments
stale as it changes them; ``refresh`` rescores the entries marked and those referencing a
segment marked (or every entry) with the reference's score(), before anyone reads the order.
Each scored entry has one live item, the one ``live`` holds: an item whose entry was rescored or
removed since is stale, and is dropped when it reaches the top.
"""

from collections.abc import Iterator
from heapq import heapify, heappop, heappush

from kvspec.reference.benefit.ledger import Ledger
from kvspec.reference.benefit.score import Entry, score

Item = tuple[float, int]  # (score, key): ascending score, then key (BEN-VICTIM-2)


class ScoreOrder:
    __slots__ = ("live", "heap", "stale_keys", "stale_segments", "all_stale")

    def __init__(self) -> None:
        self.live: dict[int, Item] = {}
        self.heap: list[Item] = []
        self.stale_keys: set[int] = set()
        self.stale_segments: set[int] = set()  # the entries that reference them are stale
        self.all_stale = False

    def refresh(self, entries: dict[int, Entry], ledger: Ledger, floor: float) -> None:
        """Rescore what is stale; compact the heap when stale items outnumber the live ones."""
        stale = set(entries) if self.all_stale else self.stale_keys
        if self.all_stale:
            self.live, self.heap = {}, []
        for segment_id in self.stale_segments:
            segment = ledger.get(segment_id)
            if segment is not None:
                stale.update(segment.refs)
        for key in stale:
            entry = entries.get(key)
            if entry is None:
                continue
            value = score(ledger, key, entry, floor)
            if value is None:
                self.live.pop(key, None)
            else:
                self.live[key] = item = (value, key)
                heappush(self.heap, item)
        self.stale_keys, self.stale_segments, self.all_stale = set(), set(), False
        if len(self.heap) > 2 * len(self.live) + 64:
            self.heap = list(self.live.values())
            heapify(self.heap)

    def score_of(self, key: int) -> float | None:
        item = self.live.get(key)
        return None if item is None else item[0]

    def forget(self, key: int) -> None:
        """A removed entry: its item goes stale."""
        self.live.pop(key, None)

    def ascending(self) -> Iterator[int]:
        """The scored keys by (score, key), popped as they are read and pushed back when the reading
        stops (close the iterator): only as many as are read cost anything."""
        read: list[Item] = []
        try:
            while self.heap:
                item = heappop(self.heap)
                if self.live.get(item[1]) is item:
                    read.append(item)
                    yield item[1]
        finally:
            for item in read:
                heappush(self.heap, item)
