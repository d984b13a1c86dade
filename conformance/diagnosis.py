"""Which clause a divergence points at: the diagnosis a report leads with.

A difference between the implementation and the reference is read for the symptom of one rule
broken: a hit count that is the unclamped k × block_size, a freq above max_freq, a promoted entry
that lost its freq, a ghost cut to small_cap. Each diagnosis names the clause whose rule, broken,
gives exactly that symptom. When no symptom matches, the diagnosis is the whole group of clauses
that govern what differs, most likely first.
"""

from kvspec.adapters.interface import AdapterConfig, Snapshot
from kvspec.adapters.reference import snapshot_of
from kvspec.reference import S3FIFO
from kvspec.reference.replay import hit_tokens, prefix_hit_blocks
from kvspec.reference.s3fifo import small_cap_for

HIT_TOKEN_CLAUSES = ["REPLAY-PREFIX-1", "REPLAY-PREFIX-2", "REPLAY-HIT-1"]
SMALL_CLAUSES = ["S3-ACCESS-4", "S3-ADMIT-S-1", "S3-ADMIT-S-2", "S3-ADMIT-S-3", "S3-ADMIT-S-4", "S3-ACCESS-1", "S3-FREQ-2"]
MAIN_CLAUSES = ["S3-ADMIT-M-2", "S3-ADMIT-M-1", "S3-ADMIT-M-3", "S3-ADMIT-M-4", "S3-ACCESS-2"]
GHOST_CLAUSES = ["S3-GHOST-1", "S3-GHOST-2", "S3-GHOST-3", "S3-ACCESS-3"]


def refusal_clauses(config: AdapterConfig, refused_by: str | None) -> list[str]:
    """A configuration one side accepted and the other refused (``refused_by``: the spec's clause, if it refused)."""
    if config.policy != "s3fifo":
        return [refused_by or "REPLAY-CONF-1"]
    if refused_by is None and int(config.capacity * config.small_ratio) < 1:
        return ["S3-CONF-2", "S3-CONF-5"]  # a truncated small_cap is 0 where round() gives 1
    return ["S3-CONF-5", "S3-CONF-2", "S3-CONF-3"]


def hit_token_clauses(request: tuple[list[int], int], block_size: int, before: Snapshot, actual: int) -> list[str]:
    """Hit tokens that differ from the spec's, read against the queues before the request."""
    hash_ids, input_length = request
    resident = {h for h, _ in before.small + before.main}
    found = []
    k = prefix_hit_blocks(hash_ids, resident.__contains__)
    if actual == k * block_size:
        found.append("REPLAY-HIT-1")  # k × block_size without the min() clamp
    with_ghost = resident | set(before.ghost)
    if before.ghost and actual == hit_tokens(prefix_hit_blocks(hash_ids, with_ghost.__contains__), block_size, input_length):
        found.append("S3-QUEUE-3")  # a ghost entry counted as resident
    anywhere = len(set(hash_ids) & resident)
    if anywhere != k and actual == hit_tokens(anywhere, block_size, input_length):
        found.append("REPLAY-PREFIX-2")  # resident blocks counted past the first miss
    return found or HIT_TOKEN_CLAUSES


def resident_count_clauses(ghost_size: int, expected: int, actual: int) -> list[str]:
    """A resident count that differs, given the size of the spec's ghost."""
    if ghost_size and actual == expected + ghost_size:
        return ["S3-FINAL-1"]  # the ghost counted as resident
    return ["REPLAY-RESULT-4", "S3-FINAL-1"]


def queue_clauses(config: AdapterConfig, hash_ids: list[int], before: Snapshot, expected: Snapshot, actual: Snapshot) -> list[str]:
    """Queues that differ after a request, read against the queues before it."""
    if config.policy != "s3fifo":
        name = config.policy.upper()
        return [f"{name}-ACCESS-1", f"{name}-EVICT-1", f"{name}-ADMIT-1"]
    found = []
    want = dict(expected.small + expected.main)
    got = dict(actual.small + actual.main)
    if any(freq > config.max_freq for freq in got.values()):
        found.append("S3-FREQ-2")  # the counter was not saturated
    if actual == accessed_only_in_window(config, hash_ids, before):
        found.append("REPLAY-ACCESS-1")  # resident blocks past the hit window were not accessed
    promoted = {h for h, _ in before.small} & {h for h, _ in expected.main}
    actual_main = dict(actual.main)
    if any(h in actual_main and actual_main[h] < want[h] for h in promoted):
        found.append("S3-ADMIT-S-2")  # the freq was reset on promotion to M
    last = hash_ids[-1]
    seen = {h for h, _ in before.small + before.main} | set(before.ghost) | set(hash_ids[:-1])
    if last not in seen and (not actual.small or actual.small[-1][0] != last):
        found.append("S3-ACCESS-4")  # the request's last block was new, and is not at the tail of S
    small_cap = small_cap_for(config.capacity, config.small_ratio)
    if len(actual.ghost) < len(expected.ghost) and len(actual.ghost) == small_cap:
        found.append("S3-CONF-4")  # the ghost holds small_cap entries, not main_cap
    if found:
        return found
    if expected.small != actual.small:
        return SMALL_CLAUSES
    if expected.main != actual.main:
        return MAIN_CLAUSES
    return GHOST_CLAUSES


def accessed_only_in_window(config: AdapterConfig, hash_ids: list[int], before: Snapshot) -> Snapshot:
    """The queues after the request had only the blocks of the hit window been accessed when
    resident: REPLAY-ACCESS-1 broken, and nothing else."""
    cache = S3FIFO.empty(config.capacity, config.small_ratio, config.max_freq)
    cache.small.update(before.small)
    cache.main.update(before.main)
    cache.ghost.update((h, True) for h in before.ghost)
    k = prefix_hit_blocks(hash_ids, cache.is_resident)
    for position, h in enumerate(hash_ids):
        if position < k or not cache.is_resident(h):
            cache.access(h)
    return snapshot_of(cache)


def queue_difference(expected: Snapshot, actual: Snapshot) -> str:
    """Where each differing queue first differs, head first: short enough to read for any cache size."""
    parts = []
    for name in ("small", "main", "ghost"):
        want, got = getattr(expected, name), getattr(actual, name)
        if want != got:
            i = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            at = lambda queue: repr(queue[i]) if i < len(queue) else "the end of the queue"  # noqa: E731
            parts.append(f"{name}[{i}] is {at(got)}, expected {at(want)} ({len(got)} entries, expected {len(want)})")
    return "; ".join(parts)
