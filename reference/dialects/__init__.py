"""Dialects (spec/dialects.md): the canonical policies with the variation points real
implementations take, each a literal alternative rule chosen by configuration."""

from .baselines import DialectFIFO, DialectLRU
from .catalogue import (
    CANONICAL,
    KNOWN_DIALECTS,
    VARIATIONS,
    Dialect,
    Variation,
    dialect_for,
    dialect_problem,
    in_catalogue_order,
    queues_hold_hashes,
    replaced_clauses,
)
from .s3fifo import DialectS3FIFO

__all__ = [
    "CANONICAL", "KNOWN_DIALECTS", "VARIATIONS", "Dialect", "DialectFIFO", "DialectLRU", "DialectS3FIFO", "Variation", "dialect_for",
    "dialect_policy", "in_catalogue_order", "queues_hold_hashes", "replaced_clauses",
]


def dialect_policy(policy: str, dialect: Dialect, capacity: int, small_ratio: float, max_freq: int) -> DialectS3FIFO | DialectLRU | DialectFIFO:
    """DIALECT-1: an empty cache of ``policy`` in ``dialect``, or the ConfigError of DIALECT-2 to
    DIALECT-4 for a set of variation points that makes no dialect of it."""
    problem = dialect_problem(policy, dialect)
    if problem is not None:
        raise problem
    if policy == "lru":
        return DialectLRU.empty(dialect, capacity)
    if policy == "fifo":
        return DialectFIFO.empty(dialect, capacity)
    return DialectS3FIFO.empty(dialect, capacity, small_ratio, max_freq)
