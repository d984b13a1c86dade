"""kvspec's reference: the executable form of spec/replay.md, spec/s3fifo.md, spec/lru.md and
spec/fifo.md. Each rule is a function that cites its clause id."""

from .caches import make_policy, replay
from .constants import ALL_POLICIES, POLICIES
from .errors import ConfigError, KvspecError, TraceError
from .fifo import FIFO
from .lru import LRU
from .replay import ReplayConfig, replay_request
from .request import Policy
from .s3fifo import S3FIFO, Caps, caps_for
from .trace import TraceFile, bundled_trace_path

SPEC_VERSION = "0.1.0"
MODELS = ("ReplayResult", "RequestResult", "TraceRecord")  # pydantic's (models.py)


def __getattr__(name: str) -> object:
    """The pydantic models, loaded with pydantic when one is first asked for: printing help and
    `kvspec replay` need none of them."""
    if name in MODELS:
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "ALL_POLICIES", "FIFO", "LRU", "POLICIES", "S3FIFO", "SPEC_VERSION", "Caps", "ConfigError", "KvspecError", "Policy",
    "ReplayConfig", "ReplayResult", "RequestResult", "TraceError", "TraceFile", "TraceRecord",
    "bundled_trace_path", "caps_for", "make_policy", "replay", "replay_request",
]
