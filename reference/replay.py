"""Longest-prefix block replay (spec/replay.md): the policy-independent half of the spec."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .constants import POLICIES, PolicyName
from .contracts import ensure, require, snapshot
from .dialects import CANONICAL, Dialect, EngineCache, dialect_policy, in_catalogue_order
from .errors import ConfigError, TraceError
from .fifo import FIFO
from .lru import LRU
from .s3fifo import S3FIFO
from .trace import Request
from .validation import INT64_MAX, check_count

if TYPE_CHECKING:
    from .models import ReplayResult, RequestResult, TraceRecord


class Policy(Protocol):
    """REPLAY-POLICY-1: what the replay needs of an eviction policy."""

    def blocks(self, hash_ids: list[int]) -> list[int]: ...
    def is_resident(self, h: int) -> bool: ...
    def access(self, h: int) -> None: ...
    def resident_count(self) -> int: ...
    def state_invariants_hold(self) -> bool: ...


Cache = Policy | EngineCache  # a policy replayed block by block, or request by request (REPLAY-DIALECT-4 to REPLAY-DIALECT-9)


@dataclass(frozen=True)
class ReplayConfig:
    """REPLAY-CONF-1 to REPLAY-CONF-3, and S3FIFO's own knobs (S3-CONF-1, S3-CONF-6)."""

    policy: PolicyName = "s3fifo"
    capacity: int = 4096
    block_size: int = 512
    small_ratio: float = 0.1
    max_freq: int = 3
    dialect: Dialect = CANONICAL  # DIALECT-1: the variation points the policy is replayed with


def make_policy(config: ReplayConfig) -> Cache:
    """REPLAY-CONF-1 to REPLAY-CONF-3: validate the config and build an empty cache (each
    policy checks its capacity, REPLAY-CONF-1, and its own parameters)."""
    if config.policy not in POLICIES:
        raise ConfigError("REPLAY-CONF-3", f"policy must be one of {', '.join(POLICIES)}, not {config.policy!r}")
    check_count(config.block_size, 1, "REPLAY-CONF-2", "block_size")
    if config.dialect:
        return dialect_policy(config.policy, config.dialect, config.capacity, config.block_size, config.small_ratio, config.max_freq)
    if config.policy == "lru":
        return LRU.empty(config.capacity)
    if config.policy == "fifo":
        return FIFO.empty(config.capacity)
    return S3FIFO.empty(config.capacity, config.small_ratio, config.max_freq)


@ensure(lambda hash_ids, result: 0 <= result <= len(hash_ids), "REPLAY-PREFIX-1")
@ensure(lambda hash_ids, is_resident, result: all(is_resident(h) for h in hash_ids[:result]), "REPLAY-PREFIX-1: every prefix block is resident")
@ensure(
    lambda hash_ids, is_resident, result: result == len(hash_ids) or not is_resident(hash_ids[result]),
    "REPLAY-PREFIX-2: the scan stops at the first miss",
)
def prefix_hit_blocks(hash_ids: list[int], is_resident: Callable[[int], bool]) -> int:
    """REPLAY-PREFIX-1 to REPLAY-PREFIX-3: k, the length of the resident prefix from index 0."""
    # crosshair: off
    # (CrossHair would pass an is_resident that answers differently each time it is asked;
    # REPLAY-POLICY-1 rules that out, and no precondition can say so.)
    k = 0
    for h in hash_ids:
        if not is_resident(h):
            break  # REPLAY-PREFIX-2: no skip-ahead past a miss
        k += 1
    return k


@require(lambda k, block_size, input_length: k >= 0 and block_size >= 1 and input_length >= 1, "REPLAY-HIT-1, REPLAY-TRACE-2")
@ensure(lambda input_length, result: 0 <= result <= input_length, "REPLAY-INV-1: 0 <= hit_tokens <= prompt_tokens")
@ensure(lambda k, block_size, result: result <= k * block_size, "REPLAY-HIT-1: no more than the hit blocks hold")
def hit_tokens(k: int, block_size: int, input_length: int) -> int:
    """REPLAY-HIT-1: min(k * block_size, input_length); the last block may be partial."""
    return min(k * block_size, input_length)


def check_block_count(path: str, line_number: int, record: TraceRecord | Request, block_size: int) -> None:
    """REPLAY-TRACE-3: input_length in ((n - 1) * block_size, n * block_size] for n hash ids."""
    n = len(record.hash_ids)
    if not (n - 1) * block_size < record.input_length <= n * block_size:
        raise TraceError(
            path,
            line_number,
            "input_length",
            "REPLAY-TRACE-3",
            f"{record.input_length} tokens do not fill {n} blocks of {block_size} tokens"
            f" (needs {(n - 1) * block_size + 1} to {n * block_size}); is --block-size right?",
        )


def checked_total(path: str, line_number: int, total_prompt_tokens: int) -> int:
    """REPLAY-RESULT-3: a total is a signed 64-bit count, like every count of the trace; the hit
    tokens, at most the prompt tokens request by request (REPLAY-HIT-1), never pass it first."""
    if total_prompt_tokens > INT64_MAX:
        raise TraceError(path, line_number, "input_length", "REPLAY-RESULT-3",
                         f"the prompt tokens up to this line sum to {total_prompt_tokens}, past 2^63 - 1, the largest total a result holds")
    return total_prompt_tokens


@snapshot(lambda policy, hash_ids: policy.is_resident(policy.blocks(hash_ids)[0]), "first_resident")
@require(lambda hash_ids: len(hash_ids) >= 1, "REPLAY-TRACE-2: at least one block")
@ensure(lambda policy: policy.state_invariants_hold(), "S3-QUEUE-2, S3-FREQ-1, S3-INV-1..3, LRU-CAP-1, FIFO-CAP-1")
@ensure(lambda OLD, result: OLD.first_resident or result == 0, "REPLAY-INV-3: a request whose first block is not resident hits 0")
def scan_then_access(policy: Policy, hash_ids: list[int]) -> int:
    """REPLAY-PREFIX-3, REPLAY-ACCESS-1: scan the prefix, then access every block; k, the hit blocks."""
    blocks = policy.blocks(hash_ids)  # REPLAY-TRACE-4
    k = prefix_hit_blocks(blocks, policy.is_resident)  # REPLAY-PREFIX-3: before any access
    for h in blocks:
        policy.access(h)  # REPLAY-ACCESS-1: hit or miss, in order
    return k


def request_hit_blocks(policy: Cache, blocks: list[int], input_length: int) -> int:
    """A request's hit blocks, changing nothing: its resident prefix (REPLAY-PREFIX-1 to
    REPLAY-PREFIX-3), or what an engine makes of it (REPLAY-DIALECT-4, REPLAY-DIALECT-5, REPLAY-DIALECT-7)."""
    k = prefix_hit_blocks(blocks, policy.is_resident)
    return policy.hit_blocks(k, blocks, input_length) if isinstance(policy, EngineCache) else k


@ensure(lambda policy: policy.state_invariants_hold(), "S3-QUEUE-2, S3-FREQ-1, S3-INV-1..3, LRU-CAP-1, FIFO-CAP-1, the dialect's own, REPLAY-DIALECT-6")
def serve_request(policy: Cache, blocks: list[int], input_length: int, k: int) -> None:
    """After the scan, the request's accesses (REPLAY-ACCESS-1), or an engine's run of it whole."""
    if isinstance(policy, EngineCache):
        policy.run(blocks, input_length, k)
        return
    for h in blocks:
        policy.access(h)


@snapshot(lambda policy, hash_ids: policy.is_resident(policy.blocks(hash_ids)[0]), "first_resident")
@require(lambda hash_ids: len(hash_ids) >= 1, "REPLAY-TRACE-2: at least one block")
@ensure(lambda policy: policy.state_invariants_hold(), "LRU-CAP-1, FIFO-CAP-1, the dialect's own, REPLAY-DIALECT-6")
@ensure(lambda OLD, result: OLD.first_resident or result[0] == 0, "REPLAY-INV-3: a request whose first block is not resident hits 0")
def run_whole(policy: EngineCache, hash_ids: list[int], input_length: int) -> tuple[int, int]:
    """REPLAY-DIALECT-4 to REPLAY-DIALECT-9: look the request up, then run it whole; its hit
    blocks, and the blocks it stored."""
    blocks = policy.blocks(hash_ids)
    k = request_hit_blocks(policy, blocks, input_length)
    return k, policy.run(blocks, input_length, k)


def replay_request(policy: Cache, hash_ids: list[int], input_length: int, block_size: int) -> int:
    """One request's hit tokens: its hit blocks, scanned before its blocks are accessed, as tokens."""
    if isinstance(policy, EngineCache):
        return hit_tokens(run_whole(policy, hash_ids, input_length)[0], block_size, input_length)
    return hit_tokens(scan_then_access(policy, hash_ids), block_size, input_length)


class Server(Protocol):
    """What serves a replay's requests: the reference's own cache, or (``kvspec replay
    --adapter``) an implementation driven in lockstep with it."""

    def request(self, hash_ids: list[int], input_length: int) -> int:
        """One request's hit tokens, with every block accessed (REPLAY-PREFIX-3, REPLAY-ACCESS-1)."""

    def resident_count(self) -> int:
        """REPLAY-RESULT-4."""


@dataclass(frozen=True)
class PolicyServer:
    """The reference's cache as a Server."""

    policy: Cache
    block_size: int

    def request(self, hash_ids: list[int], input_length: int) -> int:
        return replay_request(self.policy, hash_ids, input_length, self.block_size)

    def resident_count(self) -> int:
        return self.policy.resident_count()


def __getattr__(name: str) -> object:
    """RequestResult and ReplayResult, loaded with pydantic when one is first asked for (models.py)."""
    if name in ("RequestResult", "ReplayResult"):
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Replayed:
    """REPLAY-RESULT-1 to REPLAY-RESULT-4: a replay's result as the replay makes it, with ReplayResult's
    fields in its order (tests/test_startup.py holds them to it); ReplayResult validates it, and
    writes the JSON (conformance/cli/spool.py writes the same JSON without pydantic)."""

    policy: PolicyName
    block_size: int
    small_ratio: float | None
    max_freq: int | None
    requests: int
    total_hit_tokens: int
    total_prompt_tokens: int
    final_cache_blocks: int
    cache_capacity_blocks: int
    dialect: list[str] | None
    per_request: list[RequestResult] | None


class RequestSink(Protocol):
    """REPLAY-RESULT-2: where a replay puts each request's line as it is made, in trace order,
    instead of a list (``kvspec replay --per-request`` spools them to a file). It keeps their
    running sums, so that REPLAY-RESULT-3 is checked without keeping the lines."""

    hit_tokens: int
    prompt_tokens: int

    def add(self, line: RequestResult) -> None: ...


@require(lambda per_request, sink: not (per_request and sink is not None), "REPLAY-RESULT-2: the lines go to the result or to a sink")
@ensure(
    lambda sink, result: sink is None or (sink.hit_tokens, sink.prompt_tokens) == (result.total_hit_tokens, result.total_prompt_tokens),
    "REPLAY-RESULT-3: the per-request lines given to the sink sum to the totals",
)
@ensure(
    lambda result: result.per_request is None or sum(r.hit_tokens for r in result.per_request) == result.total_hit_tokens,
    "REPLAY-RESULT-3: per-request hit tokens sum to the total",
)
@ensure(
    lambda result: result.per_request is None or sum(r.prompt_tokens for r in result.per_request) == result.total_prompt_tokens,
    "REPLAY-RESULT-3: per-request prompt tokens sum to the total",
)
@ensure(lambda result: result.final_cache_blocks <= max(result.cache_capacity_blocks, 0), "REPLAY-INV-2")
def replayed(
    records: Iterable[tuple[int, TraceRecord | Request]],
    config: ReplayConfig,
    *,
    path: str = "<trace>",
    per_request: bool = False,
    server: Server | None = None,
    sink: RequestSink | None = None,
) -> Replayed:
    """REPLAY-1: replay a trace's requests in order against one empty cache (``server``'s, when
    given). ``per_request`` keeps every request's line in the result; a ``sink`` takes them one
    at a time instead, so that memory does not grow with the trace."""
    if server is None:
        server = PolicyServer(make_policy(config), config.block_size)
    requests = total_hit_tokens = total_prompt_tokens = 0
    lines: list[RequestResult] | None = [] if per_request else None
    add = lines.append if lines is not None else sink.add if sink is not None else None
    if add is not None:
        from .models import RequestResult
    block_size, request = config.block_size, server.request
    for line_number, record in records:
        check_block_count(path, line_number, record, block_size)
        total_prompt_tokens = checked_total(path, line_number, total_prompt_tokens + record.input_length)  # REPLAY-HIT-2
        hit = request(record.hash_ids, record.input_length)
        requests += 1
        total_hit_tokens += hit
        if add is not None:
            add(RequestResult(hit_tokens=hit, prompt_tokens=record.input_length))
    s3fifo = config.policy == "s3fifo"
    max_freq = config.max_freq if s3fifo else None
    if "freq-unsaturated" in config.dialect:  # the clause cited below, where only that dialect runs (FIX-4)
        max_freq = None  # S3-DIALECT-13: none is used
    return Replayed(
        policy=config.policy,
        block_size=config.block_size,
        small_ratio=config.small_ratio if s3fifo else None,
        max_freq=max_freq,
        requests=requests,
        total_hit_tokens=total_hit_tokens,
        total_prompt_tokens=total_prompt_tokens,
        final_cache_blocks=server.resident_count(),  # REPLAY-RESULT-4
        cache_capacity_blocks=config.capacity,
        dialect=in_catalogue_order(config.dialect) or None,
        per_request=lines,
    )


def replay(records: Iterable[tuple[int, TraceRecord | Request]], config: ReplayConfig, *, path: str = "<trace>", per_request: bool = False,
           server: Server | None = None, sink: RequestSink | None = None) -> ReplayResult:
    """The replay's result (replayed) as a ReplayResult."""
    from .models import ReplayResult

    return ReplayResult(**vars(replayed(records, config, path=path, per_request=per_request, server=server, sink=sink)))
