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

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any, Generic

from kvspec.conformance.core.cluster import Cluster
from kvspec.conformance.core.job import Finished, Job, T
from kvspec.conformance.core.processes import Processes
from kvspec.reference import ReplayConfig, ReplayResult, TraceRecord, replay
from kvspec.reference.models import ServedResult
from kvspec.reference.serve import served
from kvspec.reference.service import ServiceModel

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


def served_replay(records: Iterable[tuple[int, TraceRecord]], config: ReplayConfig, service: ServiceModel, path: str) -> ServedResult:
    """The reference's served replay of ``config`` (spec/lifecycle.md section 6), as a TraceJob's function."""
    return ServedResult(**{name: value for name, value in asdict(served(records, config, service, path=path)).items() if name != "per_request"})


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
