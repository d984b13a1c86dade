"""The indexed benefit policy (conformance/measurement/indexed_benefit.py) held to the reference as
kvspec holds any implementation: certified at the thorough profile (at more seeds by KVSPEC_THOROUGH_SEEDS), every benefit
fixture passed, the comparison and prefix fixtures reproduced, the bundled traces replayed alike;
its probation charge's rounding bound holds, and the literal charge is computed where the bound
cannot decide; and the certification catches a gallery of wrong indexes, naming the clause each
breaks (docs/indexed-benefit.md)."""

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest

from kvspec.conformance.certification.verdict.report import Report
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitAdapter, IndexedBenefitPolicy
from kvspec.conformance.measurement.indexed_charge import SCALE, ceiling, charge_bounds
from kvspec.reference.benefit import BenefitConfig, BenefitPolicy, CapRepair, CostSample
from kvspec.reference.benefit.ledger import fractional_bytes
from kvspec.reference.benefit.selection import probation_charge
from kvspec.reference.benefit.traces import TRACES, XorShift64

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "spec" / "fixtures"
INDEXED = "in-process:kvspec.conformance.measurement.indexed_benefit:IndexedBenefitAdapter"
COST = CostSample(100.0, 30.0)


def certify(adapter: str, profile: str, seed: int, directory: Path) -> tuple[int, Report]:
    """`kvspec certify --policy benefit` in a process of its own, the reference's contracts off (as
    tests/support.py certify_report): the exit status and the report."""
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "certify", "--adapter", adapter, "--policy", "benefit",
                          "--profile", profile, "--seed", str(seed), "--report", str(directory)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    assert run.returncode in (0, 3), run.stderr
    return run.returncode, Report.model_validate_json((directory / "report.json").read_text())


THOROUGH_SEEDS = range(int(os.environ.get("KVSPEC_THOROUGH_SEEDS", "1")))  # CI certifies seed 0 (75 s); docs/development.md


@pytest.mark.parametrize("seed", THOROUGH_SEEDS)
def test_the_indexed_policy_conforms_at_the_thorough_profile(seed: int, tmp_path: Path) -> None:
    status, report = certify(INDEXED, "thorough", seed, tmp_path)
    (verdict,) = report.policies
    assert status == 0 and verdict.conforms, [failure.message for failure in verdict.failures]


def in_a_process(code: str, *args: str) -> list[str]:
    """``code`` run by a Python of its own with the reference's O(1) contracts, without typeguard's
    checks of every kvspec call (which make these replays ten times slower): its lines of output."""
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "KVSPEC_CONTRACTS": "1"})
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_indexed_policy_passes_every_benefit_fixture() -> None:
    run = subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", "fixtures", "verify", "--adapter", INDEXED, "--policy", "benefit",
                          str(CORPUS)], capture_output=True, text=True, timeout=600, env={**os.environ, "KVSPEC_CONTRACTS": "0"})
    cases = len(list(CORPUS.glob("benefit/*.json")))
    assert run.returncode == 0 and f"conforms: {cases} cases of benefit in {CORPUS}, {cases} pass" in run.stdout, run.stdout + run.stderr


COMPARISON = """
import json, sys
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
from kvspec.reference.benefit import BenefitConfig
from kvspec.reference.benefit.compare import replay_policy
from kvspec.reference.benefit.traces import TRACES
for case in map(json.loads, sys.argv[1:]):
    make, _ = TRACES[case["trace"]]
    print(replay_policy(make(), case["capacity_bytes"], BenefitConfig(), IndexedBenefitPolicy).model_dump_json())
"""


def test_the_indexed_policy_reproduces_the_comparison_fixtures() -> None:
    """FIX-9's cases, the benefit side replayed through the indexed policy (BEN-CMP-2)."""
    cases = [json.loads(path.read_text()) for path in sorted(CORPUS.glob("comparison/*.json"))]
    assert sorted(case["trace"] for case in cases) == sorted(TRACES)
    sides = in_a_process(COMPARISON, *(json.dumps({"trace": c["trace"], "capacity_bytes": c["capacity_bytes"]}) for c in cases))
    assert [json.loads(side) for side in sides] == [case["expect"]["policy"] for case in cases]


PREFIX = """
import json, sys
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
from kvspec.reference.benefit.model import Model
from kvspec.reference.benefit.prefix import replay_benefit
from kvspec.reference.trace import TraceRecord
for path in sys.argv[1:]:
    case = json.load(open(path))
    records = [(n, TraceRecord(timestamp=0, input_length=r["input_length"], output_length=0, hash_ids=r["hash_ids"]))
               for n, r in enumerate(case["requests"], start=1)]
    side = replay_benefit(records, case["capacity_bytes"], case["block_size"], Model(**case["model"]), policy_class=IndexedBenefitPolicy)
    print(side.model_dump_json())
"""


def test_the_indexed_policy_reproduces_the_prefix_fixtures() -> None:
    """FIX-10's cases, the benefit side replayed through the indexed policy (BEN-PREFIX-1 to BEN-PREFIX-7)."""
    paths = sorted(CORPUS.glob("prefix/*.json"))
    assert len(paths) == 2
    sides = in_a_process(PREFIX, *map(str, paths))
    assert [json.loads(side) for side in sides] == [json.loads(path.read_text())["expect"][0] for path in paths]


LOCKSTEP = """
import sys
from kvspec.conformance.measurement.indexed_benefit import IndexedBenefitPolicy
from kvspec.reference import TraceFile, bundled_trace_path
from kvspec.reference.benefit import BenefitPolicy
from kvspec.reference.benefit.prefix import replay_benefit
records = list(TraceFile(bundled_trace_path(sys.argv[1])).records())
for policy_class in (IndexedBenefitPolicy, BenefitPolicy):
    print(replay_benefit(records, 4 << 30, policy_class=policy_class).model_dump_json())
"""


@pytest.mark.parametrize("trace", ["conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz"])
def test_the_bundled_traces_replay_alike_through_both_policies(trace: str) -> None:
    """The whole trace at 4 GiB (64 blocks: the cap and victim selection at work on every request)."""
    indexed, reference = in_a_process(LOCKSTEP, trace)
    assert indexed == reference
    assert json.loads(indexed)["hit_tokens"] > 0


# The probation charge (indexed_charge.py) ----------------------------------------------------------


def literal_sum(policy: BenefitPolicy) -> float:
    """BEN-LEDGER-5's sum before its ceiling, as reference/benefit/selection.py probation_charge adds it."""
    total = 0.0
    for key in sorted(policy.entries):
        entry = policy.entries[key]
        if entry.state == "probation":
            total += float(entry.exclusive_bytes) + fractional_bytes(policy.ledger, key, entry.segments)
    return total


def rounding_states(count: int) -> list[IndexedBenefitPolicy]:
    """Seeded states whose sums round: entries of up to 40 segments of odd sizes, shared by a few
    entries each, some promoted and some removed."""
    rng = XorShift64(17)
    states = []
    for _ in range(count):
        policy = IndexedBenefitPolicy(BenefitConfig(probation_byte_budget=2**62))
        for key in range(1, 2 + rng.u64() % 12):
            segments = sorted({rng.u64() % 60 for _ in range(rng.u64() % 40)})
            policy.consider_admission(key, rng.u64() % 5, [(s, 2 * s + 1 + s % 7) for s in segments], COST)
            if rng.u64() % 4 == 0:
                policy.record_hit(key, COST)
                policy.record_hit(key, COST)  # promoted
        for key in [k for k in policy.entries if rng.u64() % 5 == 0]:
            policy.remove(key)
        states.append(policy)
    return states


def test_the_literal_sum_lies_within_the_rounding_bound_of_the_exact_one() -> None:
    """|T - S| <= gamma_A * S (indexed_charge.py's claim), and the charge between the bounds. The
    states are demanding: with A counted as one addition per probation entry, the bound fails on
    some of them."""
    u = Fraction(1, 2**53)
    too_small = 0
    for policy in rounding_states(150):
        total, additions, inexact = policy.charge_total, policy.charge_additions, policy.charge_inexact
        exact, literal = Fraction(total, 2**SCALE), Fraction(literal_sum(policy))
        probationers = sum(entry.state == "probation" for entry in policy.entries.values())
        assert exact == sum((Fraction(float(e.exclusive_bytes)) + sum(Fraction(policy.ledger[s].size / len(policy.ledger[s].refs))
                                                                      for s in e.segments)
                             for e in policy.entries.values() if e.state == "probation"), Fraction(0))
        assert abs(literal - exact) <= additions * u / (1 - additions * u) * exact
        assert inexact or literal == exact
        least, greatest = charge_bounds(total, additions, inexact)
        assert least <= math.ceil(literal) <= greatest
        too_small += abs(literal - exact) > probationers * u / (1 - probationers * u) * exact
    assert too_small > 0


def nine_references(budget: int) -> tuple[IndexedBenefitPolicy, BenefitPolicy]:
    """BEN-LEDGER-5's example: nine references to a 4-byte segment sum to 4.000000000000001."""
    policies = IndexedBenefitPolicy(BenefitConfig(probation_byte_budget=budget)), BenefitPolicy(BenefitConfig(probation_byte_budget=budget))
    for policy in policies:
        for key in range(1, 10):
            policy.consider_admission(key, 0, [(1, 4)], COST)
    return policies


def test_the_literal_charge_decides_where_the_bound_cannot_and_both_ways_agree() -> None:
    """The exact sum is just below 4, the literal one just above (BEN-ARITH-3): the bound cannot
    tell 4 from 5, so the indexed policy computes the literal charge, 5, and the cap repair
    follows it; with a budget of 6 the bound decides alone."""
    indexed, reference = nine_references(4)
    assert ceiling(indexed.charge_total) == 4
    assert charge_bounds(indexed.charge_total, indexed.charge_additions, indexed.charge_inexact) == (4, 5)
    before = indexed.literal_charges
    assert indexed.probation_charge() == probation_charge(reference.entries, reference.ledger) == 5
    assert indexed.select_probation_cap_victims() == reference.select_probation_cap_victims() == CapRepair("satisfied", (1,))
    assert indexed.literal_charges > before
    indexed, reference = nine_references(6)
    before = indexed.literal_charges
    assert indexed.select_probation_cap_victims() == reference.select_probation_cap_victims() == CapRepair("satisfied")
    assert indexed.literal_charges == before


# Wrong indexes, each caught by the certification ---------------------------------------------------


@dataclass(slots=True, eq=False)
class ChargeWithoutFallback(IndexedBenefitPolicy):
    """Decides the charge by the ceiling of the exact sum, as if the literal one did not round."""

    def within_budget(self, total: int, additions: int, inexact: int, leaving: list[int]) -> bool:
        return ceiling(total) <= self.config.probation_byte_budget

    def charge(self, total: int, additions: int, inexact: int, leaving: list[int]) -> int:
        return ceiling(total)


@dataclass(slots=True, eq=False)
class HitNotReordered(IndexedBenefitPolicy):
    """Leaves a probationer with hits where it was in the cap's order when it is hit again."""

    def record_hit(self, key: int, cost: CostSample) -> object:
        order = list(self.proven)
        decision = IndexedBenefitPolicy.record_hit(self, key, cost)
        if key in order and key in self.proven:
            self.proven = dict.fromkeys(order)
        return decision


@dataclass(slots=True, eq=False)
class MissNotRescored(IndexedBenefitPolicy):
    """Keeps an entry's score when a miss lowers its reuse probability."""

    def record_miss(self, key: int) -> None:
        stale = set(self.scored.stale_keys)
        IndexedBenefitPolicy.record_miss(self, key)
        self.scored.stale_keys = stale


@dataclass(slots=True, eq=False)
class GhostItemsTrusted(IndexedBenefitPolicy):
    """Drops the ghost a ghost_heap item names even when the item is stale (its ghost was taken over)."""

    def drop_ghost(self, last_observation: int, key: int) -> bool:
        return self.ghosts.pop(key, None) is not None


@dataclass(slots=True, eq=False)
class PendingKeptOnHit(IndexedBenefitPolicy):
    """Keeps the last cap walk across a hit, which can promote or reorder its candidates."""

    def record_hit(self, key: int, cost: CostSample) -> object:
        pending = self.pending
        decision = IndexedBenefitPolicy.record_hit(self, key, cost)
        self.pending = pending
        return decision


def charge_without_fallback() -> IndexedBenefitAdapter:
    return IndexedBenefitAdapter(ChargeWithoutFallback)


def hit_not_reordered() -> IndexedBenefitAdapter:
    return IndexedBenefitAdapter(HitNotReordered)


def miss_not_rescored() -> IndexedBenefitAdapter:
    return IndexedBenefitAdapter(MissNotRescored)


def ghost_items_trusted() -> IndexedBenefitAdapter:
    return IndexedBenefitAdapter(GhostItemsTrusted)


def pending_kept_on_hit() -> IndexedBenefitAdapter:
    return IndexedBenefitAdapter(PendingKeptOnHit)


@pytest.mark.parametrize(("variant", "seed", "clause"), [
    ("charge_without_fallback", 1, "BEN-LEDGER-5"),
    ("hit_not_reordered", 0, "BEN-CAP-2"),
    ("miss_not_rescored", 0, "BEN-MISS-1"),
    ("ghost_items_trusted", 0, "BEN-GHOST-2"),
    ("pending_kept_on_hit", 0, "BEN-REMOVE-1"),
])
def test_the_quick_certification_catches_a_wrong_index_and_names_the_clause(variant: str, seed: int, clause: str, tmp_path: Path) -> None:
    status, report = certify(f"in-process:{__file__}:{variant}", "quick", seed, tmp_path)
    (verdict,) = report.policies
    assert status == 3 and not verdict.conforms
    assert clause in [failure.clauses[0] for failure in verdict.failures if failure.clauses], [f.message for f in verdict.failures]
