"""No implementation can end, fool or hang kvspec itself (issue 28, sections 4 and 8): each hostile
implementation of tests/fakes/ through the installed `kvspec`, as a user runs it. Each run must end
in a verdict about the implementation: exit status 3, the clause it broke on the verdict's line, and
nothing on stderr that is a crash of kvspec's (no "Traceback", no "Exception ignored"), nor any
character of the implementation's that a terminal would act on (PROTO-31).

tests/fakes/hostile.py is the reference doing, at its first request, what would end the process it
runs in: served (``python:``, PROTO-18's default) each is a process's failure (PROTO-14, PROTO-15);
in kvspec's process (``in-process:``) each is PROTO-29's, but a segfault, which no process survives
in itself. The process fakes send a reply nested 100,000 deep, redraw the terminal, exit while a
child holds their stdout, or close their stdin.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure, described_error, printable

KVSPEC = Path(sys.executable).with_name("kvspec")  # CI installs kvspec into the venv running pytest
FAKES = Path(__file__).resolve().parent / "fakes"
HOSTILE = FAKES / "hostile.py"
TRACE = '{"timestamp": 0, "input_length": 2, "output_length": 0, "hash_ids": [1, 2]}\n'
TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # what would move the cursor, erase or retitle: not a newline


def kvspec(*argv: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KVSPEC), *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"})


def assert_no_crash(run: subprocess.CompletedProcess[str]) -> None:
    """Line by line: nothing kvspec printed is a traceback or Python's "Exception ignored", nor carries a control character."""
    for line in run.stderr.splitlines() + run.stdout.splitlines():
        assert not line.startswith(("Traceback", "Exception ignored")) and "Traceback (most recent call last)" not in line, run.stderr
        assert not TERMINAL.search(line), repr(line)


def replayed(adapter: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`kvspec replay --adapter` of one request, with 1 s deadlines: exit 3 and its one line."""
    (tmp_path / "t.jsonl").write_text(TRACE)
    run = kvspec("replay", "t.jsonl", "--adapter", adapter, "--policy", "lru", "--capacity", "4", "--block-size", "1", "--reply-timeout", "1",
                 "--start-timeout", "2", *extra, cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert_no_crash(run)
    return run


# Served (python:, the default): whatever the implementation does happens in a process of its own -----------

SERVED = [
    ("exits", "PROTO-15", "the process exited with status 0 before replying"),
    ("segfaults", "PROTO-15", "the process was killed by signal 11 before replying"),
    ("ignores_alarm_and_sleeps", "PROTO-15", "no reply to hit_tokens within 1 s (hung?)"),
    ("keyboard_interrupt", "PROTO-14", "the implementation replied with an error: 'KeyboardInterrupt'"),
    ("unprintable_exception", "PROTO-14", "the implementation replied with an error: 'Unprintable: <its message raised RuntimeError>'"),
    ("level_equal_to_everything", "PROTO-16", "start (seq 0): a reply of the wrong shape (level: Input should be 'results' or 'state')"),
]


@pytest.mark.parametrize("deed, clause, what", SERVED, ids=[deed for deed, _, _ in SERVED])
def test_PROTO_18_a_python_implementation_is_served_and_nothing_it_does_ends_kvspec(deed: str, clause: str, what: str, tmp_path: Path) -> None:
    """Among them os._exit(0), which in kvspec's process ended it with exit 0 and no output: a false pass."""
    run = replayed(f"python:{HOSTILE}:{deed}", tmp_path)
    assert run.stdout == "" and run.stderr.count("\n") == 1
    assert f": {clause}: python:{HOSTILE}:{deed}: " in run.stderr and what in run.stderr, run.stderr


# In kvspec's process (in-process:), by choice: every BaseException, a taken SIGALRM, a value equal to everything ------

IN_PROCESS = [
    ("exits", "PROTO-29", "hit_tokens: raised Exited: called os._exit(0), which would end kvspec's process with it"),
    ("posix_exits", "PROTO-29", "hit_tokens: raised Exited: called os._exit(0), which would end kvspec's process with it"),
    ("sys_exits", "PROTO-29", "hit_tokens: raised SystemExit: 0"),
    ("keyboard_interrupt", "PROTO-29", "hit_tokens: raised KeyboardInterrupt"),
    ("generator_exit", "PROTO-29", "hit_tokens: raised GeneratorExit"),
    ("own_base_exception", "PROTO-29", "hit_tokens: raised Quit: quit"),
    ("unprintable_exception", "PROTO-29", "hit_tokens: raised Unprintable: <its message raised RuntimeError>"),
    ("takes_alarm", "PROTO-29", "hit_tokens: took SIGALRM away, which kvspec keeps the deadline with (PROTO-15)"),
    ("ignores_alarm_and_spins", "PROTO-29", "hit_tokens: took SIGALRM away, which kvspec keeps the deadline with (PROTO-15): in kvspec's "
     "process it may not (served in a process of its own, python:module:factory, it may), and gave no reply to hit_tokens within 0.3 s"),
    ("ignores_alarm_and_sleeps", "PROTO-29", "and gave no reply to hit_tokens within 0.3 s"),
    ("control_characters", "PROTO-29", r"hit_tokens: raised ValueError: bad\r\x1b[2K\x1b[1A\x1b]0;owned\x07\u2028block"),
]


@pytest.mark.parametrize("deed, clause, what", IN_PROCESS, ids=[deed for deed, _, _ in IN_PROCESS])
def test_PROTO_29_whatever_an_in_process_implementation_raises_or_takes_is_its_failure(deed: str, clause: str, what: str) -> None:
    """In this process, as kvspec runs it: the failure, its clause and its message, and the
    implementation discarded; the next start is a fresh one, and this process goes on."""
    implementation = Implementation(f"in-process:{HOSTILE}:{deed}", reply_timeout=0.3)
    adapter = implementation.start()
    adapter.configure(AdapterConfig("lru", 4))
    began = time.monotonic()
    with pytest.raises(AdapterFailure) as failure:
        adapter.hit_tokens([1, 2], 2)
    assert failure.value.clause == clause and what in str(failure.value), str(failure.value)
    assert adapter.failed and implementation.current() is not adapter
    assert time.monotonic() - began < 3.0


def test_PROTO_29_a_level_equal_to_everything_is_no_level(tmp_path: Path) -> None:
    """An object that equals every value passed `level in ("results", "state")` and then broke the report's serialisation."""
    with pytest.raises(AdapterFailure, match=re.escape("level: level is 'anything' (a Everything), not one of results, state")) as failure:
        Implementation(f"in-process:{HOSTILE}:level_equal_to_everything").start()
    assert failure.value.clause == "PROTO-6"


def test_PROTO_29_the_implementation_s_keyboard_interrupt_is_a_verdict_not_kvspec_s_interruption(tmp_path: Path) -> None:
    """Through `kvspec certify`, in-process: exit 3 with PROTO-29, where it was exit 130 with a traceback."""
    run = kvspec("certify", "--adapter", f"in-process:{HOSTILE}:keyboard_interrupt", "--policy", "lru", cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert_no_crash(run)
    assert "PROTO-29: request 1: " in run.stdout and "hit_tokens: raised KeyboardInterrupt" in run.stdout


def test_PROTO_29_an_implementation_that_no_interruption_ends_ends_kvspec_with_its_verdict(tmp_path: Path) -> None:
    """It catches every exception, the deadline's too, in a sleep: the backstop's last resort, one line and exit 3 (no report)."""
    began = time.monotonic()
    run = subprocess.run([str(KVSPEC), "replay", "-", "--adapter", f"in-process:{HOSTILE}:catches_everything", "--policy", "lru", "--capacity",
                          "4", "--block-size", "1", "--reply-timeout", "0.3"], input=TRACE, cwd=tmp_path, capture_output=True, text=True,
                         timeout=30, check=False)
    assert run.returncode == 3 and run.stdout == "", run.stdout + run.stderr
    assert_no_crash(run)
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(f"kvspec: PROTO-29: in-process:{HOSTILE}:catches_everything: hit_tokens: no reply")
    assert "DOES NOT CONFORM" in run.stderr and time.monotonic() - began < 10


def test_PROTO_29_the_user_s_ctrl_c_still_interrupts_kvspec_during_an_in_process_call(tmp_path: Path) -> None:
    """A real SIGINT while the implementation hangs is kvspec's interruption (130), not the implementation's failure."""
    run = subprocess.Popen([str(KVSPEC), "certify", "--adapter", "in-process:tests/fakes/inprocess.py:hanging", "--policy", "lru",
                            "--report", str(tmp_path / "report")], cwd=FAKES.parent.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)  # kvspec started, the certification under way, the implementation asleep at its third request
    run.send_signal(signal.SIGINT)
    stdout, stderr = run.communicate(timeout=30)
    assert run.returncode == 130 and stderr == "kvspec: interrupted\n" and stdout == "" and not (tmp_path / "report").exists()


def test_issue_28_a_hanging_in_process_implementation_prints_no_exception_ignored(tmp_path: Path) -> None:
    """Issue 28, section 4: a hang that allocates (so that the interpreter runs Hypothesis's gc
    callback meanwhile) printed "Exception ignored in ... gc_callback ... Expired" twice a run."""
    (tmp_path / "spins.py").write_text(
        "from kvspec.adapters.reference import ReferenceAdapter\n\n"
        "class Spins(ReferenceAdapter):\n"
        "    def hit_tokens(self, hash_ids, input_length):\n"
        "        while True:\n"
        "            [[object()] for _ in range(1000)]\n\n"
        "def spins():\n    return Spins()\n")
    run = kvspec("certify", "--adapter", "in-process:spins.py:spins", "--policy", "lru", "--reply-timeout", "0.5", cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stderr == ""  # line by line: there is none
    assert "PROTO-15: request 1: in-process:spins.py:spins: hit_tokens: no reply to hit_tokens within 0.5 s (hung?)" in run.stdout


# What an implementation says, escaped (PROTO-31) -------------------------------------------------------


def test_PROTO_31_an_implementation_s_stderr_error_and_name_reach_the_verdict_escaped(tmp_path: Path) -> None:
    run = replayed(f"cmd:{sys.executable} {FAKES / 'control_characters.py'}", tmp_path)
    escaped = r"\r\x1b[2K\x1b[1A\x1b]0;owned\x07\u2028"
    assert run.stderr.startswith(f"kvspec: evil{escaped}name does not conform")
    assert f"the implementation replied with an error: 'out{escaped}of blocks'" in run.stderr and f"last stderr: log{escaped}line" in run.stderr


@pytest.mark.parametrize("spelling", ["python", "in-process"])
def test_PROTO_31_an_implementation_s_name_and_exception_reach_the_verdict_escaped(spelling: str, tmp_path: Path) -> None:
    run = replayed(f"{spelling}:{HOSTILE}:named_with_controls", tmp_path)
    escaped = r"\r\x1b[2K\x1b[1A\x1b]0;owned\x07\u2028"
    assert run.stderr.startswith(f"kvspec: evil{escaped}name does not conform") and f"ValueError: bad{escaped}block" in run.stderr


def test_PROTO_31_printable_escapes_what_a_terminal_acts_on_and_nothing_else() -> None:
    assert printable("a\rb\x1b[2K\x1b[1A\x1b]0;t\x07\u2028\u2029\u202e\x85\x7f\t") == r"a\rb\x1b[2K\x1b[1A\x1b]0;t\x07\u2028\u2029\u202e\x85\x7f\t"
    assert printable("plain text, é, 中文, ✓") == "plain text, é, 中文, ✓"

    class Unreadable(Exception):
        def __str__(self) -> str:
            raise RecursionError

    assert described_error(Unreadable()) == "Unreadable: <its message raised RecursionError>"
    assert described_error(ValueError("x\x1b")) == "ValueError: x\x1b" and printable(described_error(ValueError("x\x1b"))) == r"ValueError: x\x1b"


# Tracebacks and misleading messages from a process's bytes (PROTO-1, PROTO-15) -------------------------------


def test_PROTO_1_a_reply_nested_too_deep_is_malformed_json_not_kvspec_s_recursion(tmp_path: Path) -> None:
    run = replayed(f"cmd:{sys.executable} {FAKES / 'deep_reply.py'}", tmp_path)
    assert ": PROTO-1: " in run.stderr and "malformed JSON reply (maximum recursion depth exceeded" in run.stderr


def test_PROTO_15_an_exit_is_reported_as_it_happens_though_a_child_holds_stdout(tmp_path: Path) -> None:
    began = time.monotonic()
    run = replayed(f"cmd:{sys.executable} {FAKES / 'child_holds_stdout.py'} {tmp_path.name}", tmp_path, "--reply-timeout", "20")
    assert time.monotonic() - began < 10, "it waited the reply timeout out"
    assert "PROTO-15: " in run.stderr and "the process exited with status 0 before replying (a process it started holds its stdout open)" in run.stderr


def test_PROTO_15_a_closed_stdin_is_named_as_such(tmp_path: Path) -> None:
    run = replayed(f"cmd:{sys.executable} {FAKES / 'closes_stdin.py'}", tmp_path)
    assert "the process closed its stdin before reading its request" in run.stderr, run.stderr


# Every command (issue 28, section 8: replay, keep-going, certify, fixtures verify, campaign, the pytest plugin) ---------------


def campaign_file(tmp_path: Path, adapter: str) -> Path:
    path = tmp_path / "campaign.toml"
    path.write_text(f'seeds = [0]\npolicies = ["lru"]\n\n[[implementations]]\nname = "x"\nadapter = "{adapter}"\nreply_timeout = 1\n')
    return path


def lru_case() -> str:
    """One LRU case of the bundled corpus: a corpus of one."""
    from kvspec.conformance.fixtures.corpus import bundled_corpus

    return str(next(iter(sorted((bundled_corpus() / "replay").glob("replay-lru-*.json")))))


COMMANDS = {
    "replay": lambda a, tmp: ("replay", "t.jsonl", "--adapter", a, "--policy", "lru", "--capacity", "4", "--block-size", "1"),
    "keep-going": lambda a, tmp: ("replay", "t.jsonl", "--adapter", a, "--policy", "lru", "--capacity", "4", "--block-size", "1", "--keep-going"),
    "certify": lambda a, tmp: ("certify", "--adapter", a, "--policy", "lru", "--reply-timeout", "1"),
    "fixtures-verify": lambda a, tmp: ("fixtures", "verify", lru_case(), "--adapter", a, "--reply-timeout", "1"),
    "campaign": lambda a, tmp: ("campaign", str(campaign_file(tmp, a)), "--report", "campaign", "--jobs", "1"),
}
# Served, certify and campaign restart the process at each failing example of the shrinking (10 to 15 s):
# they drive it through the ProcessAdapter that tests/test_faults.py holds to the same faults over cmd:.
SPELLINGS = [(command, "in-process") for command in COMMANDS] + [("replay", "python"), ("keep-going", "python"), ("fixtures-verify", "python")]


@pytest.mark.parametrize("command, adapter", SPELLINGS, ids=[f"{command}-{adapter}" for command, adapter in SPELLINGS])
def test_PROTO_30_an_implementation_that_calls_os_exit_is_a_verdict_in_every_command(command: str, adapter: str, tmp_path: Path) -> None:
    """The false pass of issue 28: exit 0 and no output through replay, certify, campaign (and the plugin, below)."""
    (tmp_path / "t.jsonl").write_text(TRACE)
    run = kvspec(*COMMANDS[command](f"{adapter}:{HOSTILE}:exits", tmp_path), cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    assert_no_crash(run)
    said = run.stdout + run.stderr + "".join(p.read_text() for p in (tmp_path / "campaign").rglob("report.md"))
    assert ("PROTO-15" if adapter == "python" else "PROTO-29") in said, said


@pytest.mark.parametrize("deed", ["exits", "keyboard_interrupt"])
def test_PROTO_30_the_pytest_plugin_fails_the_item_and_goes_on(deed: str, tmp_path: Path) -> None:
    """A KeyboardInterrupt the implementation raised aborted the whole pytest run; os._exit ended it, as passed."""
    (tmp_path / "test_theirs.py").write_text("def test_theirs():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", f"--kvspec-adapter=in-process:{HOSTILE}:{deed}", "--kvspec-policy=lru", "-p",
                          "no:cacheprovider", "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout and "PROTO-29: request 1: " in run.stdout, run.stdout
    assert "Traceback" not in run.stderr
