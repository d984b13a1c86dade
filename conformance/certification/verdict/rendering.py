"""The one place a verdict (report.py's CertificationVerdict) is rendered: on the console, as
report.md and as report.json, and written, with each shrunk counterexample, to the report's folder."""

import json
from dataclasses import replace
from pathlib import Path

from kvspec.conformance.certification.findings.divergence import Divergence, Finding, Outcome, configuration_fields
from kvspec.conformance.certification.verdict.report import CertificationVerdict, Failure, FoundDialect, PolicyVerdict, Report
from kvspec.conformance.certification.verdict.reproduction import Reproduction, trace_lines
from kvspec.conformance.core.output import model_json, plural, write_text, written_whole


def write_report(verdict: CertificationVerdict, directory: Path) -> None:
    """report.json, report.md and each counterexample the report names, in ``directory``."""
    texts = {**verdict.counterexamples, "report.json": json_text(verdict.report), "report.md": markdown(verdict.report)}
    for name, text in texts.items():
        with written_whole(directory / name) as temporary:
            write_text(temporary, text)


def json_text(report: Report) -> str:
    return model_json(report, indent=2) + "\n"


def console_text(verdict: CertificationVerdict) -> str:
    """The verdict, each policy's, and each shrunk counterexample, ready to paste (saved beside the report, if it was written)."""
    report = verdict.report
    held = "".join(f", {knob} {value}" for knob, value in report.pins.items())
    impl = report.implementation
    known = report.level != "unknown"  # the implementation said who it is before it failed, if it did
    who = f"{impl['name']} {impl['version']} ({impl['language']})" if known else report.adapter
    level = f", level {report.level}" if known else ""
    lines = [f"{who}: {conformance(report.conforms)} (profile {report.profile}, seed {report.seed}{level}{held})\n"]
    lines += [f"  {fault.message}\n" for fault in report.faults]
    for policy, outcome, hints in zip(report.policies, verdict.outcomes, verdict.hints, strict=True):
        lines += policy_lines(verdict, policy, outcome.findings, replace(verdict.reproduction, dialect=outcome.dialect))
        lines += [f"    {hint}\n" for hint in hints]
    return "".join(lines)


def nonconformance_text(outcome: Outcome, header: str, adapter_spec: str) -> str:
    """A policy that does not conform, as the pytest plugin fails its item: each finding, and its
    shrunk counterexample ready to paste."""
    reached = Reproduction(adapter_spec, outcome.dialect)
    findings = "".join(f"{finding.message}\n{counterexample(reached, finding, None)}" for finding in outcome.findings)
    return f"{outcome.policy}: DOES NOT CONFORM\n{header}\n{findings}"


def policy_lines(verdict: CertificationVerdict, policy: PolicyVerdict, findings: tuple[Finding, ...], reached: Reproduction) -> list[str]:
    against = f" to the dialect {', '.join(policy.dialect)}" if policy.dialect else ""
    rate = f"{policy.examples_per_second:.1f} examples/s"
    lines = [f"  {label(policy)}: {conformance(policy.conforms)}{against}{parts_of(policy)} ({rate})\n"]
    for failure, finding in zip(policy.failures, findings, strict=True):
        saved = None if verdict.directory is None or failure.trace_file is None else verdict.directory / failure.trace_file
        lines += [f"    {failure.message}\n", counterexample(reached, finding, saved)]
    if policy.found is not None:
        lines.append(f"    {found_line(policy.found)}\n".replace("**", ""))
    return lines


def conformance(conforms: bool) -> str:
    return "conforms" if conforms else "DOES NOT CONFORM"


def label(policy: PolicyVerdict) -> str:
    """A policy's verdict as the console and report.md name it: its requests in flight apart (spec/lifecycle.md)."""
    if not policy.in_flight:
        return policy.policy
    return f"{policy.policy}, requests in flight{' (the dialect --find-dialect found)' if policy.searched else ''}"


def parts_of(policy: PolicyVerdict) -> str:
    """A policy's verdict in its two parts, where configuration findings leave the behaviour certified on the others."""
    settings = sum(failure.configuration for failure in policy.failures)
    if not settings:
        return ""
    assert policy.behaviour is not None, "build_verdict says it; only an old report.json does not"
    behaviour = {"conforms": "conforms", "does not conform": "does not conform",
                 "not certified": "was not certified (no configuration was accepted by both)"}[policy.behaviour]
    return f": {plural(settings, 'configuration finding')}; the behaviour, on the configurations both accept, {behaviour}"


def counterexample(reproduction: Reproduction, finding: Finding, saved: Path | None) -> str:
    """The shrunk counterexample itself, ready to paste: the requests inside the command that
    replays them through the implementation, or the benefit operations as the protocol requests
    the implementation was sent. Hypothesis's own steps are left to report.md, except where they
    are all there is. ``saved``: where the report saved it, if it did."""
    divergence = finding.divergence
    if divergence is not None and divergence.benefit is None and divergence.request == 0:
        return ""  # a configuration, which the message names: there is no request to show
    if divergence is not None and divergence.lifecycle is not None and divergence.config is not None:
        operations = [lifecycle_request(operation) for operation in divergence.lifecycle]
        return session_text(divergence, {"cmd": "configure", "config": configuration_fields(divergence.config)}, operations, reproduction, saved)
    if divergence is None or (divergence.benefit is None and (divergence.config is None or not divergence.trace)):
        return "    shrunk steps:\n" + "".join(f"      {line}\n" for line in finding.steps.splitlines()) if finding.steps else ""
    if divergence.benefit is not None:
        configure = {"cmd": "configure_benefit", "config": divergence.benefit["config"]}
        return session_text(divergence, configure, divergence.benefit["operations"], reproduction, saved)
    command = reproduction.replay_command(divergence.config, saved or Path("-"))
    lines = [f"    {which_counterexample(divergence)}, {plural(len(divergence.trace), 'request')}; this replays it through the implementation:",
             ""]
    if saved is None:
        lines += [f"{command} <<'EOF'", *trace_lines(divergence.trace).splitlines(), "EOF"]
    else:
        lines += [command, "", *trace_lines(divergence.trace).splitlines()]
    return "\n".join([*lines, ""]) + "\n"


def session_text(divergence: Divergence, configure: dict[str, object], operations: list[dict[str, object]], reproduction: Reproduction,
                 saved: Path | None) -> str:
    """The session the implementation was sent (the benefit policy's operations, or the lifecycle's),
    ready for its stdin, and the command that replays it against the spec's answers."""
    session = [{"cmd": "start", "protocol": 1}, configure, *operations, {"cmd": "stop"}]
    lines = [f"    {which_counterexample(divergence)}, {plural(len(operations), 'operation')} after the configuration, as the "
             "protocol's requests (paste them into the implementation):", ""]
    lines += [json.dumps({"cmd": request["cmd"], "seq": seq, **request}, allow_nan=False) for seq, request in enumerate(session)]
    replay = (f"replay it against the spec's answers: {reproduction.verify_command(saved)}" if saved
              else "--report FOLDER saves it, with the spec's answers, as a fixture case that `kvspec fixtures verify` replays")
    return "\n".join([*lines, "", f"    {replay}", ""]) + "\n"


def lifecycle_request(operation: tuple[object, ...]) -> dict[str, object]:
    """PROTO-37 to PROTO-43: a lifecycle operation as its request carries it."""
    op, rid, *args = operation
    if op == "arrive":
        return {"cmd": op, "id": rid, "hash_ids": args[0], "input_length": args[1]}
    return {"cmd": op, "id": rid, "upto": args[0]} if op == "compute" else {"cmd": op, "id": rid}


def which_counterexample(divergence: Divergence) -> str:
    """What the requests shown are (PROTO-30): shrunk, unless the fault took a deadline to show, or
    the implementation failed one way and then another (PROTO-7)."""
    if getattr(divergence, "timed_out", False):
        return "the counterexample as it ran (not shrunk: each replay would wait out the deadline again)"
    if "PROTO-7" in divergence.clauses:
        return "the example that failed first (not deterministic, the implementation may answer it otherwise again)"
    return "the shrunk counterexample"


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
        lines += [f"## {label(verdict)}: {'conforms' if verdict.conforms else 'does not conform'}{against}", "",
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
                step = "operation" if verdict.policy == "benefit" or verdict.in_flight else "request"
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
