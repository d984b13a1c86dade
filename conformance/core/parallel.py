"""Independent jobs (a replay of a trace, a certification) run one after another in this process
(``--jobs 1``), in local worker processes (``--jobs N``) or on a Dask cluster (``--scheduler``);
their results come back in the jobs' order whichever finishes first, so that what a command
writes is the serial run's, byte for byte.

A job is a picklable callable of no arguments with a ``label``: a module-level function's
arguments, small. A trace travels as its path, which the worker opens itself (every worker must
see the trace at that path), never as its records; a job's result is a replay's totals, not its
requests.

Every failure stays one line: a job's KvspecError is the worker's error; a scheduler that cannot
be reached, goes away or has no worker (for ``kvspec.no-worker-timeout``), and a Dask configuration
that cannot be read, are KvspecErrors here. A worker that dies while it runs a job ends that job
alone: a job with a ``died(how)`` method (a certification) makes its result of it (its in-process
implementation's fault), and the other jobs go on; for any other job it is a KvspecError. An
interruption (SIGINT, SIGTERM) ends the local workers, each ending its implementations' processes
first, and cancels the tasks on a cluster.
"""

import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import re
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kvspec.adapters.process import kill_all
from kvspec.reference import SPEC_VERSION, KvspecError, ReplayConfig, ReplayResult, TraceRecord, replay

if TYPE_CHECKING:
    from distributed import Client

T = TypeVar("T", covariant=True)


class Job(Protocol[T]):
    """What a worker runs: ``job()``; ``label`` says what it is, in progress lines and errors. A job
    may also have ``died(how)``: its result when its worker dies running it, or None (``ended``)."""

    label: str

    def __call__(self) -> T: ...


Finished = Callable[[int, int, str], None]  # the jobs done, of how many, the label of the last done


def portable(job: Job[T]) -> T:
    """``job()`` where a worker runs it. A KvspecError comes back as one with the same message:
    its subclasses take other arguments than their message, which pickle cannot rebuild."""
    try:
        return job()
    except KvspecError as error:
        raise KvspecError(str(error)) from None


Records = Callable[[str], Iterable[tuple[int, TraceRecord]]]  # a trace's records, read afresh for the job a label names


@dataclass(frozen=True)
class TraceJob(Generic[T]):
    """``function(records(label), *arguments)``: a replay, or another reading of a trace, where
    ``records`` opens the trace (a worker's, from its path)."""

    label: str
    function: Callable[..., T]
    records: Records
    arguments: tuple[Any, ...]

    def __call__(self) -> T:
        return self.function(self.records(self.label), *self.arguments)


def replayed(records: Iterable[tuple[int, TraceRecord]], config: ReplayConfig, path: str) -> ReplayResult:
    """The reference's replay of ``config``, as a TraceJob's function."""
    return replay(records, config, path=path)


def in_turn(jobs: Sequence[Job[T]]) -> list[T]:
    """Each job in turn, in this process, as kvspec always ran them (a replay draws its own progress line)."""
    return [job() for job in jobs]


Run = Callable[[Sequence[Job[Any]]], list[Any]]  # the jobs run, their results in their order


class InProcess:
    """``--jobs 1``: in turn, each job's progress told when it is done if ``finished`` is given
    (a job that draws no progress line of its own, a certification)."""

    in_process = True

    def __init__(self, finished: Finished | None = None) -> None:
        self.finished = finished

    def run(self, jobs: Sequence[Job[T]]) -> list[T]:
        if self.finished is None:
            return in_turn(jobs)
        results = []
        for done, job in enumerate(jobs, start=1):
            results.append(job())
            self.finished(done, len(jobs), job.label)
        return results

    def worker_path(self, path: str) -> str:
        return path


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


def ended(job: Job[T], how: str, unexplained: str) -> T:
    """What the end of the worker that ran ``job`` means: the job's own result of it where it has
    one (``job.died(how)``: a certification of an in-process implementation, its fault), else
    kvspec's error, ``unexplained``."""
    died = getattr(job, "died", None)
    result = None if died is None else died(how)
    if result is None:
        raise KvspecError(unexplained)
    return result  # type: ignore[no-any-return]


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


STOP_SECONDS = 10.0


class Cluster:
    """``--scheduler ADDRESS``: the jobs as tasks of a Dask cluster (dask.distributed), each told
    when it is done. Its workers run kvspec of the same version, and see every trace and adapter at
    the path given; a worker runs its tasks in its threads, so give it one thread per process
    (``dask worker ADDRESS --nworkers N --nthreads 1``) for the jobs to run side by side. A
    scheduler without a worker is waited for ``kvspec.no-worker-timeout`` (Dask's configuration),
    at the start and whenever it loses every worker."""

    in_process = False

    def __init__(self, address: str, finished: Finished) -> None:
        if not address.startswith("tcp://"):  # tls:// needs certificates kvspec does not configure; the others, Dask's own
            raise KvspecError(f"--scheduler {address}: kvspec reaches a scheduler at tcp://HOST:PORT only")
        try:
            from distributed import Client  # noqa: F401 (Dask reads its configuration files as it is imported)
        except ImportError:
            from kvspec.conformance.core.extras import install_hint

            raise KvspecError(f"--scheduler needs dask.distributed: {install_hint('cluster')}") from None
        except Exception as error:  # noqa: BLE001 (whatever a configuration file Dask cannot read makes it raise, in one line)
            raise configuration_error(error) from None
        self.address = address
        self.finished = finished
        self.connect_timeout = duration(CONNECT_TIMEOUT, None)
        self.no_worker_timeout = duration(NO_WORKER_TIMEOUT, NO_WORKER_DEFAULT)
        self.client: Client | None = None

    def connect(self) -> "Client":
        """The client, connected at the first jobs: bad input is said before the cluster is sought."""
        import logging

        if self.client is None:
            # Its failures are said here, in one line: not logged with their tracebacks too (the client's logger has a level of its own).
            for name in [name for name in logging.root.manager.loggerDict if name.split(".")[0] == "distributed"]:
                logging.getLogger(name).setLevel(logging.CRITICAL)
            try:
                answered(self.address, self.connect_timeout)
                self.client = connected(self.address)
            except Exception as error:  # noqa: BLE001 (whatever the address or what answers there makes Dask raise, in one line)
                raise KvspecError(f"--scheduler {self.address}: cannot reach the scheduler: {first_line(error)}") from None
            try:
                self.client.wait_for_workers(1, timeout=self.no_worker_timeout)
            except TimeoutError:
                raise KvspecError(self.without_workers(f"no worker joined the scheduler within {self.no_worker_timeout:g} s")) from None
            self.check_workers(self.client)
        return self.client

    def without_workers(self, what: str) -> str:
        """The error of a scheduler without a worker: what kvspec waited for, how long, and the setting that changes it."""
        return (f"--scheduler {self.address}: {what} (Dask's setting {NO_WORKER_TIMEOUT}; {environment_name(NO_WORKER_TIMEOUT)}=300s "
                "waits 300 s); nothing was written")

    def worker_path(self, path: str) -> str:
        """The path a worker opens ``path`` by: absolute, its working folder being its own."""
        return os.path.abspath(path)

    def check_workers(self, client: "Client") -> None:
        """Every worker runs this kvspec and spec: another version could give other results."""
        here = installed()
        try:
            there = client.run(installed)
        except Exception as error:  # noqa: BLE001 (whatever a worker without kvspec raises, said in one line)
            raise KvspecError(f"--scheduler {self.address}: a worker cannot run kvspec: {first_line(error)}") from None
        other = [(worker, found) for worker, found in there.items() if tuple(found) != here]
        if other:
            worker, (kvspec, spec) = other[0]
            raise KvspecError(f"--scheduler {self.address}: worker {worker} runs kvspec {kvspec} (spec {spec}), not {here[0]} (spec {here[1]})")

    def run(self, jobs: Sequence[Job[T]]) -> list[T]:
        from distributed import KilledWorker, as_completed

        client = self.connect()
        results: list[Any] = [None] * len(jobs)
        futures = [client.submit(portable, job, pure=False) for job in jobs]
        numbers = {future.key: number for number, future in enumerate(futures)}
        self.finished(0, len(jobs), "")
        workers = WorkersSeen(client)
        done = 0
        try:
            completed = as_completed(futures, loop=client.loop)
            while done < len(jobs):
                batch = completed.next_batch(block=False)
                if not batch and workers.none_for() > self.no_worker_timeout:
                    raise KvspecError(self.without_workers(f"the scheduler has had no worker for {self.no_worker_timeout:g} s, "
                                                           f"{len(jobs) - done} of {len(jobs)} jobs not done"))
                if not batch:
                    with completed.thread_condition:  # as as_completed's own iteration waits
                        completed.thread_condition.wait(timeout=0.1)
                for future in batch:
                    number = numbers[future.key]
                    try:
                        results[number] = future.result()
                    except KilledWorker:  # it ran on allowed-failures + 1 workers, and each died
                        results[number] = ended(jobs[number], "every Dask worker that ran it died",
                                                f"--scheduler {self.address}: the workers died that ran {jobs[number].label}; nothing was written")
                    done += 1
                    self.finished(done, len(jobs), jobs[number].label)
        except (CancelledError, OSError, TimeoutError) as error:  # a comm closed is an OSError
            raise KvspecError(f"--scheduler {self.address}: lost the cluster ({type(error).__name__}: {first_line(error)}); "
                              "nothing was written") from None
        finally:
            cancel(client, futures)
        return results

    def close(self) -> None:
        if self.client is None:
            return
        try:
            self.client.close()
        except (OSError, TimeoutError):
            pass  # a scheduler already gone
        self.client = None


CONNECT_TIMEOUT = "distributed.comm.timeouts.connect"  # Dask's own: how long a connection may take
NO_WORKER_TIMEOUT = "kvspec.no-worker-timeout"  # kvspec's, in Dask's configuration: how long a scheduler may have no worker
NO_WORKER_DEFAULT = "60s"


class WorkersSeen:
    """How long the scheduler has been seen without a worker, asked at most once a second."""

    def __init__(self, client: "Client") -> None:
        self.client = client
        self.asked = time.monotonic()
        self.without: float | None = None  # when it was first seen without one, since it last had one

    def none_for(self) -> float:
        now = time.monotonic()
        if now - self.asked >= 1.0:
            self.asked = now
            self.without = None if self.client.nthreads() else self.without or now
        return 0.0 if self.without is None else now - self.without


def duration(key: str, default: str | None) -> float:
    """A duration of Dask's configuration (its files, DASK_ variables), in seconds: one line naming
    the setting if it is not a positive one."""
    import dask
    from dask.utils import parse_timedelta

    try:
        value = dask.config.get(key, default)
        seconds = parse_timedelta(value, default="seconds")
    except (TypeError, ValueError, KeyError, AttributeError):  # not a duration, or a setting above it that is not a mapping
        seconds = None
    if not isinstance(seconds, (int, float)) or not (math.isfinite(seconds) and seconds > 0):
        raise KvspecError(f"--scheduler: Dask's setting {key} must be a positive duration ({environment_name(key)}=30s sets it to 30 s), "
                          f"not {dask.config.get(key, default)!r}")
    return float(seconds)


def environment_name(key: str) -> str:
    """The environment variable that sets Dask's setting ``key``."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def configuration_error(error: Exception) -> KvspecError:
    """What kept dask.distributed from loading, in one line: a configuration file it cannot read
    (DASK_CONFIG, ~/.config/dask/, /etc/dask/) named with the line YAML gives, else what it raised."""
    import yaml

    found = re.match(r"A dask config file at '(.*)' is malformed", str(error))
    if found is None:
        return KvspecError(f"--scheduler: dask.distributed cannot be loaded: {first_line(error)}")
    path = found[1]
    try:
        with open(path, encoding="utf-8") as handle:
            yaml.safe_load(handle)
    except yaml.MarkedYAMLError as malformed:
        mark = malformed.problem_mark or malformed.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        return KvspecError(f"{path}{line}: a Dask configuration file that is not YAML: {malformed.problem or malformed.context}")
    except (OSError, ValueError, yaml.YAMLError) as unread:
        return KvspecError(f"{path}: a Dask configuration file that cannot be read: {first_line(unread)}")
    return KvspecError(f"{path}: a Dask configuration file that is not a mapping of settings")


def answered(address: str, timeout: float) -> None:
    """A first exchange with the scheduler at ``address``: the connection, within Dask's connect
    timeout (distributed.comm.timeouts.connect, 30 s by default), then Dask's handshake, within as
    long again. The client's own start waits for that handshake with no deadline, so that a server
    that takes the connection and never answers would hold kvspec until it is interrupted."""
    import asyncio

    from distributed.comm import connect

    async def exchange() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(exchange(), 2 * timeout))
    except TimeoutError:
        raise TimeoutError(f"connected, but no answer within {2 * timeout:g} s (twice distributed.comm.timeouts.connect)") from None


def connected(address: str) -> "Client":
    """A client of the scheduler at ``address``. One whose start fails is closed as it is, so that
    its finaliser does not wait for a scheduler it never reached to see it go (twice the connect
    timeout, a minute by default, ending in a traceback)."""
    from distributed import Client

    client = Client.__new__(Client)  # built in two steps, to hold the client its failed start leaves
    try:
        client.__init__(address, set_as_default=False)  # type: ignore[misc]
    except BaseException:
        client.status = "closed"
        with suppress(AttributeError):  # a start failed before its event loop's thread began
            client._loop_runner.stop()
        raise
    return client


def cancel(client: "Client", futures: list[Any]) -> None:
    """Those not done, after an error or an interruption; nothing to cancel on a cluster gone."""
    try:
        client.cancel(futures)
    except (OSError, TimeoutError):
        pass


def installed() -> tuple[str, str]:
    return version("kvspec"), SPEC_VERSION


def first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


Workers = InProcess | Processes | Cluster


def cpu_count() -> int:
    """The processors this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def workers(jobs: int | None, scheduler: str | None, finished: Finished, tell_in_process: bool = False) -> Iterator[Workers]:
    """Where a command's jobs run: on the cluster at ``scheduler``, else in ``jobs`` processes
    (None: one per processor; 1: this process, one job after another, each told done with
    ``tell_in_process``)."""
    if scheduler is not None:
        cluster = Cluster(scheduler, finished)
        try:
            yield cluster
        finally:
            cluster.close()
        return
    count = cpu_count() if jobs is None else jobs
    yield InProcess(finished if tell_in_process else None) if count == 1 else Processes(count, finished)
