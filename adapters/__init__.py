"""kvspec's adapters: how the conformance suite drives an implementation under test."""

import importlib
import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType

from kvspec.reference import KvspecError

from .benefit import BenefitAdapter
from .interface import Adapter

REPLAY_METHODS = ("configure", "hit_tokens", "access", "resident_count", "snapshot")  # interface.Adapter
BENEFIT_METHODS = ("configure_benefit", "consider_admission", "record_hit", "record_miss", "observe_pressure", "choose_victims",
                   "select_probation_cap_victims", "remove", "benefit_state")  # benefit.BenefitAdapter
SPEC_FORMS = '"reference", "python:module:factory" or "cmd:program args"'


def load_adapter(spec: str) -> Adapter | BenefitAdapter:
    """PROTO-18: the implementation an adapter spec names, started and ready to configure.

    ``reference`` is kvspec's own reference in-process; ``python:module:factory`` imports
    ``module`` (a dotted name, or the path of a ``.py`` file) and calls ``factory()``, which
    returns an Adapter; ``cmd:program args`` starts
    ``program`` (its arguments split as a shell would) and speaks the adapter protocol with it.
    """
    if spec == "reference":
        from .reference import ReferenceAdapter

        return ReferenceAdapter()
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in ("python", "cmd"):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not one of {SPEC_FORMS}")
    if kind == "cmd":
        try:
            command = shlex.split(rest)
        except ValueError as error:
            raise KvspecError(f"PROTO-18: adapter spec {spec!r}: the command cannot be split: {error}") from error
        if not command:
            raise KvspecError(f"PROTO-18: adapter spec {spec!r} names no program (expected cmd:program args)")
        from .process import ProcessAdapter

        return ProcessAdapter(command)
    module_name, sep, factory_name = rest.partition(":")
    if not sep or not module_name or not factory_name or ":" in factory_name:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r} is not python:module:factory")
    try:
        module = import_file(Path(module_name)) if module_name.endswith(".py") else importlib.import_module(module_name)
    except ImportError as error:
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: cannot import {module_name}: {error}") from error
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise KvspecError(f"PROTO-18: adapter spec {spec!r}: {module_name} has no callable {factory_name}")
    adapter = factory()
    common = [name for name in ("identity", "level", "close") if not hasattr(adapter, name)]
    replay = [name for name in REPLAY_METHODS if not hasattr(adapter, name)]
    benefit = [name for name in BENEFIT_METHODS if not hasattr(adapter, name)]
    if common or (replay and benefit):
        missing = common + (replay if len(replay) <= len(benefit) else benefit)
        raise KvspecError(
            f"PROTO-18: adapter spec {spec!r}: {factory_name}() returned {type(adapter).__name__}, not an Adapter (no {', '.join(missing)})"
        )
    return adapter


def import_file(path: Path) -> ModuleType:
    """The module in the file at ``path``, imported under its stem (ImportError if there is none)."""
    if not path.is_file():
        raise ImportError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
