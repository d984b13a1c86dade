"""`kvspec hunt`: CrossHair over the spec's own rules (spec/findings.md, F-1 and F-2).

Three searches, each in a process of its own with every contract installed:

- ``check``: CrossHair's check of the reference's rules, which must hold (tests/test_crosshair.py
  runs the same search), all of them, or one function or one clause with what calls it
  (conformance/hunt/targets.py), run by conformance/hunt/runner.py within the budget;
- ``as-written``: the same of conformance/hunt/seed_rules.py, the seed's rules with the spec's
  resolution of F-1 and F-2 switched off, where CrossHair should find the degenerate sizes;
- ``diff``: `crosshair diffbehavior` between a rule and a mistake of the mutant gallery written
  as a function, each behind the same guard, so that only inputs the spec defines are compared;
  or between any two functions named with ``--pair`` (an implementation's own, in-process).

A counterexample of a check counts only once the function, run concretely on the same arguments
outside CrossHair, breaks the same condition (conformance/hunt/reproduce.py); the others are listed
apart, as not reproduced. Each is printed with the time it took and, with ``--record``, added to
conformance/hunted.json, from which `kvspec fixtures generate` makes a fixture.

A search that did not run is an error, never "0 counterexamples". CrossHair's exit statuses do
not tell the two apart on their own (measured, crosshair-tool 0.0.113): 0 for nothing found, but
also for targets with no contract; 1 for a counterexample, but also for any exception CrossHair
does not catch (a function name that does not exist, a broken install, ``python -m crosshair``
without CrossHair); 2 for a target that does not import. So each status is read together with
the report it must come with; the runner's report is a JSON line for each condition searched.
"""

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace

from kvspec.conformance.core.output import written_whole
from kvspec.conformance.fixtures.recorded import CHECKOUT_HUNTED, HUNTED_SHAPES
from kvspec.conformance.galleries.mutants import unclamped_hit_tokens
from kvspec.reference import KvspecError
from kvspec.reference.replay import hit_tokens

MAX_SECONDS = 2**31 // 1000  # subprocess waits in poll(), whose timeout is a C int of milliseconds: 24 days
DIFFS = {"no-min-clamp": ("kvspec.conformance.hunt.search.spec_hit_tokens", "kvspec.conformance.hunt.search.no_min_clamp_hit_tokens")}
BUDGET = {"all": 300.0, "targeted": 30.0}  # the default --budget: a whole check, one --function or --clause
DIFF_PER_CONDITION = 10.0  # diff's default --per-condition, CrossHair's per_condition_timeout
# A problem with its input; CrossHair appends " with PATCHES" and " (which returns VALUE)" when there are some.
CALL = re.compile(r"^(?P<message>.*?) when calling (?P<function>\w+)\((?P<args>.*?)\)(?: with .*?)?(?: \(which returns .*\))?\s*$",
                  re.DOTALL)
GIVEN = re.compile(r"Given: \((?P<args>.*)\),\n\s*(?P<first>\S+) : (?P<a>.*)\n\s*(?P<second>\S+) : (?P<b>.*)")
NO_DIFFERENCE = re.compile(r"^No differences found\. \(attempted (?P<paths>\d+) iterations\)$", re.MULTILINE)
# CrossHair's verdicts on a condition (crosshair.statespace.MessageType): those that found an input that breaks it,
# and those that say the condition could not even be read, or searched (the runner's crosshair_error: CrossHair raised).
FOUND = {"exec_err", "post_fail", "post_err"}
UNREAD = {"syntax_err", "import_err", "crosshair_error"}


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
    """One input CrossHair found, the condition it breaks, the command that finds it and how long the
    search took; ``concretely``, what the function did on it outside CrossHair."""

    search: str
    function: str
    args: dict[str, object]
    found: str
    command: str
    seconds: float
    condition: str = ""
    call: str = ""
    concretely: str = ""


@dataclass(frozen=True)
class Hunted:
    """A search's findings: the counterexamples that reproduce, those that do not, the seconds it
    took, the command that runs it again, and how many functions and conditions it searched."""

    found: list[Counterexample]
    unreproduced: list[Counterexample]
    seconds: float
    command: str
    functions: int = 0
    conditions: int = 0
    searched: tuple[dict[str, object], ...] = ()  # the runner's record of each function's search


def kvspec_command(search: str, budget: float, per_condition: float | None, functions: tuple[str, ...], clauses: tuple[str, ...]) -> str:
    """The `kvspec hunt` command that runs this search again."""
    selection = [*(f"--function {name}" for name in functions), *(f"--clause {clause}" for clause in clauses)]
    limit = [] if per_condition is None else [f"--per-condition {per_condition:g}"]
    return " ".join(["kvspec hunt", search, *selection, f"--budget {budget:g}", *limit])


def crosshair_command(per_condition: float, pair: tuple[str, str]) -> list[str]:
    return [sys.executable, "-m", "crosshair", "diffbehavior", "--per_condition_timeout", f"{per_condition:g}", *pair]


def runner_command(search: str, seconds: float, per_condition: float | None, functions: tuple[str, ...],
                   clauses: tuple[str, ...]) -> list[str]:
    selection = [item for name in functions for item in ("--function", name)] + [item for c in clauses for item in ("--clause", c)]
    return [sys.executable, "-m", "kvspec.conformance.hunt.runner", "--search", search, "--seconds", f"{seconds:g}",
            "--per-condition", f"{per_condition or seconds:g}", *selection]


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


def shown_call(found: Counterexample) -> str:
    """``function(name=argument, ...)``, each argument as CrossHair wrote it (an object's repr as it
    is, a string with its quotes), named as ``arguments`` names it."""
    function = found.function.rsplit(".", 1)[-1]
    source = f"f({found.call})"
    try:
        call = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError):
        call = None
    if not found.call or not (isinstance(call, ast.Call) and len(call.args) + len(call.keywords) == len(found.args)):
        return f"{function}({', '.join(f'{name}={value!r}' for name, value in found.args.items())})"
    segments = [ast.get_source_segment(source, node) for node in [*call.args, *(k.value for k in call.keywords)]]
    return f"{function}({', '.join(f'{name}={segment}' for name, segment in zip(found.args, segments))})"


def literal(node: ast.expr, text: str) -> object:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError):  # not a literal; an unhashable key
        return text
    return value if value is None or isinstance(value, (bool, int, float, str)) else text


def hunt(search: str, budget: float, per_condition: float | None, pair: tuple[str, str] = DIFFS["no-min-clamp"],
         functions: tuple[str, ...] = (), clauses: tuple[str, ...] = ()) -> Hunted:
    """Run one search (``pair``: the two functions a diff compares; ``functions`` and ``clauses``: what
    a check explores, everything by default). A KvspecError, naming what failed, when the search did
    not run to its end."""
    if importlib.util.find_spec("crosshair") is None:  # the same interpreter runs the search
        from kvspec.conformance.core.extras import install_hint

        shown = "crosshair diffbehavior" if search == "diff" else f"kvspec hunt {search}"
        raise KvspecError(f"hunt: {shown}: CrossHair is not installed ({install_hint('hunt')})")
    if search == "diff":
        return diff(budget, DIFF_PER_CONDITION if per_condition is None else per_condition, pair)
    return check(search, budget, per_condition, functions, clauses)


def diff(budget: float, per_condition: float, pair: tuple[str, str]) -> Hunted:
    command = crosshair_command(per_condition, pair)
    shown = " ".join(["crosshair", *command[3:]])
    started = time.perf_counter()
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=budget, env={**os.environ, "KVSPEC_CONTRACTS": "all"})
    except subprocess.TimeoutExpired:
        # crosshair-tool 0.0.113 writes its report only when the whole search has ended: nothing of it survives the kill
        raise KvspecError(f"hunt: {shown}: the budget of {budget:g} s ran out before CrossHair ended the search, and it reports "
                          "only at the end (give a larger --budget or a smaller --per-condition)") from None
    seconds = time.perf_counter() - started
    return Hunted(diffs(run, shown, pair, seconds), [], seconds, shown)


def check(search: str, budget: float, per_condition: float | None, functions: tuple[str, ...], clauses: tuple[str, ...]) -> Hunted:
    """The runner's search, within ``budget`` less what reproducing its counterexamples may take, then their reproduction."""
    shown = kvspec_command(search, budget, per_condition, functions, clauses)
    reserve = min(0.1 * budget, 5.0) + 1.0  # for the concrete runs: about 1 s to start, and 1 s for a call that does not end
    if budget <= reserve:  # the runner would have no time to search: CrossHair would try no input
        raise KvspecError(f"hunt: {shown}: the budget of {budget:g} s ran out before the search ended (the search had not started; "
                          f"{reserve:g} s of it are kept for starting the search and running its counterexamples concretely)")
    started = time.perf_counter()
    env = {**os.environ, "KVSPEC_CONTRACTS": "all"}
    try:  # the hash seed fixed, as CrossHair fixes its own random seeds (crosshair-tool 0.0.113 statespace.py:359, :834)
        run = subprocess.run(runner_command(search, budget - reserve, per_condition, functions, clauses), capture_output=True, text=True,
                             timeout=max(budget - 1.0, 0.9 * budget), env={**env, "PYTHONHASHSEED": "0"})
    except subprocess.TimeoutExpired as expired:
        raise KvspecError(f"hunt: {shown}: the budget of {budget:g} s ran out before the search ended ({cut_short(expired.stdout)}; "
                          "a search stops where CrossHair or the CPU clock's signal finds the call in the rule's own code, and a call "
                          "that loops elsewhere holds it)") from None
    plan, searched = report(run, shown)
    found = [candidate(search, shown, record, plan) for record in searched if record["state"] in FOUND]
    reproduced = reproduce(found, env, budget - (time.perf_counter() - started), shown)
    seconds = round(time.perf_counter() - started, 1)
    timed = [replace(c, seconds=seconds, concretely=outcome, condition=condition or c.condition, found=described(c.found, condition))
             for c, (_, outcome, condition) in zip(found, reproduced)]
    return Hunted([c for c, (same, *_) in zip(timed, reproduced) if same], [c for c, (same, *_) in zip(timed, reproduced) if not same],
                  seconds, shown, len(plan), sum(conditions for conditions, _ in plan.values()), tuple(searched))


def cut_short(stdout: bytes | str | None) -> str:
    """How far a search the budget cut short had come."""
    lines = (stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout or "").splitlines()
    try:
        plan = json.loads(lines[0])["plan"] if lines else []
    except (json.JSONDecodeError, KeyError, TypeError):
        plan = []
    done = len(lines) - 1
    if not plan or done >= len(plan):
        return "the search had not started"
    return f"{done} of its {len(plan)} functions searched, {plan[done][0]} when it ran out"


def report(run: subprocess.CompletedProcess[str], shown: str) -> tuple[dict[str, tuple[int, list[str]]], list[dict[str, object]]]:
    """The runner's plan (each function's postconditions and parameters) and its record of each search, or the
    KvspecError of a search that did not run: the runner failed, refused the selection, or tried no input."""
    try:
        records = [json.loads(line) for line in run.stdout.splitlines()]
    except json.JSONDecodeError:
        records = []
    if run.returncode == 2 and run.stderr.strip() and "Traceback" not in run.stderr:
        raise KvspecError(f"hunt: {shown}: the search did not run: {run.stderr.strip().splitlines()[-1]}")
    if run.returncode != 0 or not records or "plan" not in records[0]:
        raise failed(shown, run, "its report is not one kvspec reads")
    searched = records[1:]
    if not any(record["state"] != "pre_unsat" for record in searched):
        raise failed(shown, run, "CrossHair tried no condition on any input (Unable to meet precondition, or no condition)")
    unread = next((record for record in searched if record["state"] in UNREAD), None)
    if unread is not None:  # a condition CrossHair could not evaluate (a syntax error, an import error): not analysed
        raise KvspecError(f"hunt: {shown}: CrossHair could not analyse a condition of {unread['function']}: {unread['message']}")
    return {name: (conditions, parameters) for name, conditions, parameters in records[0]["plan"]}, searched


def candidate(search: str, shown: str, record: dict[str, object], plan: dict[str, tuple[int, list[str]]]) -> Counterexample:
    """A search CrossHair ended with an input that breaks a condition, as the counterexample to reproduce."""
    function, message = str(record["function"]), str(record["message"])
    call = CALL.match(message)
    found = "false" if record["state"] == "post_fail" else (call["message"] if call else message).strip()
    args = arguments(call["args"], plan[function][1]) if call else {}  # without a call (NotDeterministic): CrossHair's own trouble
    return Counterexample(search, function, args, found, shown, 0.0, "", call["args"] if call else "")


def described(found: str, condition: str | None) -> str:
    """What a counterexample does, in the spec's words where the concrete run named the condition it breaks."""
    if found.startswith("DidNotEnd"):
        return "does not end: " + found.split(": ", 1)[1]
    return f"breaks {condition}" if condition else found


def expectation(found: Counterexample) -> dict[str, str]:
    """What the concrete call must do to break the same condition (conformance/hunt/reproduce.py)."""
    if found.found == "false":  # CrossHair says no more: the concrete run names the postcondition
        return {"kind": "postcondition"}
    exception = found.found.split(":", 1)[0]
    return {"kind": "did not end"} if exception == "DidNotEnd" else {"kind": "raises", "exception": exception, "message": found.found}


def reproduce(found: list[Counterexample], env: dict[str, str], left: float, shown: str) -> list[tuple[bool, str, str | None]]:
    """Each counterexample run concretely: whether it breaks the same condition, what the call did,
    and which postcondition failed, if one did."""
    if not found:
        return []
    from kvspec.conformance.hunt.reproduce import ENDS_WITHIN

    requests = [{"function": c.function, "args": c.call, "expect": expectation(c)} for c in found if c.call]
    try:
        run = subprocess.run([sys.executable, "-m", "kvspec.conformance.hunt.reproduce"], input=json.dumps(requests), capture_output=True,
                             text=True, env=env, timeout=max(left, len(requests) * ENDS_WITHIN + 10))
    except subprocess.TimeoutExpired:
        raise KvspecError(f"hunt: {shown}: the concrete runs of its {len(requests)} counterexamples did not end") from None
    try:
        answers = [json.loads(line) for line in run.stdout.splitlines()]
    except json.JSONDecodeError:
        answers = []
    if run.returncode != 0 or len(answers) != len(requests):
        raise failed(shown, run, "the concrete runs of its counterexamples ended without their report")
    ran = iter(answers)
    return [(bool(answer["reproduced"]), str(answer["outcome"]), answer.get("condition")) if c.call
            else (False, "CrossHair gave no input to run it on", None) for c in found for answer in [next(ran) if c.call else {}]]


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
    seen = {(entry["function"].rsplit(".", 1)[-1], json.dumps(entry["args"], sort_keys=True)) for entry in known}  # older: bare names
    new = [asdict(c) for c in found if (c.function.rsplit(".", 1)[-1], json.dumps(c.args, sort_keys=True)) not in seen]
    with written_whole(CHECKOUT_HUNTED) as temporary:
        temporary.write_text(json.dumps(known + new, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return len(new)
