"""An implementation under test inside kvspec's own process, held to the protocol's rules (PROTO-29).

``in-process:module:factory`` names an object that kvspec calls directly (``python:module:factory``
runs the same object in a process of its own, PROTO-18). It is as untrusted as a process: every
call has the deadline of PROTO-15; whatever it raises (a BaseException too: KeyboardInterrupt,
SystemExit, GeneratorExit, its own), and every value of the wrong type or out of range it returns,
is a failure of the implementation, reported as AdapterFailure with the clause it broke, never an
exception of kvspec's. Everything of the implementation's that runs, its methods and also the
``repr``, ``str``, ``==``, attributes and iteration of what it returns, runs inside the deadline.
After a failure the object is done with; kvspec builds a fresh one with ``factory()``.

The deadline and what a call that breaks it raises are adapters/deadline.py's.
"""

import json
from collections.abc import Callable
from typing import Any, NoReturn

from pydantic import TypeAdapter, ValidationError

from kvspec.reference import ALL_POLICIES
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims
from kvspec.reference.validation import INT64_MAX, INT64_MIN

from .benefit import BenefitState
from .deadline import TAKEN, Expired, Misreply, Raised, T, TimerTaken, within
from .deadline import WATCHDOG as WATCHDOG  # X as X: a name its importers read from this module, where it was first written
from .interface import (
    AdapterConfig,
    AdapterFailure,
    ConfigRefused,
    Finished,
    Identity,
    LifecycleState,
    Level,
    Snapshot,
    described,
    described_error,
    printable,
)
from .lifecycle_messages import FinishReply, LifecycleStateReply, LookupReply, MadeReply
from .protocol import BenefitStateReply, CapRepairReply, DecisionReply, VictimsReply
from .wire import as_received, cap_json, cap_of, decision_json, decision_of, lifecycle_reply_json, state_json, state_of, summary

LEVELS = ("results", "state")
DECISION_REPLY: TypeAdapter[Any] = TypeAdapter(DecisionReply)
VICTIMS_REPLY: TypeAdapter[Any] = TypeAdapter(VictimsReply)
CAP_REPAIR_REPLY: TypeAdapter[Any] = TypeAdapter(CapRepairReply)
BENEFIT_STATE_REPLY: TypeAdapter[Any] = TypeAdapter(BenefitStateReply)
# PROTO-37 to PROTO-44: the reply schema each lifecycle operation's result is checked against
LIFECYCLE_REPLIES: dict[str, TypeAdapter[Any]] = {"lookup": TypeAdapter(LookupReply), "allocate": TypeAdapter(MadeReply),
                                                  "decode": TypeAdapter(MadeReply), "finish": TypeAdapter(FinishReply),
                                                  "lifecycle_state": TypeAdapter(LifecycleStateReply)}
ADAPTER_CLAUSE = "PROTO-"


class InProcessAdapter:
    """The Adapter and BenefitAdapter an object built by ``factory`` offers, every call guarded."""

    def __init__(self, name: str, factory: Callable[[], Any], reply_timeout: float = 10.0, start_timeout: float = 30.0) -> None:
        self.name = name
        self.reply_timeout = reply_timeout
        self._failed: str | None = None
        self._inner = self._guard("the factory", factory, timeout=start_timeout)
        self.identity = self._guard("identity", lambda: identity_of(self._inner.identity), timeout=start_timeout)
        self.level: Level = self._guard("level", lambda: level_of(self._inner.level), timeout=start_timeout)
        self.policies: tuple[str, ...] = self._guard("policies", lambda: policies_of(self._inner.policies), timeout=start_timeout)
        self.lifecycle: bool = self._guard("lifecycle", lambda: lifecycle_of(getattr(self._inner, "lifecycle", False)), timeout=start_timeout)

    @property
    def failed(self) -> bool:
        """True once the implementation has failed: the object is done with, a fresh one is needed."""
        return self._failed is not None

    def _fail(self, what: str, problem: str, clause: str, timed_out: bool = False) -> NoReturn:
        self._failed = problem
        raise AdapterFailure(f"{self.name}: {what}: {problem}", clause, timed_out)

    def _guard(self, what: str, call: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """PROTO-29: ``call(*args)`` within the deadline; any exception, or none in time, is the implementation's failure."""
        if self._failed is not None:
            raise AdapterFailure(f"{self.name}: {what}: the implementation has already failed: {self._failed}", "PROTO-29")
        seconds = self.reply_timeout if timeout is None else timeout
        try:
            return within(seconds, call, *args, label=f"{self.name}: {what}")
        except TimerTaken:
            self._fail(what, f"{TAKEN}, and gave no reply to {what} within {seconds:g} s", "PROTO-29", timed_out=True)
        except Expired:
            self._fail(what, f"no reply to {what} within {seconds:g} s (hung?)", "PROTO-15", timed_out=True)
        except Misreply as misreply:  # the watchdog's own finding
            self._fail(what, misreply.problem, misreply.clause)
        except Raised as raised:
            self._raised(what, raised)

    def _raised(self, what: str, raised: Raised) -> NoReturn:
        """What the call raised: a value kvspec found wrong (Misreply), a refusal, the adapter's own
        account of its failure (AdapterFailure), or any other exception, each the implementation's failure."""
        error = raised.error
        if isinstance(error, Misreply):
            self._fail(what, error.problem, error.clause)
        message = raised.described.partition(": ")[2]
        if isinstance(error, ConfigRefused):
            if what not in ("configure", "configure_benefit"):
                self._fail(what, "raised ConfigRefused, which only configure may raise", "PROTO-29")
            raise ConfigRefused(message) from None  # kvspec's own object, its message read within the deadline
        if isinstance(error, AdapterFailure):  # raised by the adapter itself: its own account of what went wrong
            clause = error.clause if type(error.clause) is str and error.clause.startswith(ADAPTER_CLAUSE) else "PROTO-29"
            self._fail(what, message, printable(clause)[:20])
        self._fail(what, f"raised {raised.described}", "PROTO-29")

    def _method(self, name: str, *args: Any, check: Callable[[Any], Any] | None = None) -> Any:
        """The implementation's method ``name`` called, and what it returns checked by ``check``, within the deadline."""
        if check is None:
            return self._guard(name, lambda: getattr(self._inner, name)(*args))
        return self._guard(name, lambda: check(getattr(self._inner, name)(*args)))

    # The Adapter methods (PROTO-7 to PROTO-12) ----------------------------------------------------

    def configure(self, config: AdapterConfig) -> None:
        self._method("configure", as_received(config))

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return self._method("hit_tokens", list(hash_ids), input_length, check=lambda value: count("hit_tokens", value))  # type: ignore[no-any-return]

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        if input_length is None:
            self._method("access", list(hash_ids))
        else:
            # PROTO-10: a keyword; an adapter whose access takes none fails here, guarded (PROTO-29)
            self._guard("access", lambda ids: self._inner.access(ids, input_length=input_length), list(hash_ids))

    def resident_count(self) -> int:
        return self._method("resident_count", check=lambda value: count("resident_count", value))  # type: ignore[no-any-return]

    def snapshot(self) -> Snapshot:
        return self._method("snapshot", check=snapshot_of)  # type: ignore[no-any-return]

    # The BenefitAdapter methods (PROTO-20 to PROTO-28) --------------------------------------------

    def configure_benefit(self, config: BenefitConfig) -> None:
        self._method("configure_benefit", config)

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        def decision(value: Any) -> Decision:
            if value is None:
                raise Misreply("returned None, and a decision is due", "PROTO-21")
            return decision_of(wired(DECISION_REPLY, lambda: {"decision": decision_json(value)}).decision)

        return self._method("consider_admission", key, exclusive_bytes, list(shared), cost, pinned, check=decision)  # type: ignore[no-any-return]

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        def decision(value: Any) -> Decision | None:
            reply = wired(DECISION_REPLY, lambda: {"decision": decision_json(value)})
            return None if reply.decision is None else decision_of(reply.decision)

        return self._method("record_hit", key, cost, check=decision)  # type: ignore[no-any-return]

    def record_miss(self, key: int) -> None:
        self._method("record_miss", key)

    def observe_pressure(self, pressure: float) -> None:
        self._method("observe_pressure", pressure)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        def victims(value: Any) -> Victims:
            reply = wired(VICTIMS_REPLY, lambda: {"keys": list(value.keys), "freed": value.freed})
            return Victims(tuple(reply.keys), reply.freed)

        return self._method("choose_victims", bytes_to_free, pinned, check=victims)  # type: ignore[no-any-return]

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        def repair(value: Any) -> CapRepair:
            if value is None:
                raise Misreply("returned None, and a cap repair is due", "PROTO-26")
            return cap_of(wired(CAP_REPAIR_REPLY, lambda: {"cap": cap_json(value)}).cap)

        return self._method("select_probation_cap_victims", pinned, check=repair)  # type: ignore[no-any-return]

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        def repair(value: Any) -> CapRepair | None:
            reply = wired(CAP_REPAIR_REPLY, lambda: {"cap": cap_json(value)})
            return None if reply.cap is None else cap_of(reply.cap)

        return self._method("remove", key, pinned, check=repair)  # type: ignore[no-any-return]

    def benefit_state(self) -> BenefitState:
        return self._method("benefit_state", check=lambda value: state_of(wired(BENEFIT_STATE_REPLY, lambda: state_json(value))))  # type: ignore[no-any-return]

    # The LifecycleAdapter methods (PROTO-37 to PROTO-44): the Pool's, by name and arguments -------------

    def arrive(self, rid: int, hash_ids: list[int], input_length: int) -> None:
        self._method("arrive", rid, list(hash_ids), input_length)

    def lookup(self, rid: int) -> int:
        return self._lifecycle("lookup", rid).k  # type: ignore[no-any-return]

    def allocate(self, rid: int) -> bool:
        return self._lifecycle("allocate", rid).made  # type: ignore[no-any-return]

    def compute(self, rid: int, upto: int) -> None:
        self._method("compute", rid, upto)

    def decode(self, rid: int) -> bool:
        return self._lifecycle("decode", rid).made  # type: ignore[no-any-return]

    def finish(self, rid: int) -> Finished:
        reply = self._lifecycle("finish", rid)
        return Finished(reply.hit_tokens, reply.recomputed_tokens)

    def preempt(self, rid: int) -> None:
        self._method("preempt", rid)

    def lifecycle_state(self) -> LifecycleState:
        reply = self._lifecycle("lifecycle_state")
        return LifecycleState(tuple(reply.small), tuple(reply.main), tuple(reply.ghost), tuple(reply.refs), tuple(reply.pending), reply.held)

    def _lifecycle(self, name: str, *args: Any) -> Any:
        """PROTO-29: the method's result through its reply's schema, read back from its JSON, as a process's reply is."""
        return self._method(name, *args, check=lambda value: wired(LIFECYCLE_REPLIES[name], lambda: lifecycle_reply_json(name, value)))

    def close(self) -> None:
        """PROTO-13, PROTO-29: the object's own close, within the deadline; a failure is the implementation's."""
        if self._failed is None:
            self._method("close")
            self._failed = "closed"


def count(name: str, value: object) -> int:
    """PROTO-3: a count is an integer (never a bool) in [0, 2^63 - 1]."""
    if type(value) is not int:
        raise Misreply(f"returned a wrong type: {described(value)} where an integer is due")
    if not 0 <= value <= INT64_MAX:
        raise Misreply(f"returned {value}, out of range: a count is in [0, 2^63 - 1]")
    return value


def wired(reply: TypeAdapter[Any], convert: Callable[[], dict[str, Any]]) -> Any:
    """A benefit or lifecycle result through the reply schema its protocol message has (PROTO-19 to PROTO-28, PROTO-37 to PROTO-44),
    read back from its JSON, as a process's reply is: nothing of the implementation's objects
    (a str that equals everything, an int of its own class) reaches kvspec."""
    try:
        message = json.dumps({"seq": 0, **convert()}, allow_nan=False)
    except (AttributeError, TypeError, ValueError, RecursionError) as error:
        raise Misreply(f"returned a value of the wrong shape ({printable(described_error(error))})") from None
    try:
        return reply.validate_json(message)
    except ValidationError as error:
        raise Misreply(f"returned a value of the wrong shape ({summary(error)})") from None


def identity_of(value: object) -> Identity:
    """PROTO-5: who is under test, three strings (of str itself: a subclass could answer anything), escaped (PROTO-31)."""
    fields = [getattr(value, name, None) for name in ("name", "language", "version")]
    if not all(type(field) is str for field in fields):
        raise Misreply(f"identity is {described(value)}: an Identity of three strings (name, language, version) is due", "PROTO-5")
    return Identity(*(printable(field) for field in fields))  # type: ignore[arg-type]


def level_of(value: object) -> Level:
    """PROTO-6: one of the two levels, a str itself (an object equal to everything is none of them)."""
    if type(value) is not str or value not in LEVELS:
        raise Misreply(f"level is {described(value)}, not one of {', '.join(LEVELS)}", "PROTO-6")
    return value  # type: ignore[return-value]


def lifecycle_of(value: object) -> bool:
    """PROTO-35: whether the object offers the lifecycle, a bool itself (absent: it offers none)."""
    if type(value) is not bool:
        raise Misreply(f"lifecycle is {described(value)}, not a boolean", "PROTO-35")
    return value


def policies_of(value: object) -> tuple[str, ...]:
    """PROTO-6: at least one policy, each a str that names one."""
    policies = tuple(value)  # type: ignore[call-overload]
    if not policies or not all(type(policy) is str and policy in ALL_POLICIES for policy in policies):
        raise Misreply(f"policies is {described(policies)}: at least one of {', '.join(ALL_POLICIES)}, and no other", "PROTO-6")
    return policies


def snapshot_of(value: Any) -> Snapshot:
    """PROTO-12: the queues an object's snapshot holds, checked."""
    try:
        return Snapshot(small=entries(value.small), main=entries(value.main), ghost=hashes(value.ghost))
    except (AttributeError, TypeError, ValueError) as error:
        raise Misreply(f"returned {described(value)}: {printable(described_error(error).partition(': ')[2])}") from None


def entries(queue: object) -> tuple[tuple[int, int], ...]:
    """PROTO-12, PROTO-3: a queue of (hash, freq) pairs, a hash in signed 64 bits, a freq a count."""
    pairs = tuple(map(tuple, queue))  # type: ignore[call-overload]
    for pair in pairs:
        if len(pair) != 2 or type(pair[0]) is not int or type(pair[1]) is not int:
            raise TypeError(f"a queue entry is {described(pair)}, where a (hash, freq) pair of integers is due")
        if not (INT64_MIN <= pair[0] <= INT64_MAX and 0 <= pair[1] <= INT64_MAX):
            raise ValueError(f"a queue entry {pair} is out of range: a hash is in signed 64 bits, a freq in [0, 2^63 - 1]")
    return pairs  # type: ignore[return-value]


def hashes(queue: object) -> tuple[int, ...]:
    """PROTO-12, PROTO-3: the ghost, hashes in signed 64 bits."""
    ghost = tuple(queue)  # type: ignore[call-overload]
    for h in ghost:
        if type(h) is not int:
            raise TypeError(f"a ghost entry is {described(h)}, where a hash (an integer) is due")
        if not INT64_MIN <= h <= INT64_MAX:
            raise ValueError(f"a ghost entry {h} is out of range: a hash is in signed 64 bits")
    return ghost
