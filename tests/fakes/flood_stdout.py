"""After its configure reply, writes 256 KiB of log lines to stdout before it reads on (PROTO-1 broken)."""

import json
import sys

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] == "stop":
        sys.exit(0)
    print(correct(request, resident), flush=True)
    if request["cmd"] == "configure":
        sys.stdout.write("fake log: a line that is no reply\n" * (1 << 13))
        sys.stdout.flush()
