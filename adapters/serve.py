"""The reference harness server: ``python -m kvspec.adapters.serve [ADAPTER]`` (PROTO-17).

It speaks the adapter protocol (spec/adapter-protocol.md) on stdin and stdout, backed by
ReferenceAdapter, so that the reference can be certified through the subprocess adapter kind
like any other implementation. Given ``python:module:factory``, it serves that adapter the same
way: kvspec starts it so for every ``python:`` spec (PROTO-18), so that whatever the adapter does,
an exit or a crash included, happens in this process and not in kvspec's. What the adapter raises,
at its import, in its factory or in a method, is an error reply (PROTO-14); a spec that names
nothing usable is one line on stderr and exit status 1, which kvspec reads as bad input.
"""

import argparse
import io
import json
import os
import sys
from collections.abc import Callable
from typing import IO, Any

from pydantic import ValidationError

from kvspec.reference import KvspecError

from . import served
from .benefit import BenefitAdapter
from .interface import Adapter, AdapterConfig, AdapterFailure, ConfigRefused, LifecycleAdapter, described_error
from .protocol import (
    BENEFIT_REQUESTS,
    LIFECYCLE_REQUESTS,
    PROTOCOL_VERSION,
    REQUEST,
    AccessRequest,
    ConfigureRequest,
    HitTokensRequest,
    ResidentCountRequest,
    SnapshotRequest,
    StartRequest,
    StopRequest,
)
from .wire import answer_benefit, answer_lifecycle


def answer(adapter: Adapter | BenefitAdapter, request: Any) -> dict[str, Any]:
    """The reply to one request other than stop (PROTO-5 to PROTO-12, PROTO-20 to PROTO-28, PROTO-37 to PROTO-44)."""
    return REPLIES[type(request)](adapter, request)


def started(adapter: Adapter | BenefitAdapter, request: StartRequest) -> dict[str, Any]:  # PROTO-5, PROTO-6
    identity = adapter.identity
    return {
        "seq": request.seq,
        "protocol": PROTOCOL_VERSION,
        "implementation": {"name": identity.name, "language": identity.language, "version": identity.version},
        "level": adapter.level,
        "policies": list(adapter.policies),
        **({"lifecycle": True} if offers_lifecycle(adapter) else {}),  # PROTO-35: said only when offered, as an older one says nothing
    }


def offers_lifecycle(adapter: object) -> bool:
    """PROTO-35: an adapter offers the lifecycle when its ``lifecycle`` is True itself (absent: it offers none)."""
    return getattr(adapter, "lifecycle", False) is True


def configured(adapter: Adapter, request: ConfigureRequest) -> dict[str, Any]:  # PROTO-7, PROTO-8
    try:
        adapter.configure(AdapterConfig(**request.config.model_dump()))
    except ConfigRefused as refused:
        return {"seq": request.seq, "ok": False, "refused": str(refused)}
    return {"seq": request.seq, "ok": True}


def hit(adapter: Adapter, request: HitTokensRequest) -> dict[str, Any]:  # PROTO-9
    return {"seq": request.seq, "hit_tokens": adapter.hit_tokens(list(request.hash_ids), request.input_length)}


def accessed(adapter: Adapter, request: AccessRequest) -> dict[str, Any]:  # PROTO-10
    if request.input_length is None:
        adapter.access(list(request.hash_ids))
    else:
        adapter.access(list(request.hash_ids), input_length=request.input_length)
    return {"seq": request.seq, "ok": True}


def counted(adapter: Adapter, request: ResidentCountRequest) -> dict[str, Any]:  # PROTO-11
    return {"seq": request.seq, "resident_count": adapter.resident_count()}


def snapshotted(adapter: Adapter, request: SnapshotRequest) -> dict[str, Any]:  # PROTO-12
    snapshot = adapter.snapshot()
    return {
        "seq": request.seq,
        "small": [list(entry) for entry in snapshot.small],
        "main": [list(entry) for entry in snapshot.main],
        "ghost": list(snapshot.ghost),
    }


def benefit(adapter: BenefitAdapter, request: Any) -> dict[str, Any]:  # PROTO-20 to PROTO-28
    return {"seq": request.seq, **answer_benefit(adapter, request)}


def lifecycle(adapter: LifecycleAdapter, request: Any) -> dict[str, Any]:  # PROTO-37 to PROTO-44
    return {"seq": request.seq, **answer_lifecycle(adapter, request)}


# Each request's reply by the request's type: one look-up, where a chain of isinstance tests cost
# more than the reference's own work on a request.
REPLIES: dict[type, Callable[[Any, Any], dict[str, Any]]] = {
    StartRequest: started,
    ConfigureRequest: configured,
    HitTokensRequest: hit,
    AccessRequest: accessed,
    ResidentCountRequest: counted,
    SnapshotRequest: snapshotted,
    **dict.fromkeys(BENEFIT_REQUESTS, benefit),
    **dict.fromkeys(LIFECYCLE_REQUESTS, lifecycle),
}


def serve(adapter: Adapter | BenefitAdapter, stdin: IO[str], stdout: IO[str]) -> int:
    """Answer requests until stop or end of input (PROTO-1, PROTO-2, PROTO-13); the exit status."""
    for expected_seq, line in enumerate(stdin):
        try:
            request = REQUEST.validate_json(line)
        except ValidationError as error:
            reply: dict[str, Any] = {"seq": expected_seq, "error": f"PROTO-16: a request of the wrong shape: {error.errors()[:1]}"}
        else:
            if isinstance(request, StopRequest):  # PROTO-13: no reply
                break
            if request.seq != expected_seq:  # PROTO-2
                reply = {"seq": request.seq, "error": f"PROTO-2: seq {request.seq}, expected {expected_seq}"}
            elif expected_seq == 0 and not isinstance(request, StartRequest):  # PROTO-5
                reply = {"seq": request.seq, "error": "PROTO-5: the first request must be start"}
            else:
                try:
                    text = _dumps(answer(adapter, request))  # the adapter's values, encoded here: one JSON cannot hold is its error
                except BaseException as error:  # noqa: BLE001 -- PROTO-14: whatever the adapter raises is an error reply
                    reply = {"seq": request.seq, "error": described_error(error)}
                else:
                    stdout.write(text + "\n")
                    stdout.flush()
                    continue
        stdout.write(_dumps(reply) + "\n")
        stdout.flush()
    try:
        adapter.close()
    except BaseException as error:  # noqa: BLE001 -- PROTO-13: a close that fails is a non-zero exit, said on one line
        print(f"kvspec.adapters.serve: close raised {described_error(error)}", file=sys.stderr)
        return 1
    return 0


def failed_start(problem: str, stdin: IO[str], stdout: IO[str]) -> int:
    """PROTO-14: an adapter that could not be built answers its first request with an error."""
    for line in stdin:
        stdout.write(_dumps({"seq": 0, "error": f"the implementation failed at its start: {problem}"}) + "\n")
        stdout.flush()
        break
    return 0


_dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode  # json.dumps with these arguments, its encoder built once


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kvspec.adapters.serve",
        description="Speak the adapter protocol (spec/adapter-protocol.md) on stdin and stdout, backed by the reference "
        "or by any in-process adapter.",
    )
    parser.add_argument("adapter", nargs="?", default="reference",
                        help='"reference" (the default), "python:module:factory" or "in-process:module:factory" (PROTO-18)')
    args = parser.parse_args(argv)
    if args.adapter.startswith("cmd:"):
        parser.error("serves an in-process adapter: reference, python:module:factory or in-process:module:factory")
    # PROTO-1: stdout carries replies alone; anything else printed, at the adapter's import too, goes to stderr.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    requests = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    try:
        adapter = served(args.adapter)
    except KvspecError as error:
        print(f"kvspec.adapters.serve: error: {error}", file=sys.stderr)
        return 1
    except AdapterFailure as failure:  # its import failed, or its factory returned no adapter
        return failed_start(str(failure), requests, replies)
    except BaseException as error:  # noqa: BLE001 -- its factory raised: the implementation's failure
        return failed_start(f"its factory raised {described_error(error)}", requests, replies)
    return serve(adapter, requests, replies)


if __name__ == "__main__":
    raise SystemExit(main())
