"""`kvspec hunt`: CrossHair over the spec's own rules (spec/findings.md section "Hunting").

Three searches, each in a CrossHair process of its own with every contract installed:

- ``check``: `crosshair check` of the reference's rules, which must hold (tests/test_crosshair.py
  runs the same search);
- ``as-written``: `crosshair check` of conformance/seed_rules.py, the seed's rules with the spec's
  resolution of F-1 and F-2 switched off, where CrossHair should find the degenerate sizes;
- ``diff``: `crosshair diffbehavior` between a rule and a mistake of the mutant gallery written
  as a function, each behind the same guard, so that only inputs the spec defines are compared;
  or between any two functions named with ``--pair`` (an implementation's own, in-process).

Each counterexample is printed with the time it took and, with ``--record``, added to
conformance/hunted.json, from which `kvspec fixtures generate` makes a fixture.
"""

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from kvspec.reference import KvspecError
from kvspec.reference.replay import hit_tokens

from .mutants import unclamped_hit_tokens

HUNTED = Path(__file__).with_name("hunted.json")  # as installed, for the fixtures
CHECKOUT_HUNTED = Path("conformance/hunted.json")  # where --record writes: a kvspec checkout
CHECK_TARGETS = ["kvspec.reference.s3fifo", "kvspec.reference.lru", "kvspec.reference.fifo", "kvspec.reference.replay.hit_tokens"]
AS_WRITTEN_TARGETS = ["kvspec.conformance.seed_rules"]
DIFFS = {"no-min-clamp": ("kvspec.conformance.hunt.spec_hit_tokens", "kvspec.conformance.hunt.no_min_clamp_hit_tokens")}
CALL = re.compile(r"^(?P<path>.*):(?P<line>\d+): error: (?P<message>.*) when calling (?P<function>\w+)\((?P<args>.*)\)\s*$")
GIVEN = re.compile(r"Given: \((?P<args>[^)]*)\),\s*\n\s*(?P<first>\S+) : (?P<a>.*)\n\s*(?P<second>\S+) : (?P<b>.*)")


def in_domain(k: int, block_size: int, input_length: int) -> bool:
    """REPLAY-TRACE-3, REPLAY-PREFIX-1: a request of n = ceil(L / block_size) blocks hits k <= n of them."""
    return 0 <= k and 1 <= block_size <= 1024 and 1 <= input_length and k * block_size < input_length + block_size


def spec_hit_tokens(k: int, block_size: int, input_length: int) -> int | None:
    """REPLAY-HIT-1 on the inputs it is defined for; None elsewhere, on both sides of a diff."""
    return hit_tokens(k, block_size, input_length) if in_domain(k, block_size, input_length) else None


def no_min_clamp_hit_tokens(k: int, block_size: int, input_length: int) -> int | None:
    """The no-min-clamp mutant's hit tokens, behind the same guard."""
    return unclamped_hit_tokens(k, block_size, input_length) if in_domain(k, block_size, input_length) else None


@dataclass(frozen=True)
class Counterexample:
    """One input CrossHair found, the command that finds it and how long the search took."""

    search: str
    function: str
    args: dict[str, object]
    found: str
    command: str
    seconds: float


def crosshair_command(search: str, per_condition: float, pair: tuple[str, str]) -> list[str]:
    base = [sys.executable, "-m", "crosshair"]
    if search == "diff":
        return [*base, "diffbehavior", "--per_condition_timeout", f"{per_condition:g}", *pair]
    targets = CHECK_TARGETS if search == "check" else AS_WRITTEN_TARGETS
    return [*base, "check", "--per_condition_timeout", f"{per_condition:g}", *targets]


def arguments(text: str, names: list[str] | None = None) -> dict[str, object]:
    """CrossHair's argument list, `64, 0.0078125` or `k=1, block_size=2`, as a mapping."""
    values = {}
    for position, part in enumerate(p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        key, literal = (name.strip(), value) if sep else ((names or [])[position] if names and position < len(names) else f"arg{position}", part)
        values[key] = json.loads(literal.strip().replace("'", '"')) if literal.strip() not in ("True", "False", "None") else literal.strip()
    return values


SIGNATURES = {"first_access": ["capacity", "small_ratio"], "first_promotion": ["capacity", "small_ratio"]}
FIXTURE_SHAPES = {frozenset({"capacity", "small_ratio"}), frozenset({"k", "block_size", "input_length"})}  # what hunted_cases maps


def hunt(search: str, budget: float, per_condition: float, pair: tuple[str, str] = DIFFS["no-min-clamp"]) -> tuple[list[Counterexample], float, str]:
    """Run one search (``pair``: the two functions a diff compares); its counterexamples, the
    seconds it took, and the command line."""
    command = crosshair_command(search, per_condition, pair)
    shown = " ".join(["crosshair", *command[3:]])
    started = time.perf_counter()
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=budget, env={**os.environ, "KVSPEC_CONTRACTS": "all"})
    except subprocess.TimeoutExpired as expired:
        output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
    else:
        output = run.stdout
        if run.returncode not in (0, 1, 2):
            raise KvspecError(f"{shown}: crosshair failed (status {run.returncode}): {run.stderr.strip()[-500:]}")
    seconds = time.perf_counter() - started
    found = []
    for line in output.splitlines():
        match = CALL.match(line)
        if match:
            function = match["function"]
            found.append(Counterexample(search, function, arguments(match["args"], SIGNATURES.get(function)), match["message"].strip(), shown,
                                        round(seconds, 1)))
    for match in GIVEN.finditer(output):
        found.append(Counterexample(search, pair[0], arguments(match["args"]),
                                    f"{match['first']} {match['a'].strip()}; {match['second']} {match['b'].strip()}", shown, round(seconds, 1)))
    return found, seconds, shown


def record(found: list[Counterexample]) -> int:
    """Add the new counterexamples to conformance/hunted.json of the checkout in the current
    directory; how many were new."""
    if not CHECKOUT_HUNTED.parent.is_dir():
        raise KvspecError("hunt --record writes conformance/hunted.json: run it from a kvspec checkout")
    shapeless = [c.function for c in found if not FIXTURE_SHAPES & {frozenset(c.args)}]
    if shapeless:
        raise KvspecError(f"hunt --record: no fixture is made from the arguments of {', '.join(sorted(set(shapeless)))} "
                          "(conformance/fixture_cases.py hunted_cases takes (capacity, small_ratio) and (k, block_size, input_length))")
    known = json.loads(CHECKOUT_HUNTED.read_text(encoding="utf-8")) if CHECKOUT_HUNTED.exists() else []
    seen = {(entry["function"], json.dumps(entry["args"], sort_keys=True)) for entry in known}
    new = [asdict(c) for c in found if (c.function, json.dumps(c.args, sort_keys=True)) not in seen]
    CHECKOUT_HUNTED.write_text(json.dumps(known + new, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return len(new)
