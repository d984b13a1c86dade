"""Answers hit_tokens with a reply nested 100,000 arrays deep: a JSON parser's recursion, not kvspec's crash (PROTO-1)."""

from fakelib import run


def hook(request: dict) -> str | None:
    if request["cmd"] == "hit_tokens":
        return f'{{"seq": {request["seq"]}, "hit_tokens": {"[" * 100_000}{"]" * 100_000}}}'
    return None


run(hook)
