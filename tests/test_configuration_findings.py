"""Configuration findings (docs/certification.md, "Configuration findings"): a configuration the
implementation and the spec disagree on, or one it hangs at, is reported once for each kind, and
the certification goes on with the configurations both accept, so that every clause of the
behaviour is decided; the dialect search never waits a fault out (DIALECT-8). Each certification
runs as `kvspec certify --report`, as a user runs it (tests/support.py certify_report says why)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dialect_model import ModelAdapter

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure
from kvspec.conformance.certification.block.dialect_search import find_dialect
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.block.machine import wide_knobs
from kvspec.conformance.certification.certify import nondeterministic
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Knobs, Outcome
from kvspec.conformance.certification.findings.faults import Fault, Location
from kvspec.conformance.certification.verdict.report import PolicyVerdict, Report
from kvspec.reference.dialects import CANONICAL

HANDMADE = Path(__file__).resolve().parent / "handmade" / "configuration_mistakes.py"


def certified(tmp_path: Path, mistake: str, policy: str, *args: str) -> tuple[str, PolicyVerdict]:
    """`kvspec certify` of one of tests/handmade/configuration_mistakes.py, its deadline 0.3 s: the console and the policy's verdict."""
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", f"in-process:{HANDMADE}:{mistake}",
                          "--policy", policy, "--reply-timeout", "0.3", "--report", str(tmp_path / "report"), *args],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "0", "KVSPEC_HANGS": str(tmp_path / "hangs")})
    assert run.returncode == 3, run.stdout + run.stderr
    (verdict,) = Report.model_validate_json((tmp_path / "report" / "report.json").read_text()).policies
    return run.stdout, verdict


def hangs(tmp_path: Path) -> list[Knobs]:
    """The whole-domain knob values of each configuration the implementation hung at, in order."""
    lines = (tmp_path / "hangs").read_text().splitlines() if (tmp_path / "hangs").exists() else []
    return [wide_knobs(AdapterConfig(**json.loads(line))) for line in lines]


def waited_out_once_each(hung: list[Knobs]) -> bool:
    """No hang at knob values that include those of an earlier one: those are never offered again."""
    return bool(hung) and not any(set(earlier) <= set(later) for n, later in enumerate(hung) for earlier in hung[:n])


def test_a_configuration_finding_leaves_every_clause_of_the_behaviour_decided(tmp_path: Path) -> None:
    """An LRU that accepts capacity 0 (REPLAY-CONF-1 refuses it), as cachetools does, and is
    otherwise right: one finding, REPLAY-CONF-1 fails, every other clause passes, and its
    behaviour conforms on the configurations both accept; a variation point explains it."""
    stdout, verdict = certified(tmp_path, "accepts_capacity_0", "lru")
    assert not verdict.conforms and verdict.behaviour == "conforms" and [f.configuration for f in verdict.failures] == [True]
    assert verdict.failures[0].message.startswith('REPLAY-CONF-1: the configuration {"policy": "lru", "capacity": 0, "block_size": 1, ')
    clauses = dict(verdict.clauses)
    assert clauses.pop("REPLAY-CONF-1") == "fail" and set(clauses.values()) == {"pass"}
    assert "lru: DOES NOT CONFORM: 1 configuration finding; the behaviour, on the configurations both accept, conforms" in stdout
    assert "(--find-dialect searches" in stdout  # capacity-0-empty (REPLAY-DIALECT-1) accepts it


def test_a_behaviour_found_after_a_configuration_finding_is_reported_beside_it(tmp_path: Path) -> None:
    """Capacities above 2^32 - 1 refused, and LRU run where S3FIFO is asked for: the configuration
    finding (in the protocol's JSON, naming the knob) and the behaviour's (S3-ACCESS-4), both;
    the next steps name --max-capacity, and --find-dialect for the behaviour."""
    stdout, verdict = certified(tmp_path, "refuses_32_bit_capacities_and_is_lru", "s3fifo")
    parts = {f.configuration: f for f in verdict.failures}
    assert parts[True].clauses == ["REPLAY-CONF-1"] and parts[False].clauses[0] == "S3-ACCESS-4", stdout
    assert "AdapterConfig(" not in stdout and "and refuses it with capacity 9223372036854775807 alone" in parts[True].message
    assert verdict.behaviour == "does not conform" and verdict.clauses["S3-ACCESS-4"] == "fail"
    assert "--max-capacity N certifies it with at most N blocks" in stdout and "(--find-dialect searches" in stdout


def test_the_next_steps_leave_out_the_dialect_search_where_no_variation_point_explains(tmp_path: Path) -> None:
    stdout, verdict = certified(tmp_path, "refuses_32_bit_capacities", "lru")
    assert verdict.behaviour == "conforms" and "--max-capacity N" in stdout and "--find-dialect" not in stdout


def test_a_hang_at_configure_is_reported_once_for_its_knob_values_and_not_waited_out_again(tmp_path: Path) -> None:
    """PROTO-15 at capacity 2^63 - 1, as pylru's whole list: one finding for those knob values,
    which no later example or probe offers again; the behaviour is still certified, and the next
    steps name --max-capacity, never --find-dialect."""
    stdout, verdict = certified(tmp_path, "hangs_at_large_capacities", "lru")
    assert [f.clauses for f in verdict.failures] == [["PROTO-15"]] * len(verdict.failures) and verdict.failures[0].configuration
    assert waited_out_once_each(hangs(tmp_path)), hangs(tmp_path)
    assert '"capacity": 9223372036854775807' in verdict.failures[0].message and verdict.behaviour == "conforms"
    assert "--max-capacity N" in stdout and "--find-dialect" not in stdout
    # it neither accepted nor refused capacity 2^63 - 1: the clause that decides it is not shown kept
    assert verdict.clauses["REPLAY-CONF-1"] == "inconclusive" and verdict.clauses["REPLAY-CONF-2"] == "pass"


def test_a_failure_at_configure_that_no_whole_domain_knob_explains_is_a_fault_not_a_configuration_finding(tmp_path: Path) -> None:
    """It crashes at block_size 16 with the other knobs usual too: one plain fault (PROTO-29),
    shrunk, and no configuration left out, whatever knob the configuration it first met it at took."""
    stdout, verdict = certified(tmp_path, "crashes_at_block_size_16", "lru", "--seed", "3")
    assert verdict.failures and not any(f.configuration for f in verdict.failures), stdout
    assert verdict.failures[0].clauses == ["PROTO-29"] and '"block_size": 16' in verdict.failures[0].message
    assert verdict.behaviour == "does not conform" and "--max-capacity" not in stdout


def test_an_implementation_that_refuses_every_configuration_has_its_behaviour_not_certified(tmp_path: Path) -> None:
    stdout, verdict = certified(tmp_path, "refuses_everything", "fifo")
    assert verdict.behaviour == "not certified" and all(f.configuration for f in verdict.failures)
    assert verdict.clauses["FIFO-EVICT-1"] == "inconclusive" and "was not certified (no configuration was accepted by both)" in stdout
    assert "--max-capacity" not in stdout  # a refusal of everything is not one of capacity


def test_the_dialect_search_of_faults_alone_ends_at_once(tmp_path: Path) -> None:
    """DIALECT-8: no variation point explains a hang: no certification is run to look for one."""
    stdout, verdict = certified(tmp_path, "hangs_at_large_capacities", "lru", "--find-dialect")
    assert verdict.found is not None and verdict.found.dialect is None and verdict.found.certifications == 0
    assert "The dialect search did not run: its only findings are faults" in stdout and waited_out_once_each(hangs(tmp_path))


def test_the_dialect_search_never_waits_a_fault_out_and_records_its_evidence(tmp_path: Path) -> None:
    """An S3FIFO that floors small_cap (small-cap-floor) and hangs at large capacities: the search
    finds the dialect, waits out each hang's knob values once in all its certifications, and the
    report holds the evidence, every candidate's points on it, and the hangs it set aside."""
    stdout, verdict = certified(tmp_path, "hangs_at_large_capacities_floors_small_cap", "s3fifo", "--find-dialect")
    found = verdict.found
    assert found is not None and found.dialect == ["small-cap-floor"], stdout
    assert waited_out_once_each(hangs(tmp_path)), hangs(tmp_path)  # in the search's certifications too
    assert found.unexplained and all("PROTO-15" in u for u in found.unexplained)
    assert len(found.evidence) == found.failing_examples > 0 and all(e.clauses and e.config for e in found.evidence)
    first = found.steps[0]
    assert first.dialect == [] and first.chosen == ["small-cap-floor"] and first.conforms
    assert all(len(c.points) == found.failing_examples for c in first.candidates)
    assert max(first.candidates, key=lambda c: sum(c.points)).dialect == first.chosen
    assert "but for" in stdout and "Dialect found: small-cap-floor" in stdout


# The dialect search's own rules, with certifications made up for it (DIALECT-8) ----------------------

PROMOTES_AT_2 = frozenset({"promote-at-2"})


def promoting_at_2() -> tuple[Implementation, Divergence]:
    """A model of S3FIFO that promotes at the second hit (promote-at-2), and the example the
    canonical spec fails it on: one block, hit once, then pushed out of an S of one block, into M
    canonically (S3-ADMIT-S-2) and into G under promote-at-2."""
    implementation = Implementation.in_process(lambda: ModelAdapter(PROMOTES_AT_2))
    lockstep = Lockstep(implementation.current(), AdapterConfig("s3fifo", 10, 1, 0.1, 3))
    lockstep.configure()
    with pytest.raises(Divergence) as example:
        for request in ([1], [1], [2]):
            lockstep.request(request, 1)
    return implementation, example.value


def outcome(dialect: frozenset[str], *findings: Finding) -> Outcome:
    return Outcome("s3fifo", 1.0, findings, dialect, examples=100, accepted=100)


def hang_at(divergence: Divergence) -> Finding:
    """A hang at a request, which cuts a certification short (PROTO-15)."""
    fault = Fault(AdapterFailure("hit_tokens: no reply within 10 s (hung?)", "PROTO-15", True),
                  Location("request 2", 2, divergence.config, divergence.trace[:2]))
    return Finding(str(fault), "", fault)


def test_DIALECT_8_a_certification_a_fault_cuts_short_is_no_dialect_found() -> None:
    """The certification against the candidate ends at a hang: it says nothing of the rest, and
    the search stops there, with its reason, where it once took the candidate for the dialect."""
    implementation, example = promoting_at_2()
    failed = outcome(CANONICAL, Finding(str(example), "", example))
    search = find_dialect(implementation, "s3fifo", failed, lambda dialect, skipped: outcome(dialect, hang_at(example)))
    assert search.dialect is None and "a fault cut its certification short (PROTO-15)" in search.reason, search.reason
    assert search.steps[-1].chosen == PROMOTES_AT_2 and search.steps[-1].conforms is False


def test_DIALECT_8_a_dialect_is_found_only_where_every_example_of_the_evidence_replays_alike() -> None:
    """Every certification comes back clean, the canonical spec's too: the search takes
    promote-at-2, which the example replays alike against, and does not leave it out at the end,
    since the example fails against the canonical spec."""
    implementation, example = promoting_at_2()
    failed = outcome(CANONICAL, Finding(str(example), "", example))
    search = find_dialect(implementation, "s3fifo", failed, lambda dialect, skipped: outcome(dialect))
    assert search.dialect == PROMOTES_AT_2 and search.trials == ((CANONICAL, False),)


def test_PROTO_7_the_example_an_implementation_that_is_not_deterministic_failed_keeps_its_values() -> None:
    """Its expected and actual values are the example's, as the protocol's JSON, not that JSON written again."""
    first = Divergence(["REPLAY-HIT-1"], "request 1: ...", request=1, expected=0, actual=1, config=AdapterConfig("lru", 6, 1, 0.1, 3),
                       trace=[([1], 1)])
    again = nondeterministic(first, []).divergence
    assert again is not None and (again.expected, again.actual) == ("0", "1") and again.clauses[0] == "PROTO-7"
