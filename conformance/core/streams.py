"""The standard streams, made sound before the `kvspec` command runs anything (its console script
and `python -m kvspec.conformance.cli`; never under a test, whose streams are its own). This module
imports nothing of kvspec's, so that it runs before the reference's contracts are installed:

- a stream the caller closed (`<&-`, `>&-`, `2>&-`) gets /dev/null under its number, so that no file
  kvspec opens takes that number (a library writing to descriptor 2 would write into an output);
  standard input stays None, as Python leaves it (a trace read from `-` is refused:
  reference/trace.py), standard output refuses its first write, and standard error takes what is
  written and drops it: the exit status alone says how the run ended;
- a write to standard output that fails raises an OSError whose filename is STDOUT, so that the
  error names it, and nothing else is blamed on it; one to standard error is dropped, as there is
  nowhere left to say anything;
- neither fails on a character its encoding lacks (undecodable bytes of a path, which Python holds
  as lone surrogates; a name in an ASCII locale): it is written as its backslash escape, as
  Python's own stderr writes it.
"""

import errno
import io
import os
import sys

STDOUT = "standard output"


class Output(io.FileIO):
    """Standard output's descriptor, whose failed writes name it. Once one has failed the rest go
    nowhere (the flush at exit adds no second message), and ``failure`` keeps the first, so that a
    failure something on the way swallowed (argparse drops those of --help) still ends the run."""

    closed_by_caller = False
    failure: OSError | None = None

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.failure is not None:
            return len(data)
        try:
            if self.closed_by_caller:
                raise OSError(errno.EBADF, "is closed (kvspec was started with it closed)")
            return super().write(data)
        except OSError as error:
            self.failure = OSError(error.errno, error.strerror, STDOUT)
            raise self.failure from None


class Dropping(io.FileIO):
    """Standard error's descriptor: a write that fails is dropped."""

    def write(self, data: bytes) -> int:  # type: ignore[override]
        try:
            return super().write(data)
        except OSError:
            return len(data)


def closed(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
    except OSError:
        return True
    return False


def sound_streams() -> None:
    """Standard input, output and error as the module's docstring says."""
    gone = [descriptor for descriptor in (0, 1, 2) if closed(descriptor)]
    for descriptor in gone:
        null = os.open(os.devnull, os.O_RDWR)
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
    output = Output(1, "w", closefd=False)
    output.closed_by_caller = 1 in gone
    sys.stdout = text_stream(output, sys.stdout)
    sys.stderr = text_stream(Dropping(2, "w", closefd=False), sys.stderr)


def text_stream(raw: io.FileIO, was: io.TextIOWrapper | None) -> io.TextIOWrapper:
    """``raw`` as Python made the stream it replaces (its encoding; line buffering on a terminal
    and for stderr; unbuffered under `python -u`), with backslash escapes for what the encoding lacks."""
    if was is None:  # closed: the file it stands for now is /dev/null
        return io.TextIOWrapper(io.BufferedWriter(raw), errors="backslashreplace", line_buffering=raw.fileno() == 2)
    buffer = raw if was.write_through else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffer, encoding=was.encoding, errors="backslashreplace", line_buffering=was.line_buffering,  # type: ignore[arg-type]
                            write_through=was.write_through)


def stdout_failure() -> OSError | None:
    """The first write to standard output that failed, if this module's standard output is in place."""
    buffer = getattr(sys.stdout, "buffer", None)
    raw = getattr(buffer, "raw", buffer)  # under `python -u`, the descriptor is the buffer
    return raw.failure if isinstance(raw, Output) else None
