"""An implementation under test inside kvspec's own process, held to the protocol's rules (PROTO-29).

``in-process:module:factory`` names an object that kvspec calls directly (``python:module:factory``
runs the same object in a process of its own, PROTO-18). It is as untrusted as a process: every
call has the deadline of PROTO-15; whatever it raises (a BaseException too: KeyboardInterrupt,
SystemExit, GeneratorExit, its own), and every value of the wrong type or out of range it returns,
is a failure of the implementation, reported as AdapterFailure with the clause it broke, never an
exception of kvspec's. Everything of the implementation's that runs, its methods and also the
``repr``, ``str``, ``==``, attributes and iteration of what it returns, runs inside the deadline.
After a failure the object is done with; kvspec builds a fresh one with ``factory()``.

The deadline is kept by SIGALRM in the main thread (Watchdog): it interrupts Python code, a sleep
and a blocking wait. Elsewhere a worker thread waits instead. An interruption of kvspec's own (a
signal its process received: Ctrl-C, SIGTERM) passes through as it is; the same exception raised by
the implementation is the implementation's failure. An implementation that takes SIGALRM away is a
failure; a Backstop thread interrupts it where it hangs meanwhile. Nothing in kvspec's process can
survive an ``os._exit``, a crash of native code, or native code that never returns: such an
implementation is served in a process of its own (``python:module:factory``).
"""

import atexit
import json
import os
import posix
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from pydantic import TypeAdapter, ValidationError

from kvspec.reference import ALL_POLICIES
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision, Victims
from kvspec.reference.validation import INT64_MAX, INT64_MIN

from .benefit import BenefitState
from .interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot, described, described_error, printable
from .protocol import BenefitStateReply, CapRepairReply, DecisionReply, VictimsReply
from .wire import as_received, cap_json, cap_of, decision_json, decision_of, state_json, state_of, summary

T = TypeVar("T")
MAIN_THREAD = threading.main_thread().ident
LEVELS = ("results", "state")
DECISION_REPLY: TypeAdapter[Any] = TypeAdapter(DecisionReply)
VICTIMS_REPLY: TypeAdapter[Any] = TypeAdapter(VictimsReply)
CAP_REPAIR_REPLY: TypeAdapter[Any] = TypeAdapter(CapRepairReply)
BENEFIT_STATE_REPLY: TypeAdapter[Any] = TypeAdapter(BenefitStateReply)
EXIT = os._exit
EXITS = (os, posix)  # the modules an implementation may call _exit by (os._exit is posix._exit)
TAKEN = ("took SIGALRM away, which kvspec keeps the deadline with (PROTO-15): in kvspec's process it may not (served in a process "
         "of its own, python:module:factory, it may)")
HOST_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # kvspec's own interruptions (conformance/cli/interruption.py), or a host's
ADAPTER_CLAUSE = "PROTO-"


class Expired(BaseException):
    """A deadline passed. A BaseException, so that an implementation's ``except Exception`` cannot swallow it."""


class TimerTaken(Expired):
    """A deadline passed after the implementation took SIGALRM away (raised by the Backstop)."""


class Exited(BaseException):
    """The implementation called os._exit, which would end kvspec with it, silently: refused, and its failure."""


def refused_exit(status: int) -> None:
    raise Exited(f"called os._exit({status!r}), which would end kvspec's process with it")


def refusing_exits(refuse: bool) -> None:
    """os._exit and posix._exit refused (while an implementation's call runs), or given back."""
    for module in EXITS:
        module._exit = refused_exit if refuse else EXIT  # type: ignore[assignment]


class Raised(Exception):
    """The implementation raised ``error``; ``described`` is its type and message, read within the deadline."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
        self.described = printable(described_error(error))  # its own code: read here, while the deadline holds (PROTO-31)


class Misreply(Exception):
    """kvspec's own check found a value of the wrong type or out of range (PROTO-29)."""

    def __init__(self, problem: str, clause: str = "PROTO-29") -> None:
        super().__init__(problem)
        self.problem = problem
        self.clause = clause


def within(seconds: float, call: Callable[..., T], *args: Any, label: str = "") -> T:
    """``call(*args)``, or Expired once ``seconds`` have passed (PROTO-15's timeouts, PROTO-29);
    Raised for whatever the call raises, but for an interruption of kvspec's own, passed as it is.
    ``label`` names the call for the Backstop's last resort."""
    if threading.get_ident() == MAIN_THREAD and WATCHDOG.free():
        return WATCHDOG.run(seconds, call, args, label)
    return _waited(seconds, lambda: call(*args))


class Watchdog:
    """One interval timer (SIGALRM) that ticks while calls are guarded and raises Expired in the
    call that has run past its deadline. Arming a timer per call would cost two system calls a
    call; a call here costs a few assignments, and the deadline is kept within a tick. The timer
    is borrowed: taken only while no other is set (a test runner's timeout, the host's own alarm),
    and the host's SIGALRM handler is put back when it stops. While it ticks it also wraps the
    host's SIGINT and SIGTERM handlers, to tell the exception a real signal raised from the same
    exception raised by the implementation; and it keeps quiet an Expired that lands where Python
    cannot raise it (a gc callback, a ``__del__``: "Exception ignored"), raising it again at the
    next tick."""

    TICK = 0.1  # seconds between checks
    IDLE = 2.0  # seconds without a guarded call before the timer stops
    AGAIN = 1.0  # seconds after an Expired that the call has caught before it is raised again

    def __init__(self) -> None:
        self.deadline: float | None = None  # when the running call's next Expired is due
        self.due: float | None = None  # the running call's deadline
        self.label = ""
        self.last_call = 0.0
        self.last_tick = 0.0
        self.ticking = False
        self.host_handler: Any = signal.SIG_DFL
        self.host_handlers: dict[int, Callable[..., Any]] = {}
        self.host_raised: BaseException | None = None  # the exception a host's signal handler raised last
        self.host_unraisable: Callable[..., Any] = sys.unraisablehook
        self.handler = self.tick  # one bound method, compared by identity
        self.recorder = self.record
        self.urgent_handler = self.urgent

    def free(self) -> bool:
        """The timer is the watchdog's already, or no one's."""
        return self.ticking or signal.getitimer(signal.ITIMER_REAL)[0] == 0.0

    def run(self, seconds: float, call: Callable[..., T], args: tuple[Any, ...], label: str) -> T:
        now = time.monotonic()
        if not self.ticking:
            self.start()
        elif now - self.last_tick > 3 * self.TICK:  # the timer was stopped (an implementation's setitimer): armed again
            signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)
            self.last_tick = now
        self.due = self.deadline = now + seconds
        self.label = label
        refusing_exits(True)
        try:
            result = call(*args)
        except Expired:
            raise
        except BaseException as error:
            if error is self.host_raised:  # kvspec's own interruption, which must end kvspec
                raise
            if time.monotonic() >= self.due:  # whatever the call did past its deadline, it did not reply in time
                raise Expired from None
            raise Raised(error) from None
        finally:
            self.deadline = self.due = None  # no handler of the watchdog's raises in this frame (raisable)
            refusing_exits(False)
            self.last_call = time.monotonic()
            taken = signal.getsignal(signal.SIGALRM) is not self.handler
            if taken:  # kvspec's handler put back
                signal.signal(signal.SIGALRM, self.handler)
                signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)
        if taken:
            raise Misreply(TAKEN)
        return result

    def start(self) -> None:
        host_handler = signal.signal(signal.SIGALRM, self.handler)
        self.host_handler = signal.SIG_DFL if host_handler is None else host_handler  # None: a handler set outside Python
        for signum in HOST_SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler):
                self.host_handlers[signum] = handler
                signal.signal(signum, self.recorder)
        if signal.getsignal(signal.SIGURG) == signal.SIG_DFL:  # its default is to ignore it: no host loses anything
            signal.signal(signal.SIGURG, self.urgent_handler)
        self.host_unraisable = sys.unraisablehook
        sys.unraisablehook = self.unraisable
        signal.setitimer(signal.ITIMER_REAL, self.TICK, self.TICK)
        self.ticking = True
        self.last_tick = time.monotonic()
        atexit.register(self.stop)  # a tick during the interpreter's shutdown would end the process
        BACKSTOP.start()

    def tick(self, signum: int, frame: Any) -> None:
        now = self.last_tick = time.monotonic()
        if self.deadline is not None and now >= self.deadline and self.raisable(frame):
            self.deadline = now + self.AGAIN  # raised again, later, in code that catches even a BaseException
            raise Expired
        if self.deadline is None and now - self.last_call > self.IDLE:
            self.stop()

    def urgent(self, signum: int, frame: Any) -> None:
        """SIGURG, sent by the Backstop: the call past its deadline ends here, where SIGALRM no longer can."""
        if self.due is not None and time.monotonic() >= self.due and self.raisable(frame):
            stopped = time.monotonic() - self.last_tick > 3 * self.TICK or signal.getsignal(signal.SIGALRM) is not self.handler
            raise TimerTaken if stopped else Expired

    def raisable(self, frame: Any) -> bool:
        """Whether the signalled ``frame`` runs inside the guarded call, below ``run``: never in
        ``run`` itself, whose ``finally`` must end the deadline, nor in kvspec's code after it (a
        deadline left over, then, is ended here)."""
        if frame is None or frame.f_code is RUN_CODE:
            return False
        while frame is not None:
            if frame.f_code is RUN_CODE:
                return True
            frame = frame.f_back
        self.deadline = self.due = None
        return False

    def record(self, signum: int, frame: object) -> Any:
        """A host's handler of SIGINT or SIGTERM, run as it is, what it raises noted as the host's."""
        try:
            return self.host_handlers[signum](signum, frame)
        except BaseException as error:
            self.host_raised = error
            raise

    def unraisable(self, unraisable: Any) -> None:
        """An Expired raised where Python could only print it: quiet, and due again at the next tick."""
        if isinstance(unraisable.exc_value, Expired):
            if self.deadline is not None:
                self.deadline = time.monotonic()
            return
        self.host_unraisable(unraisable)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.host_handler)
        for signum, handler in self.host_handlers.items():
            if signal.getsignal(signum) is self.recorder:
                signal.signal(signum, handler)
        self.host_handlers = {}
        if signal.getsignal(signal.SIGURG) is self.urgent_handler:
            signal.signal(signal.SIGURG, signal.SIG_DFL)
        if sys.unraisablehook is self.unraisable:
            sys.unraisablehook = self.host_unraisable
        self.ticking = False
        atexit.unregister(self.stop)


class Backstop:
    """A thread for what the watchdog cannot do once the implementation has taken SIGALRM away
    (ignored, handled by the implementation, the timer stopped) or catches every Expired: past the
    deadline it sends SIGURG to the main thread, whose handler (Watchdog.urgent) raises TimerTaken
    there, a sleep interrupted too; and if the call still has not ended, kvspec ends with exit
    status 3 and the verdict on one line (PROTO-29): no report can be written from inside a call
    that will not end, and waiting for ever is no verdict."""

    PERIOD = 0.25  # seconds between checks
    INTERRUPT = 0.5  # seconds past the deadline before the main thread is signalled from here
    LAST_RESORT = 1.0  # seconds after that, the same call still running, before kvspec ends

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.fired: tuple[float, float] | None = None  # the deadline of the call signalled, and when

    def start(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self.watch, name="kvspec-backstop", daemon=True)
            self.thread.start()

    def watch(self) -> None:
        while WATCHDOG.ticking:
            time.sleep(self.PERIOD)
            due, now = WATCHDOG.due, time.monotonic()
            if due is None or now - due < self.INTERRUPT:
                continue
            if self.fired is None or self.fired[0] != due:
                self.fired = (due, now)
            elif now - self.fired[1] >= self.LAST_RESORT:
                self.end(WATCHDOG.label, now - due)
            signal.pthread_kill(MAIN_THREAD, signal.SIGURG)  # type: ignore[arg-type]

    @staticmethod
    def end(label: str, late: float) -> NoReturn:
        process = sys.modules.get("kvspec.adapters.process")
        if process is not None:
            process.kill_all()
        line = (f"kvspec: PROTO-29: {label}: no reply, {late:.0f} s past its deadline, and kvspec cannot interrupt it in its own "
                "process (it took SIGALRM away, or catches every interruption): DOES NOT CONFORM; no report is written. "
                "Served in a process of its own (python:module:factory), it is certified as any process is.")
        os.write(2, printable(line).encode("utf-8", errors="replace") + b"\n")
        EXIT(3)  # os._exit itself is refused while the call runs


WATCHDOG = Watchdog()
BACKSTOP = Backstop()
RUN_CODE = Watchdog.run.__code__


def _waited(seconds: float, call: Callable[[], T]) -> T:
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # noqa: BLE001 -- the implementation's, handed to the waiting thread
            outcome.append((False, Raised(error)))

    worker = threading.Thread(target=run, daemon=True)  # left behind, with the object, if it never returns
    refusing_exits(True)
    try:
        worker.start()
        worker.join(seconds)  # a signal of kvspec's own raises here, in the waiting thread, and passes as it is
    finally:
        refusing_exits(False)
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
        self.level: Level = self._guard("level", lambda: level_of(self._inner.level), timeout=start_timeout)
        self.policies: tuple[str, ...] = self._guard("policies", lambda: policies_of(self._inner.policies), timeout=start_timeout)

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
    """A benefit result through the reply schema its protocol message has (PROTO-19 to PROTO-28),
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
