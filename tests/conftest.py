"""Every test runs the reference with all its contracts installed (reference/contracts.py).

The variable must be set before kvspec.reference is first imported, which is why it is set
here, at collection, and why tests/test_contracts.py checks that it took effect.
"""

import os

os.environ.setdefault("KVSPEC_CONTRACTS", "all")
