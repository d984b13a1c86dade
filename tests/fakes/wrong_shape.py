"""Answers hit_tokens with a string where an integer belongs, and an extra field."""

import json

from fakelib import run

run(lambda request: json.dumps({"seq": request["seq"], "hit_tokens": "0", "cached": True}) if request["cmd"] == "hit_tokens" else None)
