"""SIGINT and SIGTERM: every implementation's process group ended, nothing half written, exit 130 or 143."""

import sys

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
