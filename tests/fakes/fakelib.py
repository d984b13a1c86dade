"""A tiny protocol speaker for the deliberately wrong fakes: a cache that holds every block.

Each fake is `python tests/fakes/NAME.py`; it calls ``run`` with a hook that may answer a
request wrongly (return a line to write, or None to answer correctly).
"""

import json
import sys
from collections.abc import Callable

Hook = Callable[[dict], "str | None"]


def correct(request: dict, resident: set[int]) -> str:
    seq, cmd = request["seq"], request["cmd"]
    if cmd == "start":
        reply = {
            "seq": seq,
            "protocol": 1,
            "implementation": {"name": "fake", "language": "python", "version": "0"},
            "level": "state",
            "policies": ["s3fifo", "lru", "fifo"],
        }
    elif cmd == "configure":
        resident.clear()
        reply = {"seq": seq, "ok": True}
    elif cmd == "hit_tokens":
        k = 0
        while k < len(request["hash_ids"]) and request["hash_ids"][k] in resident:
            k += 1
        reply = {"seq": seq, "hit_tokens": min(k * 512, request["input_length"])}
    elif cmd == "access":
        resident.update(request["hash_ids"])
        reply = {"seq": seq, "ok": True}
    elif cmd == "resident_count":
        reply = {"seq": seq, "resident_count": len(resident)}
    else:
        reply = {"seq": seq, "small": [], "main": [[h, 0] for h in sorted(resident)], "ghost": []}
    return json.dumps(reply)


def run(hook: Hook = lambda request: None) -> None:
    resident: set[int] = set()
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "stop":
            sys.exit(0)
        reply = hook(request)
        print(reply if reply is not None else correct(request, resident), flush=True)


if __name__ == "__main__":
    run()
