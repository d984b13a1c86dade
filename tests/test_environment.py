"""The environment kvspec runs in, where tests/test_bad_input.py's table cannot put it (issue 28,
sections 7 and 8): standard streams the caller closed, a temporary folder that fills up, a working
folder that is gone, the installation an install hint is for, and the commands kvspec prints for a
trace in another encoding, run as printed. Each runs the installed `kvspec`, whose console script
makes the standard streams sound before anything else (conformance/core/streams.py)."""

import errno
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from kvspec.conformance import cli
from kvspec.conformance.core import extras
from kvspec.conformance.core.output import WORKING_FOLDER_GONE

KVSPEC = Path(sys.executable).with_name("kvspec")
ROOT = Path(__file__).resolve().parent.parent
LINE = '{{"timestamp": 0, "input_length": 1000, "output_length": 1, "hash_ids": [{}, {}]}}\n'
TRACE = LINE.format(1, 2) + LINE.format(1, 3)
CASE = next((ROOT / "spec" / "fixtures" / "replay").glob("replay-lru-*.json"))  # one case of the corpus, verified alone
CLOSED_STDOUT = "kvspec: error: standard output: is closed (kvspec was started with it closed)\n"


def kvspec(*args: str, cwd: Path, closed: tuple[int, ...] = (), before: Callable[[], None] | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """The installed kvspec, with the standard streams in ``closed`` closed as it starts (as `<&-`,
    `>&-` and `2>&-` close them), after ``before`` has run in its process."""

    def start() -> None:
        for descriptor in closed:
            os.close(descriptor)
        if before is not None:
            before()

    return subprocess.run([str(KVSPEC), *args], cwd=cwd, capture_output=True, timeout=120, preexec_fn=start,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0", **(env or {})})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "t.jsonl").write_text(TRACE)
    return tmp_path


# Each command, as a user runs it: its arguments, and whether it writes to standard output.
COMMANDS = {
    "replay": ("replay", "t.jsonl", "--capacity", "16"),
    "replay-output": ("replay", "t.jsonl", "--capacity", "16", "--output", "out.json"),
    "sweep": ("sweep", "t.jsonl", "--capacity", "16", "--policy", "lru"),
    "compare": ("compare", "t.jsonl"),
    "certify": ("certify", "--adapter", "reference", "--policy", "fifo"),
    "fixtures-verify": ("fixtures", "verify", "--adapter", "reference", str(CASE)),
    "spec-schemas": ("spec", "schemas", "schemas"),
    "help": ("--help",),
    "version": ("--version",),
}
QUIET = {"replay-output"}  # writes nothing to standard output


@pytest.mark.parametrize("command", COMMANDS)
def test_a_closed_standard_output_is_one_line_naming_it(folder: Path, command: str) -> None:
    """`>&-`: a command that writes to standard output ends with one line that names it (exit 1);
    one that writes nothing there runs as it would."""
    run = kvspec(*COMMANDS[command], cwd=folder, closed=(1,))
    if command in QUIET:
        assert (run.returncode, run.stderr) == (0, b"") and (folder / "out.json").is_file()
    else:
        assert (run.returncode, run.stderr.decode()) == (1, CLOSED_STDOUT)


@pytest.mark.parametrize("command", ["replay", "sweep", "fixtures-verify", "version"])
def test_a_closed_standard_input_is_left_alone_by_a_command_that_does_not_read_it(folder: Path, command: str) -> None:
    run = kvspec(*COMMANDS[command], cwd=folder, closed=(0,))
    assert (run.returncode, run.stderr) == (0, b"") and run.stdout


def test_a_trace_from_a_closed_standard_input_is_one_line(folder: Path) -> None:
    """`kvspec replay - <&-`."""
    run = kvspec("replay", "-", cwd=folder, closed=(0,))
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.stderr.decode() == "kvspec: error: -: standard input is closed (kvspec was started with it closed): give the trace as a file\n"


@pytest.mark.parametrize(("args", "status"), [
    (COMMANDS["replay"], 0),
    (("replay", "absent.jsonl"), 1),
    (("replay", "t.jsonl", "--capacity", "x"), 1),  # argparse's refusal
    (("fixtures", "verify", "--adapter", "cmd:/nonexistent/impl"), 1),
])
def test_a_closed_standard_error_leaves_the_exit_status_alone_to_say_it(folder: Path, args: tuple[str, ...], status: int) -> None:
    """`2>&-`: the exit status the run would have had, and nothing written to standard output in
    its place (print(file=None) writes to standard output)."""
    run = kvspec(*args, cwd=folder, closed=(2,))
    assert run.returncode == status
    assert (run.stdout != b"") == (status == 0), run.stdout[:500]


PROBE = """import os
from kvspec.adapters.reference import ReferenceAdapter


class Probe(ReferenceAdapter):
    def hit_tokens(self, hash_ids, input_length):
        with open("descriptors.json", "w") as out:  # the lowest free number: never 0, 1 or 2
            out.write(repr([os.path.realpath(f"/proc/self/fd/{n}") for n in (0, 1, 2)]))
        return super().hit_tokens(hash_ids, input_length)


def make():
    return Probe()
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_a_closed_streams_number_is_taken_by_dev_null_not_by_a_file_kvspec_opens(folder: Path) -> None:
    """With all three closed, the trace kvspec opens (or any file) would take number 0, 1 or 2,
    and whatever writes to that number (an in-process implementation, a library's message on
    descriptor 2, a child process) would write into it."""
    (folder / "probe.py").write_text(PROBE)
    run = kvspec("replay", "t.jsonl", "--capacity", "16", "--adapter", "in-process:probe.py:make", "--output", "out.json", cwd=folder,
                 closed=(0, 1, 2))
    assert run.returncode == 0
    assert (folder / "descriptors.json").read_text() == repr(["/dev/null"] * 3)


def test_a_full_device_refusing_help_is_one_line(folder: Path) -> None:
    """argparse drops a failure to write --help; kvspec says it."""
    with open("/dev/full", "wb") as full:
        run = subprocess.run([str(KVSPEC), "--help"], stdout=full, stderr=subprocess.PIPE, timeout=60, cwd=folder)
    assert (run.returncode, run.stderr.decode()) == (1, "kvspec: error: standard output: No space left on device\n")


def limit_files_to(size: int) -> Callable[[], None]:
    """A file system that is full past ``size`` bytes, as RLIMIT_FSIZE makes every file: a write past it fails (EFBIG)."""

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the signal ends the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def test_a_full_temporary_folder_is_named_not_standard_output(folder: Path) -> None:
    """--per-request keeps each request's line in TMPDIR until the end (conformance/cli/spool.py):
    when it is full, the error names the temporary folder, and no output is written."""
    (folder / "long.jsonl").write_text("".join(LINE.format(i, i + 1) for i in range(2000)))  # some 140 kB of per-request lines
    (folder / "tmp").mkdir()
    run = kvspec("replay", "long.jsonl", "--per-request", "--output", "out.json", cwd=folder, before=limit_files_to(64 * 1024),
                 env={"TMPDIR": str(folder / "tmp")})
    said = (f"kvspec: error: the temporary folder {folder / 'tmp'}: File too large (kvspec keeps the JSON's per_request lines there "
            "until the end: give TMPDIR a folder with room)\n")
    assert (run.returncode, run.stdout, run.stderr.decode()) == (1, b"", said)
    assert sorted(p.name for p in folder.iterdir()) == ["long.jsonl", "t.jsonl", "tmp"] and list((folder / "tmp").iterdir()) == []


def in_a_removed_folder() -> None:
    os.rmdir(os.getcwd())


@pytest.mark.parametrize(("args", "option", "given"), [
    (("replay", "{trace}", "--output", "out.json"), "--output", "out.json"),
    (("sweep", "{trace}", "--capacity", "16", "--plot", "p.png"), "--plot", "p.png"),
    (("certify", "--adapter", "reference", "--policy", "lru", "--report", "rep"), "--report", "rep"),
    (("spec", "schemas", "out"), "", "out"),
])
def test_a_removed_working_folder_is_named_with_the_option_it_fails(tmp_path: Path, args: tuple[str, ...], option: str, given: str) -> None:
    """A relative output path in a working folder that was removed (a shell still in it) names the
    option, the path and the working folder, not standard output."""
    (tmp_path / "t.jsonl").write_text(TRACE)
    (tmp_path / "gone").mkdir()
    run = kvspec(*(arg.format(trace=tmp_path / "t.jsonl") for arg in args), cwd=tmp_path / "gone", before=in_a_removed_folder)
    named = f"{option} {given}" if option else given
    assert (run.returncode, run.stdout, run.stderr.decode()) == (1, b"", f"kvspec: error: {named}: {WORKING_FOLDER_GONE}\n")


def test_a_failure_that_names_no_file_is_not_blamed_on_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only standard output's own failures name it (conformance/core/streams.py sets their filename);
    one that names nothing says what it was, and that the working folder is gone where it is."""
    assert cli.failure(OSError(errno.EIO, "Input/output error")) == "Input/output error"
    assert cli.failure(OSError(errno.ENOSPC, "No space left on device", "standard output")) == "standard output: No space left on device"
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    assert cli.failure(OSError(errno.ENOENT, "No such file or directory")) == WORKING_FOLDER_GONE


# Install hints --------------------------------------------------------------------------------

@pytest.mark.parametrize(("origin", "expected"), [
    (None, "'kvspec[plot]'"),  # from an index: no direct_url.json
    ({"url": "file:///src/kvspec", "dir_info": {}}, "'/src/kvspec[plot]'"),
    ({"url": "file:///src/my%20kvspec", "dir_info": {"editable": True}}, "-e '/src/my kvspec[plot]'"),
    ({"url": "file:///dl/kvspec-0.1.0-py3-none-any.whl", "archive_info": {}}, "'/dl/kvspec-0.1.0-py3-none-any.whl[plot]'"),
    ({"url": "https://example.org/kvspec-0.1.0.tar.gz", "archive_info": {}}, "'kvspec[plot] @ https://example.org/kvspec-0.1.0.tar.gz'"),
    ({"url": "https://github.com/x/kvspec", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
     "'kvspec[plot] @ git+https://github.com/x/kvspec@abc123'"),
])
def test_an_install_hint_names_what_the_installation_came_from(origin: dict[str, object] | None, expected: str) -> None:
    """direct_url.json's forms (PEP 610) as pip takes them back: a folder's or an archive's path
    with the extra after it, a URL or a repository's commit as `kvspec[plot] @ URL`."""
    assert extras.requirement("plot", origin) == expected


def test_an_install_hint_names_the_working_folder_as_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert extras.requirement("hunt", {"url": tmp_path.as_uri(), "dir_info": {"editable": True}}) == "-e '.[hunt]'"


def test_an_install_hint_uses_the_running_interpreters_installer(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pip` where the one on PATH is the running interpreter's; that interpreter's `-m pip` where
    it is another's; `uv pip --python` where uv installed kvspec."""
    monkeypatch.setattr(shutil, "which", lambda name: os.path.join(os.path.dirname(sys.executable), name))
    assert extras.installer() == "pip install"
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/pip")
    assert extras.installer() == f"{sys.executable} -m pip install"
    monkeypatch.setattr(extras, "recorded", lambda file: "uv\n" if file == "INSTALLER" else None)
    assert extras.installer() == f"uv pip install --python {sys.executable}"


def installed_from() -> dict[str, object] | None:
    """How this environment's kvspec was installed: pip's record of it, in its site-packages."""
    records = list(Path(sysconfig.get_paths()["purelib"]).glob("kvspec-*.dist-info/direct_url.json"))
    return json.loads(records[0].read_text()) if records else None


SHADOW = 'import sys\nsys.modules["{module}"] = None  # as if it were not installed\n'
EXTRAS = {  # each extra: the module it brings, and a command that needs it
    "plot": ("matplotlib", ("sweep", "t.jsonl", "--capacity", "16", "--plot", "p.png"), "--plot needs matplotlib: "),
    "hunt": ("crosshair", ("hunt", "check", "--budget", "20"), "hunt: .+: CrossHair is not installed \\("),
    "cluster": ("distributed", ("sweep", "t.jsonl", "--capacity", "16", "--scheduler", "tcp://127.0.0.1:1"), "--scheduler needs dask.distributed: "),
}


@pytest.mark.parametrize("extra", EXTRAS)
@pytest.mark.parametrize("where", ["in-the-checkout", "elsewhere"])
def test_every_extras_hint_says_what_works_for_this_installation(folder: Path, extra: str, where: str) -> None:
    """The installed kvspec, run without the extra's module, names the checkout it was installed
    from (CI installs `.[test]` from it; a developer `-e`): `.` when run in it, its path elsewhere."""
    origin = installed_from()
    if origin is None or origin.get("url") != ROOT.as_uri():
        pytest.skip("kvspec is not installed from this checkout")
    module, args, said = EXTRAS[extra]
    (folder / "shadow").mkdir()
    (folder / "shadow" / "sitecustomize.py").write_text(SHADOW.format(module=module))
    cwd = ROOT if where == "in-the-checkout" else folder
    trace_args = tuple(str(folder / "t.jsonl") if arg == "t.jsonl" else str(folder / arg) if arg == "p.png" else arg for arg in args)
    run = kvspec(*trace_args, cwd=cwd, env={"PYTHONPATH": str(folder / "shadow"), "PATH": f"{KVSPEC.parent}{os.pathsep}{os.environ['PATH']}"})
    editable = "-e " if isinstance(origin.get("dir_info"), dict) and origin["dir_info"].get("editable") else ""  # type: ignore[union-attr]
    checkout = "." if where == "in-the-checkout" else str(ROOT)
    hint = f"pip install {editable}'{checkout}[{extra}]'"
    assert run.returncode == 1 and re.fullmatch(f"kvspec: error: {said}{re.escape(hint)}\\)?\n", run.stderr.decode()), run.stderr


# A trace in another encoding -------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("iconv") is None or shutil.which("gzip") is None, reason="runs iconv and gzip")
@pytest.mark.parametrize(("name", "content"), [
    ("my trace.jsonl", b"\xff\xfe" + TRACE.encode("utf-16-le")),
    ("t.jsonl.gz", None),  # UTF-32, big-endian, gzip-compressed
])
def test_the_command_that_converts_a_trace_in_another_encoding_converts_it(tmp_path: Path, name: str, content: bytes | None) -> None:
    """REPLAY-TRACE-1: the command the error shows, run as shown, makes a trace kvspec reads."""
    import gzip

    (tmp_path / name).write_bytes(content if content is not None else gzip.compress(TRACE.encode("utf-32-be")))
    refused = kvspec("replay", name, cwd=tmp_path)
    shown = re.fullmatch(r"kvspec: error: .*REPLAY-TRACE-1: the trace is in .+, not UTF-8: convert it first \((.+)\)\n", refused.stderr.decode())
    assert refused.returncode == 1 and shown is not None, refused.stderr
    assert subprocess.run(["bash", "-c", shown[1]], cwd=tmp_path, timeout=60).returncode == 0
    converted = shown[1].rsplit("> ", 1)[1].strip("'")
    replayed = kvspec("replay", converted, "--capacity", "16", cwd=tmp_path)
    assert replayed.returncode == 0 and json.loads(replayed.stdout)["requests"] == 2
