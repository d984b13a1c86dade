"""Golden fixtures (spec/fixtures.md section 1): the format, its JSON Schemas, and the corpus.

``generate`` takes every case of conformance/fixture_cases.py (section 2) and writes the cases
and the manifest byte for byte the same on every run; conformance/fixture_runner.py (section 3)
replays a corpus through any adapter, with nothing but the JSON.
"""

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo, field_validator

from kvspec.adapters.protocol import Blocks, Count, Entries, HashId, WireBenefitConfig, WireConfig, schema_text
from kvspec.reference import SPEC_VERSION, KvspecError
from kvspec.reference.validation import INT64_MAX

FORMAT = "kvspec-fixture/1"  # FIX-1
NAN, INF = float("nan"), float("inf")
Json = dict[str, Any]


def canonical(value: object) -> str:
    """FIX-3: the bytes a case is hashed and written as."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def case_id(case: Json) -> str:
    """FIX-3: the sha256 of the case without its id, first 16 hex digits, prefixed by its kind."""
    body = {key: value for key, value in case.items() if key != "id"}
    return f"{case['kind']}-{hashlib.sha256(canonical(body).encode()).hexdigest()[:16]}"


# The format, as JSON Schemas (spec/schemas/fixture-*.schema.json) -------------------------------


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Snapshot(Strict):
    """PROTO-12's shapes: every queue head first, S3FIFO's with freqs."""

    small: Entries
    main: Entries
    ghost: list[HashId]


class ReplayExpect(Strict):
    hit_tokens: Count
    resident_count: Count
    snapshot: Snapshot | None = Field(None, description="at the state level only")


class ReplayStep(Strict):
    hash_ids: Blocks
    input_length: Annotated[int, Field(ge=1, le=INT64_MAX)]
    expect: ReplayExpect


class Totals(Strict):
    total_hit_tokens: Count
    total_prompt_tokens: Count
    final_cache_blocks: Count


class Header(Strict):
    format: Literal["kvspec-fixture/1"]
    id: Annotated[str, Field(pattern=r"^(replay|benefit|trace|comparison|prefix)-[0-9a-f]{16}$")]
    title: str
    provenance: str
    level: Literal["results", "state"]
    clauses: list[str]
    refused: str | None = Field(description="the clause that refuses the configuration, or null")


class ReplayCase(Header):
    """FIX-6."""

    kind: Literal["replay"]
    config: WireConfig
    requests: list[ReplayStep]
    totals: Totals | None


class BenefitStep(Strict):
    request: dict[str, Any] = Field(description="a protocol request (PROTO-21 to PROTO-27) without its seq: schemas/adapter/<cmd>-request")
    expect: dict[str, Any] = Field(description="the reply without its seq: schemas/adapter/decision-, victims-, cap_repair- or access-reply")
    state: dict[str, Any] | None = Field(None, description="at the state level: the benefit_state reply without its seq (PROTO-28)")


class BenefitCase(Header):
    """FIX-7."""

    kind: Literal["benefit"]
    config: WireBenefitConfig
    operations: list[BenefitStep]


class TraceCase(Header):
    """FIX-8."""

    kind: Literal["trace"]
    block_size: Annotated[int, Field(ge=1)]
    lines: list[str]
    gzip: bool
    expect: dict[str, Any] = Field(description="refused: the line and field; else requests, total_prompt_tokens, total_hit_tokens")


class ComparisonCase(Header):
    """FIX-9."""

    kind: Literal["comparison"]
    trace: str
    capacity_bytes: Count
    expect: dict[str, Any] = Field(description="accesses, the first eight (key, cold, restore, bytes), and the policy's and LRU's sides")


class PrefixCase(Header):
    """FIX-10."""

    kind: Literal["prefix"]
    model: dict[str, Any] = Field(description="BEN-MODEL-1's fields")
    block_size: Annotated[int, Field(ge=1)]
    capacity_bytes: Count
    requests: list[dict[str, Any]]
    expect: list[dict[str, Any]] = Field(description="BEN-PREFIX-7's measures for benefit, s3fifo, lru and fifo, in that order")


CASE: TypeAdapter[Any] = TypeAdapter(Annotated[ReplayCase | BenefitCase | TraceCase | ComparisonCase | PrefixCase, Field(discriminator="kind")])


CASE_PATH_PATTERN = r"^(replay|benefit|trace|comparison|prefix)/[a-z]+-[0-9a-f]{16}\.json$"  # FIX-1, FIX-3
CASE_PATH = re.compile(CASE_PATH_PATTERN)


class ManifestEntry(Strict):
    id: str
    kind: Literal["replay", "benefit", "trace", "comparison", "prefix"]
    path: Annotated[str, Field(pattern=CASE_PATH_PATTERN)]
    title: str
    clauses: list[str]
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]

    @field_validator("path")
    @classmethod
    def inside_the_corpus(cls, path: str, fields: ValidationInfo) -> str:
        """FIX-1: a case is at <kind>/<id>.json, never outside the corpus's folder."""
        expected = f"{fields.data.get('kind')}/{fields.data.get('id')}.json"
        if path != expected:
            raise ValueError(f"path {path!r} is not <kind>/<id>.json ({expected})")
        return path


class Manifest(Strict):
    """FIX-2."""

    format: Literal["kvspec-fixture/1"]
    spec_version: str
    cases: Annotated[list[ManifestEntry], Field(min_length=1)]  # FIX-2: a corpus of no case would pass anything


def schema_texts() -> dict[str, str]:
    """spec/schemas/fixture-case.schema.json and fixture-manifest.schema.json."""
    return {f"{name}.schema.json": schema_text(name, adapter) for name, adapter in (("fixture-case", CASE), ("fixture-manifest", TypeAdapter(Manifest)))}


# The corpus (FIX-1 to FIX-5) --------------------------------------------------------------------


def cases() -> list[Json]:
    """Every case, with its id (FIX-3)."""
    from .fixture_cases import benefit_cases, comparison_cases, counterexample_cases, hunted_cases, prefix_cases, replay_cases, trace_cases

    every = (*replay_cases(), *hunted_cases(), *counterexample_cases(), *benefit_cases(), *trace_cases(), *comparison_cases(), *prefix_cases())
    return [{**case, "id": case_id(case)} for case in every]


def generate(directory: Path) -> list[Json]:
    """FIX-1, FIX-2, FIX-5: write every case and the manifest, replacing what a corpus there held
    (every file written whole); the manifest's entries."""
    from .output import written_whole

    listed = previous_corpus(directory)
    corpus = cases()
    ids = [case["id"] for case in corpus]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise KvspecError(f"FIX-3: two cases are the same case: {', '.join(duplicates)}")
    entries = []
    texts = {f"{case['kind']}/{case['id']}.json": canonical(case) for case in corpus}
    for kind in {case["kind"] for case in corpus}:
        (directory / kind).mkdir(parents=True, exist_ok=True)
    for retired in sorted(listed - texts.keys()):
        (directory / retired).unlink(missing_ok=True)
    for case in corpus:
        path = f"{case['kind']}/{case['id']}.json"
        with written_whole(directory / path) as temporary:
            temporary.write_text(texts[path], encoding="utf-8")
        entries.append({"id": case["id"], "kind": case["kind"], "path": path, "title": case["title"], "clauses": case["clauses"],
                        "sha256": hashlib.sha256(texts[path].encode()).hexdigest()})
    entries.sort(key=lambda entry: entry["path"])
    manifest = {"format": FORMAT, "spec_version": SPEC_VERSION, "cases": entries}
    with written_whole(directory / "manifest.json") as temporary:
        temporary.write_text(canonical(manifest), encoding="utf-8")
    return entries


def previous_corpus(directory: Path) -> set[str]:
    """The cases of the corpus already in ``directory``, which a new one replaces: those its
    manifest lists, and files named as cases are (an interrupted run writes its cases before its
    manifest). Anything else there is someone else's (a JSON file of another name, a manifest
    that is not one), and then nothing is written or deleted."""
    manifest = directory / "manifest.json"
    try:
        listed = {entry.path for entry in Manifest.model_validate_json(manifest.read_bytes()).cases} if manifest.exists() else set()
    except (OSError, ValidationError) as error:
        raise KvspecError(f"{manifest}: FIX-1: not a {FORMAT} manifest, so {directory} is not a corpus to regenerate "
                          f"({type(error).__name__}); give a new or empty folder, or the corpus itself") from None
    found = sorted(path.relative_to(directory).as_posix() for path in [*directory.glob("*.json"), *directory.glob("*/*.json")])
    foreign = [name for name in found if name not in listed and name != "manifest.json" and not CASE_PATH.match(name)]
    if foreign:
        raise KvspecError(f"{directory}: holds {foreign[0]}, which no manifest.json there lists: not a kvspec corpus to regenerate "
                          "(FIX-1); give a new or empty folder, or the corpus itself")
    return listed | {name for name in found if CASE_PATH.match(name)}


def bundled_corpus() -> Path:
    """The corpus installed with kvspec (the package kvspec.fixtures is spec/fixtures/)."""
    import kvspec.fixtures

    return Path(next(iter(kvspec.fixtures.__path__)))


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m kvspec.conformance.fixtures", description="Write the fixture format's JSON Schemas.")
    parser.add_argument("folder", type=Path, help="where to write fixture-case.schema.json and fixture-manifest.schema.json")
    folder = parser.parse_args(argv).folder
    for name, text in schema_texts().items():
        (folder / name).write_text(text, encoding="utf-8")
        print(folder / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
