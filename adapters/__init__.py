"""kvspec's adapters: how the conformance suite drives an implementation under test.

An adapter spec (PROTO-18) names an implementation; ``Implementation`` resolves it once, refusing
one that cannot be used at all (no such program, module, file or factory) as bad input, and starts
it as often as a fresh one is needed: once, and again after each failure. What the implementation
does once it runs, at start included, is its own failure (AdapterFailure), never kvspec's, and
the verdict is that it does not conform (PROTO-30).
"""

import importlib
import importlib.util
import math
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
from .inprocess import InProcessAdapter
from .interface import Adapter, AdapterFailure, described
from .process import ProcessAdapter

REPLAY_METHODS = ("configure", "hit_tokens", "access", "resident_count", "snapshot")  # interface.Adapter
BENEFIT_METHODS = ("configure_benefit", "consider_admission", "record_hit", "record_miss", "observe_pressure", "choose_victims",
                   "select_probation_cap_victims", "remove", "benefit_state")  # benefit.BenefitAdapter
SPEC_FORMS = '"reference", "python:module:factory" or "cmd:program args"'

Started = ProcessAdapter | InProcessAdapter


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
        self.in_process = not spec.startswith("cmd:")  # whether it is called directly, not over the protocol (PROTO-29)
        self.adapter: Started | None = None

    @classmethod
    def in_process(cls, factory: Callable[[], Any], name: str = "") -> "Implementation":
        """An in-process implementation built by ``factory``, guarded as python:module:factory is."""
        name = name or f"python:{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', '?')}"
        return cls(name, launch=lambda: InProcessAdapter(name, factory))

    @classmethod
    def of(cls, adapter: "Adapter | BenefitAdapter | Implementation") -> "Implementation":
        """``adapter`` as an Implementation. An object already started cannot be started afresh:
        every start gives it again, so a fault stays with it (tests pass conforming objects)."""
        if isinstance(adapter, Implementation):
            return adapter
        if isinstance(adapter, ProcessAdapter):
            return cls(f"cmd:{adapter.name}", launch=lambda: adapter)
        return cls.in_process(lambda: adapter, f"python:{type(adapter).__module__}:{type(adapter).__qualname__}")

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
    """PROTO-18: how to start the implementation ``spec`` names, or a KvspecError if it names none."""
    if spec == "reference":
        from .reference import ReferenceAdapter

        return lambda: InProcessAdapter(spec, ReferenceAdapter, reply_timeout, start_timeout)
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in ("python", "cmd"):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not one of {SPEC_FORMS}")
    if kind == "cmd":
        command = command_of(spec, rest)
        return lambda: ProcessAdapter(command, reply_timeout, start_timeout)
    factory = factory_of(spec, rest)
    return lambda: InProcessAdapter(spec, factory, reply_timeout, start_timeout)


def command_of(spec: str, rest: str) -> list[str]:
    """The command of ``cmd:program args``, whose program must exist and be executable."""
    try:
        command = shlex.split(rest)
    except ValueError as error:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: the command cannot be split: {error}") from None
    if not command:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} names no program (expected cmd:program args)")
    if shutil.which(command[0]) is None:
        where = "no such file, or not executable" if "/" in command[0] else "not found on PATH"
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: program {command[0]!r}: {where}")
    return command


def factory_of(spec: str, rest: str) -> Callable[[], Any]:
    """The factory of ``python:module:factory``. A module or factory that does not exist is bad
    input; a module that exists and fails to import is the implementation failing at start."""
    module_name, sep, factory_name = rest.partition(":")
    if not sep or not module_name or not factory_name or ":" in factory_name:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not python:module:factory")
    path = Path(module_name)
    if module_name.endswith(".py") and not path.is_file():
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: no such file: {module_name}")
    try:
        module = import_file(path) if module_name.endswith(".py") else importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise KvspecError(f"PROTO-18: adapter spec {spec!r}: no module named {module_name!r}") from None
        return failing(f"importing {module_name} raised {type(error).__name__}: {error}")
    except (Exception, SystemExit) as error:  # noqa: BLE001 -- the implementation's code failed as it ran
        return failing(f"importing {module_name} raised {type(error).__name__}: {error}")
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: {module_name} has no callable {factory_name}")
    return lambda: checked(factory_name, factory())


def failing(problem: str) -> Callable[[], Any]:
    """A factory that fails at start, as the implementation's import did."""

    def start() -> Any:
        raise AdapterFailure(problem[:400], "PROTO-29")

    return start


def checked(factory_name: str, adapter: Any) -> Any:
    """PROTO-18: what the factory returned has the Adapter interface (or the BenefitAdapter one)."""
    common = [name for name in ("identity", "level", "policies", "close") if not hasattr(adapter, name)]
    replay = [name for name in REPLAY_METHODS if not hasattr(adapter, name)]
    benefit = [name for name in BENEFIT_METHODS if not hasattr(adapter, name)]
    if common or (replay and benefit):
        missing = common + (replay if len(replay) <= len(benefit) else benefit)
        raise AdapterFailure(f"{factory_name}() returned {described(adapter)}, not an Adapter (no {', '.join(missing)})", "PROTO-18")
    return adapter


def load_adapter(spec: str) -> Adapter | BenefitAdapter:
    """The implementation ``spec`` names, started: for ``cmd:``, its process (AdapterFailure if it
    fails at start); for ``reference`` and ``python:``, the object itself, unguarded, as
    ``python -m kvspec.adapters.serve`` serves it (the process it runs in is the guard), whatever
    it raises at import or in its factory propagating. KvspecError if the spec names nothing usable."""
    if spec == "reference":
        from .reference import ReferenceAdapter

        return ReferenceAdapter()
    kind, sep, rest = spec.partition(":")
    if kind == "python" and sep:
        return factory_of(spec, rest)()  # type: ignore[no-any-return]
    return Implementation(spec).start()


def import_file(path: Path) -> ModuleType:
    """The module in the file at ``path``, imported under its stem."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
