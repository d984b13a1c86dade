"""examples/fixtures-runner-node: a fixture runner written in Node.js from spec/fixtures.md and the
documents it names alone, with no code of kvspec's (issue 29). If the documents are enough, it
recomputes every id of the corpus (FIX-3, FIX-14), passes every case against the reference served
over the protocol (PROTO-17), fails a mutant, and refuses a damaged corpus whole (FIX-15).

The reference is served with its contracts off (KVSPEC_CONTRACTS=0, which the suite's conftest
would set to `all` for the child): what is measured here is the runner and the documents, and the
contracts make the 66,000 round trips of the corpus many times slower. Cost: about 5 s for the
whole corpus, 1 to 2 s for each mutant (one policy's cases), under 1 s for each damaged corpus.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE = shutil.which("node")
ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "examples" / "fixtures-runner-node" / "runner.js"
CORPUS = ROOT / "spec" / "fixtures"
SERVE = [sys.executable, "-m", "kvspec.adapters.serve"]
SUMMARY = re.compile(r"(\d+) ids? recomputed of the manifest's (\d+)")

pytestmark = pytest.mark.skipif(NODE is None, reason="`node` (Node.js) is not on PATH; the runner cannot run")


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    env = {**os.environ, "KVSPEC_CONTRACTS": "0"}
    return subprocess.run([NODE, str(RUNNER), *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def manifest(corpus: Path = CORPUS) -> dict:
    return json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))


def verdicts(stdout: str) -> dict[str, str]:
    """Each case's verdict, from the runner's lines `<verdict> <id>...`."""
    out = {}
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in {"pass", "fail", "skip", "not-run", "known-failure", "unexpected-pass"}:
            out[rest.split()[0].rstrip(":")] = word
    return out


def test_FIX_14_every_id_is_recomputed_and_the_reference_passes_every_case() -> None:
    result = run("--", *SERVE)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ids = [case["id"] for case in manifest()["cases"]]
    assert verdicts(result.stdout) == {i: "skip" if i.startswith("lifecycle-") else "pass" for i in ids}  # this runner sends no lifecycle message (FIX-18)
    recomputed, listed = map(int, SUMMARY.search(result.stdout).groups())
    assert recomputed == listed == len(ids)


def fails_its_counterexample(gallery: str, mutant: str, policy: str, counterexample: str) -> None:
    """The mutant, run on its policy's cases, fails the case the corpus holds of the counterexample a
    certification shrank for it, and no case breaks the protocol."""
    result = run("--policy", policy, "--", *SERVE, f"python:kvspec.conformance.galleries.{gallery}:{mutant}")
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    got = verdicts(result.stdout)
    (case,) = [c["id"] for c in manifest()["cases"] if c["id"].startswith(counterexample)]
    assert got[case] == "fail"
    assert set(got.values()) <= {"pass", "fail"}
    assert "PROTO-" not in result.stdout


def test_S3_ADMIT_S_2_a_promotion_that_resets_the_freq_fails() -> None:
    fails_its_counterexample("mutants", "freq_reset_on_promotion", "s3fifo", "replay-s3fifo-counterexample-freq-reset-on-promotion-")


def test_BEN_ADMIT_2_a_rejection_that_advances_the_clock_fails() -> None:
    fails_its_counterexample("benefit_mutants", "reject_advances_clock", "benefit", "benefit-counterexample-reject-advances-clock-")


def damage_a_byte(corpus: Path) -> str:
    entry = manifest(corpus)["cases"][100]
    path = corpus / entry["path"]
    data = bytearray(path.read_bytes())
    data[data.index(b'"level": "') + 10] ^= 0x20  # "results" becomes "Results", "state" "State"
    path.write_bytes(bytes(data))
    return f"{entry['path']}: FIX-2: sha256"


def damage_an_id(corpus: Path) -> str:
    """A case renamed with another digest, its file and manifest entry consistent (FIX-3)."""
    m = manifest(corpus)
    entry = m["cases"][200]
    case = json.loads((corpus / entry["path"]).read_text(encoding="utf-8"))
    (corpus / entry["path"]).unlink()
    case["id"] = entry["id"] = case["id"][:-8] + "00000000"
    entry["path"] = f"{entry['kind']}/{case['id']}.json"
    text = json.dumps(case, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    (corpus / entry["path"]).write_text(text, encoding="utf-8")
    entry["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    m["cases"].sort(key=lambda e: e["path"])
    (corpus / "manifest.json").write_text(json.dumps(m, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return f"{entry['path']}: FIX-3: its id is not its own"


def unsort_the_manifest(corpus: Path) -> str:
    m = manifest(corpus)
    m["cases"][3], m["cases"][4] = m["cases"][4], m["cases"][3]
    (corpus / "manifest.json").write_text(json.dumps(m, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return "manifest.json: FIX-2: cases are not sorted by path"


@pytest.mark.parametrize("damage", [damage_a_byte, damage_an_id, unsort_the_manifest], ids=lambda d: d.__name__)
def test_FIX_15_a_damaged_corpus_is_refused_whole(tmp_path: Path, damage) -> None:
    corpus = tmp_path / "fixtures"
    shutil.copytree(CORPUS, corpus)
    expected = damage(corpus)
    result = run(corpus, "--", *SERVE)
    assert result.returncode == 1
    assert result.stdout == ""  # no verdict on any case
    (line,) = result.stderr.splitlines()
    assert expected in line
