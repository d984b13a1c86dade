"""Answers correctly, and on stop writes 1 MiB to stdout before it exits with status 0."""

import json
import sys

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] == "stop":
        sys.stdout.write("bye\n" * (1 << 18))
        sys.stdout.flush()
        sys.exit(0)
    print(correct(request, resident), flush=True)
