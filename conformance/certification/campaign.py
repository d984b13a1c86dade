"""One certification as `kvspec certify` runs it, as a job that a worker runs and sends back
(conformance/core/parallel.py), and a campaign of them: several implementations, each certified
against several dialects at several seeds, with one report (JSON, whose schema is
spec/schemas/campaign-report.schema.json, and a Markdown summary) beside each certification's own."""

import copyreg
import json
import re
import threading
import tomllib
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from kvspec.adapters import REPLY_TIMEOUT, START_TIMEOUT, Implementation, Started
from kvspec.adapters.interface import AdapterFailure, Identity
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.certify import Finding, Outcome, certify_policy
from kvspec.conformance.certification.dialect_search import Search, find_dialect
from kvspec.conformance.certification.faults import Fault, Location
from kvspec.conformance.certification.lockstep import Divergence
from kvspec.conformance.certification.report import Report, build_report, write_report
from kvspec.conformance.core.output import model_json, write_text, written_whole
from kvspec.conformance.core.workloads import Pins
from kvspec.reference import ALL_POLICIES, SPEC_VERSION, KvspecError
from kvspec.reference.constants import AnyPolicyName
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS, Dialect, dialect_for


def rebuilt(kind: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """A finding's exception, as a worker sent it."""
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


def exception_state(error: BaseException) -> tuple[Any, ...]:
    return rebuilt, (type(error), error.args, vars(error))


# A finding's Divergence (or Fault) takes other arguments than pickle gives it back (its message):
# a worker sends it as its fields.
for kind in (Divergence, Fault):
    copyreg.pickle(kind, exception_state)  # type: ignore[arg-type]

# Hypothesis's engine and global_constants_only are not for threads side by side: a worker with
# several threads (a Dask worker's) runs its certifications one at a time.
ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Certified:
    """What one certification found: who the implementation said it is (None where it failed at its
    start), each policy's outcome, the faults outside them and the dialect found for each policy
    that did not conform (--find-dialect)."""

    identity: Identity | None
    level: str
    outcomes: tuple[Outcome, ...]
    faults: tuple[Finding, ...]
    searches: dict[str, Search]

    @property
    def conforms(self) -> bool:
        return not self.faults and all(outcome.conforms for outcome in self.outcomes)


@dataclass(frozen=True)
class Certification:
    """`kvspec certify` with these arguments, as a job: the adapter started where it runs."""

    adapter: str
    policies: tuple[str, ...] = ()  # none: every policy the adapter offers (that the dialect has)
    profile: str = "quick"
    seed: int = 0
    pins: Pins = Pins()
    dialect: str | None = None
    variations: tuple[str, ...] = ()
    find_dialect: bool = False
    reply_timeout: float = REPLY_TIMEOUT
    start_timeout: float = START_TIMEOUT
    label: str = ""
    refused_as_fault: bool = False  # a campaign's: the policies asked for not offered, a fault in its report, not kvspec's error

    def __call__(self) -> Certified:
        with ONE_AT_A_TIME:
            try:
                return self.run()
            except KvspecError as error:  # in a campaign, which of its certifications
                raise KvspecError(f"{self.label}: {error}" if self.label else str(error)) from None

    def run(self) -> Certified:
        implementation = Implementation(self.adapter, self.reply_timeout, self.start_timeout)
        try:
            adapter = implementation.start()
        except AdapterFailure as failure:
            return Certified(None, "unknown", (), (process_fault(failure, "its start"),), {})
        try:
            outcomes, searches = self.certify(implementation, adapter)
        except Refused as refusal:
            if not self.refused_as_fault:
                raise
            return Certified(adapter.identity, adapter.level, (), (Finding(str(refusal), "", None),), {})
        faults = []
        try:
            implementation.close()
        except AdapterFailure as failure:
            faults.append(process_fault(failure, "its stop"))
        return Certified(adapter.identity, adapter.level, tuple(outcomes), tuple(faults), searches)

    def certify(self, implementation: Implementation, adapter: Started) -> tuple[list[Outcome], dict[str, Search]]:
        """Each policy asked for (PROTO-6), against its dialect (DIALECT-7), and with --find-dialect
        the dialect of each that does not conform (DIALECT-8)."""
        offered = adapter.policies
        unoffered = [policy for policy in self.policies if policy not in offered]
        policies = list(self.policies) or [p for p in ALL_POLICIES if p in offered and self.has_dialect(p)]
        try:
            if unoffered:
                raise Refused(f"{self.adapter} implements {', '.join(offered)}, not {', '.join(unoffered)}")
            if not policies:
                raise Refused(f"{self.adapter} implements {', '.join(offered)}, and the dialect asked for has none of them")
            dialects = self.dialects(policies)
        except KvspecError:
            close_quietly(implementation)
            raise
        outcomes, searches = [], {}
        for policy in policies:
            outcome = certify_policy(implementation, policy, self.profile, self.seed, self.pins, dialects[policy])
            outcomes.append(outcome)
            if self.find_dialect and not outcome.conforms and policy != "benefit":
                again = partial(certify_policy, implementation, policy, self.profile, self.seed, self.pins)  # (dialect, failed_at)
                searches[policy] = find_dialect(implementation, policy, outcome, again)
        return outcomes, searches

    def dialects(self, policies: list[str]) -> dict[str, Dialect]:
        """Each policy's dialect; DIALECT-2, DIALECT-5: a ConfigError for a policy the dialect asked for does not have."""
        given = self.dialect is not None or bool(self.variations)
        return {policy: dialect_for(policy, self.dialect, self.variations) if given else CANONICAL for policy in policies}

    def check_dialects(self) -> None:
        """What is known of the dialects before the implementation starts: each policy named has
        the dialect asked for; without policies named, the dialect has one."""
        policies = list(self.policies) or [p for p in ALL_POLICIES if self.has_dialect(p)]
        if not policies:
            raise KvspecError("DIALECT-2: the dialect asked for has no policy")
        self.dialects(policies)

    def has_dialect(self, policy: str) -> bool:
        """Whether the dialect asked for has ``policy``: without policies named, those certified are
        those it has (as `kvspec sweep` sweeps them)."""
        if self.dialect is not None and policy not in KNOWN_DIALECTS[self.dialect]:
            return False
        return all(policy in VARIATIONS[v].policies for v in self.variations)


class Refused(KvspecError):
    """The implementation does not offer the policies asked for (PROTO-6): known once it has started."""


def process_fault(failure: AdapterFailure, when: str) -> Finding:
    """A failure outside every example: at the implementation's start or stop (PROTO-13, PROTO-15)."""
    fault = Fault(failure, Location(f"at {when}"))
    return Finding(str(fault), "", fault)


def close_quietly(implementation: Implementation) -> None:
    """Stop the implementation when kvspec gives up for a reason of its own."""
    try:
        implementation.close()
    except AdapterFailure:
        pass


def report_of(certification: Certification, certified: Certified, directory: Path) -> Report:
    """The certification's report, each counterexample saved in ``directory`` (where the report goes)."""
    report = build_report(certification.adapter, None, certification.profile, certification.seed, certification.pins,
                          list(certified.outcomes), list(certified.faults), directory, certified.searches,
                          (certification.reply_timeout, certification.start_timeout))
    if certified.identity is None:
        return report
    identity = certified.identity
    return report.model_copy(update={"implementation": {"name": identity.name, "language": identity.language, "version": identity.version},
                                     "level": certified.level})


# A campaign ------------------------------------------------------------------------------------

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
Profile = Literal["quick", "thorough"]
T = TypeVar("T")


def each_once(values: list[T]) -> list[T]:
    """Each seed, dialect, policy or variation point once: one given twice would be certified twice into one folder."""
    repeated = [value for value in values if values.count(value) > 1]
    if repeated:
        raise ValueError(f"{repeated[0]!r} is given twice")
    return values


Distinct = Annotated[list[T], AfterValidator(each_once)]


class Settings(BaseModel):
    """What a campaign says for every implementation, and each implementation may say for itself."""

    model_config = ConfigDict(extra="forbid")

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
    each at each seed), every argument checked before any is run."""
    try:
        text = path.read_text(encoding="utf-8")
        given = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        campaign = CampaignFile.model_validate(given)
    except OSError as error:
        raise KvspecError(f"{path}: cannot read the campaign: {error.strerror}") from None
    except (UnicodeDecodeError, ValueError) as error:  # tomllib's and json's errors, and pydantic's, are ValueErrors
        raise KvspecError(f"{path}: not a campaign: {problem(error)}") from None
    except RecursionError:
        raise KvspecError(f"{path}: not a campaign: nested too deeply") from None
    names = [entry.name for entry in campaign.implementations]
    for entry in campaign.implementations:
        check_entry(path, entry, names)
    planned = [planned for entry in campaign.implementations for planned in plan(campaign, entry)]
    for each in planned:
        try:
            each.certification.check_dialects()
        except KvspecError as error:
            raise KvspecError(f"{path}: implementation {each.implementation!r}, {each.dialect}: {error}") from None
    return planned


def problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        # a validator's own words, without pydantic's "Value error, "
        said = str(first["ctx"]["error"]) if first["type"] == "value_error" else first["msg"]
        return f"{'.'.join(map(str, first['loc']))}: {said}"
    return str(error).splitlines()[0]


def check_entry(path: Path, entry: Entry, names: list[str]) -> None:
    where = f"{path}: implementation {entry.name!r}"
    if not NAME.fullmatch(entry.name) or names.count(entry.name) > 1:
        raise KvspecError(f"{where}: a name is letters, digits, '.', '_' and '-', one per implementation (it names the reports' folder)")
    unknown = [d for d in entry.dialects or () if d != "canonical" and d not in KNOWN_DIALECTS]
    if unknown:
        raise KvspecError(f"{where}: DIALECT-5: unknown dialect {unknown[0]!r}; known: canonical, {', '.join(KNOWN_DIALECTS)}")
    unknown = [v for v in entry.variations if v not in VARIATIONS]
    if unknown:
        raise KvspecError(f"{where}: DIALECT-2: unknown variation point {unknown[0]!r}; known: {', '.join(VARIATIONS)}")
    try:
        pins(entry).check()
        Implementation(entry.adapter, entry.reply_timeout, entry.start_timeout)  # a spec that names nothing usable, before any start
    except KvspecError as error:
        raise KvspecError(f"{where}: {error}") from None


def pins(entry: Entry) -> Pins:
    return Pins(entry.small_ratio, entry.max_freq, entry.max_capacity, entry.max_block_size, entry.fitting_requests)


def plan(campaign: CampaignFile, entry: Entry) -> list[Planned]:
    """Each dialect at each seed: the implementation's setting, else the campaign's, else the default."""
    def setting(name: str, default: Any) -> Any:
        own = getattr(entry, name)
        return own if own is not None else getattr(campaign, name) if getattr(campaign, name) is not None else default

    planned = []
    for dialect in setting("dialects", ["canonical"]):
        named = "+".join([dialect, *entry.variations])
        for seed in setting("seeds", [0]):
            certification = Certification(
                entry.adapter, tuple(setting("policies", ())), setting("profile", "quick"), seed, pins(entry),
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


def write_campaign(path: Path, planned: list[Planned], found: list[Certified], folder: Path) -> CampaignReport:
    """Each certification's report in its folder under ``folder``, then campaign.json and campaign.md beside them."""
    entries = []
    for plan_, certified in zip(planned, found, strict=True):
        directory = folder / plan_.folder
        directory.mkdir(parents=True, exist_ok=True)
        report = report_of(plan_.certification, certified, directory)
        write_report(report, directory)
        entries.append(CampaignEntry(implementation=plan_.implementation, dialect=plan_.dialect, seed=plan_.certification.seed,
                                  folder=plan_.folder, report=report))
    campaign = CampaignReport(kvspec_version=version("kvspec"), spec_version=SPEC_VERSION, hypothesis_version=version("hypothesis"),
                              campaign=str(path), conforms=all(e.report.conforms for e in entries), certifications=entries)
    with written_whole(folder / "campaign.json") as temporary:
        write_text(temporary, model_json(campaign, indent=2) + "\n")
    with written_whole(folder / "campaign.md") as temporary:
        write_text(temporary, markdown(campaign))
    return campaign


def without_policies(report: Report) -> str:
    """Why a certification has no policy's verdict: the implementation failed at its start, or does not
    offer the policies asked for (as `kvspec certify` would say it)."""
    return "it failed at its start" if report.level == "unknown" else report.faults[0].message


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
        policies = (", ".join(f"{p.policy} {'conforms' if p.conforms else 'fails'}" for p in report.policies)
                    or f"none ({without_policies(report)})".replace("|", "\\|"))
        lines.append(f"| {entry.implementation} | {entry.dialect} | {entry.seed} | {report.profile} | {verdict_text(report)} | {policies} "
                     f"| [{entry.folder}/report.md]({entry.folder}/report.md) |")
    return "\n".join(lines) + "\n"


def schema_texts() -> dict[str, str]:
    """spec/schemas/campaign-report.schema.json."""
    return {"campaign-report.schema.json": schema_text("campaign-report.schema.json", TypeAdapter(CampaignReport))}
