"""The deadline of every call into an implementation in kvspec's own process (adapters/inprocess.py,
PROTO-15, PROTO-29): ``within`` runs the call, and whatever the call raises is Raised, the deadline
passed is Expired, an os._exit refused is Exited.

The deadline is kept by SIGALRM in the main thread (Watchdog): it interrupts Python code, a sleep
and a blocking wait. Elsewhere a worker thread waits instead. An interruption of kvspec's own (a
signal its process received: Ctrl-C, SIGTERM) passes through as it is; the same exception raised by
the implementation is the implementation's failure. An implementation that takes SIGALRM away is a
failure; a Backstop thread interrupts it where it hangs meanwhile. Nothing in kvspec's process can
survive an ``os._exit``, a crash of native code, or native code that never returns: such an
implementation is served in a process of its own (``python:module:factory``).
"""

import atexit
import os
import posix
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from .interface import described_error, printable

T = TypeVar("T")
MAIN_THREAD = threading.main_thread().ident
EXIT = os._exit
EXITS = (os, posix)  # the modules an implementation may call _exit by (os._exit is posix._exit)
TAKEN = ("took SIGALRM away, which kvspec keeps the deadline with (PROTO-15): in kvspec's process it may not (served in a process "
         "of its own, python:module:factory, it may)")
HOST_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # kvspec's own interruptions (conformance/core/interruption.py), or a host's


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
