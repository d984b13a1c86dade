"""The certification report: JSON (schema: spec/schemas/certification-report.schema.json) and
Markdown, with each counterexample saved as a Mooncake trace that `kvspec replay` replays."""

import json
import shlex
from importlib.metadata import version
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.benefit import BenefitAdapter
from kvspec.adapters.interface import Adapter, AdapterConfig, Identity
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.certify import Finding, Outcome
from kvspec.conformance.certification.dialect_search import Search
from kvspec.conformance.certification.lockstep import Divergence
from kvspec.conformance.core.output import written_whole
from kvspec.conformance.core.workloads import Pins
from kvspec.conformance.fixtures.benefit_cases import benefit_case
from kvspec.conformance.fixtures.format import canonical
from kvspec.conformance.fixtures.recorded import adapter_name
from kvspec.reference import SPEC_VERSION
from kvspec.reference.constants import AnyPolicyName
from kvspec.reference.dialects import CANONICAL, VARIATIONS, Dialect, in_catalogue_order, replaced_clauses
from kvspec.reference.validation import INT64_MAX

# The clauses the certification machine checks (conformance/certification/lockstep.py and diagnosis.py cite
# each where a divergence names it); a policy's verdict covers the REPLAY clauses and its own.
CHECKED_CLAUSES = (
    "REPLAY-CONF-1", "REPLAY-CONF-2", "REPLAY-CONF-3", "REPLAY-QUEUE-1", "REPLAY-PREFIX-1", "REPLAY-PREFIX-2", "REPLAY-PREFIX-3",
    "REPLAY-HIT-1", "REPLAY-POLICY-1", "REPLAY-ACCESS-1", "REPLAY-RESULT-4", "S3-CONF-1", "S3-CONF-2", "S3-CONF-3", "S3-CONF-4",
    "S3-CONF-5", "S3-CONF-6", "S3-QUEUE-2", "S3-QUEUE-3", "S3-FREQ-1", "S3-FREQ-2", "S3-INV-1", "S3-INV-2", "S3-INV-3", "S3-ACCESS-1",
    "S3-ACCESS-2", "S3-ACCESS-3", "S3-ACCESS-4", "S3-ADMIT-S-1", "S3-ADMIT-S-2", "S3-ADMIT-S-3", "S3-ADMIT-S-4", "S3-ADMIT-M-1",
    "S3-ADMIT-M-2", "S3-ADMIT-M-3", "S3-ADMIT-M-4", "S3-GHOST-1", "S3-GHOST-2", "S3-GHOST-3", "S3-FINAL-1", "LRU-CAP-1", "LRU-ACCESS-1",
    "LRU-EVICT-1", "LRU-ADMIT-1", "FIFO-CAP-1", "FIFO-ACCESS-1", "FIFO-EVICT-1", "FIFO-ADMIT-1",
    # conformance/certification/benefit_machine.py and benefit_diagnosis.py
    "BEN-CONF-8", "BEN-ENTRY-1", "BEN-ADMIT-1", "BEN-ADMIT-2", "BEN-ADMIT-4", "BEN-ADMIT-5", "BEN-ADMIT-6", "BEN-ADMIT-7",
    "BEN-CLOCK-1", "BEN-CLOCK-2", "BEN-CLOCK-3", "BEN-CLOCK-4", "BEN-GHOST-3", "BEN-LEDGER-3", "BEN-HIT-1", "BEN-HIT-2", "BEN-MISS-1",
    "BEN-GRACE-1", "BEN-GRACE-2", "BEN-DECAY-1", "BEN-DECAY-2", "BEN-DECAY-3", "BEN-GHOST-1", "BEN-GHOST-2", "BEN-GHOST-4",
    "BEN-SCORE-4", "BEN-LEDGER-5", "BEN-ARITH-3", "BEN-CAP-1", "BEN-CAP-2", "BEN-CAP-3", "BEN-CAP-4", "BEN-CAP-5", "BEN-VICTIM-2",
    "BEN-VICTIM-3", "BEN-VICTIM-4", "BEN-VICTIM-5", "BEN-REMOVE-1",
)
Verdict = Literal["pass", "fail", "inconclusive"]
OWN_PREFIX = {"s3fifo": "S3-", "lru": "LRU-", "fifo": "FIFO-", "benefit": "BEN-"}


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
    expected: str = Field(description="what the spec gives at that request, as Python writes it (repr); empty for a failure outside "
                          "every example")
    actual: str = Field(description="what the implementation gave, as Python writes it (repr); empty for a failure outside every example")
    config: dict[str, str | int | float] | None = Field(description="the configuration of the shrunk counterexample (PROTO-7's fields, or "
                                                        "the benefit policy's PROTO-20 knobs), or null where none was built")
    trace_file: str | None = Field(description="the shrunk trace as Mooncake JSON lines, or the benefit policy's shrunk operations as a "
                                   "fixture case (spec/fixtures.md FIX-7), beside the report")
    replay_command: str | None = Field(description="the shrunk trace through the implementation in lockstep with the reference, or the "
                                       "operations' case through `kvspec fixtures verify`")
    steps: str = Field(description="the shrunk counterexample's steps as Hypothesis reported them")


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


def clauses_for(policy: str, conforms: bool, failed: tuple[str, ...], dialect: Dialect = CANONICAL) -> dict[str, Verdict]:
    """The clauses a policy's run checks: the replay's and its own, in ``dialect`` (DIALECT-2: its
    variation points' clauses in place of those they replace)."""
    replay = policy != "benefit"
    replaced = replaced_clauses(dialect)
    relevant = [c for c in CHECKED_CLAUSES if (c.startswith(OWN_PREFIX[policy]) or (replay and c.startswith("REPLAY-"))) and c not in replaced]
    relevant += [VARIATIONS[v].clause for v in in_catalogue_order(dialect)]
    return {clause: "pass" if conforms else "fail" if clause in failed else "inconclusive" for clause in relevant}


def trace_lines(trace: list[tuple[list[int], int]]) -> str:
    return "".join(
        json.dumps({"timestamp": 0, "input_length": length, "output_length": 0, "hash_ids": hashes}) + "\n" for hashes, length in trace
    )


def replay_command(adapter_spec: str, config: AdapterConfig, trace_file: Path) -> str:
    """The trace through the implementation in lockstep with the reference: it stops at the divergence."""
    words = ["kvspec", "replay", str(trace_file), "--adapter", adapter_spec, "--policy", config.policy, "--capacity", str(config.capacity),
             "--block-size", str(config.block_size)]
    if config.policy == "s3fifo":
        words += ["--small-ratio", repr(config.small_ratio), "--max-freq", str(config.max_freq)]
    return shlex.join(words)


def verify_command(adapter_spec: str, case_file: Path) -> str:
    """The benefit operations' case through the implementation: `kvspec fixtures verify` replays it."""
    return shlex.join(["kvspec", "fixtures", "verify", str(case_file), "--adapter", adapter_spec])


def counterexample_file(directory: Path, policy: str, number: int, divergence: Divergence) -> Path:
    """Where the report saves a finding's shrunk counterexample: a fixture case for the benefit
    operations, a Mooncake trace for the requests."""
    return directory / f"{policy}-counterexample-{number}.{'json' if divergence.benefit is not None else 'jsonl'}"


def failure_of(adapter_spec: str, policy: str, number: int, finding: Finding, directory: Path, saved_in: Path | None = None) -> Failure:
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
        case = benefit_case(f"counterexample {adapter_name(adapter_spec)}", f"counterexample: {adapter_spec} ({divergence.clauses[0]})",
                            f"the shrunk counterexample of `kvspec certify --adapter {adapter_spec} --policy benefit`",
                            divergence.benefit["config"], divergence.benefit["operations"])
        with written_whole(written) as temporary:
            temporary.write_text(canonical(case))
        trace_file, command = path.name, verify_command(adapter_spec, path)
    elif divergence.config is not None and divergence.trace:
        with written_whole(written) as temporary:
            temporary.write_text(trace_lines(divergence.trace))
        trace_file, command = path.name, replay_command(adapter_spec, divergence.config, path)
    if divergence.benefit is not None:
        config = dict(divergence.benefit["config"])
    else:
        config = None if divergence.config is None else dict(vars(divergence.config))
    return Failure(clauses=list(divergence.clauses), consistent_with=list(divergence.consistent_with), message=finding.message,
                   request=divergence.request, expected=divergence.expected, actual=divergence.actual, config=config,
                   trace_file=trace_file, replay_command=command, steps=finding.steps)


def counterexample(adapter_spec: str, finding: Finding, saved: Path | None) -> str:
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
        lines = [f"    the shrunk counterexample, {plural(len(operations), 'operation')} after the configuration, as the protocol's "
                 "requests (paste them into the implementation):", ""]
        lines += [json.dumps({"cmd": request["cmd"], "seq": seq, **request}, allow_nan=False) for seq, request in enumerate(session)]
        replay = (f"replay it against the spec's answers: {verify_command(adapter_spec, saved)}" if saved
                  else "--report FOLDER saves it, with the spec's answers, as a fixture case that `kvspec fixtures verify` replays")
        return "\n".join([*lines, "", f"    {replay}", ""]) + "\n"
    command = replay_command(adapter_spec, divergence.config, saved or Path("-"))
    lines = [f"    the shrunk counterexample, {plural(len(divergence.trace), 'request')}; this replays it through the implementation:", ""]
    if saved is None:
        lines += [f"{command} <<'EOF'", *trace_lines(divergence.trace).splitlines(), "EOF"]
    else:
        lines += [command, "", *trace_lines(divergence.trace).splitlines()]
    return "\n".join([*lines, ""]) + "\n"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def shown_broken(outcome: Outcome) -> tuple[str, ...]:
    """The clauses a finding shows broken; one only consistent with a difference stays inconclusive."""
    return tuple(c for f in outcome.findings if f.divergence for c in f.divergence.clauses if c not in f.divergence.consistent_with)


def found_dialect(search: Search) -> FoundDialect:
    return FoundDialect(dialect=None if search.dialect is None else in_catalogue_order(search.dialect),
                        replaces=[] if search.dialect is None else replaced_clauses(search.dialect), failing_examples=len(search.evidence),
                        examples_agreed=0 if search.dialect is None else search.outcome.examples,
                        certifications=search.certifications, seconds=round(search.seconds, 1))


def build_report(adapter_spec: str, adapter: Adapter | BenefitAdapter | None, profile: str, seed_value: int, pins: Pins,
                 outcomes: list[Outcome], faults: list[Finding], directory: Path, searches: dict[str, Search] | None = None,
                 saved_in: Path | None = None) -> Report:
    """``adapter`` None: the implementation failed at its start, and ``faults`` says how. ``searches``:
    the dialect found for each policy that did not conform (--find-dialect). ``saved_in``: where the
    counterexamples are written, if not in ``directory``, where the report names them (failure_of)."""
    searches = searches or {}
    verdicts = [
        PolicyVerdict(
            policy=outcome.policy,  # type: ignore[arg-type]
            dialect=in_catalogue_order(outcome.dialect),
            conforms=outcome.conforms,
            examples_per_second=outcome.examples_per_second,
            clauses=clauses_for(outcome.policy, outcome.conforms, shown_broken(outcome), outcome.dialect),
            failures=[failure_of(adapter_spec, outcome.policy, n, f, directory, saved_in) for n, f in enumerate(outcome.findings, start=1)],
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
        faults=[failure_of(adapter_spec, "implementation", n, f, directory, saved_in) for n, f in enumerate(faults, start=1)], policies=verdicts,
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
        lines += ["| clause | result |", "|---|---|"]
        lines += [f"| {clause} | {result} |" for clause, result in verdict.clauses.items()]
        for number, failure in enumerate(verdict.failures, start=1):
            fault = all(clause.startswith("PROTO-") for clause in failure.clauses)  # it failed, rather than answered otherwise
            lines += ["", f"### {'Fault' if fault else 'Divergence'} {number}", "", f"- clauses: {clause_line(failure)}"]
            if failure.clauses:
                step = "operation" if verdict.policy == "benefit" else "request"
                lines.append(f"- at: {'the configuration' if failure.request == 0 else f'{step} {failure.request}'}")
                if not fault:
                    lines += [f"- expected: `{failure.expected}`", f"- actual: `{failure.actual}`"]
                lines.append(f"- configuration: `{failure.config}`")
            if failure.trace_file:
                lines += [f"- shrunk trace: [{failure.trace_file}]({failure.trace_file})", f"- replay it: `{failure.replay_command}`"]
            lines += ["", "```", failure.message, "", failure.steps, "```"]
        lines.append("")
    return "\n".join(lines)


def found_line(found: FoundDialect) -> str:
    """DIALECT-8, as the report says it."""
    cost = (f"{'found' if found.dialect else 'searched'} from {plural(found.failing_examples, 'failing example')} with "
            f"{plural(found.certifications, 'more certification')} in {found.seconds:.1f} s")
    if found.dialect == []:
        return f"It conforms to the canonical spec, which was certified again ({cost})."
    if found.dialect is None:
        return (f"The search found no set of variation points of spec/dialects.md that explains it ({cost}; the search is greedy, so "
                "one may exist that it did not reach); its first failure is where it departs from the spec.")
    return (f"**Dialect found**: {', '.join(found.dialect)} (replacing {', '.join(found.replaces)}); it conforms to that dialect, "
            f"agreeing on all {found.examples_agreed} examples of its last certification ({cost}).")


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
        temporary.write_text(report.model_dump_json(indent=2) + "\n")
    with written_whole(directory / "report.md") as temporary:
        temporary.write_text(markdown(report))


def schema_texts() -> dict[str, str]:
    """spec/schemas/certification-report.schema.json."""
    return {"certification-report.schema.json": schema_text("certification-report.schema.json", TypeAdapter(Report))}
