"""Answers hit_tokens with the wrong seq."""

import json

from fakelib import run

run(lambda request: json.dumps({"seq": request["seq"] + 1, "hit_tokens": 0}) if request["cmd"] == "hit_tokens" else None)
