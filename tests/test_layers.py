"""Dependencies point one way (issue 13): the reference imports nothing of kvspec's above it, the
adapters nothing of the conformance tooling, each package of the conformance tooling only those
below it (docs/development.md's folder table), and no modules import each other in a circle, lazy imports
inside functions included (they hide a cycle from Python, not from a reader); and no module of the
three folders is longer than a reader takes in at one sitting (issue 30)."""

import ast
import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"kvspec.reference": ROOT / "reference", "kvspec.adapters": ROOT / "adapters", "kvspec.conformance": ROOT / "conformance"}
# conformance/certification/'s subpackages, lowest first, as its docstring lists them; its own modules (the run) above them
CERTIFICATION_LAYERS = [f"kvspec.conformance.certification.{name}" for name in ("findings", "block", "benefit", "lifecycle", "verdict")]
# Lowest first: a module may import its own package and those before it.
LAYERS = ["kvspec.reference", "kvspec.adapters", "kvspec.conformance.core", "kvspec.conformance.galleries", "kvspec.conformance.measurement",
          "kvspec.conformance.fixtures", "kvspec.conformance.hunt", *CERTIFICATION_LAYERS, "kvspec.conformance.certification",
          "kvspec.conformance.cli", "kvspec.conformance"]


def modules() -> dict[str, Path]:
    """Every module of the three folders, by its dotted name."""
    found = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return found


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The kvspec modules ``name`` imports anywhere in its file: at the top, in functions, under TYPE_CHECKING."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {target for target in targets if target in known and target != name}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in edges[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The groups of modules that import each other, directly or not (strongly connected components of two or more)."""
    reach = {name: reachable(edges, name) for name in edges}
    groups: list[set[str]] = []
    for name in sorted(edges):
        group = {name} | {other for other in reach[name] if name in reach[other]}
        if len(group) > 1 and group not in groups:
            groups.append(group)
    return groups


LINE_LIMIT = 450  # issue 30: a module a reader takes in at one sitting


def layer(name: str) -> int:
    """The rank of the most specific layer that holds ``name``."""
    return max((rank for rank, package in enumerate(LAYERS) if name == package or name.startswith(package + ".")),
               key=lambda rank: len(LAYERS[rank]))


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(f"{name} imports {target}" for name, targets in graph().items() for target in targets if layer(target) > layer(name))
    assert upward == []


def test_each_subpackage_of_certification_imports_only_those_before_it() -> None:
    """The layers of conformance/certification/ are the order its docstring gives, and hold (the
    rule itself is test_no_module_imports_a_layer_above_its_own's, for these layers too)."""
    doc = (ROOT / "conformance" / "certification" / "__init__.py").read_text(encoding="utf-8")
    listed = [line.split("/")[0].split()[-1] for line in doc.splitlines() if line[:1].isdigit() and "/:" in line]
    assert [f"kvspec.conformance.certification.{name}" for name in listed] == CERTIFICATION_LAYERS
    edges = graph()
    upward = sorted(f"{name} imports {target}" for name, targets in edges.items() if name.startswith("kvspec.conformance.certification.")
                    for target in targets if layer(target) > layer(name))
    assert upward == []


def test_certification_imports_no_gallery() -> None:
    """The diagnosis reasons over the reference (issue 30): its variants are the reference with one
    rule broken (certification/block/variants.py, benefit/variants.py), not the mutant galleries, which
    exist to be certified. The galleries' layer is below certification's, so the layering alone allows it."""
    galleries = sorted(f"{name} imports {target}" for name, targets in graph().items() if name.startswith("kvspec.conformance.certification")
                       for target in targets if target == "kvspec.conformance.galleries" or target.startswith("kvspec.conformance.galleries."))
    assert galleries == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycles(graph()) == []


def test_no_module_of_the_three_folders_is_over_the_line_limit() -> None:
    over = sorted(f"{name}: {lines} lines" for name, path in modules().items()
                  if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LINE_LIMIT)
    assert over == []


def test_every_package_is_a_layer_and_is_installed() -> None:
    """A package missing from pyproject's list would be left out of a non-editable install (CI's)."""
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    installed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert packages - installed == set()
    assert {name for name in packages if name.startswith("kvspec.conformance.")} <= set(LAYERS)


def test_every_folder_with_files_is_a_listed_package_and_every_data_file_is_shipped() -> None:
    """A folder inside a package is a package to Python: unlisted, setuptools warns "Package would
    be ignored" on every `pip install .`, and a data file that no package-data pattern names is left
    out of the install."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {ROOT / folder for folder in setuptools["package-dir"].values()}
    for name, folder in setuptools["package-dir"].items():
        for path in (ROOT / folder).rglob("*"):
            if "__pycache__" in path.parts or path.suffix == ".py":
                continue
            if any(other != ROOT / folder and (path == other or other in path.parents) for other in mapped):
                continue  # a folder mapped to a package of its own (spec/fixtures, inside spec/) is checked as that one
            package = ".".join([name, *path.relative_to(ROOT / folder).parts[: -1 if path.is_file() else None]])
            if path.is_dir():
                assert package in setuptools["packages"], f"{path.relative_to(ROOT)}: add {package} to pyproject's packages"
            else:
                patterns = setuptools["package-data"].get(package, [])
                assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), f"{path.relative_to(ROOT)}: not in {package}'s package-data"


def test_the_cycle_finder_sees_a_cycle_through_three_modules_and_none_in_a_chain() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_graph_sees_relative_lazy_and_package_imports() -> None:
    edges = graph()
    assert "kvspec.conformance.cli" in edges["kvspec.conformance"]  # a lazy import, in main()
    assert "kvspec.reference.errors" in edges["kvspec.reference"]  # from .errors import ..., in a package's __init__
    assert "kvspec.reference.benefit" in edges["kvspec.conformance.certification.benefit.machine"]  # from kvspec.reference.benefit import ...


DIALECTS = "kvspec.reference.dialects"
DIALECT_AWARE = ("kvspec.reference", "kvspec.reference.caches")  # the package's names, and where a configuration builds a cache
RULES = ("kvspec.reference.replay", "kvspec.reference.request", "kvspec.reference.s3fifo", "kvspec.reference.lru", "kvspec.reference.fifo")


def of_the_dialects(name: str) -> bool:
    return name == DIALECTS or name.startswith(DIALECTS + ".")


def test_the_canonical_reference_imports_nothing_of_the_dialects() -> None:
    """Issue 30: the canonical reference reads like the spec; what a dialect changes in building a
    cache or in reporting its replay is asked in reference/caches.py alone (the dialects build on
    the canonical rules, never the other way), and the modules of the rules reach no dialect even
    through another module."""
    edges = graph()
    canonical = [name for name in edges if name.startswith("kvspec.reference") and not of_the_dialects(name) and name not in DIALECT_AWARE]
    assert sorted(f"{name} imports {target}" for name in canonical for target in edges[name] if of_the_dialects(target)) == []
    assert sorted(name for name in RULES if any(of_the_dialects(target) for target in reachable(edges, name))) == []
