"""PROTO-32: a certification report's verdict as a shields.io endpoint badge, the JSON an
implementer commits to their repository for https://img.shields.io/endpoint?url=... to draw
(schema: spec/schemas/badge.schema.json). Shields refuses a badge that is not its format
(services/endpoint-common.js:19-40, badges/shields commit 07038988b392: schemaVersion 1, label a
string, message a non-empty string, color a string, no other key)."""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.report import FoundDialect, PolicyVerdict, Report, plural
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
    """REPORT as `kvspec badge` takes it: a folder of `kvspec certify --report`, or its report.json;
    a report of another spec version is refused (PROTO-32: its verdict is not this spec's)."""
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
    """PROTO-32: the verdict of each policy; the colour of the worst."""
    verdicts = [(verdict.policy, verdict_of(verdict)) for verdict in report.policies]
    groups: dict[str, list[str]] = {}
    for policy, said in verdicts:
        groups.setdefault(said, []).append(policy)
    parts = [f"{', '.join(policies)} {'conform' if len(policies) > 1 else CONFORMS}" if said == CONFORMS else f"{', '.join(policies)}: {said}"
             for said, policies in groups.items()]
    if report.faults:
        parts.append(plural(len(report.faults), "fault") if parts else f"does not conform ({plural(len(report.faults), 'fault')})")
    if not parts:
        parts.append("no policy certified")
    if not verdicts or report.faults or any(said.startswith("does not conform") for _, said in verdicts):
        colour: Colour = "red"
    else:
        colour = "brightgreen" if all(said == CONFORMS for _, said in verdicts) else "yellow"
    return Badge(schemaVersion=1, label="kvspec", message="; ".join(parts), color=colour)


def verdict_of(verdict: PolicyVerdict) -> str:
    """One policy's verdict: conforms (to the canonical spec), the dialect it conforms to (the one
    certified against, else the one --find-dialect found, but for no fault it set aside), or does
    not conform (to the dialect certified against)."""
    if verdict.conforms:
        return f"dialect {dialect_name(verdict.policy, verdict.dialect)}" if verdict.dialect else CONFORMS
    if not verdict.dialect and explained(verdict.found):
        assert verdict.found is not None and verdict.found.dialect
        return f"dialect {dialect_name(verdict.policy, verdict.found.dialect)}"
    return "does not conform" + (f" to dialect {dialect_name(verdict.policy, verdict.dialect)}" if verdict.dialect else "")


def explained(found: FoundDialect | None) -> bool:
    """DIALECT-8: a dialect was found, under which the policy conforms, with no fault set aside."""
    return found is not None and bool(found.dialect) and not found.unexplained


def dialect_name(policy: str, variations: list[str]) -> str:
    """The first name spec/dialects.md gives these variation points of ``policy``; where none
    does, the variation points themselves."""
    named = [name for name, policies in KNOWN_DIALECTS.items() if policy in policies and set(policies[policy]) == set(variations)]
    return named[0] if named else " + ".join(variations)


def schema_texts() -> dict[str, str]:
    """spec/schemas/badge.schema.json."""
    return {"badge.schema.json": schema_text("badge.schema.json", TypeAdapter(Badge))}
