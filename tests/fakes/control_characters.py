"""Names itself, logs to stderr and answers hit_tokens with an error, each with the characters that
redraw a terminal (a carriage return, erase line, cursor up, an OSC title, a line separator): kvspec
prints them escaped (PROTO-31)."""

import json
import sys

from fakelib import run

CONTROLS = "\r\x1b[2K\x1b[1A\x1b]0;owned\x07\u2028"


def hook(request: dict) -> str | None:
    if request["cmd"] == "start":
        return json.dumps({"seq": 0, "protocol": 1, "implementation": {"name": f"evil{CONTROLS}name", "language": "python", "version": "0"},
                           "level": "state", "policies": ["lru"]})
    if request["cmd"] == "hit_tokens":
        print(f"log{CONTROLS}line", file=sys.stderr, flush=True)
        return json.dumps({"seq": request["seq"], "error": f"out{CONTROLS}of blocks"}, ensure_ascii=False)
    return None


run(hook)
