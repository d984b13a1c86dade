"""S3FIFO in a dialect (spec/dialects.md, section 2): the canonical rules of reference/s3fifo.py,
each decision a variation point replaces overridden by its own small rule.

A dialect's rules are the canonical functions rebuilt over a copy of the canonical module's
names, in which OVERRIDES rebind the decisions its variation points replace; the canonical
module itself is never changed, so a canonical replay pays nothing for the dialects. The
replacements are in s3fifo_overrides.py, the sizes in s3fifo_sizes.py, and global eviction's
admission path in global_eviction.py.
"""

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from types import FunctionType
from typing import Any, NamedTuple

from .. import s3fifo
from ..contracts import ensure, require
from ..queues import HashQueue, Queue
from ..rebuilt import rebuilt
from ..s3fifo import S3FIFO, is_resident
from .catalogue import Dialect
from .global_eviction import GLOBAL_EVICTION, NEW_TO_MAIN
from .s3fifo_overrides import (
    admit_new_to_main,
    chance_spent_from_3,
    dropped,
    forgotten,
    freq_minus_1,
    freq_reset,
    ghost_hit_as_new,
    make_room,
    refused,
    unsaturated_increment,
)
from .s3fifo_sizes import DialectCaps, dialect_caps


class Override(NamedTuple):
    """The names a variation point rebinds in the rules, where its caches' sizes call for it."""

    variation: str
    binds: dict[str, Any]
    applies: Callable[[DialectCaps], bool] = lambda caps: True


# Applied in this order: global eviction's admission first, then what refines an admission
# (S3-DIALECT-3 and S3-DIALECT-17 refine S3-DIALECT-14's and S3-DIALECT-15's, 17 outranking 3).
OVERRIDES = (
    Override("global-eviction", GLOBAL_EVICTION),  # S3-DIALECT-14
    Override("new-to-main-until-first-eviction", NEW_TO_MAIN),  # S3-DIALECT-15
    Override("promote-at-2", {"PROMOTION_FREQ": 2}),  # S3-DIALECT-9: a freq of 1 is not promoted
    Override("promote-freq-reset", {"freq_in_main": freq_reset}),  # S3-DIALECT-10
    Override("promote-freq-minus-1", {"freq_in_main": freq_minus_1}),  # S3-DIALECT-11
    Override("main-victim-forgotten", {"retire_from_main": forgotten}),  # S3-DIALECT-12
    Override("freq-unsaturated", {"saturating_increment": unsaturated_increment,  # S3-DIALECT-13
                                  "chance_spent": chance_spent_from_3}),
    Override("ghost-ignored", {"admit_ghost_hit": ghost_hit_as_new}),  # S3-DIALECT-16
    Override("ghost-cap-0.9", {"insert_to_ghost": forgotten}, lambda caps: caps.ghost_cap == 0),  # S3-DIALECT-6 at capacity 1
    Override("main-zero-drop", {"insert_to_ghost": forgotten}, lambda caps: caps.ghost_cap == 0),  # S3-DIALECT-4: G as small as M
    Override("main-zero-drop", {"admit_to_main": dropped}, lambda caps: caps.main_cap == 0),  # S3-DIALECT-4
    Override("main-zero-all-main", {"admit_to_small": admit_new_to_main}, lambda caps: caps.small_cap == 0),  # S3-DIALECT-3
    Override("small-refuses-own-size", {"admit_to_small": refused}, lambda caps: caps.small_cap <= 1),  # S3-DIALECT-17
)
# The canonical rules that call a decision a variation point may rebind, rebuilt for each dialect.
REBUILT = ("access", "admit_ghost_hit", "admit_to_small", "admit_to_main", "evict_from_main", "retire_from_main", "insert_to_ghost")


@cache
def built_rules(taken: tuple[int, ...]) -> dict[str, Any]:
    """The canonical module's names with the OVERRIDES ``taken`` (their indices) bound in order,
    every function among them rebuilt to read the others from here."""
    names = dict(vars(s3fifo), make_room=make_room)
    for index in taken:
        names.update(OVERRIDES[index].binds)
    for name in {*REBUILT, "make_room", *(name for index in taken for name in OVERRIDES[index].binds)}:
        if isinstance(names[name], FunctionType):
            names[name] = rebuilt(names[name], names)
    return names


def rules_for(dialect: Dialect, caps: DialectCaps) -> dict[str, Any]:
    """The rules of a cache of ``caps`` in ``dialect``."""
    return built_rules(tuple(i for i, o in enumerate(OVERRIDES) if o.variation in dialect and o.applies(caps)))


def dialect_state_holds(cache: "DialectS3FIFO") -> bool:
    """S3-QUEUE-2, S3-FREQ-1 (no upper bound under S3-DIALECT-13), S3-INV-3, and the bound every
    dialect keeps: |S| + |M| <= capacity (S3-INV-1 and S3-INV-2 where eviction is per queue)."""
    small, main, ghost, caps = cache.small, cache.main, cache.ghost, cache.caps
    top = caps.max_freq
    per_queue = "global-eviction" not in cache.dialect
    return (
        small.keys().isdisjoint(main) and small.keys().isdisjoint(ghost) and main.keys().isdisjoint(ghost)
        and all(0 <= f and (top is None or f <= top) for f in (*small.values(), *main.values()))
        and len(small) + len(main) <= caps.capacity and len(ghost) <= caps.ghost_cap
        and (not per_queue or (len(small) <= caps.small_cap and len(main) <= caps.main_cap))
    )


def admitted(cache: "DialectS3FIFO", h: int) -> bool:
    """S3-ACCESS-3, S3-ACCESS-4: h resident after its access, unless S3-DIALECT-17 refused it or
    S3-DIALECT-4 dropped it."""
    refusing = "small-refuses-own-size" in cache.dialect and cache.caps.small_cap <= 1
    return is_resident(cache, h) or refusing or (cache.caps.main_cap == 0 and h not in cache.small)


@require(dialect_state_holds, "S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3 as the dialect keeps them", per_access_state=True)
@ensure(dialect_state_holds, "S3-QUEUE-2, S3-FREQ-1, S3-INV-1 to S3-INV-3 as the dialect keeps them", per_access_state=True)
@ensure(admitted, "S3-ACCESS-3, S3-ACCESS-4: h is admitted, unless S3-DIALECT-17 refuses it or S3-DIALECT-4 drops it")
def dialect_access(cache: "DialectS3FIFO", h: int) -> None:
    """One block access, by the dialect's rules."""
    cache.rules["access"](cache, h)


@dataclass(slots=True, eq=False, init=False)
class DialectS3FIFO(S3FIFO):
    """One S3FIFO cache in a dialect: the canonical queues, the dialect's sizes and rules, and
    whether an eviction has happened yet (S3-DIALECT-15 reads it). An S3FIFO, so that the
    canonical rules, rebuilt, take it (typeguard checks their ``cache: S3FIFO``); built as it was
    before it was one, the dialect first."""

    dialect: Dialect
    has_evicted: bool
    rules: dict[str, Any] = field(repr=False)

    def __init__(self, dialect: Dialect, caps: DialectCaps, small: Queue, main: Queue, ghost: HashQueue, has_evicted: bool = False) -> None:
        S3FIFO.__init__(self, caps, small, main, ghost)  # type: ignore[arg-type]
        self.dialect, self.has_evicted, self.rules = dialect, has_evicted, rules_for(dialect, caps)

    @classmethod
    def empty(  # type: ignore[override]
        cls, dialect: Dialect, capacity: int, small_ratio: float = 0.1, max_freq: int = 3,
    ) -> "DialectS3FIFO":
        return cls(dialect, dialect_caps(capacity, small_ratio, max_freq, dialect), OrderedDict(), OrderedDict(), OrderedDict())

    def __reduce__(self) -> tuple[type["DialectS3FIFO"], tuple[Any, ...]]:
        """Pickled as built, its rules following from its dialect and sizes (request.lookup's contract pickles it)."""
        return DialectS3FIFO, (self.dialect, self.caps, self.small, self.main, self.ghost, self.has_evicted)

    access = dialect_access
    state_invariants_hold = dialect_state_holds
