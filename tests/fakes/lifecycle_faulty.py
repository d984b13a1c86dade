"""The reference harness, offering the lifecycle (PROTO-35), that breaks the protocol in one chosen way
in its first reply to one lifecycle request:

    python tests/fakes/lifecycle_faulty.py FAULT

FAULT is one of FAULTS below: a finish reply without its recomputed_tokens (PROTO-16), an allocate
reply whose made is 1 (PROTO-16: no 1 for true), a lookup that never replies (PROTO-15), a compute
answered by an error reply (PROTO-14).
"""

import json
import sys
import time

from kvspec.adapters.protocol import REQUEST
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.adapters.serve import answer

FAULTS = {"missing": "finish", "wrong-type": "allocate", "hang": "lookup", "error": "compute"}


def broken(fault: str, reply: dict) -> dict:
    """The reply, broken as ``fault`` says."""
    if fault == "missing":
        del reply["recomputed_tokens"]
    elif fault == "wrong-type":
        reply["made"] = 1 if reply["made"] else 0
    elif fault == "hang":
        time.sleep(3600)
    else:
        reply = {"seq": reply["seq"], "error": "fake: no blocks to compute"}
    return reply


def main() -> None:
    fault = sys.argv[1]
    adapter = ReferenceAdapter()
    for line in sys.stdin:
        request = REQUEST.validate_json(line)
        if request.cmd == "stop":
            return
        reply = answer(adapter, request)
        if request.cmd == FAULTS[fault]:
            reply = broken(fault, reply)
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
