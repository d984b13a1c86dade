"""Finding an implementation's dialect (spec/dialects.md section 6, DIALECT-8): greedy, one
variation point at a time, guided by the examples that failed, then made minimal.

A candidate is scored by how far the failing examples kept so far get when replayed in lockstep
with the implementation against it: one point for a configuration both treat alike, one for each
request's hit tokens both give alike, one more for each request both answer alike in every check. Replaying a shrunk example costs a few requests, so the search's cost
is that of the certifications it runs: at most one a variation point added, and one a variation
point tried out at the end.

A fault (a crash, a hang, a protocol error) is no variation point's: it is never evidence, and
never waited out again. A search whose only findings are faults ends at once, saying so; the
configurations an implementation failed at are not offered to it again in the search's
certifications (configurations.py), and the dialect found leaves them unexplained.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterFailure
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Knobs, Outcome
from kvspec.conformance.certification.findings.faults import Fault
from kvspec.reference.dialects import CANONICAL, VARIATIONS, Dialect, in_catalogue_order
from kvspec.reference.dialects.catalogue import dialect_problem

Certify = Callable[[Dialect, tuple[Knobs, ...]], Outcome]  # a certification against a dialect, not offering those knob values


@dataclass(frozen=True)
class Step:
    """One step of the greedy search: from ``dialect``, each candidate's points on each example of
    the evidence so far (the dialect's own first), the one taken (None: none did better), and
    whether the implementation then conformed to it."""

    dialect: Dialect
    scores: tuple[tuple[Dialect, tuple[int, ...]], ...]
    chosen: Dialect | None
    conforms: bool | None = None


@dataclass(frozen=True)
class Search:
    """What the search found: the dialect (None when no set of variation points explains the
    implementation), the failing examples that guided it, the certification that closed it (against
    the dialect found, or the one that failed first), what it cost, the steps it took and the
    dialects tried out at the end (each with whether it conformed), why it stopped where it found
    none, and the faults it set aside."""

    dialect: Dialect | None
    evidence: tuple[Divergence, ...]
    outcome: Outcome
    certifications: int
    seconds: float
    steps: tuple[Step, ...] = ()
    trials: tuple[tuple[Dialect, bool], ...] = ()
    reason: str = ""
    faults: tuple[Finding, ...] = ()


def examples_of(outcome: Outcome) -> list[Divergence]:
    """The failing examples an outcome holds that a dialect could explain: those with a
    configuration to replay, but for a fault and a configure that does not reset (PROTO-7). The
    example an implementation that is not deterministic failed first is one: it failed."""
    return [f.divergence for f in outcome.findings if f.divergence is not None and f.divergence.config is not None
            and not isinstance(f.divergence, Fault) and not not_reset(f.divergence)]


def faults_of(outcome: Outcome) -> tuple[Finding, ...]:
    """What no variation point explains: a crash, a hang, a protocol error, a failure outside every
    example, a configure that does not reset."""
    explained = examples_of(outcome)
    return tuple(f for f in outcome.findings if f.divergence not in explained)


def set_aside(finding: Finding) -> bool:
    """A fault the search leaves aside, which does not cut a certification short: a configuration
    it failed at (not offered again), or a configure that does not reset (every example then runs
    on a fresh implementation)."""
    divergence = finding.divergence
    return divergence is not None and ((finding.configuration and isinstance(divergence, Fault)) or not_reset(divergence))


def not_reset(divergence: Divergence) -> bool:
    """PROTO-7's finding that configure does not reset (the one certify_policy makes first)."""
    return divergence.clauses == ("PROTO-7",) and divergence.request == 0 and not divergence.trace


def agreement(implementation: Implementation, dialect: Dialect, example: Divergence, fresh: bool = False) -> tuple[int, bool]:
    """How far one example gets in lockstep against ``dialect`` (on a fresh implementation, if
    ``fresh``): the configuration, then each request's hit tokens, and each request whose every
    check agreed; and whether it got to the end."""
    assert example.config is not None
    points, lockstep = 0, None
    try:
        lockstep = Lockstep(implementation.start() if fresh else implementation.current(), example.config, dialect)
        accepted = lockstep.configure()
        points += 1
        for hash_ids, input_length in example.trace if accepted else ():
            lockstep.request(list(hash_ids), input_length)
            points += 1
    except (Divergence, AdapterFailure):  # a failed implementation is started afresh by current()
        return points + (lockstep.hits_agreed if lockstep is not None else 0), False
    return points + lockstep.hits_agreed, True


def points(implementation: Implementation, dialect: Dialect, evidence: list[Divergence], fresh: bool = False) -> tuple[int, ...]:
    return tuple(agreement(implementation, dialect, example, fresh)[0] for example in evidence)


def explains(implementation: Implementation, dialect: Dialect, evidence: list[Divergence], fresh: bool = False) -> bool:
    """Whether every example of the evidence replays to its end against ``dialect``."""
    return all(agreement(implementation, dialect, example, fresh)[1] for example in evidence)


def with_requirements(dialect: Dialect, variation: str) -> Dialect:
    """``dialect`` and ``variation``, with what it is defined on top of (DIALECT-3)."""
    return dialect | {variation, *VARIATIONS[variation].requires}


def candidates(policy: str, dialect: Dialect) -> list[Dialect]:
    """DIALECT-2 to DIALECT-4: the dialects one variation point (and its requirements) beyond
    ``dialect``, each in place of those it excludes: examples that could not tell two alternatives
    apart may have let the wrong one in first."""
    grown = [with_requirements(dialect - set(VARIATIONS[v].excludes), v) for v in VARIATIONS if v not in dialect and policy in VARIATIONS[v].policies]
    return [d for d in grown if dialect_problem(policy, d) is None]


def find_dialect(implementation: Implementation, policy: str, failed: Outcome, certify: Certify) -> Search:
    """DIALECT-8: from a failed certification, a minimal dialect the implementation conforms to
    (spec/dialects.md section 6), but for the faults set aside, or None with the failed outcome. A
    certification against a dialect that failed is followed by one against the canonical spec,
    where the search starts. A dialect is found only when its certification ran to its end with
    nothing but faults set aside, and every example of the evidence replays alike against it; a
    fault that cuts a certification short ends the search, since it cannot tell what the dialect
    explains."""
    started = time.perf_counter()
    runs = 0
    if failed.dialect:
        failed, runs = certify(CANONICAL, failed.failed_at), 1
        if failed.conforms:
            return Search(CANONICAL, (), failed, runs, time.perf_counter() - started)
    skipped, faults = failed.failed_at, faults_of(failed)
    fresh = any(f.divergence is not None and not_reset(f.divergence) for f in failed.findings)  # as the certifications ran
    evidence = examples_of(failed)

    def found(dialect: Dialect, outcome: Outcome) -> bool:
        return all(set_aside(f) for f in outcome.findings) and explains(implementation, dialect, evidence, fresh)

    if not evidence:
        return Search(None, (), failed, runs, time.perf_counter() - started, faults=faults,
                      reason="its only findings are faults (a crash, a hang, a protocol error, a configure that does not reset), which no "
                             "variation point explains")
    dialect: Dialect = CANONICAL
    tried = {dialect}  # each dialect is certified once at most, so the search ends
    steps: list[Step] = []
    while True:
        scores = {d: points(implementation, d, evidence, fresh) for d in [dialect, *candidates(policy, dialect)] if d == dialect or d not in tried}
        best = max(scores, key=lambda d: sum(scores[d]))  # the first of the best, in catalogue order (DIALECT-8)
        if best == dialect:  # no variation point gets the failing examples further
            steps.append(Step(dialect, tuple(scores.items()), None))
            return Search(None, tuple(evidence), failed, runs, time.perf_counter() - started, tuple(steps), faults=faults,
                          reason="no variation point gets its failing examples further")
        tried.add(best)
        outcome = certify(best, skipped)
        runs += 1
        conforms = found(best, outcome)
        skipped, faults = outcome.failed_at, faults + tuple(f for f in faults_of(outcome) if f.configuration)
        steps.append(Step(dialect, tuple(scores.items()), best, conforms))
        dialect = best
        if conforms:
            break
        cut = [f for f in faults_of(outcome) if not set_aside(f)]
        if cut:
            return Search(None, tuple(evidence), failed, runs, time.perf_counter() - started, tuple(steps), faults=faults + tuple(cut),
                          reason=f"against {described(dialect)} a fault cut its certification short ({cut[0].message.split(': ')[0]}), "
                                 "and no variation point explains a fault")
        evidence += examples_of(outcome)
    dialect, outcome, runs, trials = minimised(policy, dialect, outcome, lambda d: certify(d, skipped), runs, found)
    return Search(dialect, tuple(evidence), outcome, runs, time.perf_counter() - started, tuple(steps), tuple(trials), faults=faults)


def without(dialect: Dialect, variation: str) -> Dialect:
    """``dialect`` without ``variation`` and without what is defined on top of it (DIALECT-3)."""
    return frozenset(v for v in dialect if v != variation and variation not in VARIATIONS[v].requires)


def minimised(policy: str, dialect: Dialect, outcome: Outcome, certify: Callable[[Dialect], Outcome], runs: int,
              found: Callable[[Dialect, Outcome], bool]) -> tuple[Dialect, Outcome, int, list[tuple[Dialect, bool]]]:
    """Step 4: each variation point taken out in turn, the last in catalogue order first, and left
    out where the implementation still conforms (``found``: but for the faults set aside, and with
    every example of the evidence); again until a whole pass leaves none out, so that none of those
    that remain can be. The dialect, its conforming certification, the runs so far, and each
    dialect tried with whether it conformed."""
    certified = {dialect}
    trials = []
    while True:
        for variation in reversed(in_catalogue_order(dialect)):
            smaller = without(dialect, variation)
            if smaller in certified or dialect_problem(policy, smaller) is not None:
                continue
            certified.add(smaller)
            trial = certify(smaller)
            runs += 1
            conforms = found(smaller, trial)
            trials.append((smaller, conforms))
            if conforms:
                dialect, outcome = smaller, trial
                break
        else:
            return dialect, outcome, runs, trials


def described(dialect: Dialect) -> str:
    return ", ".join(in_catalogue_order(dialect)) or "the canonical spec"
