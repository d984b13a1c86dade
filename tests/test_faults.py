"""Whatever an implementation does wrong is a verdict about it, never kvspec's crash
(spec/adapter-protocol.md PROTO-15, PROTO-29, PROTO-30): every deliberately wrong implementation
of tests/fakes/ through `kvspec certify`, `kvspec replay --adapter` and `kvspec fixtures verify`,
end to end, as a user runs them. Each run must exit 3 (1 for a spec that names nothing usable)
with its verdict first, write its report, finish within its deadline and a margin, and leave no
process behind.

tests/fakes/faulty.py is a correct LRU over the protocol that breaks it at request 3 after each
configure; tests/fakes/inprocess.py is the reference, in-process, broken the same way.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.inprocess import WATCHDOG, Expired, InProcessAdapter, within
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.verdict.report import Report
from kvspec.conformance.fixtures.corpus import bundled_corpus
from kvspec.conformance.fixtures.runner import read_manifest

FAKES = Path(__file__).resolve().parent / "fakes"
FAULTY = FAKES / "faulty.py"
IN_PROCESS = FAKES / "inprocess.py"
DEADLINE = 1.0  # --reply-timeout and --start-timeout of every run here
MARGIN = 25.0  # seconds a run may take beyond its deadlines: kvspec's start and a certification's shrinking, on a loaded machine


def processes_running(marker: str, exact: bool = False) -> list[str]:
    """The command lines of the processes alive now that mention ``marker`` (or are ``marker``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if (command.strip() == marker if exact else marker in command and "pytest" not in command):
                found.append(command)
    return found


def kvspec(*args: str, deadlines: int = 1) -> subprocess.CompletedProcess[str]:
    """The command line, timed: it must end within ``deadlines`` deadlines and the margin."""
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args, "--reply-timeout", str(DEADLINE), "--start-timeout",
                          str(DEADLINE)], capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"}, check=False)
    assert time.monotonic() - began < deadlines * DEADLINE + MARGIN, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout, run.stderr
    return run


@pytest.fixture(scope="module")
def lru_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One LRU replay case of the bundled corpus with at least five requests: a corpus of one."""
    corpus = bundled_corpus()
    for entry in read_manifest(corpus):
        case = json.loads((corpus / entry["path"]).read_text())
        if case["kind"] == "replay" and case["config"]["policy"] == "lru" and not case["refused"] and len(case["requests"]) >= 5:
            return corpus / entry["path"]
    raise AssertionError("the corpus has no LRU case of five requests")


@pytest.fixture(scope="module")
def lru_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "lru.jsonl"
    requests = [[1, 2], [1, 3], [1, 2, 3], [4], [2, 4]]
    path.write_text("".join(json.dumps({"timestamp": 0, "input_length": len(r), "output_length": 0, "hash_ids": r}) + "\n" for r in requests))
    return path


def certify(adapter: str, policy: str, report: Path, deadlines: int = 1) -> tuple[subprocess.CompletedProcess[str], Report]:
    run = kvspec("certify", "--adapter", adapter, "--policy", policy, "--report", str(report), deadlines=deadlines)
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.splitlines()[0].endswith(")") and ": DOES NOT CONFORM (profile quick, seed 0" in run.stdout.splitlines()[0]
    written = Report.model_validate_json((report / "report.json").read_text())
    assert not written.conforms and (report / "report.md").read_text().count("does not conform") >= 1
    assert not [path.name for path in report.iterdir() if path.name.startswith(".")], "a temporary file was left behind"
    return run, written


def replay(adapter: str, trace: Path, output: Path) -> str:
    run = kvspec("replay", str(trace), "--policy", "lru", "--capacity", "2", "--block-size", "1", "--adapter", adapter, "--output",
                 str(output))
    assert run.returncode == 3 and run.stdout == "" and not output.exists(), run.stderr
    assert run.stderr.startswith("kvspec: ") and run.stderr.count("\n") == 1
    return run.stderr


def verify(adapter: str, case: Path, deadlines: int = 1) -> str:
    run = kvspec("fixtures", "verify", str(case), "--adapter", adapter, deadlines=deadlines)
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.startswith(f"{adapter}: DOES NOT CONFORM: ")
    return run.stdout


# Mid-run faults over the protocol -------------------------------------------------------------

MID_RUN = [
    ("error", "PROTO-14", "the implementation replied with an error: 'faulty: out of blocks at request 3'"),
    ("exit", "PROTO-15", "the process exited with status 0 before replying; expected a hit_tokens reply"),
    ("hang", "PROTO-15", f"no reply to hit_tokens within {DEADLINE:g} s"),
    ("big", "PROTO-16", f"hit_tokens: {2**70} is out of range"),
    ("nan", "PROTO-16", "hit_tokens: a wrong type: nan (a number) where an integer is due"),
    ("negative", "PROTO-16", "hit_tokens: -1 is out of range"),
    ("float", "PROTO-16", "hit_tokens: a wrong type: 3.0 (a number) where an integer is due"),
    ("string", "PROTO-16", "hit_tokens: a wrong type: '0' (a string) where an integer is due"),
    ("bool", "PROTO-16", "hit_tokens: a wrong type: True (a boolean) where an integer is due"),
    ("null", "PROTO-16", "hit_tokens: a wrong type: None (null) where an integer is due"),
    ("seq", "PROTO-2", "a reply with the wrong seq"),
]


@pytest.mark.parametrize("fault, clause, what", MID_RUN, ids=[fault for fault, _, _ in MID_RUN])
def test_PROTO_30_a_fault_at_request_3_is_a_finding_at_request_3(fault: str, clause: str, what: str, tmp_path: Path, lru_case: Path,
                                                                 lru_trace: Path, tag: str) -> None:
    """PROTO-15, PROTO-16, PROTO-2, PROTO-14: the clause, the request, the configuration and a
    counterexample (shrunk, but for a hang: every replay would wait the deadline out)."""
    adapter = f"cmd:{sys.executable} {FAULTY} {fault} 3 {tag}"
    _, report = certify(adapter, "lru", tmp_path / "report")
    (verdict,) = report.policies
    first = verdict.failures[0]
    assert first.clauses == [clause] and first.request == 3 and what in first.message, first.message
    assert first.message.startswith(f"{clause}: request 3: ") and first.config is not None and first.config["policy"] == "lru"
    assert first.trace_file is not None and len((tmp_path / "report" / first.trace_file).read_text().splitlines()) == 3
    if fault != "hang":  # shrunk: nothing but the configuration and its three requests
        assert first.steps.count("state.request(") == 3, first.steps
    assert f"at line 3 of {lru_trace} (request 3): {clause}: " in replay(adapter, lru_trace, tmp_path / "out.json")
    verified = verify(adapter, lru_case)
    assert f"FAIL {json.loads(lru_case.read_text())['id']} " in verified and what in verified


# At the start and at the stop -----------------------------------------------------------------

AT_START = [
    ("true", "PROTO-15", "the process exited with status 0 before"),
    ("cat", "PROTO-16", "a reply of the wrong shape (implementation: Field required"),
    ("yes", "PROTO-1", "malformed JSON reply"),
    ("sleep 1000", "PROTO-15", f"no reply to start within {DEADLINE:g} s"),
    (f"{sys.executable} {FAKES / 'wrong_protocol_version.py'} TAG", "PROTO-5", "it speaks protocol 2, kvspec speaks protocol 1"),
    (f"{sys.executable} {FAKES / 'garbage_before_first_reply.py'} TAG", "PROTO-1", "malformed JSON reply"),
    (f"{sys.executable} {FAKES / 'crash_at_start.py'} TAG", "PROTO-15", "RuntimeError: fake crash at start"),
]


@pytest.mark.parametrize("command, clause, what", AT_START, ids=["true", "cat", "yes", "sleep", "protocol-2", "garbage", "crash"])
def test_PROTO_30_a_failure_at_the_start_is_a_finding_with_a_report(command: str, clause: str, what: str, tmp_path: Path, lru_case: Path,
                                                                   lru_trace: Path, tag: str) -> None:
    command = command.replace("TAG", tag)
    adapter = f"cmd:{command}"
    run, report = certify(adapter, "lru", tmp_path / "report")
    assert run.stdout.startswith(f"{adapter}: DOES NOT CONFORM")
    assert report.level == "unknown" and report.policies == [] and report.faults[0].clauses == [clause]
    assert report.faults[0].message.startswith(f"{clause}: at its start: ") and what in report.faults[0].message
    assert f"does not conform, at its start: {clause}: " in replay(adapter, lru_trace, tmp_path / "out.json")
    assert f"FAIL at its start: {clause}: " in verify(adapter, lru_case)
    assert processes_running(command, exact=True) == []


@pytest.mark.parametrize("fault, what", [("stop-hang", "did not exit within 2 s of stop"), ("stop-status", "exited with status 1 after stop")])
def test_PROTO_13_an_implementation_that_does_not_stop_loses_no_verdict(fault: str, what: str, tmp_path: Path, lru_case: Path,
                                                                       lru_trace: Path, tag: str) -> None:
    """The run conformed, and the report says so for the policy; the failure to stop is a finding of its own."""
    adapter = f"cmd:{sys.executable} {FAULTY} {fault} 1 {tag}"
    run, report = certify(adapter, "lru", tmp_path / "report", deadlines=3)
    assert report.policies[0].conforms and report.faults[0].message.startswith("PROTO-13: at its stop: ") and what in run.stdout
    assert "does not conform, at its stop: PROTO-13: " in replay(adapter, lru_trace, tmp_path / "out.json")
    assert "FAIL at its stop: PROTO-13: " in verify(adapter, lru_case, deadlines=3)


# In-process implementations (PROTO-29) ----------------------------------------------------------

IN_PROCESS_FAULTS = [
    ("raising", "PROTO-29", "request 3", "access: raised KeyError: "),
    ("hanging", "PROTO-15", "request 3", f"hit_tokens: no reply to hit_tokens within {DEADLINE:g} s"),
    ("wrong_type", "PROTO-29", "request 3", "hit_tokens: returned a wrong type: "),
    ("none_freq", "PROTO-29", "request 3", "a queue entry is ("),
]


@pytest.mark.parametrize("factory, clause, where, what", IN_PROCESS_FAULTS, ids=[f for f, _, _, _ in IN_PROCESS_FAULTS])
def test_PROTO_29_an_in_process_fault_is_a_finding_too(factory: str, clause: str, where: str, what: str, tmp_path: Path, lru_case: Path,
                                                       lru_trace: Path) -> None:
    """An exception, a hang (the deadline of PROTO-15 applies in-process too) and a wrong type,
    for which kvspec's own diagnosis never sees the None freq."""
    adapter = f"in-process:{IN_PROCESS}:{factory}"
    _, report = certify(adapter, "lru", tmp_path / "report")
    first = report.policies[0].failures[0]
    assert first.clauses == [clause] and first.message.startswith(f"{clause}: {where}: ") and what in first.message, first.message
    assert f"(request 3): {clause}: " in replay(adapter, lru_trace, tmp_path / "out.json")
    assert what in verify(adapter, lru_case)


def test_PROTO_29_a_fault_of_the_benefit_policy_is_a_finding_at_its_operation(tmp_path: Path) -> None:
    """The counterexample is the shrunk operations as a fixture case, and its command replays the fault."""
    adapter = f"in-process:{IN_PROCESS}:hit_raises"
    _, report = certify(adapter, "benefit", tmp_path / "report")
    first = report.policies[0].failures[0]
    assert first.clauses == ["PROTO-29"] and first.message.startswith(f"PROTO-29: operation {first.request}: ") and first.request >= 1
    assert "record_hit: raised ZeroDivisionError: no cost model for key " in first.message
    assert first.trace_file is not None and first.replay_command is not None
    case = json.loads((tmp_path / "report" / first.trace_file).read_text())
    assert case["operations"][-1]["request"]["cmd"] == "record_hit"
    run = kvspec(*first.replay_command.split()[1:])
    assert run.returncode == 3 and "record_hit: raised ZeroDivisionError" in run.stdout


@pytest.mark.parametrize("factory, clause, when, what", [
    ("factory_raises", "PROTO-29", "start", "the factory: raised OSError: the cache's shared memory segment is missing"),
    ("not_an_adapter", "PROTO-18", "start", "not_an_adapter() returned 42 (an integer), not an Adapter"),
    ("close_raises", "PROTO-29", "stop", "close: raised RuntimeError: cannot release the cache"),
])
def test_PROTO_29_an_in_process_failure_to_start_or_stop_is_a_finding(factory: str, clause: str, when: str, what: str, tmp_path: Path,
                                                                     lru_case: Path, lru_trace: Path) -> None:
    adapter = f"in-process:{IN_PROCESS}:{factory}"
    _, report = certify(adapter, "lru", tmp_path / "report")
    assert report.faults[0].message.startswith(f"{clause}: at its {when}: ") and what in report.faults[0].message
    assert f"at its {when}: {clause}: " in replay(adapter, lru_trace, tmp_path / "out.json")
    assert f"FAIL at its {when}: {clause}: " in verify(adapter, lru_case)


@pytest.mark.parametrize("spelling, clause", [("in-process", "PROTO-29"), ("python", "PROTO-14")])
def test_PROTO_29_a_module_that_fails_to_import_fails_at_its_start(spelling: str, clause: str, tmp_path: Path, lru_case: Path) -> None:
    """In kvspec's process, or served (PROTO-18): the process that serves it answers start with an error reply."""
    (tmp_path / "broken_syntax.py").write_text("def make(:\n")
    for module, what in ((FAKES / "import_raises.py", "ImportError: libkvcache.so"), (tmp_path / "broken_syntax.py", "SyntaxError")):
        _, report = certify(f"{spelling}:{module}:make", "lru", tmp_path / module.stem)
        assert report.faults[0].message.startswith(f"{clause}: at its start: ") and what in report.faults[0].message, report.faults[0].message
        assert what in verify(f"{spelling}:{module}:make", lru_case)


@pytest.mark.parametrize("adapter, message", [
    ("cmd:/nonexistent/impl", "program '/nonexistent/impl': no such file, or not executable"),
    ("cmd:kvspec-no-such-program --flag", "program 'kvspec-no-such-program': not found on PATH"),
    ("python:kvspec.no_such_module:make", "no module named 'kvspec.no_such_module'"),
    ("python:/nonexistent/impl.py:make", "no such file: /nonexistent/impl.py"),
    (f"python:{IN_PROCESS}:no_such_factory", "has no callable no_such_factory"),
    (f"in-process:{IN_PROCESS}:no_such_factory", "has no callable no_such_factory"),
])
def test_PROTO_18_a_spec_that_names_nothing_usable_is_bad_input(adapter: str, message: str, lru_case: Path, lru_trace: Path) -> None:
    """Exit 1 and one line, from each command, before any request: a python: module's factory is
    looked for by the process that serves it, which says so and exits 1 (nothing of the module runs in kvspec's)."""
    for args in (["certify", "--adapter", adapter], ["replay", str(lru_trace), "--adapter", adapter],
                 ["fixtures", "verify", str(lru_case), "--adapter", adapter]):
        run = kvspec(*args)
        assert run.returncode == 1 and run.stdout == "" and run.stderr.count("\n") == 1
        assert run.stderr.startswith(f"kvspec: error: PROTO-18: adapter spec {adapter!r}: ") and run.stderr.endswith(f"{message}\n")


def test_PROTO_15_a_deadline_is_a_finite_positive_number_of_seconds() -> None:
    for value in ("inf", "nan", "0", "-1", "abc"):
        run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", "reference", "--start-timeout", value],
                             capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 1 and run.stderr.count("\n") == 1
        assert f"argument --start-timeout: PROTO-15: a timeout must be a finite, positive number of seconds, not {value!r}" in run.stderr


# Configure must reset; answers must not depend on history (PROTO-7) ------------------------------


class KeepsItsCache(ReferenceAdapter):
    """configure builds a cache the first time only: later ones keep the first cache, blocks and all."""

    def configure(self, config: AdapterConfig) -> None:
        if self._policy is None:
            super().configure(config)


def test_PROTO_7_a_configure_that_does_not_reset_is_found_deterministically() -> None:
    """Configured twice alike, it answers the same requests differently: that is the finding, and
    every example then runs on a fresh object, so that Hypothesis sees no flakiness."""
    outcome = certify_policy(Implementation.in_process(KeepsItsCache), "lru")
    (finding,) = outcome.findings
    assert finding.message.startswith("PROTO-7: configure does not reset the implementation: configured twice with "), finding.message
    # The first run's blocks are still there: its request 1 [1, 2, 3] hits all three, and missed them the first time.
    assert 'it answered request 1 with {"hit_tokens": 3, ' in finding.message and finding.message.endswith(" the first")


class Flaky(ReferenceAdapter):
    """Answers one hit-token count in twenty wrongly, at random."""

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        hit = super().hit_tokens(hash_ids, input_length)
        return hit + 1 if os.urandom(1)[0] < 13 else hit


def test_PROTO_7_a_nondeterministic_implementation_is_a_finding_not_a_hypothesis_error() -> None:
    outcome = certify_policy(Implementation.in_process(Flaky), "fifo")
    assert not outcome.conforms
    assert all(f.divergence is not None for f in outcome.findings)


# The deadline itself, and the signals -------------------------------------------------------------


class Sleepy(ReferenceAdapter):
    def resident_count(self) -> int:
        threading.Event().wait()
        return 0


def test_PROTO_29_the_deadline_holds_off_the_main_thread_too() -> None:
    """Where SIGALRM cannot be used, a worker thread waits instead."""
    outcome: list[BaseException] = []

    def run() -> None:
        adapter = InProcessAdapter("python:sleepy", Sleepy, reply_timeout=0.3)
        adapter.configure(AdapterConfig("lru", 4))
        try:
            adapter.resident_count()
        except AdapterFailure as failure:
            outcome.append(failure)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    assert outcome and outcome[0].timed_out and "no reply to resident_count within 0.3 s" in str(outcome[0])


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_PROTO_30_an_interrupted_kvspec_ends_every_implementation_and_writes_nothing(signum: int, status: int, tmp_path: Path,
                                                                                    tag: str) -> None:
    marker = f"{FAULTY} hang 3 {tag}"
    run = subprocess.Popen([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", f"cmd:{sys.executable} {marker}",
                            "--policy", "lru", "--report", str(tmp_path / "report")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(100):  # until the implementation hangs
        if processes_running(marker):
            time.sleep(1.0)
            break
        time.sleep(0.1)
    run.send_signal(signum)
    stdout, stderr = run.communicate(timeout=30)
    assert run.returncode == status and stderr == "kvspec: interrupted\n" and stdout == ""
    assert processes_running(marker) == [] and not (tmp_path / "report").exists()


DROPPED_INTERRUPTION = """
import argparse, signal, sys, time
from kvspec.conformance import cli

class Dropped:
    def __del__(self):  # where Python prints what is raised as "ignored" and drops it
        signal.raise_signal(signal.SIGINT)

def run(args):
    Dropped()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the rest of a run, which the interruption must end
        pass
    print("not interrupted")
    return 0

parser = argparse.ArgumentParser()
parser.set_defaults(handler=run)
cli.build_parser = lambda command=None: parser
sys.exit(cli.main([]))
"""


def test_PROTO_30_an_interruption_that_arrives_where_python_drops_exceptions_still_ends_kvspec() -> None:
    """A signal handled while a ``__del__`` or a gc callback runs (Hypothesis's engine installs
    one) raises there, where Python drops the exception: seen in CI as "Exception ignored in
    gc_callback" on stderr, the run going on. It must end kvspec as any interruption does."""
    run = subprocess.run([sys.executable, "-c", DROPPED_INTERRUPTION], capture_output=True, text=True, timeout=60, check=False)
    assert (run.returncode, run.stdout, run.stderr) == (130, "", "kvspec: interrupted\n")


def test_PROTO_30_an_interruption_ends_at_once_though_a_process_outside_the_group_holds_stderr(tmp_path: Path, tag: str) -> None:
    """The implementation left a child in a session of its own (setsid), which SIGKILL to the group
    does not reach and which keeps the stderr pipe open: kvspec does not wait for that child to
    close it (closing the stream would wait on its reader thread, blocked in a read)."""
    run = subprocess.Popen([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", f"cmd:{sys.executable} {FAKES / 'escaped_child.py'} {tag}",
                            "--policy", "s3fifo", "--profile", "thorough", "--report", str(tmp_path / "report")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    try:
        for _ in range(200):  # until the child is there and the certification runs
            if processes_running(tag):
                time.sleep(2.0)
                break
            time.sleep(0.1)
        began = time.monotonic()
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=120)
        took = time.monotonic() - began
    finally:
        for entry in Path("/proc").iterdir():  # the child that left the group, the implementation's doing, ended here
            try:
                if entry.name.isdigit() and int(entry.name) != run.pid and tag in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                pass
        run.kill()
        run.wait()
        for _ in range(100):  # a SIGKILL is not yet an exit: until the kernel has ended it (the tag fixture checks none is left)
            if not processes_running(tag):
                break
            time.sleep(0.05)
    assert run.returncode == 130 and stderr == "kvspec: interrupted\n" and stdout == "" and not (tmp_path / "report").exists()
    assert took < 15, f"{took:.1f} s: kvspec waited for the child that holds the pipe"


@pytest.fixture
def tag(request: pytest.FixtureRequest) -> Iterator[str]:
    """A mark for the command line of the processes a test causes: none may be left when it ends."""
    mark = f"tag-{abs(hash(request.node.nodeid)):x}"
    yield mark
    assert processes_running(mark) == []


@pytest.fixture
def host_alarm() -> Iterator[list[int]]:
    """The host's own SIGALRM handler, counting its signals; put back as it was afterwards."""
    received: list[int] = []
    before = signal.signal(signal.SIGALRM, lambda signum, frame: received.append(signum))
    yield received
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, before)


def test_an_in_process_deadline_leaves_a_host_timer_running(host_alarm: list[int]) -> None:
    """PROTO-29 under a test runner's timeout: the host's timer and handler are untouched, and a
    call that hangs still ends at its deadline (waited for from another thread)."""
    WATCHDOG.stop()
    handler = signal.getsignal(signal.SIGALRM)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    assert within(1.0, lambda: 42) == 42
    started = time.monotonic()
    with pytest.raises(Expired):
        within(0.3, time.sleep, 5)
    assert time.monotonic() - started < 2.0
    assert signal.getsignal(signal.SIGALRM) is handler and 25.0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 30.0
    assert host_alarm == []


def test_the_watchdog_puts_the_host_handler_back_when_it_stops(host_alarm: list[int]) -> None:
    WATCHDOG.stop()
    handler = signal.getsignal(signal.SIGALRM)
    assert within(1.0, lambda: 42) == 42
    assert WATCHDOG.ticking and signal.getsignal(signal.SIGALRM) is not handler
    WATCHDOG.stop()
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL)[0] == 0.0
