"""``--jobs N``: the jobs of conformance/core/parallel.py in N local worker processes, each sent one
job at a time over a pipe of its own. A worker that ends while it runs a job ends that job alone;
an interruption ends the workers, each ending its implementations' processes first.
"""

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import traceback
from collections import deque
from collections.abc import Sequence
from typing import Any

from kvspec.adapters.process import kill_all
from kvspec.conformance.core.job import Finished, Job, T, ended, portable
from kvspec.reference import KvspecError

STOP_SECONDS = 10.0


class Processes:
    """``--jobs N``: N local worker processes, each sent one job at a time, each job's progress told
    when it is done. A worker that ends while it runs a job ends that job alone (``ended``): a fresh
    worker takes its place and the other jobs go on."""

    in_process = False

    def __init__(self, count: int, finished: Finished) -> None:
        self.count = count
        self.finished = finished

    def worker_path(self, path: str) -> str:
        """As given: a worker's working folder is this process's."""
        return path

    def run(self, jobs: Sequence[Job[T]]) -> list[T]:
        results: list[Any] = [None] * len(jobs)
        waiting = deque(range(len(jobs)))
        running: dict[Worker, int] = {}
        idle: list[Worker] = []
        done = False
        self.finished(0, len(jobs), "")
        try:
            while waiting or running:
                while waiting and len(running) < self.count:
                    worker = idle.pop() if idle else Worker([*running, *idle])
                    number = waiting.popleft()
                    try:
                        worker.connection.send(jobs[number])
                    except OSError:  # the worker was ended from outside before its job reached it
                        stop([worker], done=False)
                        raise KvspecError(abruptly(worker, f"before it ran {jobs[number].label}")) from None
                    running[worker] = number
                for worker in ready(running):
                    number = running.pop(worker)
                    kind, value = worker.outcome()
                    if kind == "error":
                        error, text = value
                        raise error from WorkerTraceback(text)
                    if kind == "ended":
                        stop([worker], done=False)
                        results[number] = ended(jobs[number], value, abruptly(worker, f"while it ran {jobs[number].label}", value))
                    else:
                        results[number] = value
                        idle.append(worker)
                    self.finished(len(jobs) - len(waiting) - len(running), len(jobs), jobs[number].label)
            done = True
        finally:
            stop([*running, *idle], done)
        return results


class Worker:
    """A local worker process, and this process's end of the pipe it is sent its jobs on. It holds
    no other worker's pipe, so that a worker that ends is seen as the end of its own pipe."""

    def __init__(self, others: list["Worker"]) -> None:
        context = multiprocessing.get_context()
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(theirs, [other.connection for other in others]), daemon=True)
        self.process.start()
        theirs.close()

    def outcome(self) -> tuple[str, Any]:
        """What came of its job, once its pipe or its process is ready: what it sent back, or how it ended."""
        try:
            if self.connection.poll():
                return self.connection.recv()  # type: ignore[no-any-return]
        except (EOFError, OSError):  # its end of the pipe closed, part of a reply written or none
            pass
        self.process.join()
        return "ended", ending(self.process.exitcode)


def ready(running: dict[Worker, int]) -> list[Worker]:
    """The workers that sent what came of their job, or ended."""
    by_handle = {handle: worker for worker in running for handle in (worker.connection, worker.process.sentinel)}
    return list(dict.fromkeys(by_handle[handle] for handle in multiprocessing.connection.wait(list(by_handle))))


def abruptly(worker: Worker, when: str, how: str = "") -> str:
    """kvspec's error when a worker ended ``how`` (as its exit code says, if not given), ``when``."""
    return f"a worker process ended abruptly ({how or ending(worker.process.exitcode)}) {when}; nothing was written"


def ending(code: int | None) -> str:
    """How a worker process ended, as its exit code says."""
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        return f"killed by {name}{': out of memory?' if -code == signal.SIGKILL else ''}"
    return f"exit status {code}"


def serve(connection: "multiprocessing.connection.Connection", others: list["multiprocessing.connection.Connection"]) -> None:
    """A local worker: each job it is sent, run, and what came of it sent back, until it is sent
    None or kvspec's end of the pipe closes."""
    for other in others:  # another worker's pipe, copied by the fork: its end must be seen when that worker ends
        other.close()
    worker_signals()
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            outcome: tuple[str, Any] = ("result", portable(job))
        except Exception as error:  # noqa: BLE001 (kvspec's own bug, raised again in kvspec's process with this traceback)
            outcome = ("error", sendable(error))
        except BaseException as error:  # an in-process implementation's SystemExit, KeyboardInterrupt, ...: the job cannot go on
            connection.send(("ended", f"it raised {type(error).__name__}"))
            return
        try:
            connection.send(outcome)
        except Exception as error:  # noqa: BLE001 (a result that does not pickle: kvspec's bug, said in kvspec's process)
            connection.send(("error", sendable(error)))


def sendable(error: Exception) -> tuple[Exception, str]:
    """``error`` and its traceback's text, as a pipe carries them: itself if it pickles, else what it says."""
    text = "".join(traceback.format_exception(error))
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 (whatever its pickling raises)
        return RuntimeError(f"{type(error).__name__}: {error}"), text
    return error, text


class WorkerTraceback(Exception):
    """The traceback of an error raised in a worker, as the cause of the error raised again here."""

    def __str__(self) -> str:
        return f"\n{self.args[0]}"


def worker_signals() -> None:
    """A local worker leaves SIGINT to kvspec (a terminal sends it to the whole process group; kvspec
    then ends its workers), and on SIGTERM ends its implementations' processes, then itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, terminated)


def terminated(signum: int, frame: object) -> None:
    # Once: a second kill_all inside the first would wait forever for the process the first is reaping.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_all()
    os._exit(128 + signum)


def stop(workers: list[Worker], done: bool) -> None:
    """Every job done: each worker told to end once idle. Else (an error, an interruption) each
    ended at once by SIGTERM, which ends its implementations' processes first."""
    for worker in workers:
        try:
            if done:
                worker.connection.send(None)
            elif worker.process.is_alive():
                worker.process.terminate()
        except OSError:  # a worker already gone
            pass
    for worker in workers:
        worker.process.join(STOP_SECONDS)
        if worker.process.is_alive():  # its implementations' ending hangs: end it as the kernel would
            worker.process.kill()
            worker.process.join()
        worker.connection.close()
