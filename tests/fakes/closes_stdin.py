"""Closes its stdin as it answers configure, and stays: kvspec reports that it closed its stdin, not
its stdout (PROTO-15), at its next request."""

import json
import os
import sys
import time

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] == "configure":
        os.close(0)
        print(correct(request, resident), flush=True)
        time.sleep(30)
    print(correct(request, resident), flush=True)
