"""`kvspec hunt`: CrossHair over the spec's own rules (spec/findings.md, F-1 and F-2).

Three searches, each in a CrossHair process of its own with every contract installed:

- ``check``: `crosshair check` of the reference's rules, which must hold (tests/test_crosshair.py
  runs the same search);
- ``as-written``: `crosshair check` of conformance/hunt/seed_rules.py, the seed's rules with the spec's
  resolution of F-1 and F-2 switched off, where CrossHair should find the degenerate sizes;
- ``diff``: `crosshair diffbehavior` between a rule and a mistake of the mutant gallery written
  as a function, each behind the same guard, so that only inputs the spec defines are compared;
  or between any two functions named with ``--pair`` (an implementation's own, in-process).

Each counterexample is printed with the time it took and, with ``--record``, added to
conformance/hunted.json, from which `kvspec fixtures generate` makes a fixture.

A search that did not run is an error, never "0 counterexamples". CrossHair's exit statuses do
not tell the two apart on their own (measured, crosshair-tool 0.0.113): 0 for nothing found, but
also for targets with no contract; 1 for a counterexample, but also for any exception CrossHair
does not catch (a function name that does not exist, a broken install, ``python -m crosshair``
without CrossHair); 2 for a target that does not import. So each status is read together with
the report it must come with.
"""

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from kvspec.conformance.core.output import written_whole
from kvspec.conformance.fixtures.recorded import CHECKOUT_HUNTED, HUNTED_SHAPES
from kvspec.conformance.galleries.mutants import unclamped_hit_tokens
from kvspec.reference import KvspecError
from kvspec.reference.replay import hit_tokens

CHECK_TARGETS = ["kvspec.reference.s3fifo", "kvspec.reference.lru", "kvspec.reference.fifo", "kvspec.reference.replay.hit_tokens"]
AS_WRITTEN_TARGETS = ["kvspec.conformance.hunt.seed_rules"]
MAX_SECONDS = 2**31 // 1000  # subprocess waits in poll(), whose timeout is a C int of milliseconds: 24 days
DIFFS = {"no-min-clamp": ("kvspec.conformance.hunt.search.spec_hit_tokens", "kvspec.conformance.hunt.search.no_min_clamp_hit_tokens")}
# `crosshair check --report_all` writes a line for each condition; "Unable to meet precondition" says that
# no input was tried (as when --per-condition runs out first), anything else that some were.
EXPLORED = re.compile(r"^.*:\d+: (?:info: (?!Unable to meet precondition)|error: )", re.MULTILINE)
PROBLEM = re.compile(r"^.*:\d+: error: .*$", re.MULTILINE)
# A problem with its input; CrossHair appends " with PATCHES" and " (which returns VALUE)" when there are some.
CALL = re.compile(r"^(?P<path>.*?):(?P<line>\d+): error: (?P<message>.*?) when calling (?P<function>\w+)\((?P<args>.*?)\)"
                  r"(?: with .*?)?(?: \(which returns .*\))?\s*$")
GIVEN = re.compile(r"Given: \((?P<args>.*)\),\n\s*(?P<first>\S+) : (?P<a>.*)\n\s*(?P<second>\S+) : (?P<b>.*)")
NO_DIFFERENCE = re.compile(r"^No differences found\. \(attempted (?P<paths>\d+) iterations\)$", re.MULTILINE)


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
    # --report_all: a line for every condition analysed, so that a check of nothing is told from a clean one
    return [*base, "check", "--report_all", "--per_condition_timeout", f"{per_condition:g}", *targets]


def arguments(text: str, names: list[str] | None = None) -> dict[str, object]:
    """CrossHair's argument list, `64, 0.0078125` or `k=1, block_size=2`, as a mapping. An argument
    that is not a plain literal (an object's repr, a list) is kept as its text, and a list Python
    cannot parse as one entry: a counterexample is never lost to its format."""
    source = f"f({text})"
    try:
        call = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        call = None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):  # `1), g(2` parses, as a tuple
        return {"arguments": text}
    named = [(names[position] if names and position < len(names) else f"arg{position}", node) for position, node in enumerate(call.args)]
    named += [(keyword.arg or "**", keyword.value) for keyword in call.keywords]
    return {name: literal(node, ast.get_source_segment(source, node) or "") for name, node in named}


def literal(node: ast.expr, text: str) -> object:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError):  # not a literal; an unhashable key
        return text
    return value if value is None or isinstance(value, (bool, int, float, str)) else text


SIGNATURES = {"first_access": ["capacity", "small_ratio"], "first_promotion": ["capacity", "small_ratio"]}


def hunt(search: str, budget: float, per_condition: float, pair: tuple[str, str] = DIFFS["no-min-clamp"]) -> tuple[list[Counterexample], float, str]:
    """Run one search (``pair``: the two functions a diff compares); its counterexamples, the
    seconds it took, and the command line. A KvspecError, naming what failed, when the search did
    not run to its end."""
    command = crosshair_command(search, per_condition, pair)
    shown = " ".join(["crosshair", *command[3:]])
    if importlib.util.find_spec("crosshair") is None:  # the same interpreter runs the search
        from kvspec.conformance.core.extras import install_hint

        raise KvspecError(f"hunt: {shown}: CrossHair is not installed ({install_hint('hunt')})")
    started = time.perf_counter()
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=budget, env={**os.environ, "KVSPEC_CONTRACTS": "all"})
    except subprocess.TimeoutExpired:
        # crosshair-tool 0.0.113 writes its report only when the whole search has ended: nothing of it survives the kill
        raise KvspecError(f"hunt: {shown}: the budget of {budget:g} s ran out before CrossHair ended the search, and it reports "
                          "only at the end (give a larger --budget or a smaller --per-condition)") from None
    seconds = time.perf_counter() - started
    found = diffs(run, shown, pair, seconds) if search == "diff" else problems(run, search, shown, seconds)
    return found, seconds, shown


def problems(run: subprocess.CompletedProcess[str], search: str, shown: str, seconds: float) -> list[Counterexample]:
    """`crosshair check`: 0 with no problem reported and some condition tried on an input, or 1 with a
    problem for each input found."""
    reported = PROBLEM.findall(run.stdout)
    if run.returncode not in (0, 1) or (run.returncode == 1) != bool(reported) or not EXPLORED.search(run.stdout):
        raise failed(shown, run, "CrossHair tried no condition on any input (Unable to meet precondition, or no condition)")
    found = []
    for line in reported:
        match = CALL.match(line)
        if match is None:  # a condition CrossHair could not evaluate (a syntax error, an import error): not analysed
            raise KvspecError(f"hunt: {shown}: CrossHair could not analyse a condition: {line}")
        function = match["function"]
        found.append(Counterexample(search, function, arguments(match["args"], SIGNATURES.get(function)), match["message"].strip(), shown,
                                    round(seconds, 1)))
    return found


def diffs(run: subprocess.CompletedProcess[str], shown: str, pair: tuple[str, str], seconds: float) -> list[Counterexample]:
    """`crosshair diffbehavior`: 0 with "No differences found" after at least one input, or 1 with a
    "Given:" block for each input on which the two functions differ."""
    given = list(GIVEN.finditer(run.stdout))
    if run.returncode == 0:
        tried = NO_DIFFERENCE.search(run.stdout)
        if tried is None or int(tried["paths"]) == 0:
            raise failed(shown, run, tried[0] if tried else "CrossHair reported neither a difference nor none")
        return []
    if run.returncode != 1 or not given or len(given) != run.stdout.count("Given: "):
        raise failed(shown, run, "its report is not one kvspec reads")
    return [Counterexample("diff", pair[0], arguments(match["args"]),
                           f"{match['first']} {match['a'].strip()}; {match['second']} {match['b'].strip()}", shown, round(seconds, 1))
            for match in given]


def failed(shown: str, run: subprocess.CompletedProcess[str], otherwise: str = "no message") -> KvspecError:
    """The one-line error of a search that did not run: CrossHair's status and its own reason (the
    exception's line after a traceback, else its messages on stderr, else ``otherwise``)."""
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    reason = lines[-1] if "Traceback (most recent call last):" in run.stderr else "; ".join(lines) or otherwise
    status = f"status {run.returncode}" if run.returncode >= 0 else f"signal {-run.returncode}"
    return KvspecError(f"hunt: {shown}: the search did not run (CrossHair {status}): {reason}")


def record(found: list[Counterexample]) -> int:
    """Add the new counterexamples to conformance/hunted.json of the checkout in the current
    directory; how many were new."""
    if not CHECKOUT_HUNTED.parent.is_dir():
        raise KvspecError("hunt --record writes conformance/hunted.json: run it from a kvspec checkout")
    shapeless = [c.function for c in found if not HUNTED_SHAPES & {frozenset(c.args)}]
    if shapeless:
        raise KvspecError(f"hunt --record: no fixture is made from the arguments of {', '.join(sorted(set(shapeless)))} "
                          "(conformance/fixtures/recorded.py hunted_cases takes (capacity, small_ratio) and (k, block_size, input_length))")
    known = json.loads(CHECKOUT_HUNTED.read_text(encoding="utf-8")) if CHECKOUT_HUNTED.exists() else []
    seen = {(entry["function"], json.dumps(entry["args"], sort_keys=True)) for entry in known}
    new = [asdict(c) for c in found if (c.function, json.dumps(c.args, sort_keys=True)) not in seen]
    with written_whole(CHECKOUT_HUNTED) as temporary:
        temporary.write_text(json.dumps(known + new, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return len(new)
