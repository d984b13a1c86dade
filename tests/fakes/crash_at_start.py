"""Crashes on the start request, with a traceback on stderr."""

import sys

sys.stdin.readline()
raise RuntimeError("fake crash at start")
