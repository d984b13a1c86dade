"""A campaign of certifications (each a job.py Certification, as `kvspec certify` runs it):
several implementations, each certified against several dialects at several seeds, with one
report (JSON, whose schema is spec/schemas/campaign-report.schema.json, and a Markdown summary)
beside each certification's own."""

import json
import os
import re
import shutil
import signal
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from kvspec.adapters import REPLY_TIMEOUT, START_TIMEOUT, Implementation
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.job import AT_START, Certification, Certified, verdict_of
from kvspec.conformance.certification.verdict.rendering import write_report
from kvspec.conformance.certification.verdict.report import Report
from kvspec.conformance.core.output import INTERRUPTIONS, check_folder, model_json, refused, write_text
from kvspec.conformance.core.workloads import Pins
from kvspec.reference import SPEC_VERSION, KvspecError
from kvspec.reference.constants import AnyPolicyName
from kvspec.reference.dialects import KNOWN_DIALECTS, VARIATIONS

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
Profile = Literal["quick", "thorough"]
T = TypeVar("T")
CAMPAIGN_BYTES = 16 * 2**20  # a campaign file is read whole, never more than this (50,000 implementations take about 3 MB)


def each_once(values: list[T]) -> list[T]:
    """Each seed, dialect, policy or variation point once: one given twice would be certified twice into one folder."""
    seen: set[T] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is given twice")
        seen.add(value)
    return values


Distinct = Annotated[list[T], AfterValidator(each_once)]


class Settings(BaseModel):
    """What a campaign says for every implementation, and each implementation may say for itself.
    Strict: a value of the wrong type is refused, never converted (not "0" for 0, nor true for 1)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    profile: Profile | None = Field(None, description="quick or thorough (default quick)")
    seeds: Distinct[int] | None = Field(None, min_length=1, description="the Hypothesis seeds, each a certification (default [0])")
    dialects: Distinct[str] | None = Field(None, min_length=1, description="canonical or a known dialect (spec/dialects.md), each a "
                                       "certification (default [\"canonical\"])")
    policies: Distinct[AnyPolicyName] | None = Field(None, min_length=1, description="the policies to certify (default: every policy the "
                                              "adapter offers that the dialect has)")
    find_dialect: bool | None = Field(None, description="where a policy does not conform, search for its dialect (DIALECT-8; default false)")


class Entry(Settings):
    """One implementation of a campaign: `kvspec certify`'s arguments, as its options name them."""

    name: str = Field(description="what the campaign calls it: its reports' folder")
    adapter: str = Field(description="the adapter spec (PROTO-18)")
    variations: Distinct[str] = Field(default_factory=list, description="variation points added to every dialect (--variation)")
    small_ratio: float | None = None
    max_freq: int | None = None
    max_capacity: int | None = None
    max_block_size: int | None = None
    fitting_requests: bool = False
    reply_timeout: float = REPLY_TIMEOUT
    start_timeout: float = START_TIMEOUT


class CampaignFile(Settings):
    """A campaign file (TOML, or JSON): its settings, and each implementation as [[implementations]]."""

    implementations: list[Entry] = Field(min_length=1)


@dataclass(frozen=True)
class Planned:
    """One certification of a campaign, and where its report goes (relative to the campaign's)."""

    implementation: str
    dialect: str
    folder: str
    certification: Certification


def read_campaign(path: Path) -> list[Planned]:
    """The certifications a campaign file names, in its order (each implementation's dialects,
    each at each seed), every argument checked before any is run, in time linear in the file."""
    campaign = parsed(path)
    names: set[str] = set()
    usable: set[tuple[str, float, float]] = set()
    for entry in campaign.implementations:
        check_entry(path, entry, names, usable)
    planned = [planned for entry in campaign.implementations for planned in plan(campaign, entry)]
    checked: set[tuple[tuple[str, ...], str | None, tuple[str, ...]]] = set()
    for each in planned:
        certification = each.certification
        asked = (certification.policies, certification.dialect, certification.variations)
        if asked in checked:
            continue
        try:
            certification.check_dialects()
        except KvspecError as error:
            raise KvspecError(f"{path}: implementation {each.implementation!r}, {each.dialect}: {error}") from None
        checked.add(asked)
    return planned


def parsed(path: Path) -> CampaignFile:
    """The campaign file, read with a bound, its syntax and each value's type checked."""
    try:
        with path.open("rb") as handle:
            data = handle.read(CAMPAIGN_BYTES + 1)
    except OSError as error:
        raise KvspecError(f"{path}: cannot read the campaign: {error.strerror}") from None
    if len(data) > CAMPAIGN_BYTES:
        raise KvspecError(f"{path}: not a campaign: larger than {CAMPAIGN_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8")
        given = json.loads(text, object_pairs_hook=unique_keys, parse_constant=not_json) if path.suffix == ".json" else tomllib.loads(text)
        return CampaignFile.model_validate(given)
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise KvspecError(f"{path}: not a campaign: line {line}: not UTF-8 (byte {data[error.start]:#04x})") from None
    except ValueError as error:  # tomllib's and json's errors, and pydantic's, are ValueErrors
        raise KvspecError(f"{path}: not a campaign: {problem(error)}") from None
    except RecursionError:
        raise KvspecError(f"{path}: not a campaign: nested too deeply") from None


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, each key once: json would keep the last of a key given twice, silently."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} is given twice")
        found[key] = value
    return found


def not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON number")


def problem(error: Exception) -> str:
    """What is wrong, in one line: where in the file (the key, or the line the syntax error is on) and what."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        # a validator's own words, without pydantic's "Value error, "
        said = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        value = first.get("input")
        given = f" (given {shown(value)})" if first["type"] != "missing" and isinstance(value, (str, int, float, bool)) else ""
        return f"{'.'.join(map(str, first['loc']))}: {said}{given}"
    return str(error).splitlines()[0]


def shown(value: str | int | float | bool) -> str:
    """A value as the file wrote it (TOML and JSON alike), cut short."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def check_entry(path: Path, entry: Entry, names: set[str], usable: set[tuple[str, float, float]]) -> None:
    """One implementation's arguments; ``names``, those before it; ``usable``, the adapters checked already."""
    where = f"{path}: implementation {entry.name!r}"
    if not NAME.fullmatch(entry.name):
        raise KvspecError(f"{where}: a name is letters, digits, '.', '_' and '-', one per implementation (it names the reports' folder)")
    if entry.name in names:
        raise KvspecError(f"{where}: the name is given twice; a name is one implementation's (it names the reports' folder)")
    names.add(entry.name)
    unknown = [d for d in entry.dialects or () if d != "canonical" and d not in KNOWN_DIALECTS]
    if unknown:
        raise KvspecError(f"{where}: DIALECT-5: unknown dialect {unknown[0]!r}; known: canonical, {', '.join(KNOWN_DIALECTS)}")
    unknown = [v for v in entry.variations if v not in VARIATIONS]
    if unknown:
        raise KvspecError(f"{where}: DIALECT-2: unknown variation point {unknown[0]!r}; known: {', '.join(VARIATIONS)}")
    adapter = (entry.adapter, entry.reply_timeout, entry.start_timeout)
    try:
        pins(entry).check()
        if adapter not in usable:
            Implementation(*adapter)  # a spec that names nothing usable, before any start
    except KvspecError as error:
        raise KvspecError(f"{where}: {error}") from None
    usable.add(adapter)


def pins(entry: Entry) -> Pins:
    return Pins(entry.small_ratio, entry.max_freq, entry.max_capacity, entry.max_block_size, entry.fitting_requests)


def plan(campaign: CampaignFile, entry: Entry) -> list[Planned]:
    """Each dialect at each seed: the implementation's setting, else the campaign's, else the default."""
    def setting(name: str, default: Any) -> Any:
        own = getattr(entry, name)
        return own if own is not None else getattr(campaign, name) if getattr(campaign, name) is not None else default

    planned, held = [], pins(entry)
    for dialect in setting("dialects", ["canonical"]):
        named = "+".join([dialect, *entry.variations])
        for seed in setting("seeds", [0]):
            certification = Certification(
                entry.adapter, tuple(setting("policies", ())), setting("profile", "quick"), seed, held,
                None if dialect == "canonical" else dialect, tuple(entry.variations), setting("find_dialect", False),
                entry.reply_timeout, entry.start_timeout, f"{entry.name}, {named}, seed {seed}", refused_as_fault=True)
            planned.append(Planned(entry.name, named, f"{entry.name}/{named}/seed-{seed}", certification))
    return planned


class CampaignEntry(BaseModel):
    """One certification of the campaign."""

    model_config = ConfigDict(strict=True, extra="forbid")

    implementation: str = Field(description="the implementation's name in the campaign file")
    dialect: str = Field(description="canonical or the known dialect certified against, with '+' and each variation point added")
    seed: int = Field(description="the Hypothesis seed")
    folder: str = Field(description="the folder of its report.json, report.md and counterexamples, relative to the campaign report's")
    report: Report = Field(description="its report, as report.json has it")


class CampaignReport(BaseModel):
    """campaign.json of `kvspec campaign`: every certification's report, in the campaign file's order."""

    model_config = ConfigDict(strict=True, extra="forbid")

    kvspec_version: str = Field(description="the version of kvspec that ran the campaign")
    spec_version: str = Field(description="the version of the spec it certifies against")
    hypothesis_version: str = Field(description="the version of Hypothesis that drew the examples")
    campaign: str = Field(description="the campaign file, as given")
    conforms: bool = Field(description="true when every certification conforms; kvspec then exits with status 0")
    certifications: list[CampaignEntry] = Field(description="each implementation's dialects, each at each seed, in the campaign file's order")


@contextmanager
def staged(target: Path, planned: list[Planned]) -> Iterator[Path]:
    """Before the first certification: every report's folder under ``target`` (--report) can be
    made, and is made in a hidden folder of the nearest folder of ``target`` that exists (so on its
    file system), where the reports are written; ``moved_into_place`` then moves them under
    ``target``. Whatever ends the block first (an error, an interruption) removes that folder:
    the reports are written whole or not at all."""
    for each in planned:
        check_folder(target / each.folder, "--report")
    for name in ("campaign.json", "campaign.md"):
        if (target / name).is_dir():
            raise refused("--report", target / name, "is a folder, not a file")
    real = Path(os.path.realpath(target))
    nearest = next(folder for folder in (real, *real.parents) if folder.is_dir())
    staging: Path | None = None
    try:
        with interruptions_deferred():  # one arriving as the folder is made would leave it: it interrupts once the try owns it
            try:
                staging = Path(tempfile.mkdtemp(prefix=".kvspec-campaign.", dir=nearest))
            except OSError as error:
                raise refused("--report", target, error.strerror or "cannot be written") from None
        for each in planned:
            try:
                (staging / each.folder).mkdir(parents=True)
            except OSError as error:  # a name too long for the file system, above all
                raise refused("--report", target / each.folder, error.strerror or "cannot be made") from None
        yield staging
    finally:
        if staging is not None:
            with interruptions_deferred():
                shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def interruptions_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait for the block to end, then interrupt as they would have. Handlers,
    not a signal mask: a mask holds only this thread, and a signal may be delivered to another."""
    received: list[int] = []
    handlers = {signum: signal.signal(signum, lambda signum, frame: received.append(signum)) for signum in INTERRUPTIONS}
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])


def moved_into_place(staging: Path, target: Path) -> None:
    """Every file written in ``staging`` moved to its place under ``target``, the campaign's own
    last (a reader who finds campaign.json finds every report), with SIGINT and SIGTERM held until
    the last is moved: an interruption then ends kvspec with every report in place."""
    with interruptions_deferred():
        files = [Path(root, name).relative_to(staging) for root, _, names in os.walk(staging) for name in names]
        for relative in sorted(files, key=lambda relative: len(relative.parts) == 1):
            destination = target / relative
            try:
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / relative, destination)
            except OSError as error:  # only if the folder changed under kvspec during the run
                raise refused("--report", destination, error.strerror or "cannot be written") from None


def write_campaign(path: Path, planned: list[Planned], found: list[Certified], folder: Path, staging: Path) -> CampaignReport:
    """Each certification's report in its folder under ``folder``, then campaign.json and campaign.md
    beside them: all written in ``staging`` (staged), then moved into place."""
    entries = []
    for plan_, certified in zip(planned, found, strict=True):
        verdict = verdict_of(plan_.certification, certified, folder / plan_.folder)
        write_report(verdict, staging / plan_.folder)
        entries.append(CampaignEntry(implementation=plan_.implementation, dialect=plan_.dialect, seed=plan_.certification.seed,
                                  folder=plan_.folder, report=verdict.report))
    campaign = CampaignReport(kvspec_version=version("kvspec"), spec_version=SPEC_VERSION, hypothesis_version=version("hypothesis"),
                              campaign=str(path), conforms=all(e.report.conforms for e in entries), certifications=entries)
    write_text(staging / "campaign.json", model_json(campaign, indent=2) + "\n")
    write_text(staging / "campaign.md", markdown(campaign))
    moved_into_place(staging, folder)
    return campaign


def without_policies(report: Report) -> str:
    """Why a certification has no policy's verdict: the implementation failed at its start, or does not
    offer the policies asked for (as `kvspec certify` would say it), or ended its worker process."""
    first = report.faults[0].message
    return "it failed at its start" if re.match(rf"[A-Z0-9-]+: at {AT_START}: ", first) else first


def verdict_text(report: Report) -> str:
    return "conforms" if report.conforms else "does not conform"


def markdown(campaign: CampaignReport) -> str:
    """One line per certification: its verdict, each policy's, and its report."""
    count = len(campaign.certifications)
    failing = sum(not entry.report.conforms for entry in campaign.certifications)
    lines = [f"# kvspec campaign: {campaign.campaign}", "",
             f"- verdict: **{'every certification conforms' if campaign.conforms else f'{failing} of {count} do not conform'}**",
             f"- kvspec {campaign.kvspec_version}, spec {campaign.spec_version}, Hypothesis {campaign.hypothesis_version}", "",
             "| implementation | dialect | seed | profile | verdict | policies | report |", "|---|---|---:|---|---|---|---|"]
    for entry in campaign.certifications:
        report = entry.report
        policies = (", ".join(f"{p.policy}{' in flight' if p.in_flight else ''} {'conforms' if p.conforms else 'fails'}" for p in report.policies)
                    or f"none ({without_policies(report)})".replace("|", "\\|"))
        lines.append(f"| {entry.implementation} | {entry.dialect} | {entry.seed} | {report.profile} | {verdict_text(report)} | {policies} "
                     f"| [{entry.folder}/report.md]({entry.folder}/report.md) |")
    return "\n".join(lines) + "\n"


def schema_texts() -> dict[str, str]:
    """spec/schemas/campaign-report.schema.json."""
    return {"campaign-report.schema.json": schema_text("campaign-report.schema.json", TypeAdapter(CampaignReport))}
