"""S3-DIALECT-14 (global-eviction) and S3-DIALECT-15 (new-to-main-until-first-eviction): the one
variation point that changes S3FIFO's control flow, so it has its own admission path.

Admitting to S or to M never evicts; room is made first, for the whole cache. These functions
are rebound over a dialect's rules (reference/dialects/s3fifo.py): the names they call, such as
evict_from_main, freq_in_main or insert_to_ghost, are the dialect's.
"""

from ..s3fifo import PROMOTION_FREQ, S3FIFO, evict_from_main, freq_in_main, insert_to_ghost


def append_to_main(cache: S3FIFO, h: int, freq: int) -> None:
    """S3-DIALECT-14: h at M's tail without evicting; S3-DIALECT-4: an M of no size drops it."""
    if cache.caps.main_cap > 0:
        cache.main[h] = freq


def promote_or_forget(cache: S3FIFO, victim: int, victim_freq: int) -> bool:
    """S3-DIALECT-14: S's popped head promoted to M's tail as the dialect promotes, M not drained
    for it, or sent to G; whether it was promoted."""
    if victim_freq < PROMOTION_FREQ:
        insert_to_ghost(cache, victim)
        return False
    append_to_main(cache, victim, freq_in_main(victim_freq))
    return True


def eviction_step(cache: S3FIFO) -> None:
    """S3-DIALECT-14: one step, from M when M is over main_cap or S is empty, else from S until one
    of its heads goes to G (or S empties)."""
    cache.has_evicted = True
    if len(cache.main) > cache.caps.main_cap or not cache.small:
        evict_from_main(cache)
        return
    while cache.small:
        victim = next(iter(cache.small))  # REPLAY-QUEUE-2: the head
        if not promote_or_forget(cache, victim, cache.small.pop(victim)):
            return


def make_room(cache: S3FIFO) -> None:
    """S3-DIALECT-14: before an admission, evict while S and M together fill the capacity."""
    while len(cache.small) + len(cache.main) >= cache.caps.capacity:
        eviction_step(cache)


def admit_new(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-14: a new hash joins S's tail with freq 0, once room is made."""
    make_room(cache)
    cache.small[h] = 0


def admit_to_main_after_room(cache: S3FIFO, h: int, freq: int) -> None:
    """S3-DIALECT-14: a hash admitted to M joins its tail, once room is made."""
    make_room(cache)
    append_to_main(cache, h, freq)


def admit_new_to_main_until_first_eviction(cache: S3FIFO, h: int) -> None:
    """S3-DIALECT-15: until the first eviction step, a new hash that finds S full (after its own
    eviction steps) joins M's tail with freq 0."""
    make_room(cache)
    if not cache.has_evicted and len(cache.small) >= cache.caps.small_cap:
        append_to_main(cache, h, 0)
    else:
        cache.small[h] = 0


# The names global eviction binds in a dialect's rules (reference/dialects/s3fifo.py): its two
# admissions, which make room for the whole cache, and the steps they take.
GLOBAL_EVICTION = {
    "admit_to_small": admit_new, "admit_to_main": admit_to_main_after_room, "make_room": make_room,
    "eviction_step": eviction_step, "promote_or_forget": promote_or_forget, "append_to_main": append_to_main,
}
NEW_TO_MAIN = {"admit_to_small": admit_new_to_main_until_first_eviction}
