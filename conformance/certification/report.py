"""The certification report: JSON (schema: spec/schemas/certification-report.schema.json) and
Markdown, with each counterexample saved as a Mooncake trace that `kvspec replay` replays."""

import json
from dataclasses import dataclass, replace
from importlib.metadata import version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.benefit import BenefitAdapter
from kvspec.adapters.interface import Adapter, AdapterConfig, Identity
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.certify import Finding, Outcome
from kvspec.conformance.certification.clauses import policy_clauses
from kvspec.conformance.certification.diagnosis import KNOB_CLAUSES, knob_clause, refusing_clause, spec_accepts
from kvspec.conformance.certification.dialect_search import Search, candidates
from kvspec.conformance.certification.faults import Fault
from kvspec.conformance.certification.lockstep import Divergence, configuration_fields, shown
from kvspec.conformance.certification.machine import wide_knobs
from kvspec.conformance.core.commands import reaching, shell_command
from kvspec.conformance.core.output import model_json, plural, write_text, written_whole
from kvspec.conformance.core.workloads import Pins
from kvspec.conformance.fixtures.benefit_cases import benefit_case
from kvspec.conformance.fixtures.format import file_text
from kvspec.conformance.fixtures.recorded import adapter_name
from kvspec.reference import SPEC_VERSION, ReplayConfig
from kvspec.reference.constants import REPLY_TIMEOUT, START_TIMEOUT, AnyPolicyName
from kvspec.reference.dialects import CANONICAL, VARIATIONS, Dialect, in_catalogue_order, replaced_clauses
from kvspec.reference.validation import INT64_MAX

Verdict = Literal["pass", "fail", "inconclusive"]
DEFAULTS = ReplayConfig()  # the knobs `kvspec replay` takes without an option


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
    relevant = [c for c in policy_clauses(outcome.policy) if c not in replaced]  # PROTO-34
    relevant += [VARIATIONS[v].clause for v in in_catalogue_order(outcome.dialect)]
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


def trace_lines(trace: list[tuple[list[int], int]]) -> str:
    return "".join(
        json.dumps({"timestamp": 0, "input_length": length, "output_length": 0, "hash_ids": hashes}) + "\n" for hashes, length in trace
    )


@dataclass(frozen=True)
class Reproduction:
    """What a printed command needs to reach the implementation as the certification did: its
    adapter spec (PROTO-18), the dialect the finding was made against (DIALECT-7) and the deadlines
    it was held to (PROTO-15), so that the command gives the same finding again."""

    adapter: str
    dialect: Dialect = CANONICAL
    reply_timeout: float = REPLY_TIMEOUT
    start_timeout: float = START_TIMEOUT

    def replay_command(self, config: AdapterConfig, trace_file: Path) -> str:
        """The trace through the implementation in lockstep with the reference, in the finding's
        dialect: it stops at the divergence. Every knob the configuration gave goes with it, an
        LRU's or FIFO's S3FIFO knobs too where they are not the defaults (REPLAY-CONF-3 says they
        are ignored: an implementation that reads them shows it)."""
        # Each value joined to its option, for argparse takes -1.5e+308 (or -1) alone for an option
        words = ["kvspec", "replay", str(trace_file), *reaching(self.adapter, self.reply_timeout, self.start_timeout), "--policy",
                 config.policy, f"--capacity={config.capacity}", f"--block-size={config.block_size}"]
        if config.policy == "s3fifo" or config.small_ratio != DEFAULTS.small_ratio:
            words.append(f"--small-ratio={config.small_ratio!r}")
        if config.policy == "s3fifo" or config.max_freq != DEFAULTS.max_freq:
            words.append(f"--max-freq={config.max_freq}")
        if self.dialect:
            words += ["--variation", ",".join(in_catalogue_order(self.dialect))]
        return shell_command(words)

    def verify_command(self, case_file: Path) -> str:
        """The benefit operations' case through the implementation: `kvspec fixtures verify` replays it."""
        return shell_command(["kvspec", "fixtures", "verify", str(case_file), *reaching(self.adapter, self.reply_timeout, self.start_timeout)])


def counterexample_file(directory: Path, policy: str, number: int, divergence: Divergence) -> Path:
    """Where the report saves a finding's shrunk counterexample: a fixture case for the benefit
    operations, a Mooncake trace for the requests."""
    return directory / f"{policy}-counterexample-{number}.{'json' if divergence.benefit is not None else 'jsonl'}"


def failure_of(reproduction: Reproduction, policy: str, number: int, finding: Finding, directory: Path,
               saved_in: Path | None = None) -> Failure:
    """One finding, its shrunk trace saved beside the report as ``{policy}-counterexample-{number}.jsonl``
    (written to ``saved_in`` instead, if given: a folder moved to ``directory`` later, as a campaign's are)."""
    divergence = finding.divergence
    if divergence is None:  # the implementation broke the protocol
        return Failure(clauses=[], message=finding.message, request=0, expected="", actual="", config=None, trace_file=None,
                       replay_command=None, steps=finding.steps)
    trace_file = command = None
    path = counterexample_file(directory, policy, number, divergence)
    written = path if saved_in is None else saved_in / path.name
    if divergence.benefit is not None:  # the operations as a fixture case (spec/fixtures.md FIX-7) that verify replays
        adapter_spec = reproduction.adapter
        case = benefit_case(f"counterexample {adapter_name(adapter_spec)}", f"counterexample: {adapter_spec} ({divergence.clauses[0]})",
                            f"the shrunk counterexample of `kvspec certify --adapter {adapter_spec} --policy benefit`",
                            divergence.benefit["config"], divergence.benefit["operations"])
        with written_whole(written) as temporary:
            write_text(temporary, file_text(case))
        trace_file, command = path.name, reproduction.verify_command(path)
    elif divergence.config is not None and divergence.trace:
        with written_whole(written) as temporary:
            write_text(temporary, trace_lines(divergence.trace))
        trace_file, command = path.name, reproduction.replay_command(divergence.config, path)
    if divergence.benefit is not None:
        config = dict(divergence.benefit["config"])
    else:
        config = None if divergence.config is None else configuration_fields(divergence.config)
    return Failure(clauses=list(divergence.clauses), consistent_with=list(divergence.consistent_with), message=finding.message,
                   request=divergence.request, expected=divergence.expected, actual=divergence.actual, config=config,
                   trace_file=trace_file, replay_command=command, steps=finding.steps, configuration=finding.configuration)


def counterexample(reproduction: Reproduction, finding: Finding, saved: Path | None) -> str:
    """The shrunk counterexample itself, ready to paste: the requests inside the command that
    replays them through the implementation, or the benefit operations as the protocol requests
    the implementation was sent. Hypothesis's own steps are left to report.md, except where they
    are all there is. ``saved``: where the report saved it, if it did."""
    divergence = finding.divergence
    if divergence is not None and divergence.benefit is None and divergence.request == 0:
        return ""  # a configuration, which the message names: there is no request to show
    if divergence is None or (divergence.benefit is None and (divergence.config is None or not divergence.trace)):
        return "    shrunk steps:\n" + "".join(f"      {line}\n" for line in finding.steps.splitlines()) if finding.steps else ""
    if divergence.benefit is not None:  # the session the implementation was sent, ready for its stdin
        operations = divergence.benefit["operations"]
        session = [{"cmd": "start", "protocol": 1}, {"cmd": "configure_benefit", "config": divergence.benefit["config"]}, *operations,
                   {"cmd": "stop"}]
        lines = [f"    {which_counterexample(divergence)}, {plural(len(operations), 'operation')} after the configuration, as the "
                 "protocol's requests (paste them into the implementation):", ""]
        lines += [json.dumps({"cmd": request["cmd"], "seq": seq, **request}, allow_nan=False) for seq, request in enumerate(session)]
        replay = (f"replay it against the spec's answers: {reproduction.verify_command(saved)}" if saved
                  else "--report FOLDER saves it, with the spec's answers, as a fixture case that `kvspec fixtures verify` replays")
        return "\n".join([*lines, "", f"    {replay}", ""]) + "\n"
    command = reproduction.replay_command(divergence.config, saved or Path("-"))
    lines = [f"    {which_counterexample(divergence)}, {plural(len(divergence.trace), 'request')}; this replays it through the implementation:",
             ""]
    if saved is None:
        lines += [f"{command} <<'EOF'", *trace_lines(divergence.trace).splitlines(), "EOF"]
    else:
        lines += [command, "", *trace_lines(divergence.trace).splitlines()]
    return "\n".join([*lines, ""]) + "\n"


def which_counterexample(divergence: Divergence) -> str:
    """What the requests shown are (PROTO-30): shrunk, unless the fault took a deadline to show, or
    the implementation failed one way and then another (PROTO-7)."""
    if getattr(divergence, "timed_out", False):
        return "the counterexample as it ran (not shrunk: each replay would wait out the deadline again)"
    if "PROTO-7" in divergence.clauses:
        return "the example that failed first (not deterministic, the implementation may answer it otherwise again)"
    return "the shrunk counterexample"


def parts_of(outcome: Outcome) -> str:
    """A policy's verdict in its two parts, where configuration findings leave the behaviour certified on the others."""
    settings = sum(finding.configuration for finding in outcome.findings)
    if not settings:
        return ""
    behaviour = {"conforms": "conforms", "does not conform": "does not conform",
                 "not certified": "was not certified (no configuration was accepted by both)"}[behaviour_of(outcome)]
    return f": {plural(settings, 'configuration finding')}; the behaviour, on the configurations both accept, {behaviour}"


def hints(outcome: Outcome) -> list[str]:
    """What to try next after a policy's findings, where it would help: the bound of an engine's
    pool after a capacity or block size that the implementation refused or failed at and the spec
    accepts; the dialect search where a variation point could explain a finding (never a fault)."""
    said = []
    for knob, option in (("capacity", "--max-capacity"), ("block_size", "--max-block-size")):
        beyond = [f.divergence.config for f in outcome.findings if f.configuration and f.divergence and f.divergence.config
                  and getattr(f.divergence.config, knob) > 1 and refused_or_failed_at(f.divergence, knob)]
        if beyond:
            smallest = min(getattr(config, knob) for config in beyond)
            said.append(f"(it refused or failed at {knob} {smallest:,}, which the spec accepts: if it cannot build so large a pool, "
                        f"{option} N certifies it with at most N{' blocks' if knob == 'capacity' else ' tokens a block'})")
    if outcome.policy != "benefit" and any(explainable(outcome.policy, f) for f in outcome.findings):
        said.append("(--find-dialect searches spec/dialects.md for the variation points that would explain it)")
    return said


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


def build_report(adapter_spec: str, adapter: Adapter | BenefitAdapter | None, profile: str, seed_value: int, pins: Pins,
                 outcomes: list[Outcome], faults: list[Finding], directory: Path, searches: dict[str, Search] | None = None,
                 timeouts: tuple[float, float] = (REPLY_TIMEOUT, START_TIMEOUT), saved_in: Path | None = None) -> Report:
    """``adapter`` None: the implementation failed at its start, and ``faults`` says how. ``searches``:
    the dialect found for each policy that did not conform (--find-dialect). ``timeouts``: the
    reply and start deadlines the implementation was held to, which its replay commands keep.
    ``saved_in``: where the counterexamples are written, if not in ``directory``, where the report
    names them (failure_of)."""
    searches = searches or {}
    reached = Reproduction(adapter_spec, CANONICAL, *timeouts)
    verdicts = [
        PolicyVerdict(
            policy=outcome.policy,  # type: ignore[arg-type]
            dialect=in_catalogue_order(outcome.dialect),
            conforms=outcome.conforms,
            examples_per_second=outcome.examples_per_second,
            clauses=clauses_for(outcome),
            failures=[failure_of(replace(reached, dialect=outcome.dialect), outcome.policy, n, f, directory, saved_in)
                      for n, f in enumerate(outcome.findings, start=1)],
            behaviour=behaviour_of(outcome),
            found=None if outcome.policy not in searches else found_dialect(searches[outcome.policy]),
        )
        for outcome in outcomes
    ]
    identity = Identity(adapter_spec, "unknown", "unknown") if adapter is None else adapter.identity
    return Report(
        kvspec_version=version("kvspec"), spec_version=SPEC_VERSION, hypothesis_version=version("hypothesis"), adapter=adapter_spec,
        implementation={"name": identity.name, "language": identity.language, "version": identity.version},
        level="unknown" if adapter is None else adapter.level, profile=profile, seed=seed_value,
        pins={k: v for k, v in vars(pins).items() if v not in (None, False)}, conforms=not faults and all(v.conforms for v in verdicts),
        faults=[failure_of(reached, "implementation", n, f, directory, saved_in) for n, f in enumerate(faults, start=1)], policies=verdicts,
    )


def markdown(report: Report) -> str:
    impl = report.implementation
    lines = [
        f"# kvspec certification: {impl['name']} {impl['version']} ({impl['language']})", "",
        f"- verdict: **{'conforms' if report.conforms else 'does not conform'}**",
        f"- adapter: `{report.adapter}` (level {report.level})",
        f"- kvspec {report.kvspec_version}, spec {report.spec_version}, Hypothesis {report.hypothesis_version}, profile {report.profile}, "
        f"seed {report.seed}",
    ]
    knobs = {knob: value for knob, value in report.pins.items() if knob != "fitting_requests"}
    if knobs:
        held = ", ".join(f"{knob} = {value}" for knob, value in knobs.items())
        lines.append(f"- only configurations with {held} (the rest of the configuration space was not certified)")
    if report.pins.get("fitting_requests"):
        lines.append("- only requests of at most capacity blocks (--fitting-requests: longer ones were not certified)")
    lines.append("")
    if report.faults:
        lines += ["## The implementation failed outside the policies' runs", ""]
    for fault in report.faults:
        lines += ["```", fault.message, "```", ""]
    for verdict in report.policies:
        against = f" to the dialect {', '.join(verdict.dialect)}" if verdict.dialect else ""
        lines += [f"## {verdict.policy}: {'conforms' if verdict.conforms else 'does not conform'}{against}", "",
                  f"{verdict.examples_per_second:.1f} examples a second.", ""]
        if verdict.found is not None:
            lines += [found_line(verdict.found), ""]
        settings = sum(failure.configuration for failure in verdict.failures)
        if settings:
            lines += [f"- configurations: {plural(settings, 'finding')} (below)",
                      f"- behaviour, on the configurations both accept: {verdict.behaviour}", ""]
        lines += ["| clause | result |", "|---|---|"]
        lines += [f"| {clause} | {result} |" for clause, result in verdict.clauses.items()]
        for number, failure in enumerate(verdict.failures, start=1):
            fault = all(clause.startswith("PROTO-") for clause in failure.clauses)  # it failed, rather than answered otherwise
            kind = "Configuration finding" if failure.configuration else "Fault" if fault else "Divergence"
            lines += ["", f"### {kind} {number}", "", f"- clauses: {clause_line(failure)}"]
            if failure.clauses:
                step = "operation" if verdict.policy == "benefit" else "request"
                lines.append(f"- at: {'the configuration' if failure.request == 0 else f'{step} {failure.request}'}")
                if not fault:
                    lines += [f"- expected: `{failure.expected}`", f"- actual: `{failure.actual}`"]
                lines.append(f"- configuration: `{json.dumps(failure.config)}`")
            if failure.trace_file:
                lines += [f"- shrunk trace: [{failure.trace_file}]({failure.trace_file})", f"- replay it: `{failure.replay_command}`"]
            lines += ["", "```", failure.message, "", failure.steps, "```"]
        lines.append("")
    return "\n".join(lines)


def found_line(found: FoundDialect) -> str:
    """DIALECT-8, as the report says it."""
    cost = (f"{'found' if found.dialect else 'searched'} from {plural(found.failing_examples, 'failing example')} with "
            f"{plural(found.certifications, 'more certification')} in {found.seconds:.1f} s")
    unexplained = f"; but for {plural(len(found.unexplained), 'fault')} of its own, which no variation point explains" if found.unexplained else ""
    if found.dialect == []:
        return f"It conforms to the canonical spec, which was certified again ({cost})."
    if found.dialect is None and not found.evidence:
        ran = "did not run" if found.certifications == 0 else "stopped once the canonical spec was certified again"
        return f"The dialect search {ran}: {found.reason}."
    if found.dialect is None:
        return (f"The search found no set of variation points of spec/dialects.md that explains it ({found.reason}; {cost}; the search "
                f"is greedy, so one may exist that it did not reach{unexplained}); its first failure is where it departs from the spec.")
    agreed = "the one example" if found.examples_agreed == 1 else f"all {found.examples_agreed} examples"
    return (f"**Dialect found**: {', '.join(found.dialect)} (replacing {', '.join(found.replaces)}); it conforms to that dialect, "
            f"agreeing on {agreed} of its last certification ({cost}{unexplained}).")


def clause_line(failure: Failure) -> str:
    """The clauses shown broken, then those the difference is only consistent with."""
    if not failure.clauses:
        return "(none: the implementation broke the protocol)"
    shown = [c for c in failure.clauses if c not in failure.consistent_with]
    line = ", ".join(shown)
    if failure.consistent_with:
        line += f"{'; ' if shown else ''}consistent with {' or '.join(failure.consistent_with)}"
    return line


def write_report(report: Report, directory: Path) -> None:
    with written_whole(directory / "report.json") as temporary:
        write_text(temporary, model_json(report, indent=2) + "\n")
    with written_whole(directory / "report.md") as temporary:
        write_text(temporary, markdown(report))


def schema_texts() -> dict[str, str]:
    """spec/schemas/certification-report.schema.json."""
    return {"certification-report.schema.json": schema_text("certification-report.schema.json", TypeAdapter(Report))}
