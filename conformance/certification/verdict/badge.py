"""PROTO-32: a certification report's verdict as a shields.io endpoint badge, the JSON an
implementer commits to their repository for https://img.shields.io/endpoint?url=... to draw
(schema: spec/schemas/badge.schema.json). Shields refuses a badge that is not its format
(services/endpoint-common.js:19-40, badges/shields commit 07038988b392: schemaVersion 1, label a
string, message a non-empty string, color a string, no other key)."""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.verdict.report import PolicyVerdict, Report
from kvspec.conformance.core.output import plural
from kvspec.reference import SPEC_VERSION, KvspecError
from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS

Colour = Literal["brightgreen", "yellow", "red"]
CONFORMS = "conforms"


class Badge(BaseModel):
    """A shields.io endpoint badge (https://shields.io/badges/endpoint-badge): kvspec's verdict on one certification report (PROTO-32)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    schemaVersion: Literal[1] = Field(description="the endpoint format's version: always 1")
    label: Literal["kvspec"] = Field(description="the badge's left text")
    message: str = Field(min_length=1, description="the badge's right text: each policy's verdict, the policies with the same one "
                         "together in the report's order (\"s3fifo, lru conform\", \"lru: dialect vllm\", \"s3fifo: does not conform\"), "
                         "then the faults outside every policy's run, if any")
    color: Colour = Field(description="brightgreen: every policy conforms to the canonical spec, and nothing failed outside them; "
                          "yellow: every policy conforms, one or more only to a dialect (certified against it, or found for it by "
                          "--find-dialect); red: anything else, no policy certified included")


def read_report(given: Path) -> Report:
    """REPORT as `kvspec badge` takes it: a folder of `kvspec certify --report`, or its report.json.
    PROTO-32: one this kvspec cannot vouch for is refused: not there, not matching its schema, of
    another spec version (its verdict is not this spec's), or naming a variation point that
    spec/dialects.md no longer has."""
    path = given / "report.json" if given.is_dir() else given
    try:
        report = Report.model_validate_json(path.read_bytes())
    except OSError as error:
        raise KvspecError(f"{path}: no certification report there ({error.strerror}): give a folder of kvspec certify --report, "
                          "or its report.json") from None
    except ValueError as error:
        raise KvspecError(f"{path}: not a certification report of this kvspec (spec/schemas/certification-report.schema.json): "
                          f"{one_line(error)}") from None
    if report.spec_version != SPEC_VERSION:
        raise KvspecError(f"{path}: certifies against spec {report.spec_version}, and this kvspec's is {SPEC_VERSION}: certify it again")
    unknown = [v for verdict in report.policies for v in dialects_of(verdict) if v not in VARIATIONS]
    if unknown:
        raise KvspecError(f"{path}: names the variation point {unknown[0]!r}, which spec/dialects.md does not have: certify it again")
    return report


def one_line(error: ValueError) -> str:
    """pydantic's first error as one line: the field and what is wrong with it."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the whole file)"
        return f"{where}: {first['msg']}"
    return str(error).splitlines()[0]


def dialects_of(verdict: PolicyVerdict) -> list[str]:
    return [*verdict.dialect, *(verdict.found.dialect or [] if verdict.found else [])]


def badge(report: Report) -> Badge:
    """PROTO-32: each policy's verdict, those with the same one together; then the faults outside
    them. The colour is that of the worst."""
    verdicts = [verdict_of(verdict) for verdict in report.policies]
    groups: dict[str, list[str]] = {}
    for verdict, said in zip(report.policies, verdicts, strict=True):
        groups.setdefault(said, []).append(f"{verdict.policy} in flight" if verdict.in_flight else verdict.policy)
    parts = [together(policies, said) for said, policies in groups.items()]
    faults = plural(len(report.faults), "fault")
    if report.faults:
        parts.append(faults if parts else f"does not conform ({faults})")
    if not verdicts or report.faults or any(said.startswith("does not conform") for said in verdicts):
        colour: Colour = "red"
    else:
        colour = "brightgreen" if all(said == CONFORMS for said in verdicts) else "yellow"
    return Badge(schemaVersion=1, label="kvspec", message="; ".join(parts) or "no policy certified", color=colour)


def together(policies: list[str], said: str) -> str:
    """Policies with one verdict: "s3fifo, lru conform", "lru conforms", "lru, fifo: dialect sglang"."""
    if said == CONFORMS:
        return f"{', '.join(policies)} {'conform' if len(policies) > 1 else CONFORMS}"
    return f"{', '.join(policies)}: {said}"


def verdict_of(verdict: PolicyVerdict) -> str:
    """One policy's verdict: conforms (to the canonical spec), the dialect it conforms to (the one
    certified against, else the one --find-dialect found for it, DIALECT-8, but for no fault set
    aside), or does not conform (to the dialect certified against, if any). A search that found the
    canonical spec (it conformed when certified again) leaves the verdict as it was."""
    if verdict.conforms:
        return f"dialect {dialect_name(verdict.policy, verdict.dialect)}" if verdict.dialect else CONFORMS
    found = verdict.found
    if found is not None and found.dialect and not found.unexplained:
        return f"dialect {dialect_name(verdict.policy, found.dialect)}"
    return "does not conform" + (f" to dialect {dialect_name(verdict.policy, verdict.dialect)}" if verdict.dialect else "")


def dialect_name(policy: str, variations: list[str]) -> str:
    """The first name spec/dialects.md gives these variation points of ``policy``; where none
    does, the variation points themselves."""
    named = [name for name, policies in KNOWN_DIALECTS.items() if policy in policies and set(policies[policy]) == set(variations)]
    return named[0] if named else " + ".join(variations)


def schema_texts() -> dict[str, str]:
    """spec/schemas/badge.schema.json."""
    return {"badge.schema.json": schema_text("badge.schema.json", TypeAdapter(Badge))}
