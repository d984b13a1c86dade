"""An implementation under test in its own process, driven over the adapter protocol.

spec/adapter-protocol.md: JSON lines on the process's stdin and stdout (PROTO-1), one reply per
request with the request's seq (PROTO-2). Every way the implementation can break the protocol
(PROTO-15) raises AdapterFailure with one line naming the command, what kvspec expected and the
last lines of the implementation's stderr, and kills the process (and its process group); no
call waits longer than its timeout, and no process is left unreaped.
"""

import json
import math
import os
import select
import selectors
import shlex
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from typing import IO, Any, NoReturn, Self

from pydantic import BaseModel, TypeAdapter, ValidationError

from kvspec.reference import KvspecError

from .interface import AdapterFailure, Identity, Level, printable
from .process_requests import ProcessRequests
from .protocol import PROTOCOL_VERSION, ErrorReply, StartReply, StartRequest, StopRequest
from .wire import summary

MAX_LINE = 1 << 28  # a reply longer than 256 MiB is a failure, not an out-of-memory
STDERR_LINES = 20  # kept of the implementation's stderr ...
STDERR_SHOWN = 3  # ... and shown in a failure message
STDERR_LINE_CHARS = 300
STOP_GRACE = 2.0  # PROTO-13: seconds the process has to exit after stop
PREVIEW_CHARS = 200
CHUNK = 1 << 16  # bytes read from stdout at a time
EXIT_CHECK = 0.1  # seconds a reply is waited for before each check that the process is still running

_EOF = b""

# Every process started and not yet reaped, so that an interrupted kvspec can end them all
# (each has a process group of its own, which a terminal's signal does not reach).
LIVE: "weakref.WeakSet[ProcessAdapter]" = weakref.WeakSet()


def kill_all() -> None:
    """End every implementation process still running, with its process group."""
    for adapter in list(LIVE):
        adapter._kill()


def _preview(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "...")


def _read_stderr(stream: IO[bytes], tail: "deque[str]") -> None:
    """PROTO-1: stderr is free for logs; the last lines are kept for failure messages."""
    try:
        while True:
            line = stream.readline(4096)
            if not line:
                break
            text = printable(line.decode("utf-8", errors="replace").rstrip())  # PROTO-31
            if text:
                tail.append(text if len(text) <= STDERR_LINE_CHARS else text[:STDERR_LINE_CHARS] + "...")
    except (OSError, ValueError):
        pass


# Built once: building a TypeAdapter costs more than a round trip.
START_REPLY: TypeAdapter[Any] = TypeAdapter(StartReply)


class ProcessAdapter(ProcessRequests):
    """An Adapter for an implementation that speaks the protocol on its stdin and stdout."""

    identity: Identity
    level: Level

    def __init__(self, command: list[str], reply_timeout: float = 10.0, start_timeout: float = 30.0, name: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        if not command:
            raise KvspecError("an implementation's command must name a program")
        self.command = list(command)
        self.name = shlex.join(self.command) if name is None else name
        self.reply_timeout = reply_timeout
        self.start_timeout = start_timeout
        self.policies: tuple[str, ...] = ()
        self.lifecycle = False
        self._seq = 0
        self._failed: str | None = None
        self._closed = False
        self._unread = bytearray()  # what the process has written to stdout that no reply has taken yet
        self._stdout_ended = False
        self._stdout_held = False  # the process has exited, and a process it started holds its stdout open
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        try:
            # PROTO-4: started once; its own session, so that a kill reaches everything it started.
            self.process = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env
            )
        except OSError as error:
            self._failed = f"could not start: {error}"
            self._closed = True
            raise AdapterFailure(f"{self.name}: could not start the implementation: {error}") from error
        LIVE.add(self)
        assert self.process.stdin is not None and self.process.stdout is not None and self.process.stderr is not None
        self._stdin_fd = self.process.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)  # a process that stops reading must not block kvspec
        # Replies are read in the caller's thread, not by a thread of their own: handing each reply
        # from one thread to another would cost two thread switches a request.
        self._stdout_fd = self.process.stdout.fileno()
        self._stdout_ready = select.poll()
        self._stdout_ready.register(self._stdout_fd, select.POLLIN)
        self._threads = [threading.Thread(target=_read_stderr, args=(self.process.stderr, self._stderr), daemon=True)]
        for thread in self._threads:
            thread.start()
        # PROTO-5, PROTO-6: the version, who is under test, its level and policies.
        reply = self._call(
            StartRequest(cmd="start", seq=0, protocol=PROTOCOL_VERSION),
            START_REPLY,
            "the start reply",
            self.start_timeout,
        )
        if reply.protocol != PROTOCOL_VERSION:
            self._fail("start", 0, f"it speaks protocol {reply.protocol}, kvspec speaks protocol {PROTOCOL_VERSION}", "the start reply", "PROTO-5")
        implementation = reply.implementation
        self.identity = Identity(printable(implementation.name), printable(implementation.language), printable(implementation.version))
        self.level = reply.level
        self.policies = tuple(reply.policies)
        self.lifecycle: bool = reply.lifecycle  # PROTO-35

    @property
    def failed(self) -> bool:
        """True once the implementation has broken the protocol: its process is gone, a fresh one is needed."""
        return self._failed is not None

    def close(self) -> None:
        """PROTO-13: send stop, give the process STOP_GRACE seconds to exit 0, then kill it.

        Raises AdapterFailure (after cleaning up) when it does not exit, or exits non-zero."""
        if self._closed:
            return
        self._closed = True
        problem = ""
        seq = self._seq
        if self._failed is None and self.process.poll() is None:
            try:
                self._write((StopRequest(cmd="stop", seq=seq).model_dump_json() + "\n").encode(), time.monotonic() + STOP_GRACE)
                self._close_stdin()  # EOF too, for an implementation that reads to the end
            except (OSError, TimeoutError):
                pass
            try:
                status = self._wait_reading(STOP_GRACE)
            except subprocess.TimeoutExpired:
                problem = f"the process did not exit within {STOP_GRACE:g} s of stop"
            else:
                if status != 0:
                    problem = f"the process exited with status {status} after stop"
        self._kill()
        if problem:
            self._failed = problem
            raise AdapterFailure(self._message("stop", seq, problem, "exit status 0"), "PROTO-13")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter shutdown the stderr reader thread may hold its stream's lock for good: closing the
        # stream then aborts the interpreter, and the process group is killed by the OS anyway.
        if sys.is_finalizing():
            return
        if getattr(self, "process", None) is not None and not getattr(self, "_closed", True):
            self._closed = True
            self._kill()

    # The protocol -------------------------------------------------------------------------------

    def _call(self, request: BaseModel, expect: TypeAdapter[Any], expected: str, timeout: float | None = None) -> Any:
        """Send one request and read its one reply (PROTO-1, PROTO-2); PROTO-15 on any failure."""
        cmd = str(request.cmd)  # type: ignore[attr-defined]
        seq = self._seq
        if self._failed is not None:
            raise AdapterFailure(f"{self.name}: {cmd} (seq {seq}): the implementation has already failed: {self._failed}")
        if self._closed:
            raise AdapterFailure(f"{self.name}: {cmd} (seq {seq}): the adapter is closed")
        self._seq += 1
        deadline = time.monotonic() + (self.reply_timeout if timeout is None else timeout)
        try:
            read_whole = self._write((request.model_dump_json(exclude_unset=True) + "\n").encode(), deadline)  # PROTO-10: an optional field sent only when set
        except TimeoutError:
            self._fail(cmd, seq, f"the process did not read its request within {self._timeout(timeout):g} s", expected, timed_out=True)
        except OSError:
            self._fail(cmd, seq, self._exited("stdin", "before reading its request"), expected)
        try:
            raw = self._reply_line(deadline)
        except TimeoutError:
            self._fail(cmd, seq, f"no reply to {cmd} within {self._timeout(timeout):g} s (hung?)", expected, timed_out=True)
        if raw == _EOF:
            self._fail(cmd, seq, self._exited("stdout", "before replying"), expected)
        if len(raw) >= MAX_LINE and not raw.endswith(b"\n"):
            self._fail(cmd, seq, f"a reply line longer than {MAX_LINE} bytes", expected, "PROTO-1")
        try:
            text = raw.decode("utf-8")
            reply = json.loads(text)
        except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError; a reply nested too deep
            self._fail(cmd, seq, f"malformed JSON reply ({error}): {_preview(raw.decode('utf-8', errors='replace'))}", expected, "PROTO-1")
        if not isinstance(reply, dict):
            self._fail(cmd, seq, f"the reply is not a JSON object: {_preview(text)}", expected, "PROTO-1")
        if "error" in reply:  # PROTO-14
            try:
                error_reply = ErrorReply.model_validate_json(text)
            except ValidationError as error:
                self._fail(cmd, seq, f"an error reply of the wrong shape ({summary(error)}): {_preview(text)}", expected, "PROTO-16")
            self._fail(cmd, seq, f"the implementation replied with an error: '{printable(error_reply.error)}'", expected, "PROTO-14")
        reply_seq = reply.get("seq")
        if type(reply_seq) is not int:
            self._fail(cmd, seq, f"a reply of the wrong shape (no integer seq): {_preview(text)}", expected, "PROTO-2")
        if reply_seq != seq:  # PROTO-2
            self._fail(cmd, seq, f"a reply with the wrong seq {reply_seq} (expected seq {seq})", expected, "PROTO-2")
        if not read_whole:  # PROTO-1: it answers no request
            self._fail(cmd, seq, "a reply written before the process had read its request", expected, "PROTO-1")
        try:
            return expect.validate_json(text)  # PROTO-16
        except ValidationError as error:
            self._fail(cmd, seq, f"a reply of the wrong shape ({summary(error)}): {_preview(text)}", expected, "PROTO-16")

    def _reply_line(self, deadline: float) -> bytearray:
        """PROTO-1: the next line the process writes to stdout, at most MAX_LINE bytes (a longer one
        is cut there), the last one without its newline; _EOF once stdout is closed, or once the
        process has exited with no line written (a process it started may hold its stdout open);
        TimeoutError past ``deadline``."""
        unread, searched = self._unread, 0
        while True:
            end = unread.find(b"\n", searched, MAX_LINE)
            if end >= 0 or len(unread) >= MAX_LINE or self._stdout_ended:
                taken = end + 1 if end >= 0 else min(len(unread), MAX_LINE)
                line = unread[:taken]  # one copy: a cut line is MAX_LINE bytes
                del unread[:taken]
                return line
            searched = len(unread)
            remaining = max(0.0, deadline - time.monotonic())
            if self._stdout_ready.poll(math.ceil(min(remaining, EXIT_CHECK) * 1000)):
                self._read_stdout()
            elif self.process.poll() is not None:  # exited: what a process it started writes answers nothing
                self._read_stdout_left()
                self._stdout_held = not self._stdout_ended
                self._stdout_ended = True
            elif remaining <= EXIT_CHECK:
                raise TimeoutError

    def _read_stdout_left(self) -> None:
        """What an exited process wrote to stdout before it exited, without waiting for the end of a
        stdout that a process it started holds open."""
        while not self._stdout_ended and len(self._unread) < MAX_LINE and self._stdout_ready.poll(0):
            self._read_stdout()

    def _read_stdout(self) -> None:
        """What the process has written to stdout, once it is readable."""
        try:
            chunk = os.read(self._stdout_fd, CHUNK)
        except OSError:  # as good as closed
            chunk = b""
        if chunk:
            self._unread += chunk
        else:
            self._stdout_ended = True

    def _wait_reading(self, seconds: float) -> int:
        """The exit status within ``seconds`` (subprocess.TimeoutExpired otherwise). Whatever the
        process writes to stdout meanwhile is read and dropped, so that a full pipe does not hold it."""
        deadline = time.monotonic() + seconds
        while not self._stdout_ended and self.process.poll() is None and time.monotonic() < deadline:
            if self._stdout_ready.poll(10):  # ms: stdout ends as the process exits, or a child of it holds stdout open
                self._read_stdout()
                self._unread.clear()
        return self.process.wait(timeout=max(0.0, deadline - time.monotonic()))

    def _timeout(self, timeout: float | None) -> float:
        return self.reply_timeout if timeout is None else timeout

    def _write(self, data: bytes, deadline: float) -> bool:
        """Write all of ``data`` to the non-blocking stdin by ``deadline`` (TimeoutError), or OSError.
        Meanwhile stdout is read, so that a process writing there before it reads on is not held
        by a full pipe; but only up to one line (PROTO-1: at most MAX_LINE bytes): once a line is
        there, the rest is not written and False is returned, that line being a reply written
        before the process read its request."""
        try:  # a request fits the pipe's buffer as a rule: a selector only for what does not
            view = memoryview(data)[os.write(self._stdin_fd, data) :]
        except BlockingIOError:
            view = memoryview(data)
        if not view:
            return True
        searched = 0
        with selectors.DefaultSelector() as selector:
            selector.register(self._stdin_fd, selectors.EVENT_WRITE)
            if not self._stdout_ended:
                selector.register(self._stdout_fd, selectors.EVENT_READ)
            while view:
                if self._unread.find(b"\n", searched) >= 0 or len(self._unread) >= MAX_LINE:
                    return False
                searched = len(self._unread)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                for key, _ in selector.select(remaining):
                    if key.fd == self._stdout_fd:
                        self._read_stdout()
                        if self._stdout_ended:
                            selector.unregister(self._stdout_fd)
                        continue
                    try:
                        view = view[os.write(self._stdin_fd, view) :]
                    except BlockingIOError:
                        pass
        return True

    def _exited(self, stream: str, when: str) -> str:
        """What became of a process whose ``stream`` (its stdin or stdout) kvspec found closed."""
        try:
            status = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return f"the process closed its {stream} {when}"
        held = " (a process it started holds its stdout open)" if self._stdout_held else ""
        if status < 0:
            return f"the process was killed by signal {-status} {when}{held}"
        return f"the process exited with status {status} {when}{held}"

    def _fail(self, cmd: str, seq: int, problem: str, expected: str, clause: str = "PROTO-15", timed_out: bool = False) -> NoReturn:
        """PROTO-15: kill the process, then raise one line naming what went wrong and the clause it broke."""
        self._failed = problem
        self._closed = True
        self._kill()
        raise AdapterFailure(self._message(cmd, seq, problem, expected), clause, timed_out)

    def _message(self, cmd: str, seq: int, problem: str, expected: str) -> str:
        lines = list(self._stderr)[-STDERR_SHOWN:]
        stderr = " | ".join(lines) if lines else "(empty)"
        return " ".join(f"{self.name}: {cmd} (seq {seq}): {problem}; expected {expected}; last stderr: {stderr}".split("\n"))

    def _kill(self) -> None:
        """Kill the process group, reap the process (no zombie), and let the stderr reader thread end."""
        process = self.process
        if process.returncode is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the leader is not reaped yet: its group id is still its own
            except (ProcessLookupError, PermissionError):
                pass
            try:
                process.kill()
            except ProcessLookupError:
                pass
            process.wait()
        LIVE.discard(self)
        threads = getattr(self, "_threads", [])
        for thread in threads:
            thread.join(timeout=1.0)
        # A reader still in its read holds the stream's lock, and closing the stream would wait for it: for as long
        # as a process that left the group (setsid) keeps the pipe open. The daemon thread ends with that process.
        reading = any(thread.is_alive() for thread in threads)
        for stream in (process.stdout, process.stderr):
            if stream is not None and not (reading and stream is process.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()  # owns the fd that _write writes to
            except OSError:
                pass


SERVE_ERROR = "kvspec.adapters.serve: error: "  # serve.py's one line for a spec that names nothing usable


class ServedAdapter(ProcessAdapter):
    """``python:module:factory``: the object served in a process of its own by ``python -m
    kvspec.adapters.serve`` (PROTO-17, PROTO-18), named by its spec. A spec that names nothing
    usable is found by that process, which says so on one line and exits with status 1: bad input
    (KvspecError), not a failure of the implementation."""

    def __init__(self, spec: str, command: list[str], env: dict[str, str], reply_timeout: float = 10.0, start_timeout: float = 30.0) -> None:
        try:
            super().__init__(command, reply_timeout, start_timeout, name=spec, env=env)
        except AdapterFailure:
            last = self._stderr[-1] if getattr(self, "_stderr", None) else ""
            if getattr(self, "process", None) is not None and self.process.returncode == 1 and last.startswith(f"{SERVE_ERROR}PROTO-18: "):
                raise KvspecError(last.removeprefix(SERVE_ERROR)) from None
            raise
