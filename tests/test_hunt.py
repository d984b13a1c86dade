"""`kvspec hunt` (conformance/hunt/search.py): CrossHair finds the degenerate small_cap of findings F-1 in
the seed's rules as written, finds the no-min-clamp mistake by diffbehavior, and its
counterexamples become fixtures."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvspec.conformance import cli
from kvspec.conformance.core.extras import install_hint
from kvspec.conformance.fixtures.recorded import HUNTED
from kvspec.conformance.fixtures.runner import read_manifest
from kvspec.conformance.hunt import search as hunt
from kvspec.conformance.hunt.search import CALL, arguments, candidate, diffs, in_domain, no_min_clamp_hit_tokens, report, spec_hit_tokens
from kvspec.conformance.hunt.seed_rules import RULES, as_written, seed_caps_are_valid
from kvspec.reference import KvspecError, s3fifo

ROOT = Path(__file__).resolve().parent.parent


def kvspec(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0", **env})


def refused(run: subprocess.CompletedProcess[str], pattern: str) -> None:
    """Exit 1, nothing on stdout, and one line on stderr: `kvspec: error: hunt: ` and ``pattern``."""
    assert run.returncode == 1 and run.stdout == "", run.stdout + run.stderr
    assert len(run.stderr.splitlines()) == 1 and re.fullmatch(f"kvspec: error: hunt: {pattern}", run.stderr.rstrip("\n")), run.stderr


def test_hunt_as_written_finds_the_degenerate_sizes_of_F_1_and_F_2() -> None:
    """S3-CONF-5 switched off: a configuration whose small_cap rounds to 0 (F-1) or leaves a
    main_cap of 0 (F-2) makes a drain (S3-ADMIT-S-1, S3-ADMIT-M-1) pop an empty queue. Which of
    the two CrossHair meets first varies from run to run."""
    run = kvspec("hunt", "as-written", "--budget", "240")
    assert run.returncode == 3, run.stdout + run.stderr
    found = [line for line in run.stdout.splitlines() if line.startswith("  first_")]
    assert found and all("StopIteration" in line for line in found)  # next(iter(queue)), the head of an empty queue (REPLAY-QUEUE-2)
    for line in found:
        args = arguments(line[line.index("(") + 1:line.index(")")])
        caps = as_written(args["capacity"], float(args["small_ratio"])).caps  # type: ignore[attr-defined]
        assert 0 in (caps.small_cap, caps.main_cap)  # a degenerate size, every time


def test_the_copy_of_the_rules_is_the_reference_s_but_for_the_resolution() -> None:
    assert RULES is not s3fifo and RULES.caps_are_valid is seed_caps_are_valid and s3fifo.caps_are_valid is not seed_caps_are_valid
    caps = as_written(5, 0.1).caps
    assert caps.small_cap == 0 and seed_caps_are_valid(caps)  # the seed's rules take it
    assert not s3fifo.caps_are_valid(s3fifo.Caps(caps.small_cap, caps.main_cap, caps.ghost_cap, caps.max_freq))  # S3-CONF-5 refuses it


def test_hunt_diff_finds_the_missing_clamp_of_REPLAY_HIT_1() -> None:
    run = kvspec("hunt", "diff", "--budget", "240")
    assert run.returncode == 3, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if "spec_hit_tokens(" in line)
    args = arguments(line[line.index("(") + 1:line.index(")")])
    assert spec_hit_tokens(**args) != no_min_clamp_hit_tokens(**args)  # type: ignore[arg-type]
    assert in_domain(**args)  # type: ignore[arg-type]
    assert spec_hit_tokens(3, 1, 1) is None and no_min_clamp_hit_tokens(3, 1, 1) is None  # outside the domain both sides agree


def test_every_recorded_counterexample_is_a_fixture() -> None:
    recorded = json.loads(HUNTED.read_text())
    titles = [entry["title"] for entry in read_manifest(ROOT / "spec" / "fixtures") if entry["title"].startswith("hunted: ")]
    assert len(titles) == len(recorded) >= 3
    assert any("first_access(capacity=64, small_ratio=0.0078125)" in title for title in titles)


def test_hunt_diff_takes_any_pair_and_records_only_what_makes_a_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = kvspec("hunt", "diff", "--pair", "kvspec.reference.s3fifo.saturating_increment", "kvspec.reference.s3fifo.saturating_increment",
                 "--budget", "60", "--per-condition", "2")
    assert run.returncode == 0 and "0 counterexamples" in run.stdout  # a function against itself
    refused = kvspec("hunt", "check", "--pair", "a.b", "c.d")
    assert refused.returncode == 1 and "--pair names the two functions of a diff" in refused.stderr
    from kvspec.conformance.hunt.search import Counterexample, record
    from kvspec.reference import KvspecError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "conformance").mkdir()
    try:
        record([Counterexample("diff", "m.f", {"x": 1}, "differs", "crosshair diffbehavior m.f m.g", 1.0)])
    except KvspecError as error:
        assert "no fixture is made from the arguments of m.f" in str(error)
    else:
        raise AssertionError("recorded a counterexample no fixture can hold")
    assert record([Counterexample("as-written", "first_access", {"capacity": 3, "small_ratio": 0.1}, "StopIteration:", "c", 1.0)]) == 1
    assert json.loads((tmp_path / "conformance" / "hunted.json").read_text())[0]["args"] == {"capacity": 3, "small_ratio": 0.1}


# A search that did not run is an error (exit 1, one line), never "0 counterexamples". The outputs
# below are CrossHair's own (crosshair-tool 0.0.113), measured.

AS_WRITTEN = r"kvspec hunt as-written --budget [^ ]+(?: --per-condition [^ ]+)?: "


def test_hunt_without_crosshair_is_an_error(tmp_path: Path) -> None:
    """Not installed (crosshair-tool is only in the test extra), and installed but failing to import."""
    (tmp_path / "absent").mkdir()
    (tmp_path / "absent" / "sitecustomize.py").write_text('import sys\nsys.modules["crosshair"] = None\n')
    refused(kvspec("hunt", "check", PYTHONPATH=str(tmp_path / "absent")),
            rf"kvspec hunt check: CrossHair is not installed \({re.escape(install_hint('hunt'))}\)")  # tests/test_environment.py proves the hint
    (tmp_path / "broken" / "crosshair").mkdir(parents=True)
    (tmp_path / "broken" / "crosshair" / "__init__.py").write_text('raise ImportError("libz3.so: cannot open shared object file")\n')
    refused(kvspec("hunt", "check", PYTHONPATH=str(tmp_path / "broken")),
            r"kvspec hunt check .+: the search did not run \(CrossHair status 1\): ImportError: libz3\.so: cannot open shared object file")


@pytest.mark.parametrize(("pair", "reason"), [
    (("nosuch.f", "nosuch.g"), (r"\(CrossHair status 2\): Unable to load \"nosuch\.f\": NotFound: Module 'nosuch' was not found; "
                                r"Unable to load \"nosuch\.g\": .+")),
    (("kvspec.conformance.hunt.search.nosuch", "kvspec.conformance.hunt.search.spec_hit_tokens"),  # CrossHair's traceback: its exception's line
     r"\(CrossHair status 1\): crosshair\.fnutil\.NotFound: Name \"nosuch\" not found on object .+"),
    (("kvspec.conformance.hunt.search", "kvspec.conformance.hunt.search.spec_hit_tokens"),
     r"\(CrossHair status 2\): \"kvspec\.conformance\.hunt\.search\" does not target a function\."),
])
def test_hunt_diff_of_a_pair_that_does_not_load_is_an_error(pair: tuple[str, str], reason: str) -> None:
    refused(kvspec("hunt", "diff", "--pair", *pair), re.escape(f"crosshair diffbehavior --per_condition_timeout 10 {' '.join(pair)}: ")
            + r"the search did not run " + reason)


@pytest.mark.parametrize("option", ["--budget", "--per-condition"])
@pytest.mark.parametrize(("value", "shown"), [("nan", "nan"), ("inf", "inf"), ("-1", "-1"), ("0", "0"), ("3e6", "3e+06")])
def test_hunt_seconds_are_finite_and_positive(option: str, value: str, shown: str) -> None:
    """And at most 2**31 // 1000: subprocess waits in poll(), whose timeout is a C int of milliseconds."""
    refused(kvspec("hunt", "diff", option, value), re.escape(f"{option} {shown}: must be a finite number of seconds > 0 and <= 2147483"))


def test_hunt_whose_budget_ends_first_is_an_error() -> None:
    """A budget smaller than CrossHair takes to start: nothing searched, and the error says how far it got."""
    refused(kvspec("hunt", "as-written", "--budget", "0.3"),
            AS_WRITTEN + r"the budget of 0\.3 s ran out before the search ended \(the search had not started; .+")


def test_hunt_that_tries_no_input_is_an_error() -> None:
    """--per-condition over before any input met a precondition: CrossHair says "Unable to meet
    precondition" for every condition."""
    refused(kvspec("hunt", "as-written", "--per-condition", "1e-9"),
            AS_WRITTEN + r"the search did not run \(CrossHair status 0\): CrossHair tried no condition on any input .+")


def test_hunt_of_a_function_without_contracts_is_an_error() -> None:
    """CrossHair would find nothing to check; a --function or --clause that names nothing to explore is refused."""
    refused(kvspec("hunt", "check", "--function", "kvspec.conformance.hunt.search.in_domain"),
            r"kvspec hunt check --function .+: the search did not run: kvspec\.conformance\.hunt\.search\.in_domain carries no contract: "
            r"CrossHair has no condition of it to check")
    refused(kvspec("hunt", "check", "--clause", "PROTO-15"),  # the adapter protocol's: no rule of the reference states it
            r"kvspec hunt check --clause PROTO-15 .+: the search did not run: PROTO-15: no function the hunt explores cites it .+")
    refused(kvspec("hunt", "check", "--function", "kvspec.reference.nosuch.f"),
            r"kvspec hunt check .+: the search did not run: kvspec\.reference\.nosuch\.f: kvspec\.reference has no 'nosuch'")
    refused(kvspec("hunt", "diff", "--function", "kvspec.reference.s3fifo.access"), r"--function chooses what a check explores")


def completed(status: int, stdout: str, stderr: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["crosshair"], status, stdout, stderr)


def runner_report(*searched: dict[str, object]) -> str:
    """The runner's report (conformance/hunt/runner.py): its plan, then a line for each search."""
    plan = {"plan": [["m.f", 2, ["x", "y"]]]}
    return "\n".join(json.dumps(line) for line in [plan, *searched]) + "\n"


def searched(state: str, message: str = "") -> dict[str, object]:
    return {"function": "m.f", "seconds": 1.0, "state": state, "message": message, "path": "m.py", "line": 3}


def test_a_status_is_read_only_with_the_report_it_comes_with() -> None:
    """Outputs CrossHair or the runner gives rarely, or only when they break, each with the status it comes with."""
    pair = ("m.f", "m.g")
    not_run = [
        lambda: diffs(completed(0, "No differences found. (attempted 0 iterations)\n"), "c", pair, 1.0),
        lambda: diffs(completed(0, ""), "c", pair, 1.0),
        lambda: diffs(completed(1, "", "Traceback (most recent call last):\n  ...\nRuntimeError: z3 crashed\n"), "c", pair, 1.0),
        lambda: diffs(completed(1, "Given: (x=1),\n"), "c", pair, 1.0),  # a difference without its two results
        lambda: diffs(completed(2, "Given: (x=1),\n  m.f : returns 1\n  m.g : returns 2\n",
                                "Repeated executions are not behaving deterministically.\n"), "c", pair, 1.0),
        lambda: report(completed(0, runner_report(searched("syntax_err", "SyntaxError: invalid syntax"))), "c"),  # a condition not analysed
        lambda: report(completed(0, runner_report(searched("pre_unsat", "Unable to meet precondition."))), "c"),  # no input tried
        lambda: report(completed(0, '{"plan": [["m.f", 2'), "c"),  # a report cut short
        lambda: report(completed(1, "", "Traceback (most recent call last):\n  ...\nRuntimeError: z3 crashed\n"), "c"),
        lambda: report(completed(-9, ""), "c"),
    ]
    for search in not_run:
        with pytest.raises(KvspecError, match=r"^hunt: c: ") as error:
            search()
        assert "\n" not in str(error.value)
    killed = "hunt: c: the search did not run (CrossHair signal 9): its report is not one kvspec reads"
    assert str(pytest.raises(KvspecError, not_run[-1]).value) == killed
    assert diffs(completed(0, "No differences found. (attempted 4 iterations)\n"), "c", pair, 1.0) == []
    given = completed(1, "Given: (x=(1, 2)),\n  m.f : returns 1\n  m.g : returns 2\n")
    assert [c.args for c in diffs(given, "c", pair, 1.0)] == [{"x": "(1, 2)"}]
    plan, records = report(completed(0, runner_report(searched("cannot_confirm", "Not confirmed."))), "c")
    assert plan == {"m.f": (2, ["x", "y"])} and [record["state"] for record in records] == ["cannot_confirm"]


def test_a_counterexample_is_never_lost_to_its_format() -> None:
    """Found by `kvspec hunt check` here: CrossHair's RecursionError on an S3FIFO state, a repr, not a literal."""
    message = ("RecursionError: maximum recursion depth exceeded in comparison when calling "
               "admit_to_small(S3FIFO(Caps(1, 2, 2, 1), {6: 1}, {}, {3: False, 4: False}), 5)")
    found = candidate("check", "c", {**searched("exec_err", message), "function": "kvspec.reference.s3fifo.admit_to_small"},
                      {"kvspec.reference.s3fifo.admit_to_small": (3, ["cache", "h"])})
    assert found.function == "kvspec.reference.s3fifo.admit_to_small" and found.found.startswith("RecursionError: maximum recursion")
    assert found.args == {"cache": "S3FIFO(Caps(1, 2, 2, 1), {6: 1}, {}, {3: False, 4: False})", "h": 5}
    assert found.call == "S3FIFO(Caps(1, 2, 2, 1), {6: 1}, {}, {3: False, 4: False}), 5"  # what the concrete run rebuilds
    returns = CALL.match("false when calling total(x=[1, 2], y=True) (which returns 13)")
    assert returns and returns["function"] == "total" and arguments(returns["args"]) == {"x": "[1, 2]", "y": True}
    assert arguments("<object at 0x7f>") == {"arguments": "<object at 0x7f>"} and arguments("1), g(2") == {"arguments": "1), g(2"}
    assert arguments("64, 0.0078125", ["capacity", "small_ratio"]) == {"capacity": 64, "small_ratio": 0.0078125}
    nondeterministic = candidate("check", "c", searched("exec_err", "NotDeterministic: Found a different execution paths"),
                                 {"m.f": (1, ["x"])})
    assert nondeterministic.call == "" and nondeterministic.args == {}  # CrossHair's own trouble: nothing to run, listed apart


def test_hunt_record_that_refuses_writes_nothing_at_all(tmp_path: Path) -> None:
    """A counterexample no fixture can hold: the refusal is the only output, after the search."""
    (tmp_path / "conformance").mkdir()
    (tmp_path / "pair.py").write_text("def f(x: int) -> int:\n    return x\n\n\ndef g(x: int) -> int:\n    return 0 if x == 3 else x\n")
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "hunt", "diff", "--pair", "pair.f", "pair.g", "--record"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == 1 and run.stdout == "", run.stdout + run.stderr
    assert run.stderr.count("\n") == 1
    assert run.stderr.startswith("kvspec: error: hunt --record: no fixture is made from the arguments of pair.f ")
    assert list((tmp_path / "conformance").iterdir()) == []
