"""--jobs and --scheduler (conformance/core/parallel.py): the replays of `kvspec sweep` and
`kvspec compare TRACE`, and the certifications of `kvspec campaign`, run side by side in local
processes and on a Dask cluster, give what the run one after another gives: the same JSON byte
for byte (a campaign: the same verdicts and findings, its reports' timings apart); and every
failure of a worker or of the cluster is one line."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import pytest
from distributed import LocalCluster
from test_bad_input import ended, environment, processes_left

from kvspec.conformance import cli
from kvspec.conformance.core.extras import install_hint
from kvspec.conformance.core.parallel import Cluster, Processes
from kvspec.reference import ALL_POLICIES, POLICIES, KvspecError

from support import schema_errors

KVSPEC = Path(sys.executable).with_name("kvspec")
SERVE = 'import runpy\nrunpy.run_module("kvspec.adapters.serve", run_name="__main__", alter_sys=True)\n'  # the reference over the protocol


def write_trace(path: Path) -> Path:
    """300 requests over 30 conversations of up to 12 blocks of 512 tokens, the first ones far more
    often (a Pareto draw): the policies' hit rates differ at every capacity swept, so that a point
    out of its place shows."""
    draw = random.Random(17)
    chains = [[1000 * c + i for i in range(1, 13)] for c in range(30)]
    with path.open("w") as out:
        for t in range(300):
            blocks = chains[min(int(draw.paretovariate(1.2)) - 1, 29)][: draw.randint(1, 12)]
            out.write(json.dumps({"timestamp": t, "input_length": 512 * len(blocks) - draw.randint(0, 511), "output_length": 1,
                                  "hash_ids": blocks}) + "\n")
    return path


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trace(tmp_path_factory.mktemp("trace") / "small.jsonl")


# Each command, and what of its output is compared: the JSON (--output), and stdout.
COMMANDS = {
    "sweep": ["sweep", "{trace}", "--capacity", "8", "--capacity", "32"],
    "sweep-beside-a-dialect": ["sweep", "{trace}", "--policy", "lru", "--capacity", "8", "--capacity", "32", "--beside", "vllm"],
    "sweep-ablate": ["sweep", "{trace}", "--ablate", "--capacity", "8", "--capacity", "32"],
    "compare": ["compare", "{trace}", "--capacity-bytes", "512MiB", "--capacity-bytes", "1GiB", "--dialect", "vllm"],
}


def kvspec(argv: list[str], trace: Path, output: Path) -> tuple[bytes, str]:
    """The installed command, with the reference's contracts off (the replays' results do not
    depend on them, and this suite checks them elsewhere): its JSON and its stdout."""
    completed = subprocess.run([str(KVSPEC), *(arg.replace("{trace}", str(trace)) for arg in argv), "--output", str(output)],
                               capture_output=True, text=True, timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert (completed.returncode, completed.stderr) == (0, "")
    return output.read_bytes(), completed.stdout


@pytest.fixture(scope="module")
def serial(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, str]]:
    """Each command's output run one after another (--jobs 1, the default), computed once."""
    folder = tmp_path_factory.mktemp("serial")
    return {name: kvspec(argv, trace, folder / name) for name, argv in COMMANDS.items()}


@pytest.mark.parametrize("name", COMMANDS)
def test_local_processes_give_the_serial_output_byte_for_byte(name: str, serial: dict[str, tuple[bytes, str]], trace: Path,
                                                              tmp_path: Path) -> None:
    assert kvspec([*COMMANDS[name], "--jobs", "2"], trace, tmp_path / "out.json") == serial[name]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Dask cluster of two worker processes, one thread each, the reference's contracts off, shared
    by the module's tests; a task whose worker dies is not tried again (so that a death is seen at once)."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", worker_dashboard_address=":0",
                             env={"KVSPEC_CONTRACTS": "0"})
    try:
        yield local.scheduler_address
    finally:
        local.close()


def test_a_dask_cluster_gives_the_serial_output_byte_for_byte(cluster: str, serial: dict[str, tuple[bytes, str]], trace: Path,
                                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command on one cluster, its start-up paid once; run in this process, whose part is
    light (the replays run on the workers)."""
    for name, argv in COMMANDS.items():
        capsys.readouterr()
        output = tmp_path / f"{name}.json"
        assert cli.main([arg.replace("{trace}", str(trace)) for arg in argv] + ["--scheduler", cluster, "--output", str(output)]) == 0
        assert (output.read_bytes(), capsys.readouterr().out) == serial[name], name


@dataclass(frozen=True)
class Dies:
    """A job whose worker process ends at once, as one killed or out of memory."""

    label: str

    def __call__(self) -> None:
        os._exit(70)


@dataclass(frozen=True)
class Killed:
    """A job whose worker process is killed, as the kernel kills one out of memory."""

    label: str

    def __call__(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class Survived(Dies):
    """A job whose worker process ends, and that says what that means (as a certification does)."""

    def died(self, how: str) -> str:
        return f"{self.label}: {how}"


@dataclass(frozen=True)
class Label:
    """A job that returns its label, a moment after it is sent (so that the one that dies dies first)."""

    label: str

    def __call__(self) -> str:
        time.sleep(0.2)
        return self.label


@pytest.mark.parametrize("job, how", [(Dies("the job"), "exit status 70"), (Killed("the job"), "killed by SIGKILL: out of memory?")],
                         ids=["exits", "killed"])
def test_a_local_worker_that_dies_is_one_error_naming_the_job(job: Any, how: str) -> None:
    with pytest.raises(KvspecError) as raised:
        Processes(2, lambda done, total, label: None).run([Label("before"), job, Label("after")])
    assert str(raised.value) == f"a worker process ended abruptly ({how}) while it ran the job; nothing was written"


def test_a_job_that_says_what_its_worker_s_death_means_ends_alone() -> None:
    """The others go on, a fresh worker in the dead one's place, each result in its job's place."""
    told: list[tuple[int, int, str]] = []
    results = Processes(2, lambda *done: told.append(done)).run([Survived("first"), *(Label(f"job {n}") for n in range(4)), Survived("last")])
    assert results == ["first: exit status 70", "job 0", "job 1", "job 2", "job 3", "last: exit status 70"]
    assert [done for done, _, _ in told] == list(range(7)) and {total for _, total, _ in told} == {6}


def test_a_cluster_worker_that_dies_is_one_error_naming_the_job(cluster: str) -> None:
    workers = Cluster(cluster, lambda done, total, label: None)
    try:
        with pytest.raises(KvspecError, match=rf"^--scheduler {cluster}: the workers died that ran the job that dies; nothing was written$"):
            workers.run([Dies("the job that dies")])
    finally:
        workers.close()


def test_PROTO_29_an_in_process_implementation_that_kills_its_dask_workers_is_its_certification_s_fault(
        cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each worker that runs one of its certifications dies (a nanny starts another): once past
    Dask's allowed failures (0 here), that certification is the implementation's failure, and the
    campaign goes on to the next. It ended the campaign: "the workers died that ran ...", exit 1.
    (A certification of another implementation queued on the same worker would count that death
    as its own, as Dask counts it: allowed-failures, 3 by default, is what runs it again.)"""
    from test_hostile_campaign import IN_PROCESS, KILLS_ITS_PROCESS

    (tmp_path / "kills.py").write_text(KILLS_ITS_PROCESS)
    adapter = f"{IN_PROCESS}:{tmp_path / 'kills.py'}:factory"
    (tmp_path / "c.toml").write_text(f'policies = ["s3fifo"]\nseeds = [0, 1]\n[[implementations]]\nname = "kills"\nadapter = "{adapter}"\n')
    assert cli.main(["campaign", str(tmp_path / "c.toml"), "--report", str(tmp_path / "r"), "--scheduler", cluster]) == 3
    fault = (f"PROTO-29: at its certification: {adapter}: the worker process that called it in-process ended (every Dask worker that "
             "ran it died) before it replied (as a process of its own that exits before replying fails PROTO-15)")
    assert capsys.readouterr().out.splitlines()[:2] == [f"kills, canonical, seed {seed}: DOES NOT CONFORM ({fault})" for seed in (0, 1)]
    report = json.loads((tmp_path / "r" / "campaign.json").read_text())
    assert [[f["clauses"] for f in entry["report"]["faults"]] for entry in report["certifications"]] == [[["PROTO-29"]], [["PROTO-29"]]]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("address, why", [
    ("tcp://127.0.0.1:{port}", "Timed out trying to connect to tcp://127.0.0.1:{port} after 0.5 s"),
    ("tcp://127.0.0.1", "missing port number in address '127.0.0.1'"),
], ids=["nothing-listens", "no-port"])
def test_an_unreachable_scheduler_is_one_error_before_any_output(address: str, why: str, trace: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    address, why = address.format(port=port), why.format(port=port)
    with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
        status = cli.main(["sweep", str(trace), "--scheduler", address, "--output", str(tmp_path / "out.json")])
    assert (status, capsys.readouterr().err) == (1, f"kvspec: error: --scheduler {address}: cannot reach the scheduler: {why}\n")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("address", ["tls://127.0.0.1:1", "inproc://x", "ucx://127.0.0.1:1"])
def test_a_scheduler_not_at_tcp_is_refused_before_any_client(address: str, trace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """tls:// needs certificates kvspec does not configure, and Dask's other schemes hang or crash on
    an address they cannot reach; a client half built of one stalls the exit a minute."""
    monkeypatch.setattr("distributed.Client", None)  # a client built would fail otherwise
    status = cli.main(["sweep", str(trace), "--scheduler", address, "--output", str(tmp_path / "out.json")])
    said = f"kvspec: error: --scheduler {address}: kvspec reaches a scheduler at tcp://HOST:PORT only\n"
    assert (status, capsys.readouterr().err) == (1, said)
    assert not (tmp_path / "out.json").exists()


def test_a_client_half_built_does_not_stall_the_exit(trace: Path, tmp_path: Path) -> None:
    """What listens at the address answers bytes no scheduler sends: the client's start fails after
    its event loop has started, and its finaliser would wait twice the connect timeout for the
    scheduler to see it go, then print a traceback."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = "tcp://127.0.0.1:{}".format(listener.getsockname()[1])
        process = subprocess.Popen([str(KVSPEC), "sweep", str(trace), "--scheduler", address, "--output", str(tmp_path / "out.json")],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"})
        try:
            connection, _ = listener.accept()
            with connection:
                connection.sendall(b"\xff" * 64)
                stdout, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
            process.wait()
    assert (process.returncode, stdout) == (1, "")
    assert stderr.startswith(f"kvspec: error: --scheduler {address}: cannot reach the scheduler: ") and stderr.count("\n") == 1, stderr


def test_a_scheduler_that_never_answers_is_one_error_within_the_connect_timeout(trace: Path, tmp_path: Path) -> None:
    """What listens at the address takes the connection and says nothing: Dask's client would wait
    for its handshake for ever."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        address = "tcp://127.0.0.1:{}".format(listener.getsockname()[1])
        started = time.monotonic()
        run = subprocess.run([str(KVSPEC), "sweep", str(trace), "--scheduler", address, "--output", str(tmp_path / "out.json")],
                             capture_output=True, text=True, timeout=120, env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert time.monotonic() - started < 60
    said = f"kvspec: error: --scheduler {address}: cannot reach the scheduler: connected, but no answer within 2 s (twice distributed.comm.timeouts.connect)\n"
    assert (run.returncode, run.stdout, run.stderr) == (1, "", said)
    assert not (tmp_path / "out.json").exists()


def test_the_scheduler_without_dask_names_the_extra(trace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # what `import distributed` finds where dask is not installed
    assert cli.main(["sweep", str(trace), "--scheduler", "tcp://127.0.0.1:8786"]) == 1
    assert capsys.readouterr().err == f"kvspec: error: --scheduler needs dask.distributed: {install_hint('cluster')}\n"  # tests/test_environment.py proves the hint


# kvspec campaign ---------------------------------------------------------------------------------

CAMPAIGN = """\
profile = "quick"
seeds = [0, 1]
policies = ["s3fifo"]

[[implementations]]
name = "reference"
adapter = "in-process:kvspec.conformance.galleries.mutants:canonical"

[[implementations]]
name = "lru-instead-of-s3fifo"
adapter = "in-process:kvspec.conformance.galleries.mutants:lru_instead_of_s3fifo"
"""


def campaign(folder: Path, jobs: str) -> tuple[int, str, Any]:
    """`kvspec campaign` of CAMPAIGN in ``folder``, with the reference's contracts off (as
    tests/support.py's certify_report runs the galleries' mutants): its status, stdout and campaign.json."""
    folder.mkdir()
    (folder / "campaign.toml").write_text(CAMPAIGN)
    completed = subprocess.run([str(KVSPEC), "campaign", "campaign.toml", "--report", "report", "--jobs", jobs], cwd=folder,
                               capture_output=True, text=True, timeout=300, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert completed.stderr == ""
    return completed.returncode, completed.stdout, json.loads((folder / "report" / "campaign.json").read_text())


def without_timings(report: Any) -> Any:
    """A campaign report less what its run's speed decides: each policy's examples a second."""
    for entry in report["certifications"]:
        for verdict in entry["report"]["policies"]:
            del verdict["examples_per_second"]
    return report


def test_a_campaign_side_by_side_has_the_verdicts_and_findings_of_the_serial_one(tmp_path: Path) -> None:
    serial, parallel = campaign(tmp_path / "serial", "1"), campaign(tmp_path / "parallel", "2")
    status, stdout, report = serial
    assert schema_errors("campaign-report.schema.json", report) == []
    # The reference conforms and the mutant does not, at either seed: each certification is its own.
    assert [(e["implementation"], e["seed"], e["report"]["conforms"]) for e in report["certifications"]] == [
        ("reference", 0, True), ("reference", 1, True), ("lru-instead-of-s3fifo", 0, False), ("lru-instead-of-s3fifo", 1, False)]
    assert status == 3 and stdout.splitlines()[2] == "lru-instead-of-s3fifo, canonical, seed 0: DOES NOT CONFORM (s3fifo DOES NOT CONFORM)"
    assert (parallel[0], parallel[1], without_timings(parallel[2])) == (status, stdout, without_timings(report))
    for entry in report["certifications"]:  # each counterexample saved alike
        for name in ("report.json", "s3fifo-counterexample-1.jsonl"):
            serial_file, parallel_file = (tmp_path / side / "report" / entry["folder"] / name for side in ("serial", "parallel"))
            assert serial_file.exists() == parallel_file.exists()
            if name.endswith(".jsonl") and serial_file.exists():
                assert serial_file.read_bytes() == parallel_file.read_bytes()


@pytest.mark.parametrize("text, error", [
    ("profile = 'quick'\n", "not a campaign: implementations: Field required"),
    ("[[implementations]]\nname = 'a'\nadapter = 'reference'\nseeds = 'x'\n", "not a campaign: implementations.0.seeds: Input should be a valid list"),
    ("[[implementations]]\nname = 'a'\nadapter = 'reference'\ndialects = ['nobody']\n", "implementation 'a': DIALECT-5: unknown dialect 'nobody'"),
    ("[[implementations]]\nname = 'a/b'\nadapter = 'reference'\n", "implementation 'a/b': a name is letters, digits"),
    ("[[implementations]]\nname = 'a'\nadapter = 'reference'\nsmall_ratio = 2.0\n", "implementation 'a': S3-CONF-1: small_ratio"),
    ("[[implementations]\n", "not a campaign: "),
], ids=["no-implementation", "seeds-not-a-list", "unknown-dialect", "name-not-a-folder", "pinned-knob-refused", "not-toml"])
def test_a_bad_campaign_file_is_one_error_before_any_certification(text: str, error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.toml").write_text(text)
    assert cli.main(["campaign", str(tmp_path / "c.toml"), "--report", str(tmp_path / "report")]) == 1
    assert capsys.readouterr().err.startswith(f"kvspec: error: {tmp_path / 'c.toml'}: {error}")
    assert not (tmp_path / "report").exists()


STARTS = "[[implementations]]\nname = 'a'\nadapter = 'cmd:touch {started}'\n"  # an implementation that leaves a file when started


@pytest.mark.parametrize("name, text, error", [
    ("c.toml", "policies = ['lru', 'fifo']\n" + STARTS + "dialects = ['canonical', 'vllm']\n",
     "implementation 'a', vllm: DIALECT-5: vllm has no fifo dialect; it has lru"),
    ("c.toml", STARTS + "dialects = ['canonical', 'vllm']\nvariations = ['promote-at-2']\n",
     "implementation 'a', vllm+promote-at-2: DIALECT-2: the dialect asked for has no policy"),
    ("c.toml", "seeds = [0, 0]\n" + STARTS, "not a campaign: seeds: 0 is given twice"),
    ("c.toml", STARTS + "dialects = ['vllm', 'canonical', 'vllm']\n", "not a campaign: implementations.0.dialects: 'vllm' is given twice"),
    ("c.toml", STARTS + "policies = ['lru', 'lru']\n", "not a campaign: implementations.0.policies: 'lru' is given twice"),
    ("c.toml", STARTS + "variations = ['path-ids', 'path-ids']\n",
     "not a campaign: implementations.0.variations: 'path-ids' is given twice"),
    ("c.toml", "x = " + "[" * 100_000 + "\n" + STARTS, "not a campaign: nested too deeply"),
    ("c.json", "[" * 100_000, "not a campaign: nested too deeply"),
], ids=["a-policy-not-in-a-dialect", "a-dialect-without-a-policy", "seeds-twice", "dialects-twice", "policies-twice", "variations-twice",
        "deep-toml", "deep-json"])
def test_a_campaign_file_is_checked_whole_before_any_implementation_starts(name: str, text: str, error: str, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """What was found only once certifications ran (their work lost), or ran twice into one folder,
    or crashed: one line, and no implementation started."""
    (tmp_path / name).write_text(text.replace("{started}", str(tmp_path / "started")))
    assert cli.main(["campaign", str(tmp_path / name), "--report", str(tmp_path / "report")]) == 1
    assert capsys.readouterr().err == f"kvspec: error: {tmp_path / name}: {error}\n"
    assert not (tmp_path / "started").exists() and not (tmp_path / "report").exists()


def test_a_policy_an_implementation_does_not_offer_is_its_certification_s_finding(tmp_path: Path,
                                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Known only once it has started: recorded as what `kvspec certify` says of it, and the
    campaign goes on, every other certification's report kept."""
    benefit_only = "in-process:kvspec.conformance.measurement.indexed_benefit:IndexedBenefitAdapter"
    assert cli.main(["certify", "--adapter", benefit_only, "--policy", "fifo"]) == 1
    said = capsys.readouterr().err.removeprefix("kvspec: error: ").removesuffix("\n")
    (tmp_path / "c.toml").write_text(f"policies = ['fifo']\n[[implementations]]\nname = 'benefit-only'\nadapter = '{benefit_only}'\n"
                                     "[[implementations]]\nname = 'reference'\nadapter = 'reference'\n")
    completed = subprocess.run([str(KVSPEC), "campaign", "c.toml", "--report", "report"], cwd=tmp_path, capture_output=True, text=True,
                               timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0"})  # the reference's, cheaper off
    assert (completed.returncode, completed.stderr) == (3, "")
    assert completed.stdout.splitlines()[:2] == [f"benefit-only, canonical, seed 0: DOES NOT CONFORM ({said})",
                                                 "reference, canonical, seed 0: conforms (fifo conforms, fifo in flight conforms)"]
    report = json.loads((tmp_path / "report" / "campaign.json").read_text())
    assert schema_errors("campaign-report.schema.json", report) == []
    refused, certified = (entry["report"] for entry in report["certifications"])
    assert (refused["conforms"], refused["policies"], [fault["message"] for fault in refused["faults"]]) == (False, [], [said])
    assert refused["implementation"]["name"] == "kvspec-indexed-benefit" and certified["conforms"]
    assert f"none ({said})" in (tmp_path / "report" / "campaign.md").read_text()


def test_a_campaign_names_the_policies_certify_names() -> None:
    """One list of the policies (reference/constants.py), not a copy of it that could drift."""
    from kvspec.conformance.certification.campaign import CampaignFile, CampaignReport

    campaign = CampaignFile.model_json_schema()["properties"]["policies"]["anyOf"][0]["items"]["enum"]
    verdict = CampaignReport.model_json_schema()["$defs"]["PolicyVerdict"]["properties"]["policy"]["enum"]
    assert campaign == verdict == list(ALL_POLICIES) == [*POLICIES, "benefit"]


def interrupted(argv: list[str], folder: Path, signum: int, started: str, count: int) -> None:
    """kvspec, sent ``signum`` once ``count`` processes run with ``started`` in their command line
    (its workers, their implementations): 128 + signum, one line, nothing written and no process left."""
    inputs = {path.name for path in folder.iterdir()}
    marker = uuid.uuid4().hex
    process = subprocess.Popen([str(KVSPEC), *argv], cwd=folder, env=environment({}, folder, marker), start_new_session=True,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while sum(started in line for line in processes_left(-1, marker, folder, exclude=process.pid)) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, f"kvspec ended before {count} processes of {started!r} ran: {process.communicate()}"
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        left = ended(process, marker, folder)
    assert (process.returncode, stdout, stderr) == (128 + signum, b"", b"kvspec: interrupted\n")
    assert not left, left
    assert {path.name for path in folder.iterdir()} == inputs, "something was written"


def test_sigint_ends_a_sweep_and_its_workers(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches kvspec alone here (a session of its own): it ends its workers at
    once, not when their replays end. These never do: the trace is a pipe no one writes to."""
    os.mkfifo(tmp_path / "trace.jsonl")
    interrupted(["sweep", "trace.jsonl", "--policy", "lru", "--capacity", "64", "--jobs", "2", "--output", "out.json"],
                tmp_path, signal.SIGINT, "kvspec", 2)


def test_sigterm_ends_a_campaign_its_workers_and_their_implementations(tmp_path: Path) -> None:
    """Each worker ends its implementation's process group, then itself."""
    (tmp_path / "serve.py").write_text(SERVE)
    adapter = f"cmd:{sys.executable} {tmp_path / 'serve.py'}"
    (tmp_path / "c.toml").write_text(f'profile = "thorough"\n[[implementations]]\nname = "a"\nadapter = "{adapter}"\n'
                                     f'[[implementations]]\nname = "b"\nadapter = "{adapter}"\n')
    interrupted(["campaign", "c.toml", "--report", "report", "--jobs", "2"], tmp_path, signal.SIGTERM, "serve.py", 2)
