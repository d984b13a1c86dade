"""`kvspec replay --adapter --keep-going`: an implementation and the reference in lockstep past
every divergence, and how far apart they end (docs/certification.md, "Past the first divergence";
schema: spec/schemas/replay-divergences.schema.json).

Until they first disagree, KeepGoing checks everything a Lockstep checks, and that first
divergence is diagnosed as a Lockstep diagnoses it. From then on each cache replays from its own
state, the implementation never reset to the reference's: the two are compared on what each
gives, its hit tokens and the resident count after each request, and each request on which they
differ is a divergence of its own."""

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from kvspec.adapters.interface import Adapter, AdapterConfig
from kvspec.adapters.protocol import schema_text
from kvspec.conformance.certification.block.lockstep import Lockstep
from kvspec.conformance.certification.findings.divergence import Divergence
from kvspec.reference.dialects import Dialect
from kvspec.reference.validation import INT64_MAX

SCHEMA = "replay-divergences.schema.json"


class Pair(BaseModel):
    """One count, as the reference and the implementation each gave it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    reference: int = Field(ge=0, le=INT64_MAX, description="the reference's, from its own cache")
    implementation: int = Field(ge=0, le=INT64_MAX, description="the implementation's, from its own cache")


class DivergentRequest(BaseModel):
    """A request on which the two differ: in its hit tokens, the resident count after it, or
    both; or, the first divergence only, in what a lockstep checks besides (the queues)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    request: int = Field(ge=1, le=INT64_MAX, description="1-based request number in the trace")
    line: int = Field(ge=1, le=INT64_MAX, description="its line in the trace file")
    hit_tokens: Pair = Field(description="its hit tokens (REPLAY-HIT-1)")
    resident_count: Pair = Field(description="the resident count after it (REPLAY-RESULT-4)")


class Totals(BaseModel):
    """One cache's own totals over the requests both replayed to the end, as `kvspec replay` names them."""

    model_config = ConfigDict(strict=True, extra="forbid")

    total_hit_tokens: int = Field(ge=0, description="the sum of its hit tokens (REPLAY-RESULT-3)")
    total_prompt_tokens: int = Field(ge=0, description="the sum of the requests' input_length, the same for both (REPLAY-HIT-2)")
    hit_rate: float = Field(ge=0, description="total_hit_tokens / total_prompt_tokens, 0 when no request was replayed (above 1 only for "
                            "an implementation that claims more hit tokens than a prompt has)")
    final_cache_blocks: int = Field(ge=0, le=INT64_MAX, description="its resident count after the last of those requests, 0 before any")


class FirstDivergence(BaseModel):
    """Where the two first disagree, diagnosed as `kvspec replay --adapter` without --keep-going stops at it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    request: int = Field(ge=1, le=INT64_MAX, description="1-based request number in the trace")
    line: int = Field(ge=1, le=INT64_MAX, description="its line in the trace file")
    clauses: list[str] = Field(description="the clauses the divergence names, the diagnosis first")
    consistent_with: list[str] = Field(description="those of clauses that the evidence is only consistent with (at the results level the "
                                       "implementation's state is not visible); the others are shown broken on its state")
    message: str = Field(description="the divergence as kvspec printed it: the clauses, the request, what differs")


class Stopped(BaseModel):
    """Where the implementation failed (PROTO-15, PROTO-29), or refused the valid configuration: the replay ended there."""

    model_config = ConfigDict(strict=True, extra="forbid")

    at: Literal["start", "configuration", "request", "stop"] = Field(
        description="its start, the configuration (it refused one the spec accepts), a request (during it), or its stop after the "
        "last request (PROTO-13)")
    request: int | None = Field(default=None, ge=1, le=INT64_MAX, description="at a request: its 1-based number; absent otherwise")
    line: int | None = Field(default=None, ge=1, le=INT64_MAX, description="at a request: its line in the trace file; absent otherwise")
    clauses: list[str] = Field(description="the clause it broke: a protocol clause for a failure, the configuration's for a refusal")
    message: str = Field(description="the failure as kvspec printed it")


class DivergenceReport(BaseModel):
    """What `kvspec replay --adapter ADAPTER --keep-going` writes: each cache's own totals, and every
    request on which the two differ. Until the first divergence the two are in lockstep; after it
    each replays from its own state, and the implementation is never reset to the reference's."""

    model_config = ConfigDict(strict=True, extra="forbid")

    adapter: str = Field(description="the adapter spec the implementation was named by (PROTO-18)")
    name: str = Field(description="its name, as its start reply gave it (PROTO-5); the adapter spec when it failed to start")
    trace: str = Field(description="the trace file replayed, as given")
    config: dict[str, str | int | float] = Field(description="the configuration both were given (PROTO-7's fields)")
    dialect: list[str] = Field(description="DIALECT-6: the variation points the reference replayed with, in spec/dialects.md's order; "
                               "empty: the canonical spec")
    conforms: bool = Field(description="true when no request diverged and the implementation did not fail")
    requests: int = Field(ge=0, le=INT64_MAX, description="the requests both replayed to the end; the totals are theirs")
    diverged_requests: int = Field(ge=0, le=INT64_MAX, description="how many of them diverged: the length of divergences")
    reference: Totals = Field(description="the reference's own totals")
    implementation: Totals = Field(description="the implementation's own totals, from its answers")
    first_divergence: FirstDivergence | None = Field(default=None, description="the first divergence, diagnosed; absent when none")
    stopped: Stopped | None = Field(default=None, description="where the implementation failed, or refused the configuration; absent "
                                    "when it ran to the end and stopped as it must")
    divergences: list[DivergentRequest] = Field(description="every request on which the two differ, in trace order, the first "
                                                "divergence's included (unless the implementation failed during that request)")


class Running:
    """One cache's running totals, and its resident count after the last request."""

    def __init__(self) -> None:
        self.hit_tokens = self.prompt_tokens = self.resident = 0

    def add(self, hit: int, prompt: int, resident: int) -> None:
        self.hit_tokens, self.prompt_tokens, self.resident = self.hit_tokens + hit, self.prompt_tokens + prompt, resident

    def totals(self) -> Totals:
        rate = self.hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
        return Totals(total_hit_tokens=self.hit_tokens, total_prompt_tokens=self.prompt_tokens, hit_rate=rate,
                      final_cache_blocks=self.resident)


class KeepGoing(Lockstep):
    """A Lockstep that goes on past divergences. Each divergent request goes to ``divergent`` as it
    is found (`kvspec replay` spools them: there may be as many as requests); ``line`` gives the
    trace line of the request being replayed."""

    def __init__(self, adapter: Adapter, config: AdapterConfig, dialect: Dialect, line: Callable[[], int],
                 divergent: Callable[[DivergentRequest], None]) -> None:
        super().__init__(adapter, config, dialect)
        self.line = line
        self.divergent = divergent
        self.first: FirstDivergence | None = None
        self.requests = self.diverged_requests = 0
        self.spec, self.own = Running(), Running()

    def found(self, divergence: Divergence) -> None:
        """The first divergence, kept; the replay goes on (Lockstep.request checks nothing more of
        its request, nor of the next ones, than the results)."""
        self.first = FirstDivergence(request=divergence.request, line=self.line(), clauses=list(divergence.clauses),
                                     consistent_with=list(divergence.consistent_with), message=str(divergence))
        self.trace = []  # the requests kept to diagnose a divergence: no later one is diagnosed

    def diverged(self) -> bool:
        return self.first is not None

    def compared(self, input_length: int, expected_hit: int, actual_hit: int, expected_count: int, actual_count: int) -> None:
        self.requests += 1
        self.spec.add(expected_hit, input_length, expected_count)
        self.own.add(actual_hit, input_length, actual_count)
        first_here = self.first is not None and self.first.request == self.requests
        if first_here or expected_hit != actual_hit or expected_count != actual_count:
            self.diverged_requests += 1
            self.divergent(DivergentRequest(request=self.requests, line=self.line(), hit_tokens=Pair(reference=expected_hit,
                           implementation=actual_hit), resident_count=Pair(reference=expected_count, implementation=actual_count)))

    def resident_count(self) -> int:
        """The reference's (the replay's result is the reference's; the implementation's is in ``own``)."""
        assert self.reference is not None, "configure() accepted no configuration"
        return self.reference.resident_count()


def schema_texts() -> dict[str, str]:
    """spec/schemas/replay-divergences.schema.json."""
    return {SCHEMA: schema_text(SCHEMA, TypeAdapter(DivergenceReport))}
