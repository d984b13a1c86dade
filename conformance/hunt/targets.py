"""What a `kvspec hunt check` explores: the rules of spec/s3fifo.md, lru.md, fifo.md, benefit.md and
lifecycle.md as the reference states them in contracts, all of them or one function or one clause with what calls it.

A target is a function that carries a contract, so this module runs where the contracts are
installed (the runner's process, KVSPEC_CONTRACTS=all). Everything here is derived from the code
and the spec: the functions of the modules in SCOPE, which clause each cites (in its code, its
docstring or its contracts' descriptions), and which function calls which (the global names its
code reads). Kept by hand: only NOT_EXPLORED and PARTLY_EXPLORED, the rules or parts of rules
CrossHair cannot explore, each with its reason (../shared/DESIGN.md: floats are for Hypothesis,
CrossHair for integer logic).
"""

import importlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from types import CodeType, FunctionType, ModuleType
from typing import Any

from kvspec.conformance.core.citations import cited

SCOPE = ("kvspec.reference.s3fifo", "kvspec.reference.lru", "kvspec.reference.fifo", "kvspec.reference.replay.hit_tokens",
         *(f"kvspec.reference.benefit.{name}" for name in ("config.check_config", "config.check_id", "config.check_bytes",
                                                           "ledger.register", "ledger.release", "ledger.new_bytes")),
         *(f"kvspec.reference.in_use.{name}" for name in ("evictable_nearest_head", "free_queue_slot", "InUseLRU.access", "InUseFIFO.access")))
AS_WRITTEN = ("kvspec.conformance.hunt.seed_rules",)

# Kept by hand, each with its reason: the rules of spec/s3fifo.md, lru.md, fifo.md, benefit.md and lifecycle.md that
# the reference implements and that no contract states so that CrossHair explores it. Every other
# such rule is stated by a contract a wrong body breaks, and conformance/galleries/spec_mutants.py
# plants a mistake in it for `kvspec hunt` to find (tests/test_hunt_gallery.py holds both to the spec).
DOUBLES = ("its rule is arithmetic on doubles, which CrossHair takes for exact reals (../shared/DESIGN.md: it did not find the difference "
           "between exact and float benefit-per-byte in 75 s, which Hypothesis found in 14 s): tests/test_benefit.py and the benefit "
           "certification's Hypothesis machine check it")
WHOLE_STATE = ("a rule of a BenefitPolicy method, whose input is the policy's whole state (a dataclass of the configuration, the entries "
               "with their float weights and cost samples, the ghosts and the ledger), or of the LRU baseline over an OrderedDict: "
               "../shared/DESIGN.md measured CrossHair finding no planted bug inside such a dataclass in 150 to 300 s, nor over an "
               "OrderedDict in 20 s; the benefit certification and the fixtures check it")
WHOLE_TRACES = ("a fixed computation over whole seeded or Mooncake traces, with no input to search: tests/test_benefit_compare.py, "
                "tests/test_benefit_prefix.py and the fixtures pin its results")
POOL = ("a rule of a Pool method (reference/lifecycle.py), whose input is the pool's whole state (its policy in use, the pending and "
        "held blocks, and the requests in flight, each a dataclass of lists and sets): with LIFE-INV-1 as its precondition, CrossHair "
        "found neither a planted finish that frees no held block in 58 s (Pool.finish) nor a planted lookup that hits an uncomputed "
        "block in 43 s (Pool.lookup, then 15 s of allocate; crosshair-tool 0.0.113, measured); LIFE-HIT-1 and LIFE-HIT-2 are "
        "Pool.count_hits, which no contract states; tests/test_lifecycle.py checks each, and its stateful interleavings LIFE-INV-1 "
        "and LIFE-INV-2 after every operation")
S3FIFO_IN_USE = ("a rule of S3FIFO in use (reference/in_use.py): its access is s3fifo.access rebuilt, without annotations, so "
                 "CrossHair draws h of any type (measured: a counterexample h=float('inf') in 1.3 s that does not reproduce), and with "
                 "them typed it did not find a planted M drain that evicts a referenced entry at freq 0 in 28 s (crosshair-tool "
                 "0.0.113, measured); its drains also put entries back with OrderedDict.move_to_end, which the plain dicts CrossHair "
                 "builds lack; tests/test_lifecycle.py and the interleavings check it")
ADMISSION_IN_USE = ("the refusal of an access in use when every hash is referenced: CrossHair reached no such state within "
                    "--budget 30 (measured: a planted LRU access that admits all the same, and a planted FIFO access that evicts its "
                    "referenced head, not found in 24 s each, crosshair-tool 0.0.113); the victim's own rules (evictable_nearest_head, "
                    "free_queue_slot) are hunted with their mutants; tests/test_lifecycle.py checks it")
SERVED_BENEFIT = ("a rule of the benefit policy's pool in flight (reference/benefit/served.py), which only the served replay's scheduler "
                  "drives, over a whole trace: its input is that server's state, the ledger's and the requests' in flight together; "
                  "tests/test_serve_benefit.py checks each rule, and its limit against compare's benefit row")
NOT_EXPLORED: dict[str, str] = {
    **dict.fromkeys((f"LIFE-BEN-{n}" for n in range(1, 9)), SERVED_BENEFIT),
    "LIFE-SERVE-7": ("the served replay's result, which reference/serve.py's scheduler counts over a whole trace (the benefit pool's "
                     "is_resident cites it for the uncomputed tokens); tests/test_serve.py, tests/test_serve_model.py and "
                     "tests/test_serve_benefit.py check it"),
    **dict.fromkeys((*(f"LIFE-POOL-{n}" for n in range(1, 4)), "LIFE-ARRIVE-1", "LIFE-LOOKUP-1", *(f"LIFE-ALLOC-{n}" for n in range(1, 5)),
                     "LIFE-COMPUTE-1", "LIFE-DECODE-1", "LIFE-FINISH-1", "LIFE-PREEMPT-1", "LIFE-EVICT-2", "LIFE-EVICT-3", "LIFE-HIT-1",
                     "LIFE-HIT-2", "LIFE-INV-1", "LIFE-INV-2"), POOL),
    **dict.fromkeys((f"S3-LIFE-{n}" for n in range(1, 5)), S3FIFO_IN_USE),
    **dict.fromkeys(("LRU-LIFE-1", "FIFO-LIFE-1"), ADMISSION_IN_USE),
    **dict.fromkeys(("BEN-COST-1", "BEN-COST-2", "BEN-ENTRY-2", "BEN-ENTRY-3", *(f"BEN-SCORE-{n}" for n in range(1, 6)), "BEN-LEDGER-3",
                     "BEN-LEDGER-4", "BEN-LEDGER-5", *(f"BEN-DECAY-{n}" for n in range(1, 4)), *(f"BEN-ARITH-{n}" for n in range(1, 4)),
                     *(f"BEN-CAP-{n}" for n in range(1, 6)), *(f"BEN-VICTIM-{n}" for n in range(1, 6)), "BEN-MODEL-3", "BEN-MODEL-4"),
                    DOUBLES),
    **dict.fromkeys(("BEN-ENTRY-1", *(f"BEN-CLOCK-{n}" for n in range(1, 5)), *(f"BEN-ADMIT-{n}" for n in range(1, 10)),
                     *(f"BEN-HIT-{n}" for n in range(1, 4)), "BEN-MISS-1", "BEN-GRACE-2", *(f"BEN-GHOST-{n}" for n in range(1, 5)),
                     "BEN-REMOVE-1", *(f"BEN-LRU-{n}" for n in range(1, 4))), WHOLE_STATE),
    **dict.fromkeys((*(f"BEN-TRACE-{n}" for n in range(1, 8)), *(f"BEN-CMP-{n}" for n in range(1, 4)),
                     *(f"BEN-PREFIX-{n}" for n in range(1, 8)), "BEN-MODEL-1", "BEN-MODEL-2"), WHOLE_TRACES),
    "BEN-GRACE-1": ("selection.in_grace takes an Entry, whose state is a typing.Literal that CrossHair cannot build (crosshair-tool "
                    "0.0.113 raises TypeError in get_type_hints, measured); tests/test_benefit.py (BEN-GRACE-1) checks it"),
    "BEN-CONF-8": ("that a refusal names its clause: the hunt takes a ConfigError for a rule's answer to an input it refuses, so no search "
                   "breaks it; tests/test_benefit.py (BEN-CONF-8) checks the messages"),
}
# The part of a rule that no contract states so that CrossHair explores it; the rest of the rule is stated, and has its mutant.
PARTLY_EXPLORED: dict[str, str] = dict.fromkeys(("S3-ACCESS-1", "S3-ACCESS-2"), (
    "where the hit entry stays (its position does not change): CrossHair's symbolic dicts move a key whose value is assigned to "
    "their tail (crosshair-tool 0.0.113, measured: d[3] = d[3] + 1 on {3: 6, 4: 5} iterates 4, then 3), so in its search an update "
    "in place and a move to the tail are one; the contracts state the freq and the lengths, tests/test_s3fifo.py and the certifier "
    "the position (the mutants hit-in-small-moves-to-tail and hit-in-main-moves-to-tail, which the hunt cannot find)"))


@dataclass(frozen=True)
class Target:
    """One function CrossHair explores: its dotted name, the object that holds it (its module, or
    its class), and the function as that object holds it (a classmethod's function for a classmethod)."""

    name: str
    holder: ModuleType | type
    function: Callable[..., Any]
    caller: bool = False  # searched because it calls a function chosen by --function or --clause

    @property
    def attribute(self) -> str:
        return self.name.rsplit(".", 1)[1]


class SelectionError(Exception):
    """A --function or --clause that names nothing the hunt can explore."""


def contracted(function: object) -> bool:
    return any(hasattr(function, name) for name in ("__preconditions__", "__postconditions__"))


def plain(function: object) -> Callable[..., Any]:
    """The function itself, without its classmethod or its contracts' wrappers."""
    return inspect.unwrap(getattr(function, "__func__", function))  # type: ignore[arg-type]


def module_of(holder: ModuleType | type) -> ModuleType:
    return holder if isinstance(holder, ModuleType) else importlib.import_module(holder.__module__)


def defined_in(module: ModuleType, name: str) -> Iterator[Target]:
    """The functions with contracts that ``module`` (known as ``name``) defines, at its top level and
    in its classes, each once: a class attribute that is one of the module's functions is that function."""
    seen: set[int] = set()
    members = [(key, value) for key, value in vars(module).items() if getattr(value, "__module__", None) == module.__name__]
    for key, value in members:
        if isinstance(value, FunctionType) and contracted(value):
            seen.add(id(plain(value)))
            yield Target(f"{name}.{key}", module, value)
    for key, cls in members:
        if isinstance(cls, type):
            for attribute, value in vars(cls).items():
                if contracted(getattr(value, "__func__", value)) and id(plain(value)) not in seen:
                    seen.add(id(plain(value)))
                    yield Target(f"{name}.{key}.{attribute}", cls, getattr(value, "__func__", value))


def resolve(name: str) -> tuple[ModuleType | type | None, object]:
    """What a dotted name names, and the object that holds it (None for a module): the longest
    prefix that imports, then attributes, as CrossHair finds its targets."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        holder = None
        for part in parts[end:]:
            if not hasattr(found, part):
                raise SelectionError(f"{name}: {'.'.join(parts[:end])} has no {part!r}")
            holder, found = found, (vars(found).get(part, getattr(found, part)) if isinstance(found, type) else getattr(found, part))
        return holder, found
    raise SelectionError(f"{name}: no module of that name imports")


def scope_targets(scope: tuple[str, ...]) -> list[Target]:
    """Every function with contracts that the names of ``scope`` (modules or functions) hold."""
    targets = []
    for name in scope:
        holder, found = resolve(name)
        if isinstance(found, ModuleType):
            targets += defined_in(found, name)
        elif holder is not None and contracted(getattr(found, "__func__", found)):
            targets.append(Target(name, holder, getattr(found, "__func__", found)))
    return targets


def names_read(code: CodeType) -> set[str]:
    """The global and attribute names a function's code reads, its comprehensions' included (not
    its contracts: a condition is a function of its own, outside the code)."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names |= names_read(constant)
    return names


def names_reached(function: Callable[..., Any], module: ModuleType) -> set[str]:
    """The names ``function`` reads, and those read by each function of ``module`` without a
    contract that it calls: such a relay (s3fifo.evict_from_main, say) is no target of its own, so
    its caller is the one that calls what it relays to."""
    names: set[str] = set()
    relays = [plain(function)]
    while relays:
        read = names_read(relays.pop().__code__) - names
        names |= read
        relays += [f for name in read if isinstance(f := vars(module).get(name), FunctionType) and not contracted(f)
                   and f.__module__ == module.__name__]
    return names


def callers(chosen: list[Target], among: list[Target]) -> list[Target]:
    """The functions of ``among`` whose code calls one of ``chosen`` by its name, themselves or
    through relays."""
    wanted = {plain(target.function).__name__ for target in chosen}
    have = {target.name for target in chosen}
    return [replace(t, caller=True) for t in among if t.name not in have and wanted & names_reached(t.function, module_of(t.holder))]


def clauses_of(target: Target) -> set[str]:
    """The clauses a target states: in its code and docstring, and in its postconditions' descriptions
    (not its preconditions': what a rule requires of its caller is another rule's to state)."""
    function = target.function
    try:
        lines = inspect.getsource(plain(function)).splitlines()
    except (OSError, TypeError):
        lines = []
    body = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), 0)
    return cited(" ".join([*lines[body:], *(contract.description or "" for contract in getattr(function, "__postconditions__", []))]))


def module_name(target: Target) -> str:
    """The dotted name of the module that holds ``target``, as the target's own name reaches it."""
    return target.name.rsplit(".", 1 if isinstance(target.holder, ModuleType) else 2)[0]


def with_callers(chosen: list[Target]) -> list[Target]:
    """``chosen`` and, from the modules that hold them, the functions that call them."""
    modules = {module_name(target): module_of(target.holder) for target in chosen}
    return chosen + callers(chosen, [t for name, module in modules.items() for t in defined_in(module, name)])


def by_function(name: str) -> list[Target]:
    """``--function NAME``: that function and its callers."""
    holder, found = resolve(name)
    function = getattr(found, "__func__", found)
    if holder is None or not callable(function):
        raise SelectionError(f"{name} is not a function")
    if not contracted(function):
        raise SelectionError(f"{name} carries no contract: CrossHair has no condition of it to check")
    return with_callers([Target(name, holder, function)])


def by_clause(clause: str, scope: tuple[str, ...] = SCOPE) -> list[Target]:
    """``--clause ID``: the functions of the scope that cite it, and their callers."""
    if clause in NOT_EXPLORED:
        raise SelectionError(f"{clause}: the hunt does not explore it: {NOT_EXPLORED[clause]}")
    chosen = [target for target in scope_targets(scope) if clause in clauses_of(target)]
    if not chosen:
        raise SelectionError(f"{clause}: no function the hunt explores cites it (kvspec hunt check explores {', '.join(scope)})")
    return with_callers(chosen)
