"""Answers access with an error reply."""

import json

from fakelib import run

run(lambda request: json.dumps({"seq": request["seq"], "error": "fake: out of blocks"}) if request["cmd"] == "access" else None)
