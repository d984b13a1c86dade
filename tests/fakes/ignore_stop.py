"""Answers correctly but never exits on stop."""

import json
import sys
import time

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    if request["cmd"] != "stop":
        print(correct(request, resident), flush=True)
time.sleep(3600)
