"""``--scheduler ADDRESS``: the jobs of conformance/core/parallel.py as tasks of a Dask cluster
(dask.distributed). A scheduler that cannot be reached, goes away or has no worker (for
``kvspec.no-worker-timeout``), and a Dask configuration that cannot be read, are KvspecErrors,
each in one line.
"""

import math
import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import CancelledError
from contextlib import suppress
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from kvspec.conformance.core.job import Finished, Job, T, ended, portable
from kvspec.reference import SPEC_VERSION, KvspecError

if TYPE_CHECKING:
    from distributed import Client


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
