"""The mutant gallery: one mutant for each common mistake of seed 000 (spec/s3fifo.md section 8),
each a subclass of the correct implementation, CanonicalS3FIFO (canonical_s3fifo.py), that
overrides the smallest piece that makes its mistake, and nothing else. The conformance suite must
tell every mutant apart from the spec; tests/test_mutants.py shows, for each one, a trace on which
it does.

Every class and factory here is an in-process adapter: ``python:kvspec.conformance.galleries.mutants:canonical``
names the correct one, ``python:kvspec.conformance.galleries.mutants:<factory>`` a mutant (the factories are
listed in ``FACTORIES``; ``MUTANTS`` maps each mutant's stable name to its class).
"""

from collections.abc import Callable

from kvspec.conformance.galleries.canonical_s3fifo import CanonicalS3FIFO
from kvspec.conformance.galleries.canonical_s3fifo import is_int as is_int  # read here by certification/block/diagnosis.py

# ---------------------------------------------------------------------------------------------
# The mutants: one a mistake of seed 000, in the order of spec/s3fifo.md section 8.
# ---------------------------------------------------------------------------------------------


class LruInsteadOfS3FIFO(CanonicalS3FIFO):
    """Mistake: LRU instead of S3FIFO. Breaks S3-ACCESS-1 to S3-ACCESS-4.

    Asked for S3FIFO, it runs a plain LRU of ``capacity`` blocks (its recency queue in ``main``,
    freq 0). It still checks the S3FIFO configuration, so it refuses what S3FIFO refuses.
    """

    name = "lru-instead-of-s3fifo"
    mistake = "LRU instead of S3FIFO"
    breaks = "S3-ACCESS-1 to S3-ACCESS-4"

    def engine(self) -> str:
        policy = self.configured().policy
        return "lru" if policy == "s3fifo" else policy


class NoMinClamp(CanonicalS3FIFO):
    """Mistake: no min(k * block_size, L) clamp. Breaks REPLAY-HIT-1.

    Reports k * block_size, too many tokens whenever the last hit block is partial.
    """

    name = "no-min-clamp"
    mistake = "no min(k × block_size, L) clamp"
    breaks = "REPLAY-HIT-1"

    def tokens(self, k: int, input_length: int) -> int:
        return unclamped_hit_tokens(k, self.configured().block_size, input_length)


def unclamped_hit_tokens(k: int, block_size: int, input_length: int) -> int:
    """The no-min-clamp mistake as a plain function, for `kvspec hunt --diff` (crosshair
    diffbehavior against kvspec.reference.replay.hit_tokens)."""
    return k * block_size


class GhostCountedAsResident(CanonicalS3FIFO):
    """Mistake: ghost counted as resident. Breaks S3-QUEUE-3.

    The prefix scan counts a hash in G as a hit; the accesses still treat G as the spec does.
    """

    name = "ghost-counted-as-resident"
    mistake = "ghost counted as resident"
    breaks = "S3-QUEUE-3"

    def is_resident(self, h: int) -> bool:
        return h in self.small or h in self.main or h in self.ghost


class FreqNotSaturated(CanonicalS3FIFO):
    """Mistake: freq not saturated. Breaks S3-FREQ-2.

    freq + 1 with no clamp at max_freq; the second-chance loop still ends (every requeue lowers a
    freq), only later.
    """

    name = "freq-not-saturated"
    mistake = "freq not saturated"
    breaks = "S3-FREQ-2"

    def bump(self, freq: int) -> int:
        return freq + 1


class PlainFifoMain(CanonicalS3FIFO):
    """Mistake: M evicted as a plain FIFO. Breaks S3-ADMIT-M-2.

    When M is full its head is evicted to G whatever its freq: no second chance.
    """

    name = "plain-fifo-main"
    mistake = "plain FIFO pop on M"
    breaks = "S3-ADMIT-M-2"

    def evict_from_main(self) -> None:
        victim, _ = self.main.popitem(last=False)
        self.insert_to_ghost(victim)


class RequeueAtHead(CanonicalS3FIFO):
    """Mistake: second-chance requeue at the head. Breaks S3-ADMIT-M-2.

    A head with freq >= 1 goes back at the head with freq - 1, so the next iteration pops it
    again; the loop ends when its freq reaches 0 and it is evicted. It terminates, and the head
    of M is always the entry evicted.
    """

    name = "requeue-at-head"
    mistake = "second-chance requeue at the head"
    breaks = "S3-ADMIT-M-2"

    def requeue(self, victim: int, freq: int) -> None:
        self.main[victim] = freq
        self.main.move_to_end(victim, last=False)


class SetIntersection(CanonicalS3FIFO):
    """Mistake: set intersection instead of longest prefix. Breaks REPLAY-PREFIX-2.

    k = |set(hash_ids) & resident|: resident blocks anywhere in the request count.
    """

    name = "set-intersection"
    mistake = "set intersection instead of longest prefix"
    breaks = "REPLAY-PREFIX-2"

    def prefix_blocks(self, hash_ids: list[int]) -> int:
        return sum(1 for h in set(hash_ids) if self.is_resident(h))


class FreqOnlyOnPrefixHits(CanonicalS3FIFO):
    """Mistake: freq updated only on prefix hits. Breaks REPLAY-ACCESS-1.

    A resident block past the request's prefix-hit window is not accessed at all (its freq is
    not incremented); misses are admitted as usual. The window is the k of the last hit_tokens
    call (the suite calls hit_tokens, then access, for each request); the memo is invisible to
    the protocol, so hit_tokens still changes nothing observable. Without a hit_tokens call
    first, the window is 0.
    """

    name = "freq-only-on-prefix-hits"
    mistake = "freq updated only on prefix hits"
    breaks = "REPLAY-ACCESS-1"

    def __init__(self) -> None:
        super().__init__()
        self.window = 0

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        self.window = self.prefix_blocks(hash_ids)
        return self.tokens(self.window, input_length)

    def access(self, hash_ids: list[int]) -> None:
        window, self.window = self.window, 0
        for i, h in enumerate(hash_ids):
            if i >= window and self.is_resident(h):
                continue
            self.access_one(h)


class GhostInFinalSize(CanonicalS3FIFO):
    """Mistake: ghost counted in final_cache_blocks. Breaks S3-FINAL-1.

    The resident count is |S| + |M| + |G|.
    """

    name = "ghost-in-final-size"
    mistake = "ghost counted in final_cache_blocks"
    breaks = "S3-FINAL-1"

    def resident_count(self) -> int:
        return super().resident_count() + len(self.ghost)


class FreqResetOnPromotion(CanonicalS3FIFO):
    """Mistake: freq reset on S -> M promotion. Breaks S3-ADMIT-S-2.

    An entry promoted from S enters M with freq 0 instead of the freq it had in S.
    """

    name = "freq-reset-on-promotion"
    mistake = "freq reset on S → M promotion"
    breaks = "S3-ADMIT-S-2"

    def promoted_freq(self, freq: int) -> int:
        return 0


class IntSmallCap(CanonicalS3FIFO):
    """Mistake: int() instead of round() for small_cap. Breaks S3-CONF-2.

    small_cap = int(capacity * small_ratio): one less whenever the fraction is >= 0.5, e.g. 409
    for 4096 at 0.1, 1 for 15 at 0.1. Where that gives 0 and round() gives 1 (capacity 6 to 9 at
    0.1) the mutant refuses the configuration by S3-CONF-5 rather than drain an empty S forever:
    the guard of ``configure`` applies to its own small_cap. A refusal where the spec accepts is
    then how this mistake shows at those capacities.
    """

    name = "int-small-cap"
    mistake = "int() instead of round() for small_cap"
    breaks = "S3-CONF-2"

    def small_cap_for(self, capacity: int, small_ratio: float) -> int:
        return int_small_cap_for(capacity, small_ratio)


def int_small_cap_for(capacity: int, small_ratio: float) -> int:
    """The int-small-cap mistake as a plain function, for `kvspec hunt --diff` (crosshair
    diffbehavior against kvspec.reference.s3fifo.small_cap_for)."""
    return int(capacity * small_ratio)


class GhostCapIsSmallCap(CanonicalS3FIFO):
    """Mistake: ghost_cap = small_cap. Breaks S3-CONF-4.

    The ghost is sized like S instead of like M, so it forgets evicted hashes too soon.
    """

    name = "ghost-cap-is-small-cap"
    mistake = "ghost_cap = small_cap"
    breaks = "S3-CONF-4"

    def ghost_cap_for(self) -> int:
        return self.small_cap


MUTANT_CLASSES: tuple[type[CanonicalS3FIFO], ...] = (
    LruInsteadOfS3FIFO,
    NoMinClamp,
    GhostCountedAsResident,
    FreqNotSaturated,
    PlainFifoMain,
    RequeueAtHead,
    SetIntersection,
    FreqOnlyOnPrefixHits,
    GhostInFinalSize,
    FreqResetOnPromotion,
    IntSmallCap,
    GhostCapIsSmallCap,
)

MUTANTS: dict[str, type[CanonicalS3FIFO]] = {cls.name: cls for cls in MUTANT_CLASSES}


# ---------------------------------------------------------------------------------------------
# Factories, for python:kvspec.conformance.galleries.mutants:<factory>.
# ---------------------------------------------------------------------------------------------


def canonical() -> CanonicalS3FIFO:
    """The correct implementation."""
    return CanonicalS3FIFO()


def lru_instead_of_s3fifo() -> CanonicalS3FIFO:
    return LruInsteadOfS3FIFO()


def no_min_clamp() -> CanonicalS3FIFO:
    return NoMinClamp()


def ghost_counted_as_resident() -> CanonicalS3FIFO:
    return GhostCountedAsResident()


def freq_not_saturated() -> CanonicalS3FIFO:
    return FreqNotSaturated()


def plain_fifo_main() -> CanonicalS3FIFO:
    return PlainFifoMain()


def requeue_at_head() -> CanonicalS3FIFO:
    return RequeueAtHead()


def set_intersection() -> CanonicalS3FIFO:
    return SetIntersection()


def freq_only_on_prefix_hits() -> CanonicalS3FIFO:
    return FreqOnlyOnPrefixHits()


def ghost_in_final_size() -> CanonicalS3FIFO:
    return GhostInFinalSize()


def freq_reset_on_promotion() -> CanonicalS3FIFO:
    return FreqResetOnPromotion()


def int_small_cap() -> CanonicalS3FIFO:
    return IntSmallCap()


def ghost_cap_is_small_cap() -> CanonicalS3FIFO:
    return GhostCapIsSmallCap()


# The factory of each mutant, by its name: the name in kebab-case is the factory in snake_case.
FACTORIES: dict[str, Callable[[], CanonicalS3FIFO]] = {name: globals()[name.replace("-", "_")] for name in MUTANTS}
