"""A naive S3FIFO prefix cache, written for the benchmark only.

This is the baseline the reference is timed against: the obvious way to write S3FIFO in
Python, one class holding three ``collections.OrderedDict`` queues (head = oldest, tail =
newest), with no contracts and no rule-per-function split. It follows seed 000 directly and
does not import anything from ``kvspec.reference``.
"""

from collections import OrderedDict


class NaiveS3FIFO:
    def __init__(self, capacity, small_ratio=0.1, max_freq=3):
        self.small_cap = round(capacity * small_ratio)
        self.main_cap = capacity - self.small_cap
        self.ghost_cap = self.main_cap
        self.max_freq = max_freq
        self.small = OrderedDict()  # hash -> freq
        self.main = OrderedDict()  # hash -> freq
        self.ghost = OrderedDict()  # hash -> None

    def is_resident(self, h):
        return h in self.small or h in self.main

    def access(self, h):
        if h in self.small:
            self.small[h] = min(self.small[h] + 1, self.max_freq)
        elif h in self.main:
            self.main[h] = min(self.main[h] + 1, self.max_freq)
        elif h in self.ghost:
            del self.ghost[h]
            self.admit_to_main(h, 0)
        else:
            self.admit_to_small(h)

    def admit_to_small(self, h):
        while len(self.small) >= self.small_cap:
            victim, freq = self.small.popitem(last=False)
            if freq >= 1:
                self.admit_to_main(victim, freq)
            else:
                self.insert_to_ghost(victim)
        self.small[h] = 0

    def admit_to_main(self, h, freq):
        while len(self.main) >= self.main_cap:
            victim, vfreq = self.main.popitem(last=False)
            if vfreq >= 1:
                self.main[victim] = vfreq - 1
            else:
                self.insert_to_ghost(victim)
                break
        self.main[h] = freq

    def insert_to_ghost(self, h):
        if h in self.ghost:
            del self.ghost[h]
        elif len(self.ghost) >= self.ghost_cap:
            self.ghost.popitem(last=False)
        self.ghost[h] = None

    def request(self, hash_ids, input_length, block_size=512):
        """Longest-prefix hit tokens for one request, then access every block."""
        k = 0
        for h in hash_ids:
            if not self.is_resident(h):
                break
            k += 1
        for h in hash_ids:
            self.access(h)
        return min(k * block_size, input_length)

    def resident_count(self):
        return len(self.small) + len(self.main)
