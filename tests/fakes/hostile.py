"""Hostile in-process implementations (python:tests/fakes/hostile.py:FACTORY, or in-process:): the
reference, which conforms, doing at its first request after each configure (its first hit_tokens)
one of the things that would end, fool or hang the process it runs in (issue 28, section 8).
Served (python:), each is a process's failure; in kvspec's process (in-process:), each but
``exits`` and ``segfaults`` is a verdict too (PROTO-29); those two no process survives in itself."""

import ctypes
import os
import signal
import sys
import time

from kvspec.adapters.interface import Identity
from kvspec.adapters.reference import ReferenceAdapter

CONTROLS = "\r\x1b[2K\x1b[1A\x1b]0;owned\x07\u2028"  # a carriage return, erase line, cursor up, an OSC title, a line separator


class Quit(BaseException):
    """A BaseException of its own."""


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message")


class Everything(str):
    """A level equal to every value, a str by its class."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


def ends_in_os_exit() -> None:
    os._exit(0)


def ends_in_posix_exit() -> None:
    import posix

    posix._exit(0)  # os._exit by another name


def ends_in_sys_exit() -> None:
    sys.exit(0)


def segfaults() -> None:
    ctypes.string_at(0)


def ignores_alarm_and_sleeps() -> None:
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(3600)


def ignores_alarm_and_spins() -> None:
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    while True:
        pass


def catches_everything() -> None:
    while True:
        try:
            time.sleep(3600)
        except BaseException:  # noqa: BLE001 -- the point: no interruption ends it
            pass


def takes_alarm() -> None:
    signal.signal(signal.SIGALRM, lambda signum, frame: None)


def raises(error: BaseException) -> None:
    raise error


DEEDS = {
    "exits": ends_in_os_exit,
    "posix_exits": ends_in_posix_exit,
    "sys_exits": ends_in_sys_exit,
    "segfaults": segfaults,
    "ignores_alarm_and_sleeps": ignores_alarm_and_sleeps,
    "ignores_alarm_and_spins": ignores_alarm_and_spins,
    "catches_everything": catches_everything,
    "takes_alarm": takes_alarm,
    "keyboard_interrupt": lambda: raises(KeyboardInterrupt()),
    "generator_exit": lambda: raises(GeneratorExit()),
    "own_base_exception": lambda: raises(Quit("quit")),
    "unprintable_exception": lambda: raises(Unprintable()),
    "control_characters": lambda: raises(ValueError(f"bad{CONTROLS}block")),
}


class Hostile(ReferenceAdapter):
    deed = "exits"

    def configure(self, config: object) -> None:
        self.requests = 0
        super().configure(config)  # type: ignore[arg-type]

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        self.requests += 1
        if self.requests == 1:
            DEEDS[self.deed]()
        return super().hit_tokens(hash_ids, input_length)


def hostile(deed: str) -> type[Hostile]:
    return type(f"Hostile_{deed}", (Hostile,), {"deed": deed})


globals().update({deed: hostile(deed) for deed in DEEDS})


class NamedWithControls(hostile("control_characters")):  # type: ignore[misc]
    identity = Identity(name=f"evil{CONTROLS}name", language="python", version="1")


class LevelEqualToEverything(ReferenceAdapter):
    level = Everything("anything")  # type: ignore[assignment]


def level_equal_to_everything() -> LevelEqualToEverything:
    return LevelEqualToEverything()


def named_with_controls() -> NamedWithControls:
    return NamedWithControls()
