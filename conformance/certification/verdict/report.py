"""The verdict of a certification, built once (build_verdict): the report, whose JSON is
report.json (schema: spec/schemas/certification-report.schema.json), each shrunk counterexample
as the file saved beside it (a Mooncake trace that `kvspec replay` replays, or a fixture case),
and what only the console shows. rendering.py alone renders it and writes it."""

from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.interface import Identity
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.block.diagnosis import KNOB_CLAUSES, knob_clause, refusing_clause, spec_accepts
from kvspec.conformance.certification.block.dialect_search import Search, candidates
from kvspec.conformance.certification.block.machine import wide_knobs
from kvspec.conformance.certification.findings.clauses import lifecycle_clauses, policy_clauses
from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Outcome, configuration_fields, shown
from kvspec.conformance.certification.findings.faults import Fault
from kvspec.conformance.certification.verdict.reproduction import Reproduction, counterexample_file, trace_lines
from kvspec.conformance.core.workloads import Pins
from kvspec.conformance.fixtures.benefit_cases import benefit_case
from kvspec.conformance.fixtures.lifecycle_cases import lifecycle_case
from kvspec.conformance.fixtures.format import file_text
from kvspec.conformance.fixtures.recorded import adapter_name
from kvspec.reference import SPEC_VERSION, ReplayConfig
from kvspec.reference.constants import AnyPolicyName
from kvspec.reference.dialects import CANONICAL, VARIATIONS, in_catalogue_order, replaced_clauses
from kvspec.reference.validation import INT64_MAX

Verdict = Literal["pass", "fail", "inconclusive"]


class Failure(BaseModel):
    """One check that failed, shrunk on its own: where the implementation first diverges on the shrunk trace."""

    model_config = ConfigDict(strict=True, extra="forbid")

    clauses: list[str] = Field(description="the clauses the failure names, the diagnosis first; empty where the implementation broke the "
                               "protocol outside any clause's check")
    consistent_with: list[str] = Field(default_factory=list, description="those of clauses that the evidence is only consistent with: a "
                                       "break of each would explain the difference, and the implementation's own state does not single one "
                                       "out (at the results level it is not visible); the others are shown broken on that state")
    message: str = Field(description="the failure as kvspec printed it: the clause, the request, what went wrong (PROTO-15, PROTO-30)")
    request: int = Field(ge=0, le=INT64_MAX, description="1-based request number (for the benefit policy, operation number); 0 means the "
                         "configuration itself")
    expected: str = Field(description="what the spec gives at that request, as the protocol's JSON writes it (a count, a snapshot, a "
                          "benefit reply or state; \"accepted\" or \"refused\" for a configuration); empty for a fault")
    actual: str = Field(description="what the implementation gave, as the protocol's JSON writes it; empty for a fault")
    config: dict[str, str | int | float] | None = Field(description="the configuration of the shrunk counterexample (PROTO-7's fields, or "
                                                        "the benefit policy's PROTO-20 knobs), or null where none was built")
    trace_file: str | None = Field(description="the shrunk trace as Mooncake JSON lines, or the benefit policy's shrunk operations as a "
                                   "fixture case (spec/fixtures.md FIX-7), beside the report")
    replay_command: str | None = Field(description="the shrunk trace through the implementation in lockstep with the reference, or the "
                                       "operations' case through `kvspec fixtures verify`")
    steps: str = Field(description="the shrunk counterexample's steps as Hypothesis reported them")
    configuration: bool = Field(False, description="a configuration finding: a configuration the implementation and the spec disagree "
                                "on (one accepts it, the other refuses it), or one it failed at, whose whole-domain knob values were then "
                                "not offered again; the certification went on with the configurations both accept")


class Example(BaseModel):
    """One failing example of the dialect search's evidence: a shrunk counterexample it replays against each candidate."""

    model_config = ConfigDict(strict=True, extra="forbid")

    clauses: list[str] = Field(description="the clauses its finding names")
    message: str = Field(description="its finding, as kvspec printed it")
    config: dict[str, str | int | float] = Field(description="its configuration (PROTO-7's fields)")
    requests: list[tuple[list[int], int]] = Field(description="its requests, each [hash_ids, input_length]; none for a configuration")


class Candidate(BaseModel):
    """A dialect the search scored, and how far each example got against it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    dialect: list[str] = Field(description="its variation points, in spec/dialects.md's order")
    points: list[int] = Field(description="for each example of the evidence so far, in order: 1 for a configuration both treat alike, "
                              "1 for each request's hit tokens both give alike, 1 more for each request both answer alike in every check")


class Step(BaseModel):
    """One greedy step of the search (spec/dialects.md section 6, DIALECT-8)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    dialect: list[str] = Field(description="the dialect the step starts from")
    candidates: list[Candidate] = Field(description="that dialect first, then each candidate one variation point beyond it")
    chosen: list[str] | None = Field(description="the candidate taken, the first of the highest total; null when none does better than "
                                     "the dialect itself, and the search stops")
    conforms: bool | None = Field(description="whether the implementation then conformed to the candidate taken; null when none was")


class Trial(BaseModel):
    """A dialect the search tried at the end, one variation point fewer (step 4)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    dialect: list[str] = Field(description="its variation points")
    conforms: bool = Field(description="whether the implementation conformed to it (it then replaces the dialect found)")


class FoundDialect(BaseModel):
    """DIALECT-8: what `kvspec certify --find-dialect` found (spec/dialects.md section 6)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    dialect: list[str] | None = Field(description="the variation points of the dialect found, in spec/dialects.md's order, under which the "
                                      "implementation conforms and none of which can be left out; null when no set of them explains it")
    replaces: list[str] = Field(description="the canonical clauses those variation points replace")
    failing_examples: int = Field(ge=0, description="the shrunk examples that failed along the way and guided the search: its evidence, "
                                  "each of which the dialect found replays alike")
    examples_agreed: int = Field(ge=0, description="the examples of the last certification against the dialect found, on every one of "
                                 "which the implementation agreed with the reference in it (0 when none was found)")
    certifications: int = Field(ge=0, description="the certifications the search ran after the first (one for each variation point added, "
                                "and one for each tried out at the end)")
    seconds: float = Field(ge=0, description="the search's wall-clock time, the first certification excluded")
    reason: str = Field("", description="why the search stopped without a dialect; empty when it found one")
    evidence: list[Example] = Field(default_factory=list, description="the failing examples that guided it, in the order met")
    steps: list[Step] = Field(default_factory=list, description="each greedy step, with every candidate's points on the evidence")
    trials: list[Trial] = Field(default_factory=list, description="the dialects tried at the end, each one variation point fewer")
    unexplained: list[str] = Field(default_factory=list, description="the faults it set aside (a crash, a hang, a protocol error): no "
                                   "variation point explains them, and their configurations were not offered again in its certifications")


class PolicyVerdict(BaseModel):
    """One policy's verdict (PROTO-30)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    policy: AnyPolicyName = Field(description="the policy certified (PROTO-6)")
    in_flight: bool = Field(False, description="true for the verdict on requests in flight (spec/lifecycle.md sections 1 to 5, PROTO-35): "
                            "the lifecycle machine's, for an implementation that offers the lifecycle; false for the one-at-a-time replay's")
    searched: bool = Field(False, description="true for a verdict of requests in flight against a dialect `kvspec certify --find-dialect` "
                           "found (DIALECT-8): the first engine's pool in flight (spec/dialects.md section 9) it conforms to, where it did "
                           "not conform to the dialect asked for")
    dialect: list[str] = Field(default_factory=list, description="DIALECT-7: the variation points of the dialect certified against, in "
                               "spec/dialects.md's order; empty: the canonical spec")
    conforms: bool = Field(description="true when the run found no failure for this policy")
    examples_per_second: float = Field(description="the examples the run tried, per second of its wall-clock time")
    clauses: dict[str, Verdict] = Field(
        description="pass: the run found no counterexample; fail: a finding shows the clause broken; inconclusive: the run failed "
        "elsewhere, or a finding is only consistent with the clause's break, and a divergence stops every trace it is on, so the clause "
        "was neither shown broken nor checked throughout"
    )
    failures: list[Failure] = Field(description="one shrunk counterexample for each check that failed, the earliest first")
    behaviour: Literal["conforms", "does not conform", "not certified"] | None = Field(
        None, description="the verdict on the requests (or operations) alone, on the configurations both accepted: it conforms when "
        "every failure is a configuration finding; not certified when no configuration was accepted by both; null in a report of a "
        "kvspec that did not yet tell the behaviour apart (a configuration finding then ended the run)")
    found: FoundDialect | None = Field(default=None, description="with --find-dialect, when the policy does not conform: the dialect "
                                       "found for it (DIALECT-8)")


class Report(BaseModel):
    """report.json of `kvspec certify --report`: the verdict, each policy's clauses and each failure."""

    model_config = ConfigDict(strict=True, extra="forbid")

    kvspec_version: str = Field(description="the version of kvspec that ran the certification")
    spec_version: str = Field(description="the version of the spec it certifies against")
    hypothesis_version: str = Field(description="the version of Hypothesis that drew the examples: the same seed draws the same "
                                    "examples only under the same Hypothesis")
    adapter: str = Field(description="the adapter spec the implementation was named by (PROTO-18)")
    implementation: dict[str, str] = Field(description="its name, language and version, as its start reply gave them (PROTO-5); "
                                           "when it failed before it said, the adapter spec as its name, the others unknown")
    level: Literal["results", "state", "unknown"] = Field(description="unknown: the implementation failed before it said")
    profile: str = Field(description="quick or thorough, the examples and trace lengths of the run")
    seed: int = Field(description="the Hypothesis seed: the same seed replays the same run")
    pins: dict[str, float | int | bool] = Field(description="S3FIFO knobs held fixed (kvspec certify --small-ratio, --max-freq), and "
                                                "fitting_requests: true when every request had at most capacity blocks (--fitting-requests); "
                                                "empty: none")
    conforms: bool = Field(description="true when every policy conforms and nothing failed outside them; kvspec then exits with status 0 "
                           "(PROTO-30)")
    faults: list[Failure] = Field(description="failures outside every policy's run: at the implementation's start or at its stop "
                                  "(PROTO-13, PROTO-15, PROTO-29); in a campaign, the policies asked for that it does not offer "
                                  "(PROTO-6), no policy then certified")
    policies: list[PolicyVerdict] = Field(description="one verdict for each policy certified")


def clauses_for(outcome: Outcome) -> dict[str, Verdict]:
    """The clauses a policy's run checks: the replay's and its own, in its dialect (DIALECT-2: its
    variation points' clauses in place of those they replace). Fail where a finding shows the
    clause broken. A finding of the behaviour stops every trace it is on, so the other clauses
    are inconclusive; configuration findings alone leave the behaviour certified on the
    configurations both accepted, and every clause no finding names passes."""
    replaced = replaced_clauses(outcome.dialect)
    relevant = [c for c in (lifecycle_clauses if outcome.in_flight else policy_clauses)(outcome.policy) if c not in replaced]  # PROTO-34
    relevant += [] if outcome.in_flight else [VARIATIONS[v].clause for v in in_catalogue_order(outcome.dialect)]
    failed = shown_broken(outcome)
    suspected = {c for f in outcome.findings if f.divergence for c in f.divergence.consistent_with} | undecided(outcome)
    decided = outcome.conforms or (not outcome.behaviour_failed and outcome.accepted > 0)
    return {clause: "fail" if clause in failed else "pass" if decided and clause not in suspected else "inconclusive" for clause in relevant}


def undecided(outcome: Outcome) -> set[str]:
    """The clauses that decide a configuration the implementation failed at (it crashed or hung
    before it accepted or refused): the clause that refuses it, or those of its whole-domain knobs."""
    clauses = set()
    for finding in outcome.findings:
        fault = finding.divergence
        if not (finding.configuration and isinstance(fault, Fault)):
            continue
        if fault.config is None:  # the benefit policy's
            clauses.add("BEN-CONF-8")
            continue
        refused_by = refusing_clause(fault.config, outcome.dialect)
        clauses |= {refused_by} if refused_by else {knob_clause(outcome.policy, knob) for knob, _ in wide_knobs(fault.config)}
    return clauses


def failure_of(reproduction: Reproduction, policy: str, number: int, finding: Finding,
               directory: Path | None, level: str = "results") -> tuple[Failure, dict[str, str]]:
    """One finding, and its shrunk counterexample as the file to save beside the report in
    ``directory`` (``{policy}-counterexample-{number}.jsonl``), by name; ``directory`` None: no
    report is written, and the failure names no file. A counterexample of requests in flight is a
    lifecycle case at the implementation's ``level``."""
    divergence = finding.divergence
    if divergence is None:  # the implementation broke the protocol
        return Failure(clauses=[], message=finding.message, request=0, expected="", actual="", config=None, trace_file=None,
                       replay_command=None, steps=finding.steps), {}
    path = None if directory is None else counterexample_file(directory, policy, number, divergence)
    saved, command = {}, None
    if path is not None and divergence.benefit is not None:  # the operations as a fixture case (spec/fixtures.md FIX-7) that verify replays
        saved, command = {path.name: file_text(benefit_counterexample(reproduction.adapter, divergence))}, reproduction.verify_command(path)
    elif path is not None and divergence.lifecycle is not None:  # the operations as a lifecycle case (FIX-18) that verify replays
        saved = {path.name: file_text(in_flight_counterexample(reproduction.adapter, divergence, level))}
        command = reproduction.verify_command(path)
    elif path is not None and divergence.config is not None and divergence.trace:
        saved, command = {path.name: trace_lines(divergence.trace)}, reproduction.replay_command(divergence.config, path)
    if divergence.benefit is not None:
        config = dict(divergence.benefit["config"])
    else:
        config = None if divergence.config is None else configuration_fields(divergence.config)
    failure = Failure(clauses=list(divergence.clauses), consistent_with=list(divergence.consistent_with), message=finding.message,
                      request=divergence.request, expected=divergence.expected, actual=divergence.actual, config=config,
                      trace_file=next(iter(saved), None), replay_command=command, steps=finding.steps, configuration=finding.configuration)
    return failure, saved


def benefit_counterexample(adapter_spec: str, divergence: Divergence) -> dict[str, object]:
    """The benefit operations of a shrunk counterexample as a fixture case, with the spec's answers."""
    assert divergence.benefit is not None
    return benefit_case(f"counterexample {adapter_name(adapter_spec)}", f"counterexample: {adapter_spec} ({divergence.clauses[0]})",
                        f"the shrunk counterexample of `kvspec certify --adapter {adapter_spec} --policy benefit`",
                        divergence.benefit["config"], divergence.benefit["operations"])


def in_flight_counterexample(adapter_spec: str, divergence: Divergence, level: str) -> dict[str, object]:
    """The lifecycle operations of a shrunk counterexample as a lifecycle case (FIX-18), with the spec's answers."""
    assert divergence.lifecycle is not None and divergence.config is not None
    config = divergence.config
    return lifecycle_case(f"counterexample {adapter_name(adapter_spec)}", f"counterexample: {adapter_spec} ({divergence.clauses[0]})",
                          f"the shrunk counterexample of `kvspec certify --adapter {adapter_spec} --policy {config.policy}` with requests in flight",
                          ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq),  # type: ignore[arg-type]
                          divergence.lifecycle, "state" if level == "state" else "results")


def hints(outcome: Outcome, searched: bool) -> tuple[str, ...]:
    """What to try next after a policy's findings, where it would help: the bound of an engine's
    pool after a capacity or block size that the implementation refused or failed at and the spec
    accepts; the dialect search, unless ``searched``, where a variation point could explain a
    finding (never a fault)."""
    said = []
    for knob, option in (("capacity", "--max-capacity"), ("block_size", "--max-block-size")):
        beyond = [f.divergence.config for f in outcome.findings if f.configuration and f.divergence and f.divergence.config
                  and getattr(f.divergence.config, knob) > 1 and refused_or_failed_at(f.divergence, knob)]
        if beyond:
            smallest = min(getattr(config, knob) for config in beyond)
            said.append(f"(it refused or failed at {knob} {smallest:,}, which the spec accepts: if it cannot build so large a pool, "
                        f"{option} N certifies it with at most N{' blocks' if knob == 'capacity' else ' tokens a block'})")
    if not searched and outcome.policy != "benefit" and not outcome.in_flight and any(explainable(outcome.policy, f) for f in outcome.findings):
        said.append("(--find-dialect searches spec/dialects.md for the variation points that would explain it)")
    return tuple(said)


def refused_or_failed_at(divergence: Divergence, knob: str) -> bool:
    """The implementation refused a configuration the spec accepts, for its ``knob`` (shown broken,
    not only consistent with the difference), or failed at one the spec accepts, whose ``knob``
    takes a whole-domain value."""
    assert divergence.config is not None
    if isinstance(divergence, Fault):
        return knob in dict(wide_knobs(divergence.config)) and spec_accepts(divergence.config)
    shown_broken = set(divergence.clauses) - set(divergence.consistent_with)
    return divergence.expected == shown("accepted") and KNOB_CLAUSES[knob] in shown_broken


def explainable(policy: str, finding: Finding) -> bool:
    """Whether a variation point of ``policy`` could explain the finding: for a configuration, one
    under which the reference answers it as the implementation did; otherwise one that replaces a
    clause the finding names. A fault (a crash, a hang, a protocol error) is never explained by one."""
    divergence = finding.divergence
    if divergence is None or isinstance(divergence, Fault):
        return False
    if finding.configuration and divergence.config is not None:
        accepted = divergence.actual == shown("accepted")
        return any(spec_accepts(divergence.config, dialect) == accepted for dialect in candidates(policy, CANONICAL))
    replaceable = {c for v in VARIATIONS.values() if policy in v.policies for c in v.replaces}
    return bool(replaceable & set(divergence.clauses))


def behaviour_of(outcome: Outcome) -> Literal["conforms", "does not conform", "not certified"]:
    if outcome.behaviour_failed:
        return "does not conform"
    return "conforms" if outcome.conforms or outcome.accepted else "not certified"


def shown_broken(outcome: Outcome) -> tuple[str, ...]:
    """The clauses a finding shows broken; one only consistent with a difference stays inconclusive."""
    return tuple(c for f in outcome.findings if f.divergence for c in f.divergence.clauses if c not in f.divergence.consistent_with)


def found_dialect(search: Search) -> FoundDialect:
    return FoundDialect(dialect=None if search.dialect is None else in_catalogue_order(search.dialect),
                        replaces=[] if search.dialect is None else replaced_clauses(search.dialect), failing_examples=len(search.evidence),
                        examples_agreed=0 if search.dialect is None else search.outcome.examples,
                        certifications=search.certifications, seconds=round(search.seconds, 1), reason=search.reason,
                        evidence=[Example(clauses=list(e.clauses), message=str(e), config=configuration_fields(e.config) if e.config else {},
                                          requests=[(list(h), n) for h, n in e.trace]) for e in search.evidence],
                        steps=[Step(dialect=in_catalogue_order(step.dialect),
                                    candidates=[Candidate(dialect=in_catalogue_order(d), points=list(p)) for d, p in step.scores],
                                    chosen=None if step.chosen is None else in_catalogue_order(step.chosen), conforms=step.conforms)
                               for step in search.steps],
                        trials=[Trial(dialect=in_catalogue_order(d), conforms=c) for d, c in search.trials],
                        unexplained=[fault.message for fault in search.faults])


@dataclass(frozen=True)
class CertificationVerdict:
    """One certification's verdict, built once (build_verdict) and rendered by rendering.py alone,
    for the console, report.md and report.json alike: the report, and beside it what only the
    console shows and the files saved beside the report."""

    report: Report
    outcomes: tuple[Outcome, ...]  # each policy's, in the report's order: the console shows each counterexample whole
    hints: tuple[tuple[str, ...], ...]  # what to try next, for each policy
    reproduction: Reproduction  # reaches the implementation as the certification did (against the canonical spec)
    directory: Path | None  # where the report names its counterexamples; None: the console alone shows the verdict
    counterexamples: dict[str, str]  # each counterexample file's text, by name, saved beside the report


def build_verdict(reproduction: Reproduction, identity: Identity | None, level: str, profile: str, seed_value: int, pins: Pins,
                  outcomes: tuple[Outcome, ...], faults: tuple[Finding, ...], searches: dict[str, Search],
                  directory: Path | None) -> CertificationVerdict:
    """``identity`` None: the implementation failed at its start, and ``faults`` says how.
    ``searches``: the dialect found for each policy that did not conform (--find-dialect).
    ``reproduction``: how the implementation was reached, which its replay commands keep.
    ``directory``: where the report and its counterexamples go (failure_of), if anywhere."""
    saved: dict[str, str] = {}
    verdicts = []
    for outcome in outcomes:
        failures = []
        for number, finding in enumerate(outcome.findings, start=1):
            failure, files = failure_of(replace(reproduction, dialect=outcome.dialect), outcome.policy, number, finding, directory, level)
            failures.append(failure)
            saved |= files
        verdicts.append(PolicyVerdict(
            policy=outcome.policy,  # type: ignore[arg-type]
            in_flight=outcome.in_flight, searched=outcome.searched, dialect=in_catalogue_order(outcome.dialect), conforms=outcome.conforms, examples_per_second=outcome.examples_per_second,
            clauses=clauses_for(outcome), failures=failures, behaviour=behaviour_of(outcome),
            found=None if outcome.in_flight or outcome.policy not in searches else found_dialect(searches[outcome.policy]),
        ))
    outside = [failure_of(reproduction, "implementation", n, f, directory) for n, f in enumerate(faults, start=1)]
    saved |= {name: text for _, files in outside for name, text in files.items()}
    identity = identity or Identity(reproduction.adapter, "unknown", "unknown")
    report = Report(
        kvspec_version=version("kvspec"), spec_version=SPEC_VERSION, hypothesis_version=version("hypothesis"), adapter=reproduction.adapter,
        implementation={"name": identity.name, "language": identity.language, "version": identity.version},
        level=level, profile=profile, seed=seed_value,  # type: ignore[arg-type]
        pins={k: v for k, v in vars(pins).items() if v not in (None, False)}, conforms=not faults and all(v.conforms for v in verdicts),
        faults=[failure for failure, _ in outside], policies=verdicts,
    )
    said = tuple(hints(outcome, outcome.policy in searches) for outcome in outcomes)
    return CertificationVerdict(report, outcomes, said, reproduction, directory, saved)


def schema_texts() -> dict[str, str]:
    """spec/schemas/certification-report.schema.json."""
    return {"certification-report.schema.json": schema_text("certification-report.schema.json", TypeAdapter(Report))}
