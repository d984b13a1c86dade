"""Independent jobs (a replay of a trace, a certification) run one after another in this process
(``--jobs 1``), in local worker processes (``--jobs N``) or on a Dask cluster (``--scheduler``);
their results come back in the jobs' order whichever finishes first, so that what a command
writes is the serial run's, byte for byte.

A job is a picklable callable of no arguments with a ``label``: a module-level function's
arguments, small. A trace travels as its path, which the worker opens itself (every worker must
see the trace at that path), never as its records; a job's result is a replay's totals, not its
requests.

Every failure stays one line: a job's KvspecError is the worker's error; a worker that dies, a
scheduler that cannot be reached or goes away, are KvspecErrors here. An interruption (SIGINT,
SIGTERM) ends the local workers, each ending its implementations' processes first, and cancels
the tasks on a cluster.
"""

import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
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
    """What a worker runs: ``job()``; ``label`` says what it is, in progress lines and errors."""

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
    """``--jobs N``: N local worker processes, each job's progress told when it is done."""

    in_process = False

    def __init__(self, count: int, finished: Finished) -> None:
        self.count = count
        self.finished = finished

    def worker_path(self, path: str) -> str:
        """As given: a worker's working folder is this process's."""
        return path

    def run(self, jobs: Sequence[Job[T]]) -> list[T]:
        results: list[Any] = [None] * len(jobs)
        executor = ProcessPoolExecutor(min(self.count, len(jobs)) or 1, initializer=worker_signals)
        done = False
        try:
            pending = {executor.submit(portable, job): number for number, job in enumerate(jobs)}
            self.finished(0, len(jobs), "")
            while pending:
                ready, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in ready:
                    number = pending.pop(future)
                    results[number] = future.result()
                    self.finished(len(jobs) - len(pending), len(jobs), jobs[number].label)
            done = True
        except BrokenProcessPool:
            raise KvspecError("a worker process ended abruptly (killed, or out of memory?); nothing was written") from None
        finally:
            end(executor, done)
        return results


def worker_signals() -> None:
    """A local worker leaves SIGINT to kvspec (a terminal sends it to the whole process group; kvspec
    then ends its workers), and on SIGTERM ends its implementations' processes, then itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, ended)


def ended(signum: int, frame: object) -> None:
    # Once: the executor, finding a worker gone, sends SIGTERM to every other again, and a second
    # kill_all inside the first would wait forever for the process the first is reaping.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_all()
    os._exit(128 + signum)


def end(executor: ProcessPoolExecutor, done: bool) -> None:
    """Shut the workers down: once idle when every job is done; else (an error, an interruption,
    even one while they are started) at once, each told to end by SIGTERM."""
    if not done:
        # The executor stops no running job (Python 3.14's terminate_workers does just this).
        for process in list(getattr(executor, "_processes", {}).values()):
            if process.is_alive():
                process.terminate()
    executor.shutdown(wait=True, cancel_futures=True)


class Cluster:
    """``--scheduler ADDRESS``: the jobs as tasks of a Dask cluster (dask.distributed), each told
    when it is done. Its workers run kvspec of the same version, and see every trace and adapter at
    the path given; a worker runs its tasks in its threads, so give it one thread per process
    (``dask worker ADDRESS --nworkers N --nthreads 1``) for the jobs to run side by side."""

    in_process = False

    def __init__(self, address: str, finished: Finished) -> None:
        if not address.startswith("tcp://"):  # tls:// needs certificates kvspec does not configure; the others, Dask's own
            raise KvspecError(f"--scheduler {address}: kvspec reaches a scheduler at tcp://HOST:PORT only")
        try:
            from distributed import Client
        except ImportError:
            from kvspec.conformance.core.extras import install_hint

            raise KvspecError(f"--scheduler needs dask.distributed: {install_hint('cluster')}") from None
        self.address = address
        self.finished = finished
        self.client: Client | None = None

    def connect(self) -> "Client":
        """The client, connected at the first jobs: bad input is said before the cluster is sought."""
        import logging

        if self.client is None:
            # Its failures are said here, in one line: not logged with their tracebacks too (the client's logger has a level of its own).
            for name in [name for name in logging.root.manager.loggerDict if name.split(".")[0] == "distributed"]:
                logging.getLogger(name).setLevel(logging.CRITICAL)
            try:
                answered(self.address)
                self.client = connected(self.address)
            except Exception as error:  # noqa: BLE001 (whatever the address or what answers there makes Dask raise, in one line)
                raise KvspecError(f"--scheduler {self.address}: cannot reach the scheduler: {first_line(error)}") from None
            self.check_workers(self.client)
        return self.client

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
        try:
            for done, future in enumerate(as_completed(futures, loop=client.loop), start=1):
                number = numbers[future.key]
                results[number] = future.result()
                self.finished(done, len(jobs), jobs[number].label)
        except KilledWorker as error:
            label = jobs[numbers[error.task]].label if error.task in numbers else error.task
            raise KvspecError(f"--scheduler {self.address}: the workers died that ran {label}; nothing was written") from None
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


def answered(address: str) -> None:
    """A first exchange with the scheduler at ``address``: the connection, within Dask's connect
    timeout (distributed.comm.timeouts.connect, 30 s by default), then Dask's handshake, within as
    long again. The client's own start waits for that handshake with no deadline, so that a server
    that takes the connection and never answers would hold kvspec until it is interrupted."""
    import asyncio

    import dask
    from dask.utils import parse_timedelta
    from distributed.comm import connect

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="seconds")

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
