"""At its first hit_tokens, starts a child that holds its stdout open, and exits at once: kvspec
reports the exit as it happens (PROTO-15), not after the whole reply timeout as a hang."""

import subprocess
import sys

from fakelib import run


def hook(request: dict) -> str | None:
    if request["cmd"] == "hit_tokens":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", *sys.argv[1:]], stdin=subprocess.DEVNULL)
        sys.exit(0)
    return None


run(hook)
