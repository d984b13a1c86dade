"""Prints a log line on stdout before its start reply."""

from fakelib import run

print("fake: loading the cache...", flush=True)
run()
