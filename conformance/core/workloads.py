"""What every side sends: the numberings of ids and keys across their whole domains, the
conversation generator's shapes, and the fixed probes that `kvspec certify` sends and the fixtures
record (spec/replay.md, spec/benefit.md BEN-KEY-1).
"""

from dataclasses import dataclass, field, replace

from kvspec.adapters.interface import AdapterConfig
from kvspec.reference import ConfigError, ReplayConfig
from kvspec.reference.s3fifo import derive_caps, ratio_is_valid
from kvspec.reference.validation import INT64_MIN, check_count

# (hash_ids, input_length) for each request, in arrival order.
Request = tuple[list[int], int]


class Numbering:
    """The n-th fresh id is base + stride * n, wrapped into the 2**64 integers from ``low``:
    distinct for every n below 2**11 (the largest stride is 2**53)."""

    def __init__(self, name: str, base: int, stride: int, low: int = INT64_MIN) -> None:
        self.name, self.base, self.stride, self.low = name, base, stride, low

    def __call__(self, n: int) -> int:
        return (self.base + self.stride * n - self.low) % 2**64 + self.low

    def __repr__(self) -> str:
        return self.name


PLAIN = Numbering("n", 0, 1)
GOLDEN = 0x9E3779B97F4A7C15  # odd: n * GOLDEN mod 2**64 is a permutation, spreading ids over every bit
# REPLAY-TRACE-2: [-2**63, 2**63 - 1]. Plain first, so that shrinking leads to small ids; then ids
# equal modulo 2**8, 2**16, 2**32 and 2**53 (what 8-, 16-, 32- and 53-bit keys keep), ids equal as
# doubles (2**53 + 1 and 2**53, 2**63 - 1 and 2**63 - 2), both bounds, negative ids, every bit.
ID_NUMBERINGS = (PLAIN, Numbering("2**8 * n", 0, 2**8), Numbering("2**16 * n", 0, 2**16), Numbering("2**32 * n", 0, 2**32),
                 Numbering("2**53 * n", 0, 2**53), Numbering("2**53 + n", 2**53, 1), Numbering("2**63 - n", 2**63, -1),
                 Numbering("-2**63 - 1 + n", INT64_MIN - 1, 1), Numbering("-n", 0, -1), Numbering("n * 0x9E3779B97F4A7C15", 0, GOLDEN))
# BEN-KEY-1: [0, 2**64 - 1], the same collisions; 0 and 2**64 - 1 are the bounds, 2**63 + n is
# beyond a signed 64-bit integer.
KEY_NUMBERINGS = (Numbering("n", 0, 1, 0), Numbering("2**8 * n", 0, 2**8, 0), Numbering("2**16 * n", 0, 2**16, 0),
                  Numbering("2**32 * n", 0, 2**32, 0), Numbering("2**53 * n", 0, 2**53, 0), Numbering("2**53 + n", 2**53, 1, 0),
                  Numbering("2**64 - n", 2**64, -1, 0), Numbering("n - 1", -1, 1, 0), Numbering("2**63 + n", 2**63, 1, 0),
                  Numbering("n * 0x9E3779B97F4A7C15", 0, GOLDEN, 0))


@dataclass
class Conversations:
    """The requests so far, to draw the next one from (REPLAY-PREFIX-1 needs shared prefixes), and
    the shapes a next one takes: a fresh conversation (or a one-off scan, fresh ids nobody reuses),
    its next turn, a branch part-way, an exact repeat (``list(parent)``), an earlier id again. Each
    generator chooses among them its own way: Hypothesis in certification/block/machine.py and
    certification/block/strategies.py, xorshift64 in fixtures/replay_cases.py."""

    requests: list[list[int]] = field(default_factory=list)
    numbering: Numbering = PLAIN  # of the fresh ids: one for the whole example
    serial: int = 0  # how many fresh ids were drawn
    prompt_tokens: int = 0  # the sum of the requests' input lengths

    def fresh(self, n: int) -> list[int]:
        """n ids never drawn before."""
        ids = [self.numbering(self.serial + i) for i in range(1, n + 1)]
        self.serial += n
        return ids

    def extend(self, parent: list[int], n: int) -> list[int]:
        """The next turn of a conversation: ``parent`` and n fresh ids."""
        return parent + self.fresh(n)

    def branch(self, parent: list[int], keep: int, n: int) -> list[int]:
        """A branch part-way: the first ``keep`` ids of ``parent``, then n fresh ones."""
        return parent[:keep] + self.fresh(n)

    def earlier(self, back: int) -> int:
        """An id of an earlier request, ``back`` distinct ids behind the most recent one (the
        oldest ones, evicted by now, are ghosts of S3FIFO's)."""
        seen = list(dict.fromkeys(h for ids in reversed(self.requests) for h in reversed(ids)))
        return seen[back % len(seen)]


@dataclass(frozen=True)
class Pins:
    """S3FIFO knobs held fixed, for an implementation that has no such knob (``kvspec certify
    --small-ratio``, ``--max-freq``); the largest capacity and block size, for an engine that
    builds its whole pool at once (``--max-capacity``, ``--max-block-size``); and whether every
    request fits in the cache, for an engine that cannot run a longer one
    (``--fitting-requests``). The verdict then covers only those configurations and requests."""

    small_ratio: float | None = None
    max_freq: int | None = None
    max_capacity: int | None = None
    max_block_size: int | None = None
    fitting_requests: bool = False

    def bounded(self, config: "AdapterConfig") -> "AdapterConfig":
        """A configuration as sent: its capacity and block size at most the bounds held."""
        capacity = config.capacity if self.max_capacity is None else min(config.capacity, self.max_capacity)
        block_size = config.block_size if self.max_block_size is None else min(config.block_size, self.max_block_size)
        return replace(config, capacity=capacity, block_size=block_size)

    def fitting(self, hash_ids: list[int], capacity: int) -> list[int]:
        """A request as sent: under ``fitting_requests``, its first max(capacity, 1) blocks."""
        return hash_ids[: max(capacity, 1)] if self.fitting_requests else hash_ids

    def split(self, requests: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
        """A probe's requests as sent: under ``fitting_requests``, one block each, which fits every cache."""
        return tuple((h,) for request in requests for h in request) if self.fitting_requests else requests

    def check(self) -> None:
        """S3-CONF-1, S3-CONF-6: a pinned knob must be a value the spec accepts."""
        if self.small_ratio is not None and not ratio_is_valid(self.small_ratio):
            raise ConfigError("S3-CONF-1", f"small_ratio must be a finite float in [0.0, 1.0], not {self.small_ratio!r}")
        if self.max_freq is not None:
            check_count(self.max_freq, 0, "S3-CONF-6", "max_freq")
        if self.max_capacity is not None:
            check_count(self.max_capacity, 1, "REPLAY-CONF-1", "the largest capacity")
        if self.max_block_size is not None:
            check_count(self.max_block_size, 1, "REPLAY-CONF-2", "the largest block_size")


@dataclass(frozen=True)
class Probe:
    """A configuration, and the requests (one-token blocks) sent if both accept it."""

    config: AdapterConfig
    requests: tuple[tuple[int, ...], ...] = ()


LONG = 257  # CPython keeps one int object for each value up to 256; a longer queue has a length no other int is


def pinned(pins: Pins, ratio: float) -> tuple[float, int]:
    """small_ratio and max_freq: the pinned ones, or ``ratio`` and the default max_freq."""
    return (ratio if pins.small_ratio is None else pins.small_ratio), (ReplayConfig.max_freq if pins.max_freq is None else pins.max_freq)


def smallest_capacity(ratio: float, each: int, at_least: int, at_most: int = 2**13) -> int | None:
    """The smallest capacity from ``at_least`` to ``at_most`` at which S and M (S3-CONF-2,
    S3-CONF-3) both hold ``each`` blocks or more; None if there is none."""
    for capacity in range(at_least, at_most + 1):
        caps = derive_caps(capacity, ratio, 0)
        if caps.small_cap >= each and caps.main_cap >= each:
            return capacity
    return None


def long_queues(policy: str, pins: Pins = Pins()) -> Probe | None:
    """Every queue filled to more than 256 blocks, then one more block admitted to it: a cache that
    compares a length with its capacity by identity (``is``), or keeps it in 8 bits, does not evict
    (LRU-CAP-1, FIFO-CAP-1, S3-INV-1 to S3-INV-3). LRU and FIFO: 258 fresh blocks into 257.
    S3FIFO: fresh blocks through S until G holds main_cap of them and drops one (block 1), then
    every ghost hit into M, one more fresh block to make a ghost, and its hit into the full M,
    which evicts block 2; then block 1, which a G that kept it would admit to M, evicting block 3,
    and block 3, then a hit only if G dropped block 1: the hit tokens and resident counts alone
    show each queue's bound. Under a pinned ratio that would need more than 2**13 blocks for both
    S and M that long, only the longer one is; None if no capacity up to 2**13 is valid."""
    ratio, max_freq = pinned(pins, 0.5)
    if policy != "s3fifo":
        return Probe(AdapterConfig(policy, LONG, 1, ratio, max_freq), (tuple(range(1, LONG + 2)),))  # type: ignore[arg-type]
    capacity = smallest_capacity(ratio, LONG, 2 * LONG) or smallest_capacity(ratio, 1, 2 * LONG)
    if capacity is None:
        return None
    main_cap = derive_caps(capacity, ratio, max_freq).main_cap
    through_small = tuple(range(1, capacity + 2))  # 1 to main_cap + 1 leave S for G, which drops 1
    into_main = (*range(2, main_cap + 2), capacity + 2, main_cap + 2)
    return Probe(AdapterConfig(policy, capacity, 1, ratio, max_freq), (through_small, into_main, (1,), (3,)))  # type: ignore[arg-type]
