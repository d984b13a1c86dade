"""The names and defaults that modules of every layer share and the command line shows before any
work, in a module that imports nothing: building the parser (and `kvspec replay`) loads none of the
code they configure, and no module depends on a heavier one for a constant. Each is re-exported
where it used to be defined."""

from typing import Literal, get_args

PolicyName = Literal["s3fifo", "lru", "fifo"]
POLICIES: tuple[PolicyName, ...] = ("s3fifo", "lru", "fifo")  # REPLAY-CONF-3; re-exported by replay.py
AnyPolicyName = Literal[PolicyName, "benefit"]  # spec/replay.md's policies, and spec/benefit.md's
ALL_POLICIES: tuple[AnyPolicyName, ...] = get_args(AnyPolicyName)  # re-exported by reference/__init__.py

REPLY_TIMEOUT = 10.0  # PROTO-15: seconds for a reply ...
START_TIMEOUT = 30.0  # ... and for the start reply, or an in-process factory; both re-exported by kvspec.adapters

DEFAULT_CAPACITIES = (256, 1024, 4096, 16384, 65536)  # `kvspec sweep`'s capacities, in blocks; re-exported by conformance/measurement/sweep.py

# `kvspec certify --profile`: Hypothesis's budget for each (conformance/certification/certify.py makes them its PROFILES)
CERTIFY_PROFILES = {
    # CI: a few seconds an adapter kind; catches every mutant of the gallery.
    "quick": {"max_examples": 150, "stateful_step_count": 25},
    # Certification: minutes; longer traces, more configurations.
    "thorough": {"max_examples": 2000, "stateful_step_count": 60},
}
