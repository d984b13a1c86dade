"""The offline optimum (conformance/measurement/offline_optimum.py): Belady's MIN with bypass over
the block accesses, checked against an exhaustive search over every admission and eviction choice
on tiny traces, against a hand-derived example, and against every policy and known dialect."""

from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvspec.conformance.certification.block.strategies import Trace, arbitrary_traces, cache_configs, conversation_traces
from kvspec.conformance.measurement.offline_optimum import BlockAccesses, OfflineOptimum, offline_optima, read_accesses
from kvspec.reference import POLICIES, ConfigError, ReplayConfig, make_policy, replay_request
from kvspec.reference.dialects import KNOWN_DIALECTS, EngineCache, dialect_for
from kvspec.reference.validation import INT64_MAX

FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # the exhaustive searches: milliseconds each

Requests = tuple[tuple[int, ...], ...]


def optimum(trace: Trace, capacity: int) -> OfflineOptimum:
    return offline_optima(trace.records(), [capacity], trace.block_size)[0]  # type: ignore[arg-type]


def accesses_of(trace: Trace) -> BlockAccesses:
    return read_accesses(trace.records(), trace.block_size)  # type: ignore[arg-type]


def best(requests: Requests, capacity: int, prefix: bool) -> int:
    """The most block hits (or, with ``prefix``, the most prefix hit blocks, each request's
    longest resident prefix scanned before its accesses) of any cache of ``capacity`` blocks that
    holds a block only from an access to it on: every choice at every miss (not admitting it,
    admitting it into room, or admitting it in place of any one resident block), tried."""
    flat = [(r, h) for r, hashes in enumerate(requests) for h in hashes]

    @cache
    def most(index: int, resident: frozenset[int]) -> int:
        if index == len(flat):
            return 0
        request, h = flat[index]
        scanned = 0
        if prefix and (index == 0 or flat[index - 1][0] != request):
            hashes = requests[request]
            while scanned < len(hashes) and hashes[scanned] in resident:
                scanned += 1
        if h in resident:
            return scanned + (not prefix) + most(index + 1, resident)
        choices = [resident]
        choices += [resident | {h}] if len(resident) < capacity else [(resident - {victim}) | {h} for victim in resident]
        return scanned + max(most(index + 1, choice) for choice in choices)

    return most(0, frozenset())


def tiny(trace: Trace) -> Requests:
    return tuple(tuple(hashes) for hashes, _ in trace.requests)


TINY = {"max_requests": 4, "max_blocks": 3}


@MANY
@given(trace=arbitrary_traces(pool=4, block_sizes=st.just(1), **TINY), capacity=st.integers(1, 3))
def test_min_has_the_most_block_hits_of_any_cache(trace: Trace, capacity: int) -> None:
    """Belady's MIN with bypass is optimal in block hits: no choice of admissions and evictions
    does better, on tiny traces where every choice can be tried (up to 12 accesses)."""
    assert optimum(trace, capacity).block_hits == best(tiny(trace), capacity, prefix=False)


@MANY
@given(trace=conversation_traces(block_sizes=st.just(1), max_requests=5, max_turn_blocks=2, max_blocks=4, max_scan_blocks=2),
       capacity=st.integers(1, 3))
def test_where_every_id_names_its_prefix_min_has_the_most_prefix_hits(trace: Trace, capacity: int) -> None:
    """The module's claim: when each hash id always follows the same predecessor, MIN's prefix
    hit blocks equal its block hits, and no cache hits more prefix blocks."""
    result = optimum(trace, capacity)
    assert result.total_hit_tokens == result.block_hits == best(tiny(trace), capacity, prefix=True)  # one token a block


def test_where_an_id_follows_different_predecessors_min_is_no_bound_on_prefix_hits() -> None:
    """Capacity 1, block size 1, requests [1, 2], [3, 2], [1]. MIN admits 1; at 2 (used next at
    access 3, sooner than 1 at access 4) it evicts 1; 3 is never used again and is not admitted;
    2 is then a block hit behind a missed 3, no prefix hit; [1] misses. A cache that never admits
    2 keeps 1 and hits it in the third request: more prefix, one block hit fewer."""
    trace = Trace(1, [([1, 2], 2), ([3, 2], 2), ([1], 1)])
    result = optimum(trace, 1)
    assert (result.block_hits, result.total_hit_tokens) == (1, 0)
    assert best(tiny(trace), 1, prefix=True) == 1


def test_a_hand_derived_example() -> None:
    """Capacity 2, blocks of 4 tokens: [1, 2] (8 tokens), [3] (3), [1] (4), [3] (2), [2] (4).
    Accesses 0 to 5 are 1, 2, 3, 1, 3, 2; next uses 3, 5, 4, never, never, never. 1 and 2 fill the
    cache; 3 (next use 4) replaces 2 (next use 5, the farthest); [1] hits its 4 tokens, then 1 is
    never used again; [3] hits its 2 tokens; 2 is never used again and both residents neither,
    so it is not admitted. 6 of 21 prompt tokens, 2 block hits, 2 blocks resident. LRU keeps 3
    and 1 when [1] comes back, so it hits only [3]."""
    trace = Trace(4, [([1, 2], 8), ([3], 3), ([1], 4), ([3], 2), ([2], 4)])
    accesses = accesses_of(trace)
    assert accesses.next_use == [3, 5, 4, 6, 6, 6]
    result = optimum(trace, 2)
    assert (result.total_hit_tokens, result.total_prompt_tokens, result.block_hits, result.final_cache_blocks) == (6, 21, 2, 2)
    assert (result.block_accesses, result.requests, result.hit_rate) == (6, 5, 6 / 21)


def policy_hits(trace: Trace, config: ReplayConfig) -> tuple[int, int]:
    """A policy's block hits (an access that finds its block resident) and hit tokens, replayed here."""
    policy = make_policy(config)
    block_hits = tokens = 0
    if isinstance(policy, EngineCache):  # an engine runs each request whole: its hit blocks are all it tells
        for hashes, length in trace.requests:
            hit = replay_request(policy, list(hashes), length, trace.block_size)
            tokens, block_hits = tokens + hit, block_hits + hit // trace.block_size
        return block_hits, tokens
    for hashes, length in trace.requests:
        blocks = policy.blocks(list(hashes))
        k = 0
        while k < len(blocks) and policy.is_resident(blocks[k]):
            k += 1
        tokens += min(k * trace.block_size, length)
        for h in blocks:
            block_hits += policy.is_resident(h)
            policy.access(h)
    return block_hits, tokens


DIALECTS = [(None, policy) for policy in POLICIES] + [(name, policy) for name, policies in KNOWN_DIALECTS.items() for policy in policies]


def full_blocks(trace: Trace) -> Trace:
    """The trace with every last block full: hit tokens are then hit blocks times block_size."""
    return Trace(trace.block_size, [(hashes, len(hashes) * trace.block_size) for hashes, _ in trace.requests])


@FEW
@given(trace=conversation_traces(), cache_config=cache_configs(max_capacity=24))
def test_no_policy_or_dialect_beats_min_and_min_never_beats_a_cache_that_never_evicts(trace: Trace, cache_config: Any) -> None:
    """At the same capacity, every policy and known dialect hits at most MIN's blocks and, on
    chained ids with full last blocks, at most its hit tokens; MIN hits at most what a cache that
    never evicts hits, and exactly that with room for every block."""
    trace = full_blocks(trace)
    capacity = cache_config.capacity
    result = optimum(trace, capacity)
    replayed = 0
    for name, policy in DIALECTS:
        try:
            config = ReplayConfig(policy, capacity, trace.block_size, cache_config.small_ratio, cache_config.max_freq,  # type: ignore[arg-type]
                                  dialect_for(policy, name))
            block_hits, tokens = policy_hits(trace, config)
        except ConfigError:  # a dialect that refuses this small_ratio or max_freq
            continue
        replayed += 1
        assert block_hits <= result.block_hits, (name, policy)
        assert tokens <= result.total_hit_tokens, (name, policy)
    assert replayed >= len(POLICIES)
    unbounded = optimum(trace, INT64_MAX)
    assert result.total_hit_tokens <= unbounded.total_hit_tokens
    assert optimum(trace, accesses_of(trace).distinct).total_hit_tokens == unbounded.total_hit_tokens
