"""Never answers hit_tokens."""

import sys
import time

from fakelib import run


def hook(request: dict) -> None:
    if request["cmd"] == "hit_tokens":
        print("fake: thinking forever", file=sys.stderr, flush=True)
        time.sleep(3600)


run(hook)
