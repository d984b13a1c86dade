"""Output files (REPLAY-TRACE-7): written whole or not at all, where and as the user asked.

Each case runs the installed command as a user would: the mode a new file gets, the mode of a
file replaced, a symbolic link, a named pipe, a folder or a missing folder given as the output,
and two outputs of which one cannot be written."""

import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from kvspec.conformance.core.output import written_whole

TRACE_LINE = '{"timestamp": 0, "input_length": 4, "output_length": 0, "hash_ids": [1]}\n'


def kvspec(*args: str, cwd: Path, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    def with_umask() -> None:
        os.umask(umask)

    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "KVSPEC_CONTRACTS": "0"}, preexec_fn=with_umask)


def trace(tmp_path: Path) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text(TRACE_LINE * 3)
    return str(path)


def replay(tmp_path: Path, output: str, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    return kvspec("replay", trace(tmp_path), "--block-size", "4", "--capacity", "8", "--output", output, cwd=tmp_path, umask=umask)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_REPLAY_TRACE_7_a_new_output_takes_the_umask_mode(tmp_path: Path) -> None:
    for umask, expected in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        out = tmp_path / f"out-{umask:o}.json"
        assert replay(tmp_path, str(out), umask).returncode == 0
        assert mode(out) == expected, oct(mode(out))


def test_REPLAY_TRACE_7_a_replaced_output_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old")
    out.chmod(0o640)
    assert replay(tmp_path, str(out)).returncode == 0
    assert mode(out) == 0o640 and '"policy"' in out.read_text() and leftovers(tmp_path) == []


def test_REPLAY_TRACE_7_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert replay(tmp_path, str(link)).returncode == 0
    assert link.is_symlink() and '"policy"' in real.read_text()


def test_REPLAY_TRACE_7_a_named_pipe_is_written_directly(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()))
    reader.start()
    run = replay(tmp_path, str(pipe))
    reader.join(timeout=60)
    assert run.returncode == 0, run.stderr
    assert stat.S_ISFIFO(pipe.stat().st_mode) and '"policy"' in received[0] and leftovers(tmp_path) == []


def test_REPLAY_TRACE_7_an_output_that_cannot_be_written_is_named_with_its_option(tmp_path: Path) -> None:
    for given, why in ((str(tmp_path / "no" / "dir" / "x.json"), "no such folder"), (str(tmp_path), "is a folder, not a file")):
        run = replay(tmp_path, given)
        assert run.returncode == 1 and run.stderr.startswith("kvspec: error: --output ") and why in run.stderr, run.stderr
        assert run.stderr.count("\n") == 1 and run.stdout == ""  # refused before the replay ran
    run = replay(tmp_path, "")  # not the current folder, as Path("") would have it
    assert run.returncode == 1 and run.stderr.startswith("kvspec replay: error: argument --output: an empty path names no file")


def test_REPLAY_TRACE_7_two_outputs_are_both_written_or_neither(tmp_path: Path) -> None:
    plot = tmp_path / "p.png"
    run = kvspec("sweep", trace(tmp_path), "--block-size", "4", "--capacity", "4", "--capacity", "8", "--plot", str(plot), "--output",
                 str(tmp_path / "no" / "x.json"), cwd=tmp_path)
    assert run.returncode == 1 and "--output" in run.stderr and not plot.exists() and leftovers(tmp_path) == []


def test_REPLAY_TRACE_7_a_failure_inside_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old")
    try:
        with written_whole(out, "--output") as temporary:
            temporary.write_text("partial")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert out.read_text() == "old" and leftovers(tmp_path) == []


def test_REPLAY_TRACE_7_compare_writes_a_plot_only_where_asked(tmp_path: Path) -> None:
    run = kvspec("compare", "--capacity-bytes", "64MiB", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert list(tmp_path.iterdir()) == [] and "plot:" not in run.stdout


def test_REPLAY_TRACE_7_a_plot_name_that_no_format_matches_is_refused_before_the_work(tmp_path: Path) -> None:
    run = kvspec("compare", "--capacity-bytes", "64MiB", "--plot", str(tmp_path / "p.gif"), "--output", str(tmp_path / "x.json"), cwd=tmp_path)
    assert run.returncode == 1 and "--plot" in run.stderr and ".png, .svg or .pdf" in run.stderr and run.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_REPLAY_TRACE_7_dev_stdout_is_written_directly_into_the_pipe_kvspec_writes_to(tmp_path: Path) -> None:
    run = replay(tmp_path, "/dev/stdout")
    assert run.returncode == 0 and '"policy"' in run.stdout and run.stderr == "", run.stderr


class Stopped(BaseException):
    pass


@pytest.mark.parametrize("at", [1, 2], ids=["the-check-s-probe", "the-output-s-temporary-file"])
def test_a_signal_as_the_temporary_file_is_made_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    """SIGTERM right after a temporary file exists, before the block that removes it on failure
    has begun (CI met it once: `.out.json.w6msyvrk.json` left): it waits, and arrives inside. The
    first is the check's probe (check_output makes a file beside the output and removes it), the
    second the output's own."""
    made = tempfile.mkstemp
    calls = []

    def mkstemp_then_sigterm(**names: Any) -> tuple[int, str]:
        created = made(**names)
        calls.append(created)
        if len(calls) == at:
            signal.raise_signal(signal.SIGTERM)
        return created

    def stop(signum: int, frame: object) -> None:
        raise Stopped

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_then_sigterm)
    before = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(Stopped), written_whole(tmp_path / "out.json", "--output") as temporary:
            temporary.write_text("{}")
    finally:
        signal.signal(signal.SIGTERM, before)
    assert len(calls) == at and list(tmp_path.iterdir()) == []
    assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == set()  # the mask is as it was
