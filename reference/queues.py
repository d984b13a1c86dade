"""Ordered queues of block hashes (spec/replay.md, REPLAY-QUEUE-1 to REPLAY-QUEUE-3).

A queue is a dict keyed by block hash; its iteration order is the queue order, head (oldest)
first, tail (newest) last. The rules are written against plain dicts so that CrossHair can
explore them; the policies create their queues as OrderedDicts, which are dicts with the same
order, because CPython's plain dict makes every look-up of the head, ``next(iter(queue))``,
cost O(size) once deleted slots pile up in front, while OrderedDict finds it in O(1). The rules
pop the head (REPLAY-QUEUE-2) in place, ``head = next(iter(queue))`` then ``queue.pop(head)``,
which both kinds of dict do alike: a helper function would cost a call on every eviction, about
a tenth of the time `kvspec replay` takes over the bundled trace.
"""

from typing import TypeVar, no_type_check

V = TypeVar("V")

# S3FIFO's small and main queues: block hash -> freq.
Queue = dict[int, int]

# A queue of hashes alone (the ghost, LRU's recency order, FIFO's arrival order). Its values
# are True rather than None because CrossHair's symbolic dicts lose None values: it confirmed
# as correct a planted ghost-capacity bug over dict[int, None] that it found at once over
# dict[int, bool].
HashQueue = dict[int, bool]


# Runs on every hit of LRU, on a queue whose every item typeguard would otherwise check in the
# tests (O(cache size) a call); the hashes are checked where they enter, at each rule's h: int.
@no_type_check
def requeue(queue: dict[int, V], h: int, value: V) -> None:
    """REPLAY-QUEUE-3: move ``h`` from wherever it is to the tail, with ``value``."""
    del queue[h]
    queue[h] = value


def same_blocks(cache: object, hash_ids: list[int]) -> list[int]:
    """REPLAY-TRACE-4: a request's blocks are its hash ids, one block per position, the same hash
    the same block wherever it occurs."""
    return hash_ids
