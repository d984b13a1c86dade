"""The lifecycle's messages (spec/adapter-protocol.md section 7, PROTO-35 to PROTO-44): the reference
harness answers a scripted session as spec/lifecycle.md says, in-process and through the protocol;
`kvspec fixtures verify` replays every lifecycle case through an implementation that offers the
lifecycle, catches one that is wrong, and skips the cases for one that does not offer it; and a
fault in a lifecycle reply is a verdict, never a traceback."""

import json
import re
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kvspec.adapters import Implementation
from kvspec.adapters.interface import AdapterConfig, AdapterFailure, Finished, LifecycleState
from kvspec.adapters.process import ProcessAdapter
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance import cli
from kvspec.conformance.fixtures.corpus import bundled_corpus
from kvspec.conformance.fixtures.runner import NOT_OFFERED, CaseResult, verify
from kvspec.reference.lifecycle import Pool, Request

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fakes"
SERVE = [sys.executable, "-m", "kvspec.adapters.serve"]
TUTORIAL = f"cmd:{shlex.quote(sys.executable)} {ROOT / 'examples' / 'tutorial-fifo' / 'fifo.py'}"
CORPUS = bundled_corpus()
LIFECYCLE_CASES = sorted(path.stem for path in (CORPUS / "lifecycle").glob("*.json"))


@pytest.fixture(scope="module")
def lifecycle_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A corpus of the bundled corpus's lifecycle cases alone (FIX-1, FIX-2), and two LRU replay cases."""
    folder = tmp_path_factory.mktemp("lifecycle-corpus")
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    replays = [entry for entry in manifest["cases"] if entry["kind"] == "replay" and "-lru-" in entry["id"]][:2]
    manifest["cases"] = [entry for entry in manifest["cases"] if entry["kind"] == "lifecycle" or entry in replays]
    for entry in manifest["cases"]:
        (folder / entry["path"]).parent.mkdir(exist_ok=True)
        shutil.copyfile(CORPUS / entry["path"], folder / entry["path"])
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def session(adapter: Any) -> list[Any]:
    """An LRU pool of 3 slots, 4 tokens a block: request 1 [1, 2] and request 2 [1, 2, 3] in flight,
    2 preempted and resumed. What each operation returns, and the pool's state after four of them."""
    adapter.configure(AdapterConfig("lru", 3, block_size=4))
    got: list[Any] = [adapter.arrive(1, [1, 2], 8), adapter.lookup(1), adapter.allocate(1), adapter.lifecycle_state(),
                      adapter.arrive(2, [1, 2, 3], 10), adapter.lookup(2), adapter.compute(1, 1), adapter.lookup(2),
                      adapter.compute(1, 2), adapter.lookup(2), adapter.allocate(2), adapter.lifecycle_state(), adapter.decode(1)]
    finished = adapter.finish(1)
    got += [(finished.hit_tokens, finished.recomputed_tokens), adapter.preempt(2), adapter.lifecycle_state(), adapter.lookup(2),
            adapter.allocate(2), adapter.compute(2, 3), adapter.decode(2)]
    finished = adapter.finish(2)
    return [*got, (finished.hit_tokens, finished.recomputed_tokens), adapter.lifecycle_state()]


# Derived from spec/lifecycle.md, operation by operation.
SESSION = [
    None, 0, True,  # LIFE-ARRIVE-1; nothing resident (LIFE-LOOKUP-1); the pool is empty, so it fits (LIFE-ALLOC-4)
    LifecycleState(main=((1, 0), (2, 0)), refs=((1, 1), (2, 1)), pending=(1, 2)),  # admitted, referenced, not computed (LIFE-ALLOC-1, -2)
    None, 0,  # block 1 is resident and not computed: no hit (LIFE-LOOKUP-1)
    None, 1, None, 2,  # request 1 computes block 1, then block 2 (LIFE-COMPUTE-1): each becomes usable
    True,  # its one block no other request references (3) fits the 3 slots less the 2 referenced (LIFE-ALLOC-4)
    LifecycleState(main=((1, 0), (2, 0), (3, 0)), refs=((1, 2), (2, 2), (3, 1)), pending=(3,)),
    False,  # the pool is full and every resident block referenced: the decode block is refused (LIFE-DECODE-1)
    (0, 0), None,  # request 1's accounting (LIFE-HIT-1); request 2 preempted ...
    LifecycleState(main=((1, 0), (2, 0))),  # ... block 3, not computed and referenced by none, removed (LIFE-PREEMPT-1, LIFE-EVICT-3)
    2, True, None,  # its resumed lookup finds blocks 1 and 2; allocated; computes block 3
    False,  # full again, every block referenced by request 2 (LIFE-DECODE-1)
    (8, 0),  # hit tokens counted at its first allocation made, 2 blocks of 4 (LIFE-HIT-1); it had computed nothing (LIFE-HIT-2)
    LifecycleState(main=((1, 0), (2, 0), (3, 0))),  # computed, evictable, resident (LIFE-FINISH-1)
]


def test_PROTO_35_to_PROTO_44_the_reference_answers_a_scripted_session_as_the_lifecycle_says() -> None:
    """PROTO-37 arrive, PROTO-38 lookup, PROTO-39 allocate, PROTO-40 compute, PROTO-41 decode, PROTO-42 finish,
    PROTO-43 preempt and PROTO-44 the state, in-process."""
    assert session(ReferenceAdapter()) == SESSION


def test_PROTO_17_PROTO_35_the_harness_server_offers_the_lifecycle_and_answers_the_session_alike() -> None:
    """PROTO-37 to PROTO-44 through the protocol: the harness's start reply offers the lifecycle, and
    every reply of the session is the one derived from the lifecycle."""
    with ProcessAdapter(SERVE) as served:
        assert served.lifecycle is True
        assert session(served) == SESSION


def test_PROTO_36_an_operation_the_state_does_not_allow_may_be_an_error_reply() -> None:
    """kvspec sends none; the reference harness answers a lookup of a request not in flight by an error reply (PROTO-14)."""
    with ProcessAdapter(SERVE) as served:
        served.configure(AdapterConfig("fifo", 2))
        with pytest.raises(AdapterFailure, match=r"lookup \(seq 2\): the implementation replied with an error: .*LIFE-ARRIVE-1") as failure:
            served.lookup(7)
        assert failure.value.clause == "PROTO-14"


def test_FIX_18_PROTO_35_fixtures_verify_replays_every_lifecycle_case_through_the_protocol(lifecycle_corpus: Path) -> None:
    """The reference harness as a process (cmd:), and the reference in-process, pass every lifecycle case."""
    for implementation in (Implementation(f"cmd:{shlex.join(SERVE)}"), ReferenceAdapter):
        results = {r.id: r for r in verify(lifecycle_corpus, implementation, {})}
        assert {results[case].verdict for case in LIFECYCLE_CASES} == {"pass"}
        assert {results[case].policy for case in LIFECYCLE_CASES} == {"s3fifo", "lru", "fifo"}  # FIX-12: its pool's policy


class RecountsHits(Pool):
    """A pool that counts a resumed request's allocation as its first: its hit tokens counted again (LIFE-HIT-1 counts
    them once), its recomputed tokens not at all (LIFE-HIT-2)."""

    def count_hits(self, request: Request, k: int) -> None:
        request.hit_tokens = None
        super().count_hits(request, k)


def recounting() -> ReferenceAdapter:
    return ReferenceAdapter(pool_factory=RecountsHits.empty)


def failed(results: list[CaseResult]) -> dict[str, CaseResult]:
    return {r.id: r for r in results if r.verdict != "pass" and r.verdict != "skip"}


def test_FIX_18_fixtures_verify_catches_a_wrong_lifecycle_in_process_and_served(lifecycle_corpus: Path) -> None:
    """The wrong pool fails the lifecycle cases with a preemption whose resumed lookup differs, and
    those cases declare the clause it breaks; every replay case still passes."""
    for implementation in (recounting, Implementation(f"python:{__file__}:recounting")):
        wrong = failed(verify(lifecycle_corpus, implementation, {}, policies=("lru",)))
        assert wrong and all(case.startswith("lifecycle-lru-") and "LIFE-HIT-1" in result.clauses for case, result in wrong.items())
        assert all("finish of request" in result.detail and result.difference is not None
                   and result.difference.first() in (["hit_tokens"], ["recomputed_tokens"]) for result in wrong.values())


def lacking(name: str) -> type[ReferenceAdapter]:
    """The reference without its attribute ``name``."""

    def attribute(self: ReferenceAdapter, wanted: str) -> Any:
        if wanted == name:
            raise AttributeError(name)
        return ReferenceAdapter.__getattribute__(self, wanted)

    return type(f"Without{name.title()}", (ReferenceAdapter,), {"__getattribute__": attribute})


OffersNone = lacking("lifecycle")  # an implementation from before the lifecycle: it says nothing of it (PROTO-35)


def test_PROTO_6_PROTO_35_an_implementation_that_offers_no_lifecycle_verifies_as_before(tmp_path: Path, lifecycle_corpus: Path) -> None:
    """In-process and over the protocol (the tutorial's FIFO, whose start reply has no lifecycle): every
    lifecycle case of its policies is skipped, not offered, every other case runs, and no lifecycle
    message is sent to it."""
    results = verify(lifecycle_corpus, OffersNone, {})
    assert {r.detail for r in results if r.id in LIFECYCLE_CASES} == {NOT_OFFERED}
    assert [r.verdict for r in results if r.id not in LIFECYCLE_CASES] == ["pass", "pass"]
    recorded = f"tee {shlex.quote(str(tmp_path / 'requests'))} | {TUTORIAL.removeprefix('cmd:')}"
    assert cli.main(["fixtures", "verify", "--adapter", f"cmd:sh -c {shlex.quote(recorded)}", "--output", str(tmp_path / "v.json")]) == 0
    commands = {json.loads(line)["cmd"] for line in (tmp_path / "requests").read_text().splitlines()}
    assert commands == {"start", "configure", "hit_tokens", "access", "resident_count", "stop"}
    with ProcessAdapter(shlex.split(TUTORIAL.removeprefix("cmd:"))) as tutorial:
        assert tutorial.lifecycle is False


@pytest.mark.parametrize("fault, clause, what", [
    ("missing", "PROTO-16", r"finish \(seq \d+\): a reply of the wrong shape \(recomputed_tokens: Field required\)"),
    ("wrong-type", "PROTO-16", r"allocate \(seq \d+\): a reply of the wrong shape \(made: a wrong type: 1 \(an integer\) where a boolean is due"),
    ("hang", "PROTO-15", r"lookup \(seq \d+\): no reply to lookup within 1 s \(hung\?\)"),
    ("error", "PROTO-14", r"compute \(seq \d+\): the implementation replied with an error: 'fake: no blocks to compute'"),
])
def test_PROTO_36_a_fault_in_a_lifecycle_reply_is_a_verdict(fault: str, clause: str, what: str) -> None:
    """Through fixtures verify, on one lifecycle case: the case fails naming the clause, the request and
    what went wrong, within the deadline, and kvspec goes on."""
    case = CORPUS / "lifecycle" / f"{next(c for c in LIFECYCLE_CASES if c.startswith('lifecycle-lru-chunked-prefill'))}.json"
    implementation = Implementation(f"cmd:{shlex.quote(sys.executable)} {FAKES / 'lifecycle_faulty.py'} {fault}", reply_timeout=1.0)
    began = time.monotonic()
    [result] = verify(case, implementation, {})
    assert time.monotonic() - began < 15
    assert result.verdict == "fail" and result.detail.startswith(f"{clause}: "), result.detail
    assert re.search(what, result.detail), result.detail


class LookupAString(ReferenceAdapter):
    """An in-process lookup whose k is a string."""

    def lookup(self, rid: int) -> Any:
        return str(super().lookup(rid))


class FinishesNothing(ReferenceAdapter):
    def finish(self, rid: int) -> Any:
        super().finish(rid)
        return Finished(1, -1)


class LifecycleOne(ReferenceAdapter):
    lifecycle = 1  # type: ignore[assignment]


@pytest.mark.parametrize("adapter, clause, what", [
    (LookupAString, "PROTO-29", "lookup: returned a value of the wrong shape (k: a wrong type: '0' (a string) where an integer is due)"),
    (FinishesNothing, "PROTO-29", "finish: returned a value of the wrong shape (recomputed_tokens: -1 is out of range"),
    (LifecycleOne, "PROTO-35", "lifecycle is 1 (an integer), not a boolean"),
])
def test_PROTO_29_PROTO_35_an_in_process_lifecycle_fault_is_a_verdict(adapter: type, clause: str, what: str) -> None:
    case = CORPUS / "lifecycle" / f"{next(c for c in LIFECYCLE_CASES if c.startswith('lifecycle-lru-chunked-prefill'))}.json"
    result = verify(case, adapter, {})[-1]
    assert result.verdict == "fail" and result.detail.startswith(f"{clause}: ") and what in result.detail, result.detail


OffersWithoutPreempt = lacking("preempt")  # it says it offers the lifecycle, and has no preempt


def test_PROTO_18_PROTO_35_an_adapter_that_offers_the_lifecycle_has_its_methods() -> None:
    with pytest.raises(AdapterFailure, match=r"offers the lifecycle and has no preempt") as failure:
        Implementation(f"in-process:{__file__}:OffersWithoutPreempt").start()
    assert failure.value.clause == "PROTO-18"
