"""Longest-prefix block replay (spec/replay.md): the policy-independent half of the spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .constants import PolicyName
from .contracts import ensure, require
from .errors import TraceError
from .request import Policy, step
from .request import prefix_hit_blocks as prefix_hit_blocks  # re-exported: adapters scan their own caches with it
from .trace import Request
from .validation import INT64_MAX

if TYPE_CHECKING:
    from .models import RequestResult, TraceRecord


@dataclass(frozen=True)
class ReplayConfig:
    """REPLAY-CONF-1 to REPLAY-CONF-3, and S3FIFO's own knobs (S3-CONF-1, S3-CONF-6)."""

    policy: PolicyName = "s3fifo"
    capacity: int = 4096
    block_size: int = 512
    small_ratio: float = 0.1
    max_freq: int = 3
    dialect: frozenset[str] = frozenset()  # DIALECT-1: the variation points the policy is replayed with (reference/caches.py)


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


def replay_request(policy: Policy, hash_ids: list[int], input_length: int, block_size: int) -> int:
    """One request's hit tokens: its blocks looked up, then served (reference/request.py)."""
    return hit_tokens(step(policy, hash_ids, input_length), block_size, input_length)


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

    policy: Policy
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
