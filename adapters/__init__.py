"""kvspec's adapters: how the conformance suite drives an implementation under test.

An adapter spec (PROTO-18) names an implementation; ``Implementation`` resolves it once, refusing
one that cannot be used at all (no such program, module, file or factory) as bad input, and starts
it as often as a fresh one is needed: once, and again after each failure. What the implementation
does once it runs, at start included, is its own failure (AdapterFailure), never kvspec's, and
the verdict is that it does not conform (PROTO-30). ``python:module:factory`` runs in a process of
its own, served over the protocol (PROTO-17), so that nothing it does can end or hang kvspec;
``in-process:module:factory`` runs inside kvspec's process, as the user chose (PROTO-29).
"""

import importlib
import importlib.util
import math
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kvspec.reference import KvspecError
from kvspec.reference.constants import REPLY_TIMEOUT, START_TIMEOUT

from .benefit import BenefitAdapter
from .inprocess import Expired, InProcessAdapter, Raised, within
from .interface import Adapter, AdapterFailure, described, described_error
from .process import ProcessAdapter, ServedAdapter

REPLAY_METHODS = ("configure", "hit_tokens", "access", "resident_count", "snapshot")  # interface.Adapter
LIFECYCLE_METHODS = ("arrive", "lookup", "allocate", "compute", "decode", "finish", "preempt", "lifecycle_state")  # interface.LifecycleAdapter
BENEFIT_METHODS = ("configure_benefit", "consider_admission", "record_hit", "record_miss", "observe_pressure", "choose_victims",
                   "select_probation_cap_victims", "remove", "benefit_state")  # benefit.BenefitAdapter
SPEC_FORMS = '"reference", "python:module:factory", "in-process:module:factory" or "cmd:program args"'
IN_PROCESS = "in-process"  # the prefix of an implementation called inside kvspec's process (PROTO-18, PROTO-29)

Started = ProcessAdapter | InProcessAdapter  # a ServedAdapter is a ProcessAdapter


class Implementation:
    """The implementation an adapter spec names (PROTO-18), started afresh whenever one is needed.

    Constructing it checks that the spec can be used (KvspecError otherwise: bad input, nothing
    started); ``start``, ``current`` and ``close`` raise AdapterFailure for what the implementation
    does wrong."""

    def __init__(self, spec: str, reply_timeout: float = REPLY_TIMEOUT, start_timeout: float = START_TIMEOUT,
                 launch: Callable[[], Started] | None = None) -> None:
        if not all(math.isfinite(t) and t > 0 for t in (reply_timeout, start_timeout)):
            raise KvspecError("PROTO-15: the timeouts must be finite, positive numbers of seconds")
        self.spec = spec
        self._launch = launch or resolve(spec, reply_timeout, start_timeout)
        self.in_process = spec == "reference" or spec.startswith(f"{IN_PROCESS}:")  # called directly, not over the protocol (PROTO-29)
        self.adapter: Started | None = None

    @classmethod
    def in_process(cls, factory: Callable[[], Any], name: str = "") -> "Implementation":
        """An in-process implementation built by ``factory``, guarded as python:module:factory is."""
        name = name or f"{IN_PROCESS}:{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', '?')}"
        return cls(name, launch=lambda: InProcessAdapter(name, factory))

    @classmethod
    def of(cls, adapter: "Adapter | BenefitAdapter | Implementation") -> "Implementation":
        """``adapter`` as an Implementation. An object already started cannot be started afresh:
        every start gives it again, so a fault stays with it (tests pass conforming objects)."""
        if isinstance(adapter, Implementation):
            return adapter
        if isinstance(adapter, ProcessAdapter):
            return cls(f"cmd:{adapter.name}", launch=lambda: adapter)
        return cls.in_process(lambda: adapter, f"{IN_PROCESS}:{type(adapter).__module__}:{type(adapter).__qualname__}")

    def start(self) -> Started:
        """A fresh implementation, the running one stopped first (PROTO-13)."""
        previous, self.adapter = self.adapter, None
        if previous is not None and not previous.failed:
            previous.close()
        self.adapter = self._launch()
        return self.adapter

    def current(self) -> Started:
        """The running implementation, or a fresh one if it failed (or none has started)."""
        if self.adapter is None or self.adapter.failed:
            return self.start()
        return self.adapter

    def close(self) -> None:
        """PROTO-13: stop the running implementation; AdapterFailure if it does not stop as it must."""
        adapter, self.adapter = self.adapter, None
        if adapter is not None:
            adapter.close()


def resolve(spec: str, reply_timeout: float, start_timeout: float) -> Callable[[], Started]:
    """PROTO-18: how to start the implementation ``spec`` names, or a KvspecError if it names none.
    Nothing of the implementation runs here: a ``python:`` module is only looked for."""
    if spec == "reference":
        from .reference import ReferenceAdapter

        return lambda: InProcessAdapter(spec, ReferenceAdapter, reply_timeout, start_timeout)
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in ("python", IN_PROCESS, "cmd"):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not one of {SPEC_FORMS}{quoting_hint(spec)}")
    if kind == "cmd":
        command = command_of(spec, rest)
        return lambda: ProcessAdapter(command, reply_timeout, start_timeout)
    if kind == "python":
        module_name = module_of(spec, rest)
        if not module_name.endswith(".py") and not findable(module_name):
            raise KvspecError(f"PROTO-18: adapter spec {spec!r}: no module named {module_name!r}")
        command = [sys.executable, "-P", "-m", "kvspec.adapters.serve", spec]  # -P: the module is found on kvspec's path alone
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if isinstance(entry, str))}
        return lambda: ServedAdapter(spec, command, environment, reply_timeout, start_timeout)
    factory = factory_of(spec, rest, start_timeout)
    return lambda: InProcessAdapter(spec, factory, reply_timeout, start_timeout)


def quoting_hint(spec: str) -> str:
    """A spec quoted whole inside its own text (``'cmd:program args'`` passed with its quotes): how to write it."""
    try:
        words = shlex.split(spec)
    except ValueError:
        return ""
    if len(words) == 1 and words[0] != spec and words[0].partition(":")[0] in ("python", IN_PROCESS, "cmd", "reference"):
        return f"; the quotes are the shell's, not the spec's: --adapter {shlex.quote(words[0])}"
    return ""


def command_of(spec: str, rest: str) -> list[str]:
    """The command of ``cmd:program args``, whose program must exist and be executable. A command
    quoted whole (``cmd:'program args'``, the shell's quotes taken into the spec) is split once more."""
    command = split(spec, rest)
    if len(command) == 1 and shutil.which(command[0]) is None and len(split(spec, command[0])) > 1:
        command = split(spec, command[0])
    if shutil.which(command[0]) is None:
        where = "no such file, or not executable" if "/" in command[0] else "not found on PATH"
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: program {command[0]!r}: {where}")
    return command


def split(spec: str, text: str) -> list[str]:
    """``text`` split as a POSIX shell splits it, into one word at least."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: the command cannot be split: {error}") from None
    if not words:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} names no program (expected cmd:program args)")
    return words


def module_of(spec: str, rest: str) -> str:
    """The module of ``python:module:factory`` (or ``in-process:``), a file that exists if it ends in ``.py``."""
    module_name, sep, factory_name = rest.partition(":")
    if not sep or not module_name or not factory_name or ":" in factory_name:
        kind = spec.partition(":")[0]
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not {kind}:module:factory")
    if module_name.endswith(".py") and not Path(module_name).is_file():
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: no such file: {module_name}")
    return module_name


def findable(module_name: str) -> bool:
    """Whether ``module_name`` can be imported, found as the import system finds it, package by
    package, without running any of it (importlib.util.find_spec would import the packages)."""
    if module_name in sys.modules:
        return True
    path = None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        try:
            found = next((spec for finder in sys.meta_path if hasattr(finder, "find_spec")
                          for spec in [finder.find_spec(name, path)] if spec is not None), None)
        except Exception:  # noqa: BLE001 -- a finder that cannot tell: the import itself will
            return True
        if found is None:
            return False
        path = found.submodule_search_locations
        if path is None and depth < len(parts):
            return False
    return True


def factory_of(spec: str, rest: str, start_timeout: float | None = None) -> Callable[[], Any]:
    """The factory of ``python:module:factory`` or ``in-process:module:factory``, imported here,
    within ``start_timeout`` if given (in kvspec's process; in the process that serves it, the process
    is the guard). A module or factory that does not exist is bad input; a module that exists and
    fails to import is the implementation failing at start."""
    module_name = module_of(spec, rest)
    factory_name = rest.partition(":")[2]
    path = Path(module_name)

    def importing() -> ModuleType:
        return import_file(path) if module_name.endswith(".py") else importlib.import_module(module_name)

    try:
        module = importing() if start_timeout is None else within(start_timeout, importing, label=f"{spec}: its import")
    except Expired:
        return failing(f"importing {module_name} gave no reply within {start_timeout:g} s (hung?)", "PROTO-15")
    except Raised as raised:
        return import_failed(spec, module_name, raised.error, raised.described)
    except BaseException as error:  # noqa: BLE001 -- the implementation's code failed as it ran
        return import_failed(spec, module_name, error, described_error(error))
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: {module_name} has no callable {factory_name}")
    return lambda: checked(factory_name, factory())


def import_failed(spec: str, module_name: str, error: BaseException, described: str) -> Callable[[], Any]:
    """A module that is not there is bad input; one that fails as it is imported fails at start."""
    if isinstance(error, ModuleNotFoundError) and error.name is not None and (
            module_name == error.name or module_name.startswith(error.name + ".")):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: no module named {module_name!r}") from None
    return failing(f"importing {module_name} raised {described}")


def failing(problem: str, clause: str = "PROTO-29") -> Callable[[], Any]:
    """A factory that fails at start, as the implementation's import did."""

    def start() -> Any:
        raise AdapterFailure(problem[:400], clause)

    return start


def checked(factory_name: str, adapter: Any) -> Any:
    """PROTO-18: what the factory returned has the Adapter interface (or the BenefitAdapter one)."""
    common = [name for name in ("identity", "level", "policies", "close") if not hasattr(adapter, name)]
    replay = [name for name in REPLAY_METHODS if not hasattr(adapter, name)]
    benefit = [name for name in BENEFIT_METHODS if not hasattr(adapter, name)]
    if common or (replay and benefit):
        missing = common + (replay if len(replay) <= len(benefit) else benefit)
        raise AdapterFailure(f"{factory_name}() returned {described(adapter)}, not an Adapter (no {', '.join(missing)})", "PROTO-18")
    lifecycle = [name for name in LIFECYCLE_METHODS if not hasattr(adapter, name)]
    if getattr(adapter, "lifecycle", False) is True and lifecycle:  # PROTO-35: offered, by the LifecycleAdapter methods
        raise AdapterFailure(f"{factory_name}() returned {described(adapter)}, which offers the lifecycle and has no {', '.join(lifecycle)}", "PROTO-18")
    return adapter


def load_adapter(spec: str) -> Adapter | BenefitAdapter:
    """The implementation ``spec`` names, started: for ``cmd:`` and ``python:``, its process
    (AdapterFailure if it fails at start); for ``reference`` and ``in-process:``, the object itself,
    unguarded, as ``python -m kvspec.adapters.serve`` serves it (the process it runs in is the
    guard), whatever it raises at import or in its factory propagating. KvspecError if the spec
    names nothing usable."""
    if spec == "reference":
        from .reference import ReferenceAdapter

        return ReferenceAdapter()
    kind, sep, rest = spec.partition(":")
    if kind == IN_PROCESS and sep:
        return factory_of(spec, rest)()  # type: ignore[no-any-return]
    return Implementation(spec).start()


def served(spec: str) -> Adapter | BenefitAdapter:
    """What ``python -m kvspec.adapters.serve spec`` serves: the object of ``reference``,
    ``python:module:factory`` or ``in-process:module:factory`` itself (load_adapter's in-process objects)."""
    kind, sep, rest = spec.partition(":")
    if kind == "python" and sep:
        return factory_of(spec, rest)()  # type: ignore[no-any-return]
    if spec != "reference" and kind != IN_PROCESS:
        raise KvspecError(f"PROTO-17: serves an in-process adapter: reference, python:module:factory or {IN_PROCESS}:module:factory, not {spec!r}")
    return load_adapter(spec)


def import_file(path: Path) -> ModuleType:
    """The module in the file at ``path``, imported under its stem."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
