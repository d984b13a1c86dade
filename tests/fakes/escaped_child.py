"""Leaves a child in a session of its own behind, holding its stderr open, then serves the reference:
killing this implementation's process group does not end the child, and the stderr pipe stays open."""

import os
import subprocess
import sys

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *sys.argv[1:]], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL)
os.execv(sys.executable, [sys.executable, "-m", "kvspec.adapters.serve", "reference"])
