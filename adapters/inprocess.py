"""An implementation under test inside kvspec's own process, held to the protocol's rules (PROTO-29).

``python:module:factory`` names an object that kvspec calls directly. It is as untrusted as a
process: every call has the deadline of PROTO-15, every exception it raises and every value of
the wrong type or out of range it returns is a failure of the implementation, reported as
AdapterFailure with the clause it broke, never an exception of kvspec's. After a failure the object
is done with; kvspec builds a fresh one with ``factory()`` (launch.py).

The deadline is kept by SIGALRM in the main thread (Watchdog): it interrupts Python code, a sleep
and a blocking wait. Elsewhere a worker thread waits instead. Neither can
stop native code that never returns to the interpreter; such an implementation is served in a
process of its own: ``cmd:python -m kvspec.adapters.serve python:module:factory``.
"""

import atexit
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from pydantic import TypeAdapter, ValidationError

from kvspec.reference import ALL_POLICIES
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims
from kvspec.reference.validation import INT64_MAX, INT64_MIN

from .benefit import BenefitState
from .interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot, described
from .protocol import BenefitStateReply, CapRepairReply, DecisionReply, VictimsReply
from .wire import as_received, cap_json, cap_of, decision_json, decision_of, state_json, state_of, summary

T = TypeVar("T")
MAIN_THREAD = threading.main_thread().ident
LEVELS = ("results", "state")
DECISION_REPLY: TypeAdapter[Any] = TypeAdapter(DecisionReply)
VICTIMS_REPLY: TypeAdapter[Any] = TypeAdapter(VictimsReply)
CAP_REPAIR_REPLY: TypeAdapter[Any] = TypeAdapter(CapRepairReply)
BENEFIT_STATE_REPLY: TypeAdapter[Any] = TypeAdapter(BenefitStateReply)


class Expired(BaseException):
    """A deadline passed. A BaseException, so that an implementation's ``except Exception`` cannot swallow it."""


def within(seconds: float, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, or Expired once ``seconds`` have passed (PROTO-15's timeouts, PROTO-29)."""
    if threading.get_ident() == MAIN_THREAD and WATCHDOG.free():
        return WATCHDOG.run(seconds, call, *args)
    return _waited(seconds, lambda: call(*args))


class Watchdog:
    """One interval timer (SIGALRM) that ticks while calls are guarded and raises Expired in the
    call that has run past its deadline. Arming a timer per call would cost two system calls a
    call; a call here costs two assignments, and the deadline is kept within a tick. The timer is
    borrowed: taken only while no other is set (a test runner's timeout, the host's own alarm),
    and the host's SIGALRM handler is put back when it stops."""

    TICK = 0.1  # seconds between checks
    IDLE = 2.0  # seconds without a guarded call before the timer stops

    def __init__(self) -> None:
        self.deadline: float | None = None
        self.last_call = 0.0
        self.ticking = False
        self.host_handler: Any = signal.SIG_DFL

    def free(self) -> bool:
        """The timer is the watchdog's already, or no one's."""
        return self.ticking or signal.getitimer(signal.ITIMER_REAL)[0] == 0.0

    def run(self, seconds: float, call: Callable[..., T], *args: Any) -> T:
        if not self.ticking:
            host_handler = signal.signal(signal.SIGALRM, self.tick)
            self.host_handler = signal.SIG_DFL if host_handler is None else host_handler  # None: a handler set outside Python
            signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)
            self.ticking = True
            atexit.register(self.stop)  # a tick during the interpreter's shutdown would end the process
        self.deadline = time.monotonic() + seconds
        try:
            return call(*args)
        finally:
            self.deadline = None
            self.last_call = time.monotonic()

    def tick(self, signum: int, frame: object) -> None:
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            self.deadline = now + self.TICK * 10  # raised again, later, in code that catches even a BaseException
            raise Expired
        if self.deadline is None and now - self.last_call > self.IDLE:
            self.stop()

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.host_handler)
        self.ticking = False
        atexit.unregister(self.stop)


WATCHDOG = Watchdog()


def _waited(seconds: float, call: Callable[[], T]) -> T:
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # noqa: BLE001 -- handed to the waiting thread as it is
            outcome.append((False, error))

    worker = threading.Thread(target=run, daemon=True)  # left behind, with the object, if it never returns
    worker.start()
    worker.join(seconds)
    if not outcome:
        raise Expired
    returned, value = outcome[0]
    if returned:
        return value  # type: ignore[no-any-return]
    raise value


class InProcessAdapter:
    """The Adapter and BenefitAdapter an object built by ``factory`` offers, every call guarded."""

    def __init__(self, name: str, factory: Callable[[], Any], reply_timeout: float = 10.0, start_timeout: float = 30.0) -> None:
        self.name = name
        self.reply_timeout = reply_timeout
        self._failed: str | None = None
        self._inner = self._guard("the factory", factory, timeout=start_timeout)
        self.identity = self._guard("identity", lambda: identity_of(self._inner.identity), timeout=start_timeout)
        self.level: Level = self._guard("level", lambda: self._inner.level, timeout=start_timeout)
        if self.level not in LEVELS:
            self._fail("level", f"level is {described(self.level)}, not one of {', '.join(LEVELS)}", "PROTO-6")
        self.policies: tuple[str, ...] = self._guard("policies", lambda: tuple(self._inner.policies),
                                                     timeout=start_timeout)
        unknown = [policy for policy in self.policies if policy not in ALL_POLICIES]
        if not self.policies or unknown:
            self._fail("policies", f"policies is {described(self.policies)}: at least one of {', '.join(ALL_POLICIES)}, and no other",
                       "PROTO-6")

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
            return within(seconds, call, *args)
        except Expired:
            self._fail(what, f"no reply to {what} within {seconds:g} s (hung?)", "PROTO-15", timed_out=True)
        except AdapterFailure as failure:  # raised by the adapter itself: its own account of what went wrong
            self._fail(what, str(failure), failure.clause)
        except ConfigRefused:
            if what not in ("configure", "configure_benefit"):
                self._fail(what, "raised ConfigRefused, which only configure may raise", "PROTO-29")
            raise
        except (Exception, SystemExit) as error:  # noqa: BLE001 -- whatever the implementation raises is a finding
            self._fail(what, f"raised {type(error).__name__}: {error}"[:300], "PROTO-29")

    def _method(self, name: str, *args: Any) -> Any:
        return self._guard(name, getattr(self._inner, name), *args)

    def _count(self, name: str, value: object) -> int:
        """PROTO-3: a count is an integer (never a bool) in [0, 2^63 - 1]."""
        if type(value) is not int:
            self._fail(name, f"returned a wrong type: {described(value)} where an integer is due", "PROTO-29")
        if not 0 <= value <= INT64_MAX:
            self._fail(name, f"returned {value}, out of range: a count is in [0, 2^63 - 1]", "PROTO-29")
        return value

    def _wire(self, name: str, reply: TypeAdapter[Any], convert: Callable[[], dict[str, Any]]) -> Any:
        """A benefit result through the reply schema its protocol message has (PROTO-19 to PROTO-28)."""
        try:
            message = {"seq": 0, **convert()}
        except (AttributeError, TypeError, ValueError) as error:
            self._fail(name, f"returned a value of the wrong shape ({type(error).__name__}: {error})", "PROTO-29")
        try:
            return reply.validate_python(message)
        except ValidationError as error:
            self._fail(name, f"returned a value of the wrong shape ({summary(error)})", "PROTO-29")

    # The Adapter methods (PROTO-7 to PROTO-12) ----------------------------------------------------

    def configure(self, config: AdapterConfig) -> None:
        self._method("configure", as_received(config))

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        return self._count("hit_tokens", self._method("hit_tokens", list(hash_ids), input_length))

    def access(self, hash_ids: list[int], input_length: int | None = None) -> None:
        if input_length is None:
            self._method("access", list(hash_ids))
        else:
            # PROTO-10: a keyword; an adapter whose access takes none fails here, guarded (PROTO-29)
            self._guard("access", lambda ids: self._inner.access(ids, input_length=input_length), list(hash_ids))

    def resident_count(self) -> int:
        return self._count("resident_count", self._method("resident_count"))

    def snapshot(self) -> Snapshot:
        value = self._method("snapshot")
        try:
            snapshot = Snapshot(small=entries(value.small), main=entries(value.main), ghost=hashes(value.ghost))
        except (AttributeError, TypeError, ValueError) as error:
            self._fail("snapshot", f"returned {described(value)}: {error}", "PROTO-29")
        return snapshot

    # The BenefitAdapter methods (PROTO-20 to PROTO-28) --------------------------------------------

    def configure_benefit(self, config: BenefitConfig) -> None:
        self._method("configure_benefit", config)

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        value = self._method("consider_admission", key, exclusive_bytes, list(shared), cost, pinned)
        if value is None:
            self._fail("consider_admission", "returned None, and a decision is due", "PROTO-21")
        return decision_of(self._wire("consider_admission", DECISION_REPLY, lambda: {"decision": decision_json(value)}).decision)

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        value = self._method("record_hit", key, cost)
        reply = self._wire("record_hit", DECISION_REPLY, lambda: {"decision": decision_json(value)})
        return None if reply.decision is None else decision_of(reply.decision)

    def record_miss(self, key: int) -> None:
        self._method("record_miss", key)

    def observe_pressure(self, pressure: float) -> None:
        self._method("observe_pressure", pressure)

    def choose_victims(self, bytes_to_free: int, pinned: frozenset[int]) -> Victims:
        value = self._method("choose_victims", bytes_to_free, pinned)
        reply = self._wire("choose_victims", VICTIMS_REPLY, lambda: {"keys": list(value.keys), "freed": value.freed})
        return Victims(tuple(reply.keys), reply.freed)

    def select_probation_cap_victims(self, pinned: frozenset[int]) -> CapRepair:
        value = self._method("select_probation_cap_victims", pinned)
        if value is None:
            self._fail("select_probation_cap_victims", "returned None, and a cap repair is due", "PROTO-26")
        return cap_of(self._wire("select_probation_cap_victims", CAP_REPAIR_REPLY, lambda: {"cap": cap_json(value)}).cap)

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        value = self._method("remove", key, pinned)
        reply = self._wire("remove", CAP_REPAIR_REPLY, lambda: {"cap": cap_json(value)})
        return None if reply.cap is None else cap_of(reply.cap)

    def benefit_state(self) -> BenefitState:
        value = self._method("benefit_state")
        return state_of(self._wire("benefit_state", BENEFIT_STATE_REPLY, lambda: state_json(value)))

    def close(self) -> None:
        """PROTO-13, PROTO-29: the object's own close, within the deadline; a failure is the implementation's."""
        if self._failed is None:
            self._guard("close", self._inner.close)
            self._failed = "closed"


def identity_of(value: object) -> Identity:
    """PROTO-5: who is under test, three strings."""
    fields = [getattr(value, name, None) for name in ("name", "language", "version")]
    if not all(isinstance(field, str) for field in fields):
        raise AdapterFailure(f"identity is {described(value)}: an Identity of three strings (name, language, version) is due", "PROTO-5")
    return Identity(*fields)


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
