"""Answers configure with two replies in one write."""

from fakelib import correct, run

resident: set[int] = set()
run(lambda request: "\n".join([correct(request, resident)] * 2) if request["cmd"] == "configure" else None)
