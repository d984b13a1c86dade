"""The caches a configuration builds (spec/replay.md section 2, in a dialect spec/dialects.md), and
the replay of a trace through one (spec/replay.md section 4).

The one module of the reference, outside reference/dialects/, that knows of dialects: the
canonical rules (replay.py, request.py, s3fifo.py, lru.py, fifo.py) import nothing of them
(tests/test_layers.py), and every question a dialect changes about building a cache or reporting
its replay is asked here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import serve
from .constants import POLICIES
from .contracts import ensure, require
from .dialects import CANONICAL as CANONICAL  # re-exported: the dialect of the canonical spec
from .dialects import Dialect as Dialect  # re-exported, with it
from .dialects import EngineCache, dialect_for, dialect_policy, in_catalogue_order, runs_whole
from .errors import ConfigError
from .fifo import FIFO
from .lru import LRU
from .replay import PolicyServer, ReplayConfig, Replayed, RequestSink, Server, check_block_count, checked_total
from .request import BlockPolicy, Policy, access_every_block
from .s3fifo import S3FIFO
from .trace import Request
from .validation import check_count

if TYPE_CHECKING:
    from .models import ReplayResult, RequestResult, TraceRecord


def make_policy(config: ReplayConfig) -> Policy:
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


def reported(config: ReplayConfig) -> tuple[float | None, int | None]:
    """The knobs a replay's result reports, small_ratio and max_freq: S3FIFO's alone."""
    if config.policy != "s3fifo":
        return None, None
    if "freq-unsaturated" in config.dialect:  # the clause cited below, where only that dialect runs (FIX-4)
        return config.small_ratio, None  # S3-DIALECT-13: none is used
    return config.small_ratio, config.max_freq


class StoreCounter(BlockPolicy):
    """A block policy that counts, in ``stored``, the blocks that become resident in it: its
    accesses of a block not resident just before (BEN-PREFIX-7's bytes written)."""

    def __init__(self, policy: BlockPolicy) -> None:
        self.policy = policy
        self.stored = 0

    def blocks(self, hash_ids: list[int]) -> list[int]:
        return self.policy.blocks(hash_ids)

    def is_resident(self, h: int) -> bool:
        return self.policy.is_resident(h)

    def lookup(self, blocks: list[int], input_length: int) -> int:
        return self.policy.lookup(blocks, input_length)

    serve = access_every_block  # through access below, which counts

    def access(self, h: int) -> None:
        self.stored += not self.policy.is_resident(h)
        self.policy.access(h)

    def resident_count(self) -> int:
        return self.policy.resident_count()

    def state_invariants_hold(self) -> bool:
        return self.policy.state_invariants_hold()


def counting_stores(config: ReplayConfig) -> StoreCounter | EngineCache:
    """An empty cache of ``config`` that counts, in ``stored``, the blocks that become resident in
    it: an engine counts those its requests store, a block policy is given a StoreCounter."""
    policy = make_policy(config)
    return policy if runs_whole(config.dialect) else StoreCounter(policy)  # type: ignore[arg-type]


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
    small_ratio, max_freq = reported(config)
    return Replayed(
        policy=config.policy,
        block_size=config.block_size,
        small_ratio=small_ratio,
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


def server_for(config: ReplayConfig) -> type[serve.Server]:
    """spec/lifecycle.md section 6's server of the configuration: the canonical one, or an engine's pool in
    its dialect (spec/dialects.md section 9); a ConfigError for a dialect whose lifecycle is not specified."""
    if not config.dialect:
        return serve.Server
    if config.policy == "lru" and config.dialect == dialect_for("lru", "vllm"):
        from .dialects.in_flight import VllmServer

        return VllmServer
    if config.policy in ("lru", "fifo") and config.dialect in (dialect_for(config.policy, "sglang"), dialect_for(config.policy, "sglang-unified")):
        from .dialects.in_flight_radix import SglangServer

        return SglangServer
    if config.policy in ("lru", "fifo") and config.dialect == dialect_for(config.policy, "lmcache"):
        from .dialects.in_flight_lmcache import LmcacheServer

        return LmcacheServer
    raise ConfigError("LIFE-VLLM-1", "a served replay takes the canonical policies and the dialects vllm, sglang, sglang-unified and "
                                     "lmcache (exactly: no --variation; spec/dialects.md section 9)")


def pool_for(config: ReplayConfig) -> Callable[[], Any]:
    """spec/lifecycle.md sections 1 to 5's pool of the configuration, as the adapter protocol's lifecycle
    operations drive it (PROTO-37 to PROTO-43): the reference Pool for the canonical policies; a
    ConfigError for a dialect whose lifecycle the protocol does not yet reach. vLLM's pool in its dialect
    takes them as LIFE-VLLM-10 to LIFE-VLLM-16 say."""
    if not config.dialect:
        from .lifecycle import Pool

        return lambda: Pool.empty(config)
    if config.policy == "lru" and config.dialect == dialect_for("lru", "vllm"):
        from .dialects.in_flight_lifecycle import VllmLifecycle

        return lambda: VllmLifecycle.empty(config)
    raise ConfigError("LIFE-VLLM-10", "the lifecycle's operations take the canonical policies and the dialect vllm of lru (another "
                                      "dialect's pool in flight is served by `kvspec replay --serve --dialect`, spec/dialects.md "
                                      "section 9)")
