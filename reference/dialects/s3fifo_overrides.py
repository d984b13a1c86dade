"""The rules that take the place of S3FIFO's canonical decisions in a dialect (spec/dialects.md,
section 2), one small function per decision a variation point replaces; reference/dialects/s3fifo.py
binds each where its OVERRIDES say. They are rebuilt over a dialect's rules: the names they call,
such as admit_to_small or make_room, are the dialect's.
"""

from ..s3fifo import S3FIFO, admit_to_main, admit_to_small


def freq_reset(freq: int) -> int:
    """S3-DIALECT-10 (promote-freq-reset): a promoted entry enters M with freq 0."""
    return 0


def freq_minus_1(freq: int) -> int:
    """S3-DIALECT-11 (promote-freq-minus-1): a promoted entry enters M with freq - 1."""
    return freq - 1


def forgotten(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-12 (main-victim-forgotten): M's victim is forgotten, not sent to G; and a G of
    no size (S3-DIALECT-6 at capacity 1, S3-DIALECT-4's ghost_cap = main_cap = 0) keeps nothing."""


def unsaturated_increment(freq: int, max_freq: int | None) -> int:
    """S3-DIALECT-13 (freq-unsaturated): a hit adds one without bound."""
    return freq + 1


def chance_spent_from_3(freq: int) -> int:
    """S3-DIALECT-13 (freq-unsaturated): M's requeued head keeps min(freq, 3) - 1."""
    return min(freq, 3) - 1


def ghost_hit_as_new(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-16 (ghost-ignored): a hash found in G leaves it and is admitted as a new one."""
    del cache.ghost[h]
    admit_to_small(cache, h)


def admit_new_to_main(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-3 (main-zero-all-main): with no S, a new hash is admitted to M with freq 0."""
    admit_to_main(cache, h, 0)


def dropped(cache: S3FIFO, h: int, freq: int) -> None:
    """S3-DIALECT-4 (main-zero-drop): an M of no size drops what is admitted to it (once room is
    made, under S3-DIALECT-14)."""
    make_room(cache)


def refused(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-17 (small-refuses-own-size): a new hash as large as S is not admitted; the
    eviction steps S3-DIALECT-14 makes for it stand."""
    make_room(cache)


def make_room(cache: S3FIFO) -> None:
    """Nothing: per-queue eviction makes room as it admits (S3-DIALECT-14 binds its own)."""
