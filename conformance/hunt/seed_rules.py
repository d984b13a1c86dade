"""The seed's rules as written, for `kvspec hunt --as-written`: the reference's own S3FIFO rules,
with the spec's resolution of spec/findings.md F-1 and F-2 switched off.

The reference refuses a configuration whose small_cap or main_cap rounds to 0 (S3-CONF-5): its
caps_for raises, and every rule requires caps_are_valid. Seed 000 has no such clause: it derives
the sizes (S3-CONF-2 to S3-CONF-4) and runs its rules. RULES is a second copy of
kvspec.reference.s3fifo whose caps_are_valid is the seed's (S3-CONF-4 and S3-CONF-6 alone), so
that its rules, contracts and all, run on any configuration the seed allows. The functions below
state what the seed itself promises; CrossHair searches those configurations for one that
breaks the promise, or makes a rule fail.
"""

import importlib.util
from collections import OrderedDict
from types import ModuleType

from kvspec.reference.contracts import ensure, require
from kvspec.reference.s3fifo import ratio_is_valid

MAX_CAPACITY = 64  # the search's bound; every degenerate capacity of F-1 and F-2 is below it


def seed_caps_are_valid(caps: object) -> bool:
    """What the seed requires of the sizes: ghost_cap = main_cap (S3-CONF-4), max_freq >= 0 (S3-CONF-6); not S3-CONF-5."""
    return caps.ghost_cap == caps.main_cap and caps.max_freq >= 0  # type: ignore[attr-defined]


def load_rules() -> ModuleType:
    spec = importlib.util.find_spec("kvspec.reference.s3fifo")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a copy: the reference itself is untouched
    module.caps_are_valid = seed_caps_are_valid  # the contracts look it up when they run
    return module


RULES = load_rules()


def as_written(capacity: int, small_ratio: float) -> object:
    """An empty cache with the derived sizes (S3-CONF-2 to S3-CONF-4), unchecked by S3-CONF-5."""
    return RULES.S3FIFO(RULES.derive_caps(capacity, small_ratio, 3), OrderedDict(), OrderedDict(), OrderedDict())


@require(lambda capacity, small_ratio: 1 <= capacity <= MAX_CAPACITY and ratio_is_valid(small_ratio), "REPLAY-CONF-1, S3-CONF-1")
@ensure(lambda result: result[0] <= result[1], "S3-INV-1: |S| <= small_cap after a new block's access")
def first_access(capacity: int, small_ratio: float) -> tuple[int, int]:
    """One new block into an empty cache (S3-ACCESS-4, S3-ADMIT-S-1): |S| and small_cap after it."""
    cache = as_written(capacity, small_ratio)
    RULES.access(cache, 1)
    return len(cache.small), cache.caps.small_cap  # type: ignore[attr-defined]


@require(lambda capacity, small_ratio: 1 <= capacity <= MAX_CAPACITY and ratio_is_valid(small_ratio), "REPLAY-CONF-1, S3-CONF-1")
@ensure(lambda result: result[0] <= result[1], "S3-INV-2: |M| <= main_cap after a promotion")
def first_promotion(capacity: int, small_ratio: float) -> tuple[int, int]:
    """A block accessed twice, then pushed out of S by new ones, goes to M (S3-ADMIT-S-2): |M| and main_cap."""
    cache = as_written(capacity, small_ratio)
    for h in (1, 1, *range(2, max(cache.caps.small_cap, 0) + 3)):  # type: ignore[attr-defined]
        RULES.access(cache, h)
    return len(cache.main), cache.caps.main_cap  # type: ignore[attr-defined]
