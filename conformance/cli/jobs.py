"""Where a command's independent jobs run (--jobs, --scheduler; conformance/core/parallel.py): the
workers, the progress line of jobs run side by side, and a trace as a job takes it, by its path."""

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kvspec.conformance.cli.arguments import with_progress
from kvspec.conformance.cli.progress import Progress
from kvspec.conformance.core.parallel import Workers, cpu_count, workers
from kvspec.reference import TraceFile
from kvspec.reference.trace import TraceRecord


class JobsDone:
    """The progress line of jobs run side by side: how many are done, and the last one done."""

    def __init__(self, where: str) -> None:
        self.done, self.total = 0, 1
        self.progress = Progress(f"jobs {where}", lambda: self.done / self.total, delay=0)

    def __call__(self, done: int, total: int, label: str) -> None:
        self.done, self.total = done, total
        self.progress.update(f"{done} of {total} done{f'; last done: {label}' if done else ''}")
        if done == total:
            self.progress.close()


@contextmanager
def job_workers(args: argparse.Namespace, tell_in_process: bool = False) -> Iterator[Workers]:
    """Where --jobs and --scheduler run the command's jobs; with ``tell_in_process``, the progress
    line is drawn for jobs run in turn too (they draw none of their own)."""
    count = args.jobs or cpu_count()
    where = f"on {args.scheduler}" if args.scheduler else f"in {count} process{'es' if count > 1 else ''}"
    with workers(args.jobs, args.scheduler, JobsDone(where), tell_in_process) as chosen:
        yield chosen


@dataclass(frozen=True)
class TraceRecords:
    """A trace's records, read afresh from its path for each job, with the replay's progress line
    where the job runs in this process (workers side by side would draw over each other): what
    a worker is sent of a trace is its path."""

    path: str
    progress: bool

    def __call__(self, label: str) -> Iterator[tuple[int, TraceRecord]]:
        trace = TraceFile(self.path)
        return with_progress(trace, trace.records(), label) if self.progress else trace.records()


def trace_records(trace: TraceFile, workers: Workers) -> TraceRecords:
    return TraceRecords(workers.worker_path(trace.path), workers.in_process)
