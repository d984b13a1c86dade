"""The tutorial of spec/adapter-protocol.md: its program (examples/tutorial-fifo/fifo.py) answers
the session it shows exactly as shown and conforms; each mistake it shows, made again, is still
named by the clause it shows."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from test_shown_outputs import matches

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
    assert verified.returncode == 0 and re.search(r": conforms: \d+ cases in .+, \d+ pass, \d+ skip$", verified.stdout.strip()), verified.stdout


def mistaken(tmp_path: Path, name: str, before: str, after: str, times: int = 1) -> None:
    """fifo.py with one mistake made, as ``name``: each ``before`` (there are ``times``) replaced by ``after``."""
    text = PROGRAM.read_text(encoding="utf-8")
    assert text.count(before) == times, before
    (tmp_path / name).write_text(text.replace(before, after), encoding="utf-8")


def printed_as_the_tutorial_shows(name: str, tmp_path: Path) -> None:
    """Run the tutorial's `$ kvspec certify` line for ``name`` and compare what it prints with all the
    tutorial shows under it (a `…` line stands for the lines it leaves out; times and rates are masked)."""
    (block,) = re.findall(rf"^\$ (kvspec certify [^\n]*{re.escape(name)}[^\n]*)\n((?:(?!```).*\n)+)", TUTORIAL, flags=re.MULTILINE)
    command, expected = block
    arguments = [word.replace("cmd:python3 ", f"cmd:{sys.executable} ") for word in shlex.split(command)[1:]]
    run = kvspec(*arguments, cwd=tmp_path)
    assert run.returncode == 3, run.stdout + run.stderr
    shown = [("..." if line == "…" else line) for line in expected.removesuffix("\n").replace("    …", "…").splitlines()]
    printed = run.stdout.replace(sys.executable, "python3").rstrip("\n").splitlines()
    assert matches(tuple(shown), printed), "\n".join(printed)


def test_PROTO_15_no_flush_after_a_reply(tmp_path: Path) -> None:
    mistaken(tmp_path, "noflush.py", "**fields}), flush=True)", "**fields}))")
    printed_as_the_tutorial_shows("noflush.py", tmp_path)


def test_FIFO_CAP_1_ids_read_as_doubles(tmp_path: Path) -> None:
    mistaken(tmp_path, "doubles.py", 'for hash_id in request["hash_ids"]:', 'for hash_id in map(float, request["hash_ids"]):', 2)
    printed_as_the_tutorial_shows("doubles.py", tmp_path)


HALF_AWAY_FROM_ZERO = """import math
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO

class HalfAwayFromZero(CanonicalS3FIFO):
    def small_cap_for(self, capacity, small_ratio):
        return math.floor(capacity * small_ratio + 0.5)
"""


def test_S3_CONF_2_rounding_half_away_from_zero(tmp_path: Path) -> None:
    (tmp_path / "halfaway.py").write_text(HALF_AWAY_FROM_ZERO, encoding="utf-8")
    printed_as_the_tutorial_shows("halfaway.py", tmp_path)


def test_PROTO_13_not_exiting_on_stop(tmp_path: Path) -> None:
    worker = "threading.Thread(target=lambda: time.sleep(3600)).start()  # not a daemon: the process outlives its main loop"
    mistaken(tmp_path, "nostop.py", "import json\nimport sys\n", f"import json\nimport sys\nimport threading\nimport time\n\n{worker}\n")
    printed_as_the_tutorial_shows("nostop.py", tmp_path)
