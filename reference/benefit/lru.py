"""spec/benefit.md section 16: the LRU byte-budget baseline the policy is compared with."""

from collections import OrderedDict
from dataclasses import dataclass, field

from .config import CostSample, net_benefit


@dataclass(slots=True, eq=False)
class LRUBaseline:
    """BEN-LRU-1: keys with their stored sizes, least recent first (the OrderedDict's head)."""

    capacity: int
    recency: OrderedDict[int, int] = field(default_factory=OrderedDict)
    used: int = 0
    hits: int = 0
    misses: int = 0
    saved: float = 0.0
    bytes_written: int = 0

    def access(self, key: int, cost: CostSample, size: int) -> None:
        if key in self.recency:  # BEN-LRU-2: the stored size stays
            self.hits += 1
            self.saved += net_benefit(cost)
            self.recency.move_to_end(key)
            return
        self.misses += 1  # BEN-LRU-3
        while self.recency and self.used + size > self.capacity:
            _, evicted = self.recency.popitem(last=False)
            self.used -= evicted
        if size <= self.capacity:  # an entry larger than the capacity has flushed the cache, and is refused
            self.recency[key] = size
            self.used += size
            self.bytes_written += size
