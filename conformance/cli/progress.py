"""A one-line progress display on stderr for work that takes more than a moment."""

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """Redraws ``label: NN % (detail)`` in place, first after ``delay`` seconds, at most ten
    times a second, and only on a terminal: a pipe or a CI log gets nothing. A fraction of None
    (the length of standard input is unknown) draws no percentage."""

    def __init__(self, label: str, fraction: Callable[[], float | None], stream: TextIO | None = None, delay: float = 0.5) -> None:
        self.label = label
        self.fraction = fraction
        self.stream = stream or sys.stderr  # the one in place now (conformance/core/streams.py replaces it as the command starts)
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.next_draw = self.started + delay
        self.drawn = False

    def update(self, detail: str) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next_draw:
            return
        self.next_draw = now + 0.1
        self.drawn = True
        fraction = self.fraction()
        percent = "" if fraction is None else f"{fraction * 100:5.1f} % "
        self.stream.write(f"\r{self.label}: {percent}({detail}, {now - self.started:.1f} s)\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
