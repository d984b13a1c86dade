"""The tutorial of spec/adapter-protocol.md: its program (examples/tutorial-fifo/fifo.py) answers
the session it shows exactly as shown and conforms; each mistake it shows, made again, is still
named by the clause it shows."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "tutorial-fifo" / "fifo.py"
TUTORIAL = (ROOT / "spec" / "adapter-protocol.md").read_text(encoding="utf-8").split("## Tutorial: ", 1)[1]


def kvspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}  # as on a user's machine
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=cwd)


def test_the_program_answers_the_session_exactly_as_the_tutorial_shows() -> None:
    session = re.findall(r"^([→←]) (.+)$", TUTORIAL, flags=re.MULTILINE)
    requests = [line for arrow, line in session if arrow == "→"]
    replies = [json.loads(line) for arrow, line in session if arrow == "←"]
    assert [json.loads(line)["cmd"] for line in requests] == ["start", "configure", "hit_tokens", "access", "resident_count", "stop"]
    run = subprocess.run([sys.executable, str(PROGRAM)], input="\n".join(requests) + "\n", capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr == ""
    assert [json.loads(line) for line in run.stdout.splitlines()] == replies


def test_the_program_conforms_and_passes_the_fixtures(tmp_path: Path) -> None:
    adapter = f"cmd:{sys.executable} {PROGRAM}"
    certified = kvspec("certify", "--adapter", adapter, cwd=tmp_path)
    assert certified.returncode == 0, certified.stdout + certified.stderr
    assert certified.stdout.startswith("tutorial-fifo 1 (python): conforms") and "fifo: conforms" in certified.stdout
    verified = kvspec("fixtures", "verify", "--adapter", adapter, cwd=tmp_path)
    assert verified.returncode == 0 and ", 0 fail" not in verified.stdout and " pass" in verified.stdout, verified.stdout + verified.stderr


def mistaken(tmp_path: Path, name: str, before: str, after: str, times: int = 1) -> str:
    """fifo.py with one mistake made: each ``before`` (there are ``times``) replaced by ``after``."""
    text = PROGRAM.read_text(encoding="utf-8")
    assert text.count(before) == times, before
    (tmp_path / name).write_text(text.replace(before, after), encoding="utf-8")
    return f"cmd:{sys.executable} {name}"


def test_PROTO_15_no_flush_after_a_reply(tmp_path: Path) -> None:
    adapter = mistaken(tmp_path, "noflush.py", "**fields}), flush=True)", "**fields}))")
    run = kvspec("certify", "--adapter", adapter, "--start-timeout", "1", cwd=tmp_path)
    assert run.returncode == 3 and "PROTO-15: at its start: " in run.stdout and "no reply to start within 1 s" in run.stdout, run.stdout
    assert "PROTO-15: at its start: " in TUTORIAL


def test_FIFO_CAP_1_ids_read_as_doubles(tmp_path: Path) -> None:
    adapter = mistaken(tmp_path, "doubles.py", 'for hash_id in request["hash_ids"]:', 'for hash_id in map(float, request["hash_ids"]):', 2)
    run = kvspec("certify", "--adapter", adapter, cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    first = run.stdout.splitlines()[2]
    assert first.startswith("    FIFO-CAP-1: ") and "9223372036854775807" in first, run.stdout
    assert first.split(": consistent with")[0] in TUTORIAL


HALF_AWAY_FROM_ZERO = """import math
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO

class HalfAwayFromZero(CanonicalS3FIFO):
    def small_cap_for(self, capacity, small_ratio):
        return math.floor(capacity * small_ratio + 0.5)
"""


def test_S3_CONF_2_rounding_half_away_from_zero(tmp_path: Path) -> None:
    (tmp_path / "halfaway.py").write_text(HALF_AWAY_FROM_ZERO, encoding="utf-8")
    run = kvspec("certify", "--adapter", "python:halfaway.py:HalfAwayFromZero", "--policy", "s3fifo", cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    first = run.stdout.splitlines()[2]
    assert first.startswith("    S3-CONF-2, S3-CONF-5: consistent with either; the configuration "), run.stdout
    assert "rounds to 0 (S3-CONF-2), and rounded the other way it gives both queues an entry" in first
    assert first.split(" must be refused")[0] in TUTORIAL


def test_PROTO_13_not_exiting_on_stop(tmp_path: Path) -> None:
    worker = "threading.Thread(target=lambda: time.sleep(3600)).start()  # not a daemon: the process outlives its main loop"
    adapter = mistaken(tmp_path, "nostop.py", "import json\nimport sys\n", f"import json\nimport sys\nimport threading\nimport time\n\n{worker}\n")
    run = kvspec("certify", "--adapter", adapter, cwd=tmp_path)
    assert run.returncode == 3 and "fifo: conforms" in run.stdout, run.stdout + run.stderr
    assert "PROTO-13: at its stop: " in run.stdout and "the process did not exit within 2 s of stop" in run.stdout
    assert "the process did not exit within 2 s of stop" in TUTORIAL
