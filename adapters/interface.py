"""What the conformance suite asks of an implementation under test (spec/adapter-protocol.md).

An adapter drives one block-cache implementation under the longest-prefix replay of
spec/replay.md. The suite configures it once per example, then for each request asks for the
request's hit tokens (the prefix scan, which must change nothing), then has it access the
request's blocks in order, then reads the resident count and, at the ``state`` level, the queues.
An implementation that offers the lifecycle (LifecycleAdapter) also runs requests in flight in one
pool, by the reference Pool's operations.
"""

from dataclasses import dataclass
from typing import Literal, Protocol

from kvspec.reference.replay import PolicyName, ReplayConfig

Level = Literal["results", "state"]


@dataclass(frozen=True)
class AdapterConfig:
    """One cache to build: REPLAY-CONF-1 to REPLAY-CONF-3 and S3FIFO's knobs (S3-CONF-1, S3-CONF-6)."""

    policy: PolicyName
    capacity: int
    block_size: int = ReplayConfig.block_size
    small_ratio: float = ReplayConfig.small_ratio
    max_freq: int = ReplayConfig.max_freq


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
    """The implementation broke the protocol: it crashed, hung, raised, or replied out of turn,
    out of shape or with a wrong type. The suite reports it as a failure of that implementation,
    never as its own error; ``clause`` is the protocol clause it broke (PROTO-15 unless said)."""

    def __init__(self, message: str, clause: str = "PROTO-15", timed_out: bool = False) -> None:
        super().__init__(message)
        self.clause = clause
        self.timed_out = timed_out  # a deadline passed: every replay of the example would wait it out again


class ConfigRefused(Exception):
    """The implementation refused a configuration (as it must refuse one a clause refuses)."""


class Adapter(Protocol):
    """An implementation under test. Every method may raise AdapterFailure."""

    identity: Identity
    level: Level
    policies: tuple[str, ...]  # PROTO-6: the policies it implements, among spec/replay.md's and spec/benefit.md's

    def configure(self, config: AdapterConfig) -> None:
        """Build an empty cache for ``config`` (replacing any earlier one), or raise ConfigRefused."""

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        """REPLAY-PREFIX-1 to REPLAY-HIT-1 for one request; MUST NOT change the cache."""

    def access(self, hash_ids: list[int]) -> None:
        """REPLAY-ACCESS-1: access every block of the request, in order. In a dialect of the engine
        replay (spec/dialects.md sections 7 and 8) the suite also passes ``input_length=L``
        (PROTO-10), so an adapter certified in one takes that keyword too; no other adapter is ever
        passed it (the Protocol leaves it out, so that every other adapter matches it)."""

    def resident_count(self) -> int:
        """REPLAY-RESULT-4: the blocks resident now."""

    def snapshot(self) -> Snapshot:
        """The queues (``state`` level only)."""

    def close(self) -> None:
        """Release the implementation (end its process, if it has one)."""


@dataclass(frozen=True)
class Finished:
    """PROTO-42: a finished request's accounting, as the reference Pool's finish returns it (a Request has these two)."""

    hit_tokens: int  # LIFE-HIT-1
    recomputed_tokens: int  # LIFE-HIT-2


@dataclass(slots=True)
class Accounting:
    """LIFE-HIT-1, LIFE-HIT-2 for an implementation that offers the lifecycle and counts from its own hits
    (docs/certifications/vllm/adapter.py, tests/engines/vllm_model.py): PROTO-42's answer, in tokens."""

    hit_tokens: int | None = None  # its first allocation made's
    recomputed_tokens: int = 0
    computed_before: int = 0  # the prompt tokens it had computed when it was last preempted

    def admitted(self, hit_tokens: int) -> None:
        """An allocation made, hitting ``hit_tokens`` of its prompt: the first counts them, a later one the
        tokens it had computed that it does not hit."""
        if self.hit_tokens is None:
            self.hit_tokens = hit_tokens
        else:
            self.recomputed_tokens += max(0, self.computed_before - hit_tokens)

    def finished(self) -> Finished:
        return Finished(self.hit_tokens or 0, self.recomputed_tokens)


@dataclass(frozen=True)
class LifecycleState:
    """PROTO-44: the pool (spec/lifecycle.md section 1): the queues as a Snapshot's, each referenced block with
    its count by hash id, the resident blocks not computed by hash id, and the count of blocks held."""

    small: tuple[tuple[int, int], ...] = ()
    main: tuple[tuple[int, int], ...] = ()
    ghost: tuple[int, ...] = ()
    refs: tuple[tuple[int, int], ...] = ()
    pending: tuple[int, ...] = ()
    held: int = 0


class LifecycleAdapter(Adapter, Protocol):
    """PROTO-35 to PROTO-44: an implementation that offers the lifecycle (``lifecycle`` true). Its
    methods are the reference Pool's (reference/lifecycle.py), by name and arguments, on the pool
    its last ``configure`` built empty; kvspec calls each only when the pool's state allows it (PROTO-36)."""

    lifecycle: bool

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        """LIFE-ARRIVE-1."""

    def lookup(self, rid: int) -> int:
        """LIFE-LOOKUP-1: k; it changes nothing."""

    def allocate(self, rid: int) -> bool:
        """LIFE-ALLOC-1 to LIFE-ALLOC-4: whether the allocation is made."""

    def compute(self, rid: int, upto: int) -> None:
        """LIFE-COMPUTE-1: the request's blocks [computed, upto) computed."""

    def decode(self, rid: int) -> bool:
        """LIFE-DECODE-1: whether the block is made."""

    def finish(self, rid: int) -> Finished:
        """LIFE-FINISH-1: an object with the request's ``hit_tokens`` and ``recomputed_tokens`` (the Pool's Request is one)."""

    def preempt(self, rid: int) -> None:
        """LIFE-PREEMPT-1."""

    def lifecycle_state(self) -> LifecycleState:
        """The pool (``state`` level only)."""


def described(value: object) -> str:
    """A value an implementation gave, with its type in JSON's words, for a wrong-type message.
    Its repr is the implementation's code: a repr that raises is named as such."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array", tuple: "an array", dict: "an object"}
    kind = "null" if value is None else kinds.get(type(value), f"a {type_name(value)}")
    try:
        text = printable(repr(value))
    except Exception as error:  # noqa: BLE001 -- RecursionError for a value nested too deep, or the implementation's own
        text = f"<its repr raised {type_name(error)}>"
    return f"{text if len(text) <= 60 else text[:60] + '...'} ({kind})"


def described_error(error: BaseException) -> str:
    """``Type: message`` of an exception an implementation raised, as it is (printable escapes it where
    kvspec prints it): its message is its own code, and one that raises (or is interrupted) is named as such."""
    try:
        message = str(error)
    except BaseException as failure:  # noqa: BLE001 -- a __str__ that raises, or is stopped at the deadline
        message = f"<its message raised {type_name(failure)}>"
    text = f"{type_name(error)}: {message}" if message else type_name(error)
    return text if len(text) <= 300 else text[:300] + "..."


def type_name(value: object) -> str:
    """The name of ``value``'s class, read past any metaclass of the implementation's."""
    name = type.__dict__["__name__"].__get__(type(value))
    return name if type(name) is str else "object"


def printable(text: str) -> str:
    """PROTO-31: what an implementation says (its stderr, an error reply, a refusal, its identity, an
    exception's message), with every character a terminal acts on or that breaks a line written as
    a Python escape: C0 and C1 controls, DEL, U+2028 and U+2029, format and unassigned characters."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
