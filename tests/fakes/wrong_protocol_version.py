"""Speaks protocol 2."""

import json

from fakelib import correct, run


def hook(request: dict) -> str | None:
    if request["cmd"] == "start":
        reply = json.loads(correct(request, set()))
        reply["protocol"] = 2
        return json.dumps(reply)
    return None


run(hook)
