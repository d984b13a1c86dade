"""Answers correctly, each reply written in pieces with pauses between, so that kvspec reads it in several."""

import json
import sys
import time

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] == "stop":
        sys.exit(0)
    reply = correct(request, resident) + "\n"
    for piece in (reply[:1], reply[1 : len(reply) // 2], reply[len(reply) // 2 : -1], reply[-1:]):
        sys.stdout.write(piece)
        sys.stdout.flush()
        time.sleep(0.002)
