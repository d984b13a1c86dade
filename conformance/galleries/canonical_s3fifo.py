"""The correct implementation the mutant gallery (mutants.py) overrides: a deliberately simple S3FIFO,
LRU and FIFO under the longest-prefix replay, speaking the adapter protocol (adapters/interface.py).

``CanonicalS3FIFO`` is written from spec/replay.md, spec/s3fifo.md, spec/lru.md and spec/fifo.md
alone; it does not use ``kvspec.reference``, so that agreeing with the reference means something.
It is built from small methods so that each mutant overrides the smallest piece that makes its
mistake, and nothing else.
"""

import math
from collections import OrderedDict

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot
from kvspec.reference import POLICIES

INT64_MAX = 2**63 - 1
VERSION = "0.1.0"


def is_int(value: object) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


class CanonicalS3FIFO:
    """A plain, correct S3FIFO (and LRU and FIFO) under the longest-prefix replay.

    S3FIFO keeps S and M as OrderedDicts hash -> freq and G as an OrderedDict hash -> None, head
    first; LRU and FIFO keep their one queue in ``main``, with freq 0 beside every hash.
    """

    name = "canonical"
    mistake = ""  # a mutant's: seed 000's words for its mistake, and the clause that spec/s3fifo.md
    breaks = ""  # section 8 maps the mistake to
    level: Level = "state"
    policies = POLICIES

    def __init__(self) -> None:
        self.identity = Identity(name=f"kvspec-mutants:{self.name}", language="python", version=VERSION)
        self.config: AdapterConfig | None = None
        self.small: OrderedDict[int, int] = OrderedDict()
        self.main: OrderedDict[int, int] = OrderedDict()
        self.ghost: OrderedDict[int, None] = OrderedDict()
        self.small_cap = self.main_cap = self.ghost_cap = 0

    # -- configuration ------------------------------------------------------------------------

    def small_cap_for(self, capacity: int, small_ratio: float) -> int:
        """S3-CONF-2: round(), banker's rounding on the double product."""
        return round(capacity * small_ratio)

    def ghost_cap_for(self) -> int:
        """S3-CONF-4: ghost_cap = main_cap."""
        return self.main_cap

    def configure(self, config: AdapterConfig) -> None:
        """REPLAY-CONF-1 to REPLAY-CONF-3 and S3-CONF-1 to S3-CONF-6; ConfigRefused on a breach."""
        if config.policy not in ("s3fifo", "lru", "fifo"):
            raise ConfigRefused(f"REPLAY-CONF-3: unknown policy {config.policy!r}")
        if not (is_int(config.capacity) and 1 <= config.capacity <= INT64_MAX):
            raise ConfigRefused(f"REPLAY-CONF-1: capacity {config.capacity!r}")
        if not (is_int(config.block_size) and 1 <= config.block_size <= INT64_MAX):
            raise ConfigRefused(f"REPLAY-CONF-2: block_size {config.block_size!r}")
        small_cap = main_cap = 0
        if config.policy == "s3fifo":
            ratio = config.small_ratio
            if not (type(ratio) is float and math.isfinite(ratio) and 0.0 <= ratio <= 1.0):
                raise ConfigRefused(f"S3-CONF-1: small_ratio {ratio!r}")
            if not (is_int(config.max_freq) and 0 <= config.max_freq <= INT64_MAX):
                raise ConfigRefused(f"S3-CONF-6: max_freq {config.max_freq!r}")
            small_cap = self.small_cap_for(config.capacity, ratio)
            main_cap = config.capacity - small_cap
            # S3-CONF-5. This check is also what keeps a mutant whose own small_cap_for gives 0
            # (IntSmallCap) from draining an empty S forever: it refuses instead.
            if small_cap < 1 or main_cap < 1:
                raise ConfigRefused(f"S3-CONF-5: small_cap {small_cap}, main_cap {main_cap}")
        self.config = config
        self.small, self.main, self.ghost = OrderedDict(), OrderedDict(), OrderedDict()
        self.small_cap, self.main_cap = small_cap, main_cap
        self.ghost_cap = self.ghost_cap_for()

    def configured(self) -> AdapterConfig:
        if self.config is None:
            raise AdapterFailure("not configured")
        return self.config

    def engine(self) -> str:
        """Which policy the cache runs: the configured one."""
        return self.configured().policy

    # -- the prefix scan ----------------------------------------------------------------------

    def is_resident(self, h: int) -> bool:
        """S3-QUEUE-3 (S or M, never G); LRU-CAP-1, FIFO-CAP-1 (in the one queue)."""
        return h in self.small or h in self.main

    def prefix_blocks(self, hash_ids: list[int]) -> int:
        """REPLAY-PREFIX-1, REPLAY-PREFIX-2: resident blocks from index 0 up to the first miss."""
        k = 0
        for h in hash_ids:
            if not self.is_resident(h):
                break
            k += 1
        return k

    def tokens(self, k: int, input_length: int) -> int:
        """REPLAY-HIT-1: min(k * block_size, input_length)."""
        return min(k * self.configured().block_size, input_length)

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """REPLAY-PREFIX-3: a scan that changes nothing."""
        return self.tokens(self.prefix_blocks(hash_ids), input_length)

    # -- accesses -----------------------------------------------------------------------------

    def access(self, hash_ids: list[int]) -> None:
        """REPLAY-ACCESS-1: every block, hit or miss, in order."""
        for h in hash_ids:
            self.access_one(h)

    def access_one(self, h: int) -> None:
        engine = self.engine()
        if engine == "lru":
            self.lru_access(h)
        elif engine == "fifo":
            self.fifo_access(h)
        else:
            self.s3fifo_access(h)

    def lru_access(self, h: int) -> None:
        """LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1."""
        if h in self.main:
            self.main.move_to_end(h)
            return
        if len(self.main) >= self.configured().capacity:
            self.main.popitem(last=False)
        self.main[h] = 0

    def fifo_access(self, h: int) -> None:
        """FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1."""
        if h in self.main:
            return
        if len(self.main) >= self.configured().capacity:
            self.main.popitem(last=False)
        self.main[h] = 0

    def bump(self, freq: int) -> int:
        """S3-FREQ-2: min(freq + 1, max_freq)."""
        return min(freq + 1, self.configured().max_freq)

    def s3fifo_access(self, h: int) -> None:
        """S3-ACCESS-1 to S3-ACCESS-4."""
        if h in self.small:
            self.small[h] = self.bump(self.small[h])
        elif h in self.main:
            self.main[h] = self.bump(self.main[h])
        elif h in self.ghost:
            del self.ghost[h]
            self.admit_to_main(h, 0)
        else:
            self.admit_to_small(h)

    def promoted_freq(self, freq: int) -> int:
        """S3-ADMIT-S-2: the freq an entry carries from S into M, unchanged."""
        return freq

    def admit_to_small(self, h: int) -> None:
        """S3-ADMIT-S-1 to S3-ADMIT-S-4."""
        while len(self.small) >= self.small_cap:
            victim, freq = self.small.popitem(last=False)
            if freq >= 1:
                self.admit_to_main(victim, self.promoted_freq(freq))
            else:
                self.insert_to_ghost(victim)
        self.small[h] = 0

    def requeue(self, victim: int, freq: int) -> None:
        """S3-ADMIT-M-2: back at the tail of M, freq already lowered by one."""
        self.main[victim] = freq

    def evict_from_main(self) -> None:
        """S3-ADMIT-M-1 to S3-ADMIT-M-3: second chance until exactly one entry leaves M."""
        while self.main:
            victim, freq = self.main.popitem(last=False)
            if freq >= 1:
                self.requeue(victim, freq - 1)
                continue
            self.insert_to_ghost(victim)
            return

    def admit_to_main(self, h: int, freq: int) -> None:
        """S3-ADMIT-M-1 to S3-ADMIT-M-4."""
        if len(self.main) >= self.main_cap:
            self.evict_from_main()
        self.main[h] = freq

    def insert_to_ghost(self, h: int) -> None:
        """S3-GHOST-1 to S3-GHOST-3."""
        if h in self.ghost:
            del self.ghost[h]
        elif len(self.ghost) >= self.ghost_cap:
            self.ghost.popitem(last=False)
        self.ghost[h] = None

    # -- reading ------------------------------------------------------------------------------

    def resident_count(self) -> int:
        """S3-FINAL-1: |S| + |M|, never G."""
        self.configured()
        return len(self.small) + len(self.main)

    def snapshot(self) -> Snapshot:
        self.configured()
        return Snapshot(small=tuple(self.small.items()), main=tuple(self.main.items()), ghost=tuple(self.ghost))

    def close(self) -> None:
        self.config = None
        self.small, self.main, self.ghost = OrderedDict(), OrderedDict(), OrderedDict()
