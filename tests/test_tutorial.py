"""The tutorial of spec/adapter-protocol.md: its programs (examples/tutorial-fifo/fifo.py, and
fifo_in_flight.py for requests in flight) answer the sessions it shows exactly as shown and
conform; each mistake it shows, made again, is still named by the clause it shows."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_shown_outputs import matches

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "examples" / "tutorial-fifo" / "fifo.py"
IN_FLIGHT = ROOT / "examples" / "tutorial-fifo" / "fifo_in_flight.py"
TUTORIAL = (ROOT / "spec" / "adapter-protocol.md").read_text(encoding="utf-8").split("## Tutorial: ", 1)[1]
STEPS = dict(re.findall(r"^### (\d+)\. .*\n((?:(?!### ).*\n)*)", TUTORIAL, flags=re.MULTILINE))


def kvspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}  # as on a user's machine
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=300,
                          env=environment, cwd=cwd)


def session_of(step: str) -> tuple[list[str], list[dict[str, object]]]:
    """The requests (→) and the replies (←) the tutorial's step shows."""
    session = re.findall(r"^([→←]) (.+)$", STEPS[step], flags=re.MULTILINE)
    return [line for arrow, line in session if arrow == "→"], [json.loads(line) for arrow, line in session if arrow == "←"]


def answers(command: list[str], requests: list[str]) -> list[dict[str, object]]:
    run = subprocess.run(command, input="\n".join(requests) + "\n", capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def test_the_program_answers_the_session_exactly_as_the_tutorial_shows() -> None:
    requests, replies = session_of("1")
    assert [json.loads(line)["cmd"] for line in requests] == ["start", "configure", "hit_tokens", "access", "resident_count", "stop"]
    assert answers([sys.executable, str(PROGRAM)], requests) == replies


def test_PROTO_35_to_PROTO_43_the_in_flight_program_answers_its_session_exactly_as_the_tutorial_shows() -> None:
    """Step 4's session, two requests sharing a prefix in a pool of 3 slots: a lookup that finds blocks
    not yet computed (LIFE-LOOKUP-1), a decode's held block (LIFE-DECODE-1), an allocation refused
    (LIFE-ALLOC-4) and then made, whose hits alone are counted (LIFE-HIT-1). The replies shown are the
    reference harness's too (PROTO-17), but its start reply, which names the reference."""
    requests, replies = session_of("4")
    assert [json.loads(line)["cmd"] for line in requests] == [
        "start", "configure", "arrive", "allocate", "arrive", "lookup", "compute", "lookup", "decode", "allocate", "finish",
        "allocate", "compute", "finish", "stop"]
    assert replies[0]["lifecycle"] is True and {"made": False} in [{"made": r["made"]} for r in replies if "made" in r]
    assert answers([sys.executable, str(IN_FLIGHT)], requests) == replies
    assert answers([sys.executable, "-m", "kvspec.adapters.serve"], requests)[1:] == replies[1:]


def test_the_program_conforms_and_passes_the_fixtures(tmp_path: Path) -> None:
    adapter = f"cmd:{sys.executable} {PROGRAM}"
    certified = kvspec("certify", "--adapter", adapter, cwd=tmp_path)
    assert certified.returncode == 0, certified.stdout + certified.stderr
    assert certified.stdout.startswith("tutorial-fifo 1 (python): conforms") and "fifo: conforms" in certified.stdout
    verified = kvspec("fixtures", "verify", "--adapter", adapter, cwd=tmp_path)
    assert verified.returncode == 0 and re.search(r": conforms: \d+ cases in .+, \d+ pass, \d+ skip$", verified.stdout.strip()), verified.stdout


def test_PROTO_35_the_in_flight_program_conforms_at_both_machines_and_passes_the_fifo_fixtures(tmp_path: Path) -> None:
    """The certification step 4 shows (both machines: "fifo" and "fifo, requests in flight"), and every fifo
    case of the corpus, its lifecycle cases included (FIX-18), passes."""
    (tmp_path / "examples" / "tutorial-fifo").mkdir(parents=True)
    shutil.copy(IN_FLIGHT, tmp_path / "examples" / "tutorial-fifo")
    printed = printed_as_the_tutorial_shows("fifo_in_flight.py", tmp_path, status=0)
    assert printed[0].startswith("tutorial-fifo-in-flight 1 (python): conforms")
    assert [line.split(" (")[0] for line in printed[1:]] == ["  fifo: conforms", "  fifo, requests in flight: conforms"]
    verified = kvspec("fixtures", "verify", "--adapter", f"cmd:{sys.executable} {IN_FLIGHT}", "--policy", "fifo", "--output", "cases.json",
                      cwd=tmp_path)
    cases = json.loads((tmp_path / "cases.json").read_text(encoding="utf-8"))
    assert verified.returncode == 0 and {case["verdict"] for case in cases} == {"pass"}, verified.stdout
    assert {case["policy"] for case in cases} == {"fifo"} and any(case["id"].startswith("lifecycle-") for case in cases)


def mistaken(tmp_path: Path, name: str, before: str, after: str, times: int = 1, program: Path = PROGRAM) -> None:
    """``program`` (fifo.py) with one mistake made, as ``name``: each ``before`` (there are ``times``) replaced by ``after``."""
    text = program.read_text(encoding="utf-8")
    assert text.count(before) == times, before
    (tmp_path / name).write_text(text.replace(before, after), encoding="utf-8")


def printed_as_the_tutorial_shows(name: str, tmp_path: Path, status: int = 3) -> list[str]:
    """Run the tutorial's `$ kvspec certify` line for ``name`` and compare what it prints with all the
    tutorial shows under it (a `…` line stands for the lines it leaves out; times and rates are masked);
    the lines printed."""
    (block,) = re.findall(rf"^\$ (kvspec certify [^\n]*{re.escape(name)}[^\n]*)\n((?:(?!```).*\n)+)", TUTORIAL, flags=re.MULTILINE)
    command, expected = block
    arguments = [word.replace("cmd:python3 ", f"cmd:{sys.executable} ") for word in shlex.split(command)[1:]]
    run = kvspec(*arguments, cwd=tmp_path)
    assert run.returncode == status, run.stdout + run.stderr
    shown = [("..." if line == "…" else line) for line in expected.removesuffix("\n").replace("    …", "…").splitlines()]
    printed = run.stdout.replace(sys.executable, "python3").rstrip("\n").splitlines()
    assert matches(tuple(shown), printed), "\n".join(printed)
    return printed


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


def test_LIFE_LOOKUP_1_a_block_hit_before_it_is_computed(tmp_path: Path) -> None:
    """fifo_in_flight.py's lookup asking only whether a block is resident, as fifo.py's scan does
    (vllm-project/vllm #37152): the lifecycle machine alone catches it, and the case it writes replays it."""
    mistaken(tmp_path, "uncomputed.py", " and hash_ids[k] not in pending:", ":", program=IN_FLIGHT)
    printed = printed_as_the_tutorial_shows("uncomputed.py", tmp_path)
    replay = shlex.split(printed[-1].split(": ", 1)[1].replace("cmd:python3 ", f"cmd:{sys.executable} "))
    replayed = kvspec(*replay[1:], cwd=tmp_path)
    assert replayed.returncode == 3 and "(LIFE-LOOKUP-1)" in replayed.stdout and 'expected {"k": 0}' in replayed.stdout, replayed.stdout


OTHER_MISTAKES = {  # step 4's other mistakes: (what is replaced, by what, a clause the finding names)
    "hits counted before the fit": ("    if not fits(request):\n        return False  # the request goes on waiting; nothing changes, "
                                    "and no hit is counted (LIFE-HIT-1)\n    count_hits(request, k)\n",
                                    "    count_hits(request, k)\n    if not fits(request):\n        return False\n", "LIFE-HIT-1"),
    "made evictable by one of its sharers": ("        refs[h] -= 1\n        if not refs[h]:\n            del refs[h]\n",
                                             "        refs.pop(h, None)\n", "LIFE-POOL-2"),
    "the head goes first": ("next((h for h in arrival if h not in refs), None)", "next(iter(arrival), None)", "LIFE-EVICT-1"),
}


@pytest.mark.parametrize("mistake", OTHER_MISTAKES)
def test_LIFE_HIT_1_LIFE_POOL_2_LIFE_EVICT_1_the_other_mistakes_step_4_names_are_found_by_the_machine_in_flight(mistake: str,
                                                                                                           tmp_path: Path) -> None:
    before, after, clause = OTHER_MISTAKES[mistake]
    mistaken(tmp_path, "mistaken.py", before, after, program=IN_FLIGHT)
    run = kvspec("certify", "--adapter", f"cmd:{sys.executable} mistaken.py", cwd=tmp_path)
    lines = run.stdout.splitlines()
    assert run.returncode == 3 and "  fifo: conforms" in run.stdout, run.stdout
    finding = lines[lines.index(next(line for line in lines if line.startswith("  fifo, requests in flight: DOES NOT CONFORM"))) + 1]
    assert clause in finding.split(":")[0].strip().split(", "), finding
