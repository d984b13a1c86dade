"""Which clauses a certification checks, derived from the spec and the citations (PROTO-34).

A policy's report covers its spec: spec/replay.md (but for the benefit policy) and its own
(spec/s3fifo.md, lru.md, fifo.md, benefit.md). A clause is checked when a checking module
(CHECKING_MODULES: the code that names a clause where a divergence breaks it) cites it; the others
are NOT_CHECKABLE, the one list kept by hand, each clause with the reason no certification can
check it through the protocol. tests/test_checked_clauses.py fails when a clause is in neither.
A policy's clauses are in its spec files' order, the replay's first.
"""

from functools import cache
from importlib.resources import files
from pathlib import Path

from kvspec.conformance.core.citations import CLAUSE_LINE, citations

SPEC = files("kvspec.spec")  # spec/, installed beside the code (pyproject's package-data)
POLICY_SPECS = {"s3fifo": ("replay.md", "s3fifo.md"), "lru": ("replay.md", "lru.md"), "fifo": ("replay.md", "fifo.md"),
                "benefit": ("benefit.md",)}
CHECKING_MODULES = ("block/lockstep.py", "block/diagnosis.py", "block/placement.py", "block/variants.py", "benefit/machine.py",
                    "benefit/strategies.py", "benefit/diagnosis.py",
                    "benefit/variants.py")
IN_FLIGHT_MODULES = ("lifecycle/lockstep.py", "lifecycle/diagnosis.py", "lifecycle/machine.py")  # requests in flight's own
# Requests in flight (spec/lifecycle.md): the pool's sections 1 to 5, not the served replay's (6) nor the benefit policy's (7).
LIFECYCLE_SPEC = "lifecycle.md"
IN_FLIGHT_ONLY = ("LIFE-SERVE-", "LIFE-BEN-")
POLICY_LIFE = {"s3fifo": "S3-LIFE-", "lru": "LRU-LIFE-", "fifo": "FIFO-LIFE-"}

TRACE_READER = "the trace reader's (kvspec replay reads trace files); a certification draws its requests and reads none"
RESULT = "the replay's result, which kvspec computes from the answers; the protocol asks for none"
CONSEQUENCE = "a consequence of the clauses checked, not a rule an implementation keeps apart from them"
BEN_HARNESS = "kvspec's own comparison harness (kvspec benefit-compare), which no implementation answers for"
BEN_PREFIX = "the benefit policy over prefix blocks (kvspec benefit-prefix), which the reference replays on its own"
NOT_CHECKABLE = {
    **{f"REPLAY-TRACE-{n}": TRACE_READER for n in range(1, 12)},
    "REPLAY-QUEUE-2": "how the reference's queues pop; an implementation's queues are seen only as the snapshot after a request",
    "REPLAY-QUEUE-3": "how the reference's queues requeue; an implementation's queues are seen only as the snapshot after a request",
    "REPLAY-1": "the replay loop, which the certification itself runs on both sides",
    "REPLAY-HIT-2": RESULT,
    "REPLAY-RESULT-1": RESULT,
    "REPLAY-RESULT-2": RESULT,
    "REPLAY-RESULT-3": RESULT,
    "REPLAY-INV-1": CONSEQUENCE + " (REPLAY-HIT-1)",
    "REPLAY-INV-2": CONSEQUENCE + " (the resident count of REPLAY-RESULT-4 and each policy's sizes)",
    "REPLAY-INV-3": CONSEQUENCE + " (REPLAY-PREFIX-1)",
    "S3-QUEUE-1": "the structure of the reference's cache; the snapshot (PROTO-12) has its three queues whatever an implementation holds",
    "S3-GHOST-1": "unreachable: by S3-QUEUE-2 a hash entering G is in no queue before (spec/findings.md F-10), so no state breaks it",
    "S3-GHOST-4": CONSEQUENCE + " (S3-QUEUE-2: what enters G leaves S or M)",
    "BEN-COST-1": "a definition (a valid cost sample), checked where a rule uses it (BEN-ADMIT-1, BEN-HIT-3)",
    "BEN-ENTRY-2": "a step of the score, seen only in the score it gives (BEN-SCORE-4 and the state compared)",
    "BEN-ENTRY-3": "the order of a sum, seen only in the doubles it gives (the state compared)",
    "BEN-SCORE-1": "a definition (no score), seen only in the state compared",
    "BEN-SCORE-5": "which sample the score uses, seen only in the score it gives (the state compared)",
    "BEN-LEDGER-4": CONSEQUENCE + " (BEN-LEDGER-3)",
    "BEN-ADMIT-3": "the order of the steps of an admission, seen only in the state after it (BEN-CLOCK-2, BEN-GHOST-4)",
    "BEN-ADMIT-8": CONSEQUENCE + " (BEN-CAP-1 to BEN-CAP-5)",
    "BEN-ADMIT-9": "the form of the reasons (opaque tokens), which the protocol's schema checks (PROTO-16)",
    "BEN-VICTIM-1": CONSEQUENCE + " (BEN-VICTIM-3)",
    "BEN-ARITH-1": "the arithmetic every rule is computed with, seen only in the doubles they give (the state compared)",
    "BEN-ARITH-2": "the order of a sum, seen only in the doubles it gives (the state compared)",
    **{f"BEN-LRU-{n}": BEN_HARNESS for n in range(1, 4)},
    **{f"BEN-TRACE-{n}": BEN_HARNESS for n in range(1, 8)},
    **{f"BEN-CMP-{n}": BEN_HARNESS for n in range(1, 4)},
    **{f"BEN-MODEL-{n}": BEN_PREFIX for n in range(1, 5)},
    **{f"BEN-PREFIX-{n}": BEN_PREFIX for n in range(1, 8)},
    "LIFE-LIMIT-1": CONSEQUENCE + " (the lifecycle's clauses with one request at a time; tests/test_lifecycle.py checks it against the replay)",
}


@cache
def spec_clauses(name: str) -> tuple[str, ...]:
    """The clauses of spec/``name``, in the file's order."""
    return tuple(CLAUSE_LINE.findall(SPEC.joinpath(name).read_text(encoding="utf-8")))


@cache
def checked(modules: tuple[str, ...] = CHECKING_MODULES) -> frozenset[str]:
    """Every clause a checking module cites (of the one-at-a-time machines, or ``modules``): on a line
    of its code, in a comment or in a function's docstring."""
    here = Path(__file__).parent.parent  # conformance/certification/
    found: set[str] = set()
    for module in modules:
        lines, functions = citations(str(here / module))
        found.update(*lines.values(), *functions.values())
    return frozenset(found)


def policy_spec(policy: str) -> tuple[str, ...]:
    """Every clause of ``policy``'s spec, the replay's first."""
    return tuple(c for name in POLICY_SPECS[policy] for c in spec_clauses(name))


def policy_clauses(policy: str) -> tuple[str, ...]:
    """PROTO-34: the clauses a certification of ``policy`` checks, in the spec's order."""
    return tuple(c for c in policy_spec(policy) if c in checked())


def lifecycle_spec(policy: str) -> tuple[str, ...]:
    """Every clause of spec/lifecycle.md that a pool of ``policy``'s requests in flight keeps: sections
    1 to 5's, with the rules for blocks in use of ``policy`` alone."""
    others = tuple(prefix for name, prefix in POLICY_LIFE.items() if name != policy)
    return tuple(c for c in spec_clauses(LIFECYCLE_SPEC) if not c.startswith(IN_FLIGHT_ONLY + others))


def lifecycle_clauses(policy: str) -> tuple[str, ...]:
    """PROTO-34: the clauses a certification of ``policy``'s requests in flight checks, in the spec's order."""
    return tuple(c for c in lifecycle_spec(policy) if c in checked(IN_FLIGHT_MODULES))


def configuration_clauses(policy: str) -> tuple[str, ...]:
    """The clauses that decide ``policy``'s configuration: the *-CONF-* clauses of its spec."""
    return tuple(c for c in policy_spec(policy) if "-CONF-" in c)


def own(policy: str) -> str:
    """The prefix of ``policy``'s own clauses (S3-, LRU-, FIFO-, BEN-): that of its spec's first clause."""
    return spec_clauses(POLICY_SPECS[policy][-1])[0].split("-")[0] + "-"

