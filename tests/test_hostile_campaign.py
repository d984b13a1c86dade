"""Issue 28, section 8, for the commands that run jobs side by side (`kvspec campaign`, `sweep`,
`compare TRACE`; conformance/core/parallel.py, conformance/certification/campaign.py): no campaign
file, Dask configuration, cluster or implementation ends, hangs or fools kvspec. Each kind:

- a campaign file is read with a bound, strictly (a value of another type is refused, never
  converted) and checked in time linear in its length, before any implementation starts;
- every report folder of a campaign is checked and made before the first certification, and its
  reports are written whole or not at all, whatever interrupts them;
- a Dask configuration that cannot be read, a scheduler without a worker (at the start, or once it
  has lost them), a configuration the spec refuses under --scheduler: one line, at once or after
  a deadline that the line names;
- an in-process implementation that ends the worker process certifying it is that certification's
  fault (PROTO-29), and the campaign goes on.

The cases run through tests/test_bad_input.py's harness: the installed command in a folder of its
own, one line on stderr, nothing written, no process left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
import pytest
from distributed import LocalCluster
from test_bad_input import KVSPEC, MEMORY, OK, OK2, Case, Content, Folder, error, materialise, one_line, snapshot
from test_bad_input import test_bad_input as run_case

from kvspec.adapters import IN_PROCESS
from kvspec.conformance import cli
from kvspec.conformance.certification import campaign as campaign_module
from kvspec.conformance.core import interruption
from kvspec.conformance.core.parallel import Cluster
from kvspec.reference import KvspecError

from support import schema_errors

STARTS = "cmd:touch {started}"  # an implementation that leaves a file if it is ever started: no case may start one
TRACE = OK + OK2


def implementations(*names: str, extra: str = "") -> str:
    return "".join(f'[[implementations]]\nname = "{name}"\nadapter = "{STARTS}"\n{extra}' for name in names)


@dataclass(frozen=True)
class Refused:
    """A campaign refused before any implementation starts: its files (the campaign file named
    ``name`` among them), and the pattern of the one line after the campaign file's path."""

    id: str
    text: str | bytes
    message: str
    name: str = "c.toml"
    files: dict[str, Content] = field(default_factory=dict)


# A value of another type than the field's, each of which pydantic would convert: the key, the file and the value given.
WRONG_TYPES = [
    ('seeds = ["0", "1"]', r"implementations\.0\.seeds\.0: Input should be a valid integer \(given \"0\"\)"),
    ("seeds = [true]", r"implementations\.0\.seeds\.0: Input should be a valid integer \(given true\)"),
    ('find_dialect = "yes"', r"implementations\.0\.find_dialect: Input should be a valid boolean \(given \"yes\"\)"),
    ("max_capacity = true", r"implementations\.0\.max_capacity: Input should be a valid integer \(given true\)"),
    ("max_freq = 3.0", r"implementations\.0\.max_freq: Input should be a valid integer \(given 3\.0\)"),
    ('reply_timeout = "5"', r"implementations\.0\.reply_timeout: Input should be a valid number \(given \"5\"\)"),
    ('small_ratio = "0.1"', r"implementations\.0\.small_ratio: Input should be a valid number \(given \"0\.1\"\)"),
    ("fitting_requests = 1", r"implementations\.0\.fitting_requests: Input should be a valid boolean \(given 1\)"),
]
LONG = "a" * 300  # a name past a file system's 255 bytes

REFUSED = [
    *[Refused(f"strict-{line.split()[0]}-{n}", implementations("a") + line + "\n", f"not a campaign: {said}")
      for n, (line, said) in enumerate(WRONG_TYPES)],
    Refused("strict-at-the-top", 'seeds = ["0"]\n' + implementations("a"), r"not a campaign: seeds\.0: Input should be a valid integer \(given \"0\"\)"),
    Refused("json-strict", '{"find_dialect": "yes", "implementations": [{"name": "a", "adapter": "%s"}]}' % STARTS,
            r"not a campaign: find_dialect: Input should be a valid boolean \(given \"yes\"\)", name="c.json"),
    Refused("json-key-twice", '{"seeds": [0], "seeds": [1], "implementations": [{"name": "a", "adapter": "%s"}]}' % STARTS,
            r"not a campaign: the key 'seeds' is given twice", name="c.json"),
    Refused("json-nan", '{"implementations": [{"name": "a", "adapter": "%s", "reply_timeout": NaN}]}' % STARTS,
            r"not a campaign: NaN is not a JSON number", name="c.json"),
    Refused("not-utf-8", implementations("a").encode() + b"# \xff\n", r"not a campaign: line 4: not UTF-8 \(byte 0xff\)"),
]

# Every report folder, checked and made before the first certification: the first implementation never starts.
FOLDERS = [
    Refused("name-too-long", implementations("a", LONG), rf"--report \S+/r/{LONG}/canonical/seed-0: cannot be made: File name too long"),
    Refused("a-file-in-the-way", implementations("a", "b"), r"--report \S+/r/b/canonical/seed-0: \S+/r/b is a file, not a folder",
            files={"r/b": b""}),
    Refused("campaign-json-a-folder", implementations("a"), r"--report \S+/r/campaign\.json: is a folder, not a file",
            files={"r/campaign.json": Folder()}),
]


def refused(case: Refused, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The campaign run in this process: exit 1, its one line (after ``kvspec: error: ``), nothing started, written or changed."""
    data = case.text.encode() if isinstance(case.text, str) else case.text
    materialise(folder, {case.name: data.replace(b"{started}", str(folder / "started").encode()), **case.files})
    before = snapshot(folder)
    capsys.readouterr()
    assert cli.main(["campaign", str(folder / case.name), "--report", str(folder / "r")]) == 1
    stderr = capsys.readouterr().err
    assert snapshot(folder) == before and not (folder / "started").exists()
    return one_line(stderr).removeprefix("kvspec: error: ")


@pytest.mark.parametrize("case", REFUSED, ids=[case.id for case in REFUSED])
def test_a_campaign_file_s_wrong_value_is_refused_with_its_key_and_file(case: Refused, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Strict: what was converted ("0" to 0, "yes" and 1 to true, true to 1, "5" to 5.0), a JSON key
    given twice (the last kept), a NaN (no JSON number), bytes that are not UTF-8."""
    said = refused(case, tmp_path, capsys)
    assert re.fullmatch(rf"{re.escape(str(tmp_path / case.name))}: {case.message}", said), said


@pytest.mark.parametrize("case", FOLDERS, ids=[case.id for case in FOLDERS])
def test_every_report_folder_of_a_campaign_is_checked_before_the_first_certification(case: Refused, tmp_path: Path,
                                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """It failed after every certification, the first's reports written."""
    said = refused(case, tmp_path, capsys)
    assert re.fullmatch(case.message, said), said


FIFTY_THOUSAND = 50_000
BIG_SEEDS = f"seeds = [{', '.join(map(str, range(FIFTY_THOUSAND)))}, {FIFTY_THOUSAND - 1}]\n" + implementations("a")
BIG_NAMES = implementations(*(f"a{n}" for n in range(FIFTY_THOUSAND)), f"a{FIFTY_THOUSAND - 1}")

CAMPAIGN_CASES = [
    # A file read whole, with a bound: /dev/zero is not read until memory runs out.
    Case("campaign-dev-zero", ("campaign", "/dev/zero", "--report", "r"), 1, error(r"/dev/zero: not a campaign: larger than 16 MiB"),
         memory=MEMORY),
    # Linear checks: a duplicate at the end of 50,000 seeds or names took 33 s and 60 s; now 2 and 4 s, kvspec's start included.
    Case("campaign-50000-seeds-one-twice", ("campaign", "c.toml", "--report", "r"), 1,
         error(rf"c\.toml: not a campaign: seeds: {FIFTY_THOUSAND - 1} is given twice"), files={"c.toml": BIG_SEEDS.replace("{started}", "started").encode()}, timeout=20),
    Case("campaign-50000-names-one-twice", ("campaign", "c.toml", "--report", "r"), 1,
         error(rf"c\.toml: implementation 'a{FIFTY_THOUSAND - 1}': the name is given twice; a name is one implementation's .+"),
         files={"c.toml": BIG_NAMES.replace("{started}", "started").encode()}, timeout=20),
]

SWEEP = ("sweep", "t.jsonl", "--capacity", "8", "--scheduler", "tcp://127.0.0.1:1")
NOT_YAML = b"distributed:\n  comm: [\n"

SCHEDULER_CASES = [
    # Dask reads its configuration files as it is imported: one it cannot read is named, with its line.
    Case("dask-config-not-yaml", SWEEP, 1, error(r"\S+/dask/bad\.yaml:3: a Dask configuration file that is not YAML: expected the node "
                                                 r"content, but found '<stream end>'"),
         files={"t.jsonl": TRACE, "dask/bad.yaml": NOT_YAML}, env={"DASK_CONFIG": "{tmp}/dask"}),
    Case("dask-config-not-yaml-in-home", SWEEP, 1, error(r"\S+/\.config/dask/bad\.yaml:3: a Dask configuration file that is not YAML: .+"),
         files={"t.jsonl": TRACE, ".config/dask/bad.yaml": NOT_YAML}, env={"HOME": "{tmp}", "DASK_CONFIG": None}),
    Case("dask-config-not-a-mapping", SWEEP, 1, error(r"\S+/dask/list\.yaml: a Dask configuration file that is not a mapping of settings"),
         files={"t.jsonl": TRACE, "dask/list.yaml": b"- 1\n- 2\n"}, env={"DASK_CONFIG": "{tmp}/dask"}),
    # A setting that is not a duration is named, before any connection (not "cannot reach the scheduler").
    Case("dask-connect-timeout-not-a-duration", SWEEP, 1,
         error(r"--scheduler: Dask's setting distributed\.comm\.timeouts\.connect must be a positive duration "
               r"\(DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=30s sets it to 30 s\), not 'banana'"),
         files={"t.jsonl": TRACE}, env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "banana"}),
    Case("dask-no-worker-timeout-not-a-duration", SWEEP, 1,
         error(r"--scheduler: Dask's setting kvspec\.no-worker-timeout must be a positive duration "
               r"\(DASK_KVSPEC__NO_WORKER_TIMEOUT=30s sets it to 30 s\), not -1"),
         files={"t.jsonl": TRACE}, env={"DASK_KVSPEC__NO_WORKER_TIMEOUT": "-1"}),
    # What the spec refuses is said before the scheduler is sought (it waited Dask's 30 s to connect first).
    Case("compare-s3-conf-5-before-the-scheduler", ("compare", "t.jsonl", "--capacity-bytes", "64MiB", "--scheduler", "tcp://127.0.0.1:1"),
         1, error(r"S3-CONF-5: capacity 1 at small_ratio 0\.1 gives small_cap = round\(1 \* 0\.1\) = 0 .+"), files={"t.jsonl": TRACE}, timeout=20),
    Case("compare-ben-prefix-6-before-the-scheduler", ("compare", "t.jsonl", "--capacity-bytes", "1MiB", "--scheduler", "tcp://127.0.0.1:1"),
         1, error(r"BEN-PREFIX-6: a capacity of 1048576 bytes holds no 67108864-byte block"), files={"t.jsonl": TRACE}, timeout=20),
]

CASES = CAMPAIGN_CASES + SCHEDULER_CASES
assert len({case.id for case in CASES}) == len(CASES), "case ids must be unique"


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input_is_one_line_before_any_work(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


# An in-process implementation that ends its worker ------------------------------------------------

KILLS_ITS_PROCESS = """\
import os
import signal

from kvspec.conformance.galleries.mutants import CanonicalS3FIFO


class KillsItsProcess(CanonicalS3FIFO):
    def access(self, *arguments, **keywords):
        os.kill(os.getpid(), signal.SIGKILL)  # as a crash of native code would: nothing in the process can refuse it


def factory():
    return KillsItsProcess()
"""


def test_PROTO_29_an_in_process_implementation_that_ends_its_worker_is_its_certification_s_fault(tmp_path: Path) -> None:
    """`campaign --jobs 2`: the worker certifying it dies with the certification; that certification
    is the implementation's failure (exit 3), and the others go on, a fresh worker taking its place.
    It was "a worker process ended abruptly", exit 1, nothing written."""
    (tmp_path / "kills.py").write_text(KILLS_ITS_PROCESS)
    adapter = f"{IN_PROCESS}:{tmp_path / 'kills.py'}:factory"
    (tmp_path / "c.toml").write_text(f'policies = ["s3fifo"]\n[[implementations]]\nname = "kills"\nadapter = "{adapter}"\n'
                                     '[[implementations]]\nname = "exits"\nadapter = "cmd:true"\nseeds = [0, 1]\n')
    completed = subprocess.run([str(KVSPEC), "campaign", "c.toml", "--report", "r", "--jobs", "2"], cwd=tmp_path, capture_output=True,
                               text=True, timeout=120, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    fault = (f"PROTO-29: at its certification: {adapter}: the worker process that called it in-process ended (killed by SIGKILL: out of "
             "memory?) before it replied (as a process of its own that exits before replying fails PROTO-15)")
    assert (completed.returncode, completed.stderr) == (3, "")
    assert completed.stdout.splitlines() == [f"kills, canonical, seed 0: DOES NOT CONFORM ({fault})",
                                             "exits, canonical, seed 0: DOES NOT CONFORM (it failed at its start)",
                                             "exits, canonical, seed 1: DOES NOT CONFORM (it failed at its start)", "the report: r/campaign.md"]
    report = json.loads((tmp_path / "r" / "campaign.json").read_text())
    assert schema_errors("campaign-report.schema.json", report) == []
    killed, *others = (entry["report"] for entry in report["certifications"])
    assert [(f["clauses"], f["message"]) for f in killed["faults"]] == [(["PROTO-29"], fault)] and killed["policies"] == []
    assert [[f["clauses"] for f in other["faults"]] for other in others] == [[["PROTO-15"]], [["PROTO-15"]]]


# A campaign's reports, whole or not at all ------------------------------------------------------------

THREE = "".join(f'[[implementations]]\nname = "{name}"\nadapter = "cmd:true"\n' for name in ("a", "b", "c"))  # each fails at its start, at once


@pytest.fixture
def in_process_main(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """cli.main in this process, its SIGINT and SIGTERM handlers and the interruption it records undone after."""
    monkeypatch.setattr(interruption, "RECEIVED", [])
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def run_three(folder: Path, profile: str = "quick") -> int:
    (folder / "c.toml").write_text(f'profile = "{profile}"\n' + THREE)
    return cli.main(["campaign", str(folder / "c.toml"), "--report", str(folder / "r")])


@pytest.mark.parametrize("earlier", [False, True], ids=["no-folder-before", "a-run-before"])
def test_an_interruption_while_a_campaign_s_reports_are_written_leaves_the_folder_as_it_was(
        earlier: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_process_main: None, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGINT after the first report is written: no folder if there was none, else the reports of
    the run before (at another profile), byte for byte; no hidden folder left. It left the reports
    written before the signal."""
    if earlier:
        assert run_three(tmp_path) == 3
    before = snapshot(tmp_path)
    written = campaign_module.write_report

    def interrupted_after_one(report: Any, directory: Path) -> None:
        written(report, directory)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(campaign_module, "write_report", interrupted_after_one)
    capsys.readouterr()
    assert run_three(tmp_path, "thorough") == 130
    assert capsys.readouterr().err == "kvspec: interrupted\n"
    assert {name: digest for name, digest in snapshot(tmp_path).items() if name != "c.toml"} == {
        name: digest for name, digest in before.items() if name != "c.toml"}


def test_an_interruption_while_a_campaign_s_reports_are_moved_into_place_waits_for_the_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_process_main: None, capsys: pytest.CaptureFixture[str]) -> None:
    """SIGINT as the first report is moved into place: every report is moved, then kvspec ends as
    interrupted (130), the folder whole and no hidden folder left."""
    replace = os.replace
    signalled: list[str] = []

    def interrupted_at_the_first_move(source: Any, destination: Any) -> None:
        if ".kvspec-campaign." in str(source) and ".kvspec-campaign." not in str(destination) and not signalled:
            signalled.append(str(destination))
            os.kill(os.getpid(), signal.SIGINT)
        replace(source, destination)

    monkeypatch.setattr(os, "replace", interrupted_at_the_first_move)
    assert run_three(tmp_path) == 130
    assert capsys.readouterr().err == "kvspec: interrupted\n" and signalled
    report = json.loads((tmp_path / "r" / "campaign.json").read_text())
    assert [entry["folder"] for entry in report["certifications"]] == ["a/canonical/seed-0", "b/canonical/seed-0", "c/canonical/seed-0"]
    assert sorted(name for name in snapshot(tmp_path) if "/" in name and not name.endswith("/")) == sorted(
        [*(f"r/{n}/canonical/seed-0/report.{kind}" for n in "abc" for kind in ("json", "md")), "r/campaign.json", "r/campaign.md"])
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]


def test_a_campaign_s_reports_replace_those_of_the_run_before_and_nothing_else(tmp_path: Path, in_process_main: None) -> None:
    """Moved into place file by file: a report of the run before is replaced, a file of the user's
    beside them is kept (a campaign removes nothing it did not write)."""
    assert run_three(tmp_path) == 3
    (tmp_path / "r" / "notes.md").write_text("mine\n")
    (tmp_path / "r" / "a" / "canonical" / "seed-0" / "notes.md").write_text("mine too\n")
    assert run_three(tmp_path, "thorough") == 3
    assert json.loads((tmp_path / "r" / "a" / "canonical" / "seed-0" / "report.json").read_text())["profile"] == "thorough"
    assert (tmp_path / "r" / "notes.md").read_text() == "mine\n"
    assert (tmp_path / "r" / "a" / "canonical" / "seed-0" / "notes.md").read_text() == "mine too\n"
    assert not [name for folder in (tmp_path, tmp_path / "r") for name in os.listdir(folder) if name.startswith(".")]


# A scheduler without a worker ------------------------------------------------------------------------


@pytest.fixture
def scheduler_alone() -> Iterator[str]:
    """A real Dask scheduler, in this process, with no worker."""
    local = LocalCluster(n_workers=0, processes=False, protocol="tcp://", dashboard_address=":0")
    try:
        yield local.scheduler_address
    finally:
        local.close()


def test_a_scheduler_without_a_worker_is_one_line_after_the_deadline_it_names(scheduler_alone: str, tmp_path: Path) -> None:
    """It waited for ever, saying nothing. The setting the line names, set as it says, sets the deadline."""
    (tmp_path / "t.jsonl").write_bytes(TRACE)
    started = time.monotonic()
    run = subprocess.run([str(KVSPEC), "sweep", "t.jsonl", "--capacity", "8", "--scheduler", scheduler_alone, "--output", "out.json"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60, env={**os.environ, "DASK_KVSPEC__NO_WORKER_TIMEOUT": "1s"})
    said = (f"kvspec: error: --scheduler {scheduler_alone}: no worker joined the scheduler within 1 s (Dask's setting "
            "kvspec.no-worker-timeout; DASK_KVSPEC__NO_WORKER_TIMEOUT=300s waits 300 s); nothing was written\n")
    assert (run.returncode, run.stdout, run.stderr) == (1, "", said)
    assert time.monotonic() - started < 30 and not (tmp_path / "out.json").exists()


@dataclass(frozen=True)
class Sleeps:
    """A job that takes a while."""

    label: str

    def __call__(self) -> str:
        time.sleep(2)
        return self.label


def test_a_scheduler_that_loses_its_workers_is_one_line_after_the_deadline() -> None:
    """Its only worker leaves while the jobs run: the jobs would wait for ever for another."""
    local = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=":0")
    try:
        with dask.config.set({"kvspec.no-worker-timeout": "1s"}):
            cluster = Cluster(local.scheduler_address, lambda done, total, label: None)
        try:
            cluster.connect()
            threading.Timer(0.3, local.scale, (0,)).start()
            with pytest.raises(KvspecError) as raised:
                cluster.run([Sleeps("one"), Sleeps("two")])
        finally:
            cluster.close()
    finally:
        local.close()
    assert str(raised.value) == (f"--scheduler {local.scheduler_address}: the scheduler has had no worker for 1 s, 2 of 2 jobs not done "
                                 "(Dask's setting kvspec.no-worker-timeout; DASK_KVSPEC__NO_WORKER_TIMEOUT=300s waits 300 s); nothing was written")
