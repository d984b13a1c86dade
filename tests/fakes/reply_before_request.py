"""After its configure reply, writes the reply hit_tokens (seq 2) would get, and reads stdin no more (PROTO-1 broken)."""

import json
import sys
import time

from fakelib import correct

resident: set[int] = set()
for line in sys.stdin:
    request = json.loads(line)
    print(correct(request, resident), flush=True)
    if request["cmd"] == "configure":
        print(json.dumps({"seq": 2, "hit_tokens": 0}), flush=True)
        time.sleep(3600)
