"""The sizes of S3FIFO in a dialect (spec/dialects.md, section 2, S3-DIALECT-1 to S3-DIALECT-8 and
S3-DIALECT-13's max_freq): the canonical sizes of reference/s3fifo.py, where a variation point
derives one otherwise its own rule."""

import math
from dataclasses import dataclass

from ..errors import ConfigError
from ..s3fifo import check_small_ratio, ghost_cap_for, small_cap_for
from ..validation import INT64_MIN, check_count
from .catalogue import Dialect


@dataclass(frozen=True, slots=True)
class DialectCaps:
    """The sizes one S3FIFO cache in a dialect is built with; ``max_freq`` is None where freqs do
    not saturate (S3-DIALECT-13), and ``capacity`` bounds |S| + |M| under S3-DIALECT-14."""

    capacity: int
    small_cap: int
    main_cap: int
    ghost_cap: int
    max_freq: int | None


def check_open_ratio(small_ratio: float) -> None:
    """S3-DIALECT-5 (small-ratio-open): small_ratio in the open interval (0, 1)."""
    if not 0.0 < small_ratio < 1.0:
        raise ConfigError("S3-DIALECT-5", f"small_ratio must lie in the open interval (0, 1), not {small_ratio!r}")


def checked_max_freq(max_freq: int, dialect: Dialect) -> int | None:
    """The max_freq a cache keeps: S3-DIALECT-13 (freq-unsaturated) takes any and keeps none,
    S3-DIALECT-8 (max-freq-min-1) needs at least 1."""
    if "freq-unsaturated" in dialect:
        check_count(max_freq, INT64_MIN, "S3-DIALECT-13", "max_freq (not used)", low_text="-2**63")
        return None
    if "max-freq-min-1" in dialect:
        check_count(max_freq, 1, "S3-DIALECT-8", "max_freq")
    else:
        check_count(max_freq, 0, "S3-CONF-6", "max_freq")
    return max_freq


def dialect_small_cap(capacity: int, small_ratio: float, dialect: Dialect) -> int:
    """S3-DIALECT-1 (small-cap-floor): the product truncated, C's integer cast; S3-DIALECT-2
    (small-cap-min-1): at least 1."""
    small_cap = math.floor(capacity * small_ratio) if "small-cap-floor" in dialect else small_cap_for(capacity, small_ratio)
    return max(1, small_cap) if "small-cap-min-1" in dialect else small_cap


def dialect_ghost_cap(capacity: int, main_cap: int, dialect: Dialect) -> int:
    """S3-DIALECT-6 (ghost-cap-0.9) and S3-DIALECT-7 (ghost-cap-capacity): the double product
    truncated, as for the other sizes."""
    if "ghost-cap-0.9" in dialect:
        return math.floor(capacity * 0.9)
    if "ghost-cap-capacity" in dialect:
        return math.floor(capacity * 1.0)
    return ghost_cap_for(main_cap)


def bounded_caps(capacity: int, small_ratio: float, small_cap: int, dialect: Dialect) -> tuple[int, int]:
    """(small_cap, main_cap) where main_cap < 1 under S3-DIALECT-3 (main-zero-all-main): no S at
    all, or S3-DIALECT-4 (main-zero-drop): an M that holds nothing; else as the canonical bound."""
    main_cap = capacity - small_cap
    if main_cap < 1 and "main-zero-all-main" in dialect:
        return 0, capacity
    if main_cap < 1 and "main-zero-drop" in dialect:
        return small_cap, 0
    if small_cap < 1 or main_cap < 1:
        raise ConfigError(
            "S3-CONF-5",
            f"capacity {capacity} at small_ratio {small_ratio} gives small_cap {small_cap} and main_cap {main_cap}; S3FIFO needs both >= 1",
        )
    return small_cap, main_cap


def dialect_caps(capacity: int, small_ratio: float, max_freq: int, dialect: Dialect) -> DialectCaps:
    """The sizes of a cache in ``dialect``, or a ConfigError citing the clause that refuses them."""
    check_count(capacity, 1, "REPLAY-CONF-1", "capacity")
    check_small_ratio(small_ratio)
    if "small-ratio-open" in dialect:
        check_open_ratio(small_ratio)
    kept_freq = checked_max_freq(max_freq, dialect)
    small_cap, main_cap = bounded_caps(capacity, small_ratio, dialect_small_cap(capacity, small_ratio, dialect), dialect)
    return DialectCaps(capacity, small_cap, main_cap, dialect_ghost_cap(capacity, main_cap, dialect), kept_freq)
