"""What a job is, wherever it runs (conformance/core/parallel.py): a picklable callable of no
arguments with a ``label``, run by ``portable`` where a worker runs it, and what the end of the
worker that ran it means (``ended``).
"""

from collections.abc import Callable
from typing import Protocol, TypeVar

from kvspec.reference import KvspecError

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


def ended(job: Job[T], how: str, unexplained: str) -> T:
    """What the end of the worker that ran ``job`` means: the job's own result of it where it has
    one (``job.died(how)``: a certification of an in-process implementation, its fault), else
    kvspec's error, ``unexplained``."""
    died = getattr(job, "died", None)
    result = None if died is None else died(how)
    if result is None:
        raise KvspecError(unexplained)
    return result  # type: ignore[no-any-return]
