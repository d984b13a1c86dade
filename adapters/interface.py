"""What the conformance suite asks of an implementation under test (spec/adapter-protocol.md).

An adapter drives one block-cache implementation under the longest-prefix replay of
spec/replay.md. The suite configures it once per example, then for each request asks for the
request's hit tokens (the prefix scan, which must change nothing), then has it access the
request's blocks in order, then reads the resident count and, at the ``state`` level, the queues.
"""

from dataclasses import dataclass
from typing import Literal, Protocol

Level = Literal["results", "state"]
PolicyName = Literal["s3fifo", "lru", "fifo"]


@dataclass(frozen=True)
class AdapterConfig:
    """One cache to build: REPLAY-CONF-1 to REPLAY-CONF-3 and S3FIFO's knobs (S3-CONF-1, S3-CONF-6)."""

    policy: PolicyName
    capacity: int
    block_size: int = 512
    small_ratio: float = 0.1
    max_freq: int = 3


@dataclass(frozen=True)
class Snapshot:
    """The queues, head first. S3FIFO: small and main as (hash, freq), ghost as hashes;
    LRU: the recency queue in ``main``, least recent first; FIFO: the arrival queue in ``main``."""

    small: tuple[tuple[int, int], ...] = ()
    main: tuple[tuple[int, int], ...] = ()
    ghost: tuple[int, ...] = ()


@dataclass(frozen=True)
class Identity:
    """Who is under test, for the report."""

    name: str
    language: str
    version: str


class AdapterFailure(Exception):
    """The implementation broke the protocol: it crashed, hung, or replied out of turn or out of
    shape. The suite reports it as a failure of that implementation, never as its own error."""


class ConfigRefused(Exception):
    """The implementation refused a configuration (as it must refuse one a clause refuses)."""


class Adapter(Protocol):
    """An implementation under test. Every method may raise AdapterFailure."""

    identity: Identity
    level: Level

    def configure(self, config: AdapterConfig) -> None:
        """Build an empty cache for ``config`` (replacing any earlier one), or raise ConfigRefused."""

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """REPLAY-PREFIX-1 to REPLAY-HIT-1 for one request; MUST NOT change the cache."""

    def access(self, hash_ids: list[int]) -> None:
        """REPLAY-ACCESS-1: access every block of the request, in order."""

    def resident_count(self) -> int:
        """REPLAY-RESULT-4: the blocks resident now."""

    def snapshot(self) -> Snapshot:
        """The queues (``state`` level only)."""

    def close(self) -> None:
        """Release the implementation (end its process, if it has one)."""
