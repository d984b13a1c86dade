"""Answers hit_tokens with a line that is not JSON."""

from fakelib import run

run(lambda request: f'{{"seq": {request["seq"]}, "hit_tokens": ' if request["cmd"] == "hit_tokens" else None)
