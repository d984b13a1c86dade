"""Answers start and configure, then exits 0 without answering anything else."""

import sys

from fakelib import run


def hook(request: dict) -> None:
    if request["cmd"] not in ("start", "configure"):
        print("fake: leaving early", file=sys.stderr, flush=True)
        sys.exit(0)


run(hook)
