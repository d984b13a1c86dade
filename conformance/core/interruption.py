"""SIGINT and SIGTERM: every implementation's process group ended, nothing half written, exit 130 or 143."""

import signal
import sys
import threading
import time

RECEIVED: list[int] = []  # the signal that interrupted kvspec, once one has


def interrupted(signum: int, frame: object) -> None:
    """SIGINT, SIGTERM: end every implementation's process group first (none is left running),
    then unwind, so that no output file is left half written. None runs unless the module that
    starts them is loaded (a command that drives none never loads it)."""
    process = sys.modules.get("kvspec.adapters.process")
    if process is not None:
        process.kill_all()
    RECEIVED.append(signum)
    raise Interrupted(128 + signum)


def delivered_again(unraisable: "sys.UnraisableHookArgs") -> None:
    """sys.unraisablehook. A signal that arrives while a gc callback, a ``__del__`` or a weakref
    callback runs (Hypothesis's engine installs a gc callback) raises there, where Python prints
    the exception as "ignored" and drops it: the run would go on as if never interrupted. The
    signal is sent again, silently, once this hook has returned: from a thread, to the main
    thread, where it also ends a wait in a system call."""
    if isinstance(unraisable.exc_value, Interrupted):
        threading.Thread(target=send_again, args=(RECEIVED[0],), daemon=True).start()
    else:
        sys.__unraisablehook__(unraisable)


def send_again(signum: int) -> None:
    time.sleep(0.01)  # the hook that started this thread returned long before (Thread.start waits only for the thread to run)
    signal.pthread_kill(threading.main_thread().ident, signum)


def unless_interrupted() -> None:
    """Before any output: an interruption whose unwinding something replaced with an exception of
    its own (a state machine's teardown, talking to the implementation just ended, raises in a
    finally) still ends the run as an interruption, not as the implementation's failure."""
    if RECEIVED:
        raise Interrupted(128 + RECEIVED[0])


class Interrupted(BaseException):
    """kvspec was told to stop; a BaseException, so that nothing on the way mistakes it for a failure."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
