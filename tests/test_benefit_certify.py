"""`kvspec certify --policy benefit`: the reference and an independent implementation conform,
and the quick profile catches every mutant of the benefit gallery, leading with the clause the
mutant breaks (conformance/galleries/benefit_mutants.py)."""

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from kvspec.adapters import Implementation, load_adapter
from kvspec.conformance.certification.benefit.machine import BenefitMachine, benefit_machine_for
from kvspec.conformance.certification.benefit.probes import probe_divergence
from kvspec.conformance.certification.benefit.strategies import ABOVE_SMALL_INTS, WIDE, WIDE_ALONE
from kvspec.conformance.certification.certify import certify_policy
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.conformance.certification.verdict.report import Report
from kvspec.conformance.core.workloads import KEY_NUMBERINGS
from kvspec.conformance.galleries.benefit_mutants import MUTANTS, CanonicalBenefit, Item, canonical
from kvspec.reference.benefit import BenefitConfig, CapRepair, CostSample, Decision

from support import certify_report


def test_the_reference_conforms_on_the_benefit_policy() -> None:
    outcome = certify_policy(load_adapter("reference"), "benefit")
    assert outcome.conforms, outcome.message


@pytest.mark.untyped
def test_the_independent_canonical_benefit_policy_conforms() -> None:
    outcome = certify_policy(canonical(), "benefit")
    assert outcome.conforms, outcome.message


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_quick_profile_catches_every_benefit_mutant_and_names_the_clause_it_breaks(name: str, tmp_path: Path) -> None:
    status, report = certify_report(f"in-process:kvspec.conformance.galleries.benefit_mutants:{name.replace('-', '_')}", "benefit", tmp_path)
    (verdict,) = report.policies
    assert status == 3 and not verdict.conforms, "the mutant conforms"
    leading = [failure.clauses[0] for failure in verdict.failures if failure.clauses]
    assert MUTANTS[name].breaks in leading, [failure.message for failure in verdict.failures]


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_each_benefit_mutant_says_which_clause_it_breaks(name: str) -> None:
    cls = MUTANTS[name]
    assert cls.name == name and cls.__doc__ is not None and f"breaks {cls.breaks}" in cls.__doc__


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KVSPEC_CONTRACTS": "1"})


def test_the_cli_certifies_the_benefit_policy_and_reports_its_own_clauses(tmp_path: Path) -> None:
    run = kvspec("certify", "--adapter", "in-process:kvspec.conformance.galleries.benefit_mutants:ghosts_lost", "--policy", "benefit", "--report", str(tmp_path))
    assert run.returncode == 3 and "benefit: DOES NOT CONFORM" in run.stdout and "BEN-GHOST-1" in run.stdout
    (verdict,) = Report.model_validate_json((tmp_path / "report.json").read_text()).policies
    assert verdict.policy == "benefit" and verdict.clauses["BEN-GHOST-1"] == "fail"
    assert all(clause.startswith("BEN-") for clause in verdict.clauses)
    failure = next(f for f in verdict.failures if f.clauses[0] == "BEN-GHOST-1")
    assert failure.trace_file is not None and (tmp_path / failure.trace_file).is_file()  # the operations, as a fixture case
    assert failure.replay_command is not None and failure.replay_command.startswith("kvspec fixtures verify ")
    replayed = kvspec(*shlex.split(failure.replay_command)[1:])
    assert replayed.returncode == 3 and "FAIL" in replayed.stdout and "ghosts" in replayed.stdout  # it reproduces, through the adapter
    assert kvspec("certify", "--adapter", "reference", "--policy", "benefit").returncode == 0


@pytest.mark.parametrize("name", ["canonical", "no-key-tiebreak"])
def test_certification_through_the_subprocess_protocol_gives_the_in_process_verdict(name: str, tmp_path: Path) -> None:
    """PROTO-17, PROTO-18: an in-process adapter served over the protocol (`python:...`, the default,
    as `cmd:python -m kvspec.adapters.serve python:...` serves it) is certified exactly as it is
    in-process: same verdict, same leading clause."""
    factory = f"kvspec.conformance.galleries.benefit_mutants:{name.replace('-', '_')}"
    verdicts = [certify_report(f"{kind}:{factory}", "benefit", tmp_path / kind)[1].policies[0] for kind in ("in-process", "python")]
    assert verdicts[0].conforms == verdicts[1].conforms == (name == "canonical")
    assert [f.clauses[:1] for f in verdicts[0].failures] == [f.clauses[:1] for f in verdicts[1].failures]
    assert [f.message for f in verdicts[0].failures] == [f.message for f in verdicts[1].failures]


# The draws that reach what the mutation score found unreached (docs/mutation-score.md): each rule
# below is run on its own, against an implementation with the mistake it must catch.


class ThresholdByIdentity(CanonicalBenefit):
    """Promotes when hits `is` the threshold: the same as == up to 256, never above."""

    def record_hit(self, key: int, cost: CostSample) -> Decision | None:
        threshold = self.config.persistence_hit_threshold
        self.config = replace(self.config, persistence_hit_threshold=10**9)  # no promotion by the canonical rule
        try:
            decision = super().record_hit(key, cost)
        finally:
            self.config = replace(self.config, persistence_hit_threshold=threshold)
        item = self.items.get(key)
        if item is not None and item.state == "probation" and item.hits is threshold:
            item.state = "admitted"
            return Decision("promote", "probation-second-hit")
        return decision


class GhostTableByIdentity(CanonicalBenefit):
    """Drops the oldest ghost only while their count `is` ghost_capacity: never above 256."""

    def remember(self, key: int, item: Item) -> None:
        if self.config.ghost_capacity == 0:
            return
        while len(self.ghosts) is self.config.ghost_capacity:
            del self.ghosts[min(self.ghosts, key=lambda k: (self.ghosts[k][3], k))]
        self.ghosts[key] = (item.hits, item.rw, item.ow, self.clock)


class GhostsByWeight(CanonicalBenefit):
    """Drops the ghost with the smallest observation weight, not the oldest (BEN-GHOST-2)."""

    def remember(self, key: int, item: Item) -> None:
        if self.config.ghost_capacity == 0:
            return
        while len(self.ghosts) >= self.config.ghost_capacity:
            del self.ghosts[min(self.ghosts, key=lambda k: (self.ghosts[k][2], k))]
        self.ghosts[key] = (item.hits, item.rw, item.ow, self.clock)


class EmptySegmentDroppedFirst(CanonicalBenefit):
    """Drops a segment from the ledger when it has no bytes, not when its last reference goes (BEN-LEDGER-2)."""

    def remove(self, key: int, pinned: frozenset[int]) -> CapRepair | None:
        item = self.items.get(key)
        empty = [s for s in item.segments if self.segments[s][0] == 0] if item is not None else []
        repair = super().remove(key, pinned)  # a segment of 0 bytes charges nothing: the repair is the same
        for s in empty:
            self.segments.pop(s, None)
        return repair


class DuplicateSegmentsMerged(CanonicalBenefit):
    """Merges a segment named twice in one offer instead of rejecting it (BEN-ADMIT-1)."""

    def consider_admission(self, key: int, exclusive_bytes: int, shared: list[tuple[int, int]], cost: CostSample,
                           pinned: frozenset[int]) -> Decision:
        return super().consider_admission(key, exclusive_bytes, list(dict.fromkeys(shared)), cost, pinned)


class GhostsExpireOneEarly(CanonicalBenefit):
    """Keeps only the ghosts younger than the age limit, not those at it (BEN-GHOST-4)."""

    def expire(self) -> None:
        oldest = max(self.clock - self.config.ghost_max_age_observations, 0)
        self.ghosts = {k: g for k, g in self.ghosts.items() if g[3] > oldest}


def machine(adapter: CanonicalBenefit, config: BenefitConfig) -> BenefitMachine:
    """A benefit machine configured with ``config`` (keys numbered 1, 2, ...), outside Hypothesis."""
    instance = benefit_machine_for(Implementation.of(adapter))()
    instance.number_keys(KEY_NUMBERINGS[0])
    instance.configure(config)
    assert instance.reference is not None, "the configuration is refused"
    return instance


@pytest.mark.parametrize(("rule", "config", "mistaken"), [
    (lambda m: m.hit_to_threshold(1), BenefitConfig(persistence_hit_threshold=ABOVE_SMALL_INTS), ThresholdByIdentity),
    (lambda m: m.fill_ghosts(), BenefitConfig(ghost_capacity=ABOVE_SMALL_INTS), GhostTableByIdentity),
    (lambda m: m.ghost_churn([1, 2, 3]), BenefitConfig(ghost_capacity=2), GhostsByWeight),
    (lambda m: m.ghost_churn([1, 2]), BenefitConfig(), EmptySegmentDroppedFirst),
])
def test_each_new_draw_catches_the_mistake_it_is_for_and_passes_the_canonical_policy(
        rule: Callable[[BenefitMachine], None], config: BenefitConfig, mistaken: type[CanonicalBenefit]) -> None:
    rule(machine(canonical(), config))
    with pytest.raises(Divergence):
        rule(machine(mistaken(), config))


@pytest.mark.parametrize("mistaken", [ThresholdByIdentity, GhostTableByIdentity, DuplicateSegmentsMerged, GhostsExpireOneEarly])
def test_the_probes_after_the_machine_catch_what_they_are_for(mistaken: type[CanonicalBenefit]) -> None:
    assert probe_divergence(Implementation.of(canonical())) is None
    assert isinstance(probe_divergence(Implementation.of(mistaken())), Divergence)


def test_the_probes_set_one_knob_at_a_time_to_each_whole_domain_value() -> None:
    """A bound misplaced on one knob shows only when the other knobs are valid (BEN-CONF-8)."""
    default = vars(BenefitConfig())
    changed = [[(k, repr(v)) for k, v in vars(config).items() if repr(v) != repr(default[k])] for config in WIDE_ALONE]
    assert all(len(knobs) == 1 for knobs in changed)
    assert sorted(knobs[0] for knobs in changed) == sorted((k, repr(v)) for k, values in WIDE.items() for v in values if repr(v) != repr(default[k]))


# The second stays typed: the only typed run of the benefit diagnosis of a results-level divergence.
@pytest.mark.parametrize("name", [pytest.param("reject-advances-clock", marks=pytest.mark.untyped), "invalid-hit-counted"])
def test_the_mutants_of_findings_F15_and_F16_are_caught_at_the_results_level(name: str) -> None:
    """A rejection that moves the clock (F-15) and a hit with an invalid sample that counts (F-16,
    BEN-HIT-3) show in decisions and victims, without the state: the verdict leads with the clause."""
    mutant = MUTANTS[name]()
    mutant.level = "results"
    (finding, *_) = certify_policy(mutant, "benefit").findings
    assert finding.divergence is not None and finding.divergence.clauses[0] == MUTANTS[name].breaks, finding.message
