"""The variation points of spec/dialects.md, and the dialects of the implementations kvspec knows.

A dialect is the canonical spec with a set of variation points (DIALECT-1); each variation point
replaces the clauses it names with one alternative rule (DIALECT-2). The rules themselves are in
s3fifo.py and baselines.py; this module only names them.
"""

from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class Variation:
    """One variation point: its id, its clause in spec/dialects.md, the policies it applies to, the
    canonical clauses it replaces, the variation points it is defined on top of (DIALECT-3) and the
    ones it cannot be combined with (DIALECT-4)."""

    id: str
    clause: str
    policies: tuple[str, ...]
    replaces: tuple[str, ...]
    requires: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()


S3 = ("s3fifo",)
BASELINES = ("lru", "fifo")
# An engine's own cache runs requests whole on prefix paths (spec/dialects.md, section 8), and has
# none of the rules of a queue of blocks (those of LRU and FIFO in a dialect, LMCache's included).
ENGINE_CACHE = ("path-ids", "too-long-skipped", "pin-request")
QUEUE_OF_BLOCKS = ("capacity-0-empty", "capacity-nonpositive-empty", "lru-evict-leaves", "lru-protect-request", "lru-admit-under-parent",
                  "partial-block-slot", "allocate-then-put", "lru-reverse-touch")

VARIATIONS = {v.id: v for v in (
    Variation("small-cap-floor", "S3-DIALECT-1", S3, ("S3-CONF-2",)),
    Variation("small-cap-min-1", "S3-DIALECT-2", S3, ("S3-CONF-5",)),
    Variation("main-zero-all-main", "S3-DIALECT-3", S3, ("S3-CONF-5", "S3-ACCESS-4"), excludes=("main-zero-drop",)),
    Variation("main-zero-drop", "S3-DIALECT-4", S3, ("S3-CONF-5", "S3-ADMIT-M-4"), excludes=("main-zero-all-main",)),
    Variation("small-ratio-open", "S3-DIALECT-5", S3, ("S3-CONF-1",)),
    Variation("ghost-cap-0.9", "S3-DIALECT-6", S3, ("S3-CONF-4",), excludes=("ghost-cap-capacity",)),
    Variation("ghost-cap-capacity", "S3-DIALECT-7", S3, ("S3-CONF-4",), excludes=("ghost-cap-0.9",)),
    Variation("max-freq-min-1", "S3-DIALECT-8", S3, ("S3-CONF-6",), excludes=("freq-unsaturated",)),
    Variation("promote-at-2", "S3-DIALECT-9", S3, ("S3-ADMIT-S-2", "S3-ADMIT-S-3")),
    Variation("promote-freq-reset", "S3-DIALECT-10", S3, ("S3-ADMIT-S-2",), excludes=("promote-freq-minus-1",)),
    Variation("promote-freq-minus-1", "S3-DIALECT-11", S3, ("S3-ADMIT-S-2",), excludes=("promote-freq-reset",)),
    Variation("main-victim-forgotten", "S3-DIALECT-12", S3, ("S3-ADMIT-M-3",)),
    Variation("freq-unsaturated", "S3-DIALECT-13", S3, ("S3-FREQ-1", "S3-FREQ-2", "S3-ADMIT-M-2", "S3-CONF-6"), excludes=("max-freq-min-1",)),
    Variation("global-eviction", "S3-DIALECT-14", S3, ("S3-ADMIT-S-1", "S3-ADMIT-M-1", "S3-INV-1", "S3-INV-2")),
    Variation("new-to-main-until-first-eviction", "S3-DIALECT-15", S3, ("S3-ACCESS-4",), requires=("global-eviction",)),
    Variation("ghost-ignored", "S3-DIALECT-16", S3, ("S3-ACCESS-3",)),
    Variation("small-refuses-own-size", "S3-DIALECT-17", S3, ("S3-ACCESS-4",)),
    Variation("capacity-0-empty", "REPLAY-DIALECT-1", BASELINES, ("REPLAY-CONF-1",), excludes=("capacity-nonpositive-empty",)),
    Variation("capacity-nonpositive-empty", "REPLAY-DIALECT-2", BASELINES, ("REPLAY-CONF-1",), excludes=("capacity-0-empty",)),
    Variation("path-ids", "REPLAY-DIALECT-3", BASELINES, ("REPLAY-TRACE-4",)),
    Variation("lru-evict-leaves", "LRU-DIALECT-1", ("lru",), ("LRU-EVICT-1",), requires=("path-ids",)),
    Variation("lru-protect-request", "LRU-DIALECT-2", ("lru",), ("LRU-EVICT-1", "LRU-ADMIT-1"), requires=("path-ids",)),
    Variation("lru-admit-under-parent", "LRU-DIALECT-3", ("lru",), ("LRU-ADMIT-1",), requires=("path-ids",)),
    Variation("hit-cap-last-token", "REPLAY-DIALECT-4", BASELINES, ("REPLAY-HIT-1",)),
    Variation("too-long-skipped", "REPLAY-DIALECT-5", BASELINES, ("REPLAY-ACCESS-1", "REPLAY-HIT-1")),
    Variation("pin-request", "REPLAY-DIALECT-6", BASELINES, ("LRU-EVICT-1", "FIFO-EVICT-1")),
    Variation("full-blocks-only", "REPLAY-DIALECT-7", BASELINES, ("REPLAY-PREFIX-1", "REPLAY-ACCESS-1")),
    Variation("partial-block-slot", "REPLAY-DIALECT-8", BASELINES, ("REPLAY-ACCESS-1",), requires=("full-blocks-only", "path-ids")),
    Variation("allocate-then-put", "REPLAY-DIALECT-9", BASELINES, ("REPLAY-ACCESS-1", "LRU-EVICT-1", "LRU-ADMIT-1", "FIFO-EVICT-1", "FIFO-ADMIT-1"),
              excludes=("partial-block-slot", "pin-request")),
    Variation("lru-reverse-touch", "LRU-DIALECT-4", ("lru",), ("LRU-ACCESS-1",), requires=("allocate-then-put",)),
    Variation("radix-lru-leaves", "LRU-DIALECT-5", ("lru",), ("LRU-ACCESS-1", "LRU-EVICT-1", "LRU-ADMIT-1"),
              requires=ENGINE_CACHE, excludes=QUEUE_OF_BLOCKS),
    Variation("radix-fifo-leaves", "FIFO-DIALECT-1", ("fifo",), ("FIFO-ACCESS-1", "FIFO-EVICT-1", "FIFO-ADMIT-1"),
              requires=ENGINE_CACHE, excludes=QUEUE_OF_BLOCKS),
    Variation("split-keeps-creation", "FIFO-DIALECT-2", ("fifo",), ("FIFO-DIALECT-1",), requires=("radix-fifo-leaves",)),
    Variation("lru-free-queue", "LRU-DIALECT-6", ("lru",), ("LRU-ACCESS-1", "LRU-EVICT-1", "LRU-ADMIT-1", "REPLAY-RESULT-4"),
              requires=ENGINE_CACHE, excludes=(*QUEUE_OF_BLOCKS, "radix-lru-leaves")),
)}

# DIALECT-5: each known implementation's dialect, policy by policy, with the package's defaults for
# every knob kvspec's configuration does not carry (the adapters in docs/certifications/ leave them so).
KNOWN_DIALECTS: dict[str, dict[str, tuple[str, ...]]] = {
    "libcachesim": {
        "s3fifo": ("small-cap-floor", "ghost-cap-0.9", "promote-at-2", "promote-freq-reset", "main-victim-forgotten",
                   "freq-unsaturated", "global-eviction", "new-to-main-until-first-eviction", "small-refuses-own-size"),
        "lru": ("capacity-0-empty",),
        "fifo": ("capacity-0-empty",),
    },
    "s3fifo-pypi": {
        "s3fifo": ("small-cap-floor", "small-cap-min-1", "main-zero-all-main", "ghost-cap-0.9", "promote-at-2",
                   "main-victim-forgotten", "freq-unsaturated", "global-eviction", "new-to-main-until-first-eviction", "ghost-ignored"),
    },
    "s3fifo-cache": {
        "s3fifo": ("small-cap-floor", "small-cap-min-1", "small-ratio-open", "main-zero-drop", "ghost-cap-capacity",
                   "promote-freq-minus-1", "main-victim-forgotten", "max-freq-min-1"),
    },
    "vllm": {"lru": (*ENGINE_CACHE, "hit-cap-last-token", "full-blocks-only", "lru-free-queue")},
    "sglang": {"lru": (*ENGINE_CACHE, "hit-cap-last-token", "full-blocks-only", "radix-lru-leaves"),
               "fifo": (*ENGINE_CACHE, "hit-cap-last-token", "full-blocks-only", "radix-fifo-leaves")},
    "sglang-unified": {"lru": (*ENGINE_CACHE, "hit-cap-last-token", "full-blocks-only", "radix-lru-leaves"),
                       "fifo": (*ENGINE_CACHE, "hit-cap-last-token", "full-blocks-only", "radix-fifo-leaves", "split-keeps-creation")},
    "lmcache": {"lru": ("capacity-0-empty", "path-ids", "full-blocks-only", "allocate-then-put", "lru-reverse-touch"),
                "fifo": ("capacity-0-empty", "path-ids", "full-blocks-only", "allocate-then-put")},
    "kvcache-simulator": {
        "lru": ("capacity-nonpositive-empty", "path-ids", "lru-evict-leaves", "lru-protect-request", "lru-admit-under-parent"),
        "fifo": ("capacity-nonpositive-empty", "path-ids"),
    },
}

# An engine's dialect of one policy, named by the policy too (spec/dialects.md, section 8).
KNOWN_DIALECTS |= {f"{engine}-{policy}": {policy: KNOWN_DIALECTS[engine][policy]} for engine in ("sglang", "sglang-unified", "lmcache") for policy in BASELINES}

Dialect = frozenset[str]
CANONICAL: Dialect = frozenset()


def dialect_problem(policy: str, variations: frozenset[str]) -> ConfigError | None:
    """DIALECT-2 to DIALECT-4: why these variation points do not make a dialect of ``policy``, or None."""
    for v in sorted(variations):
        if v not in VARIATIONS:
            return ConfigError("DIALECT-2", f"unknown variation point {v!r}; known: {', '.join(VARIATIONS)}")
        variation = VARIATIONS[v]
        if policy not in variation.policies:
            return ConfigError("DIALECT-2", f"{v} is a variation point of {' and '.join(variation.policies)}, not of {policy}")
        missing = [r for r in variation.requires if r not in variations]
        if missing:
            return ConfigError("DIALECT-3", f"{v} is defined on top of {', '.join(missing)}, which is not in the dialect")
        clashes = [x for x in variation.excludes if x in variations]
        if clashes:
            return ConfigError("DIALECT-4", f"{v} and {', '.join(clashes)} replace the same rule differently")
    return None


def dialect_for(policy: str, name: str | None = None, variations: tuple[str, ...] = ()) -> Dialect:
    """DIALECT-5: a named implementation's dialect of ``policy``, with further variation points; a
    ConfigError citing DIALECT-2 to DIALECT-5 for a name or set that does not make one."""
    chosen = set(variations)
    if name is not None:
        if name not in KNOWN_DIALECTS:
            raise ConfigError("DIALECT-5", f"unknown dialect {name!r}; known: {', '.join(KNOWN_DIALECTS)}")
        if policy not in KNOWN_DIALECTS[name]:
            raise ConfigError("DIALECT-5", f"{name} has no {policy} dialect; it has {', '.join(KNOWN_DIALECTS[name])}")
        chosen.update(KNOWN_DIALECTS[name][policy])
    dialect = frozenset(chosen)
    problem = dialect_problem(policy, dialect)
    if problem is not None:
        raise problem
    return dialect


def queues_hold_hashes(dialect: Dialect) -> bool:
    """Whether the policy's queues hold hash ids, so that PROTO-12's snapshot shows them: not under
    REPLAY-DIALECT-3 (path-ids), whose blocks are prefix paths."""
    return "path-ids" not in dialect


def in_catalogue_order(dialect: Dialect) -> list[str]:
    """The variation points in the order spec/dialects.md lists them."""
    return [v for v in VARIATIONS if v in dialect]


def replaced_clauses(dialect: Dialect) -> list[str]:
    """The canonical clauses a dialect replaces, each once, in catalogue order."""
    return list(dict.fromkeys(c for v in in_catalogue_order(dialect) for c in VARIATIONS[v].replaces))
