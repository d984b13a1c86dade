"""Answers hit_tokens with a reply padded to 5000 bytes."""

import json

from fakelib import run

run(lambda request: json.dumps({"seq": request["seq"], "hit_tokens": 0, "pad": "x" * 5000}) if request["cmd"] == "hit_tokens" else None)
