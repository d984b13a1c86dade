"""After its configure reply, writes 1 MiB chunks to stdout with no newline, for ever, and reads stdin no more (PROTO-1 broken)."""

import json
import os
import sys

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    print(correct(request, resident), flush=True)
    if request["cmd"] == "configure":
        chunk = b"x" * (1 << 20)
        while True:
            os.write(1, chunk)
