"""The certification machine: every request goes to the implementation and to the reference,
and they must agree after each one (spec/replay.md, spec/s3fifo.md, spec/lru.md, spec/fifo.md).

Requests are drawn as a tree of conversations (chained prefixes: fresh, extend, branch, repeat,
one-off scans), so that a shrunk counterexample is a short, realistic trace. Configurations are
drawn around every edge: the smallest valid S3FIFO caches, max_freq 0 and 1, small_ratio near 0
and 1, and configurations the spec refuses (S3-CONF-5), which the implementation must refuse too.
"""

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kvspec.adapters.interface import Adapter, AdapterConfig, ConfigRefused, Snapshot
from kvspec.adapters.reference import snapshot_of
from kvspec.reference import ConfigError, ReplayConfig, make_policy
from kvspec.reference.replay import Policy, hit_tokens, prefix_hit_blocks


class Divergence(AssertionError):
    """The implementation and the reference disagree. The message starts with the clauses; the
    fields carry what a report needs: the request (1-based; 0 for the configuration), expected
    and actual values, the configuration, and the trace up to and including that request."""

    def __init__(self, clauses: str, detail: str, *, request: int, expected: object, actual: object,
                 config: AdapterConfig | None, trace: list[tuple[list[int], int]]) -> None:
        super().__init__(f"{clauses}: {detail}")
        self.clauses = tuple(clause.strip() for clause in clauses.split(","))
        self.request = request
        self.expected = repr(expected)
        self.actual = repr(actual)
        self.config = config
        self.trace = list(trace)


@dataclass
class Conversations:
    """The requests so far, to draw the next one from (REPLAY-PREFIX-1 needs shared prefixes)."""

    requests: list[list[int]] = field(default_factory=list)
    next_id: int = 1

    def fresh(self, n: int) -> list[int]:
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids


def snapshot_clause(policy: str, expected: Snapshot, actual: Snapshot) -> str:
    """The clauses a queue difference points at first."""
    if policy == "lru":
        return "LRU-ACCESS-1, LRU-EVICT-1, LRU-ADMIT-1"
    if policy == "fifo":
        return "FIFO-ACCESS-1, FIFO-EVICT-1, FIFO-ADMIT-1"
    if expected.small != actual.small:
        return "S3-ADMIT-S-1, S3-ADMIT-S-2, S3-ADMIT-S-3, S3-ADMIT-S-4, S3-ACCESS-1, S3-FREQ-2"
    if expected.main != actual.main:
        return "S3-ADMIT-M-1, S3-ADMIT-M-2, S3-ADMIT-M-3, S3-ADMIT-M-4, S3-ACCESS-2"
    return "S3-GHOST-1, S3-GHOST-2, S3-GHOST-3, S3-ACCESS-3"


def config_strategy(policy: str) -> st.SearchStrategy[AdapterConfig]:
    """Configurations around the edges, refused ones included."""
    ratios = st.sampled_from([0.1, 0.5, 0.01, 0.99, 0.25]) | st.floats(0.0, 1.0)
    capacities = st.sampled_from([1, 2, 3, 5, 6, 7, 10, 11, 15, 25]) | st.integers(1, 48)
    return st.builds(
        AdapterConfig,
        policy=st.just(policy),
        capacity=capacities,
        block_size=st.sampled_from([1, 4, 16, 512]),
        small_ratio=ratios if policy == "s3fifo" else st.just(0.1),
        max_freq=st.sampled_from([0, 1, 3]) | st.integers(0, 5) if policy == "s3fifo" else st.just(3),
    )


class CertificationMachine(RuleBasedStateMachine):
    """Subclassed by ``machine_for`` with the adapter under test and the policy to certify."""

    adapter: Adapter
    policy: str
    examples: int = 0  # how many examples (one configuration and its requests) have started

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.reference: Policy | None = None
        self.config: AdapterConfig | None = None
        self.conversations = Conversations()
        self.number = 0
        self.trace: list[tuple[list[int], int]] = []

    def diverge(self, clauses: str, detail: str, expected: object, actual: object) -> Divergence:
        return Divergence(clauses, detail, request=self.number, expected=expected, actual=actual, config=self.config, trace=self.trace)

    @initialize(data=st.data())
    def configure(self, data: st.DataObject) -> None:
        config = data.draw(config_strategy(self.policy), label="config")
        self.config = config
        try:
            self.reference = make_policy(ReplayConfig(config.policy, config.capacity, config.block_size, config.small_ratio, config.max_freq))
            refused_by = None
        except ConfigError as error:
            refused_by = error.clause
        try:
            self.adapter.configure(config)
            accepted = True
        except ConfigRefused:
            accepted = False
        if refused_by is not None and accepted:
            raise self.diverge(refused_by, f"the configuration {config} must be refused, and the implementation accepted it", "refused", "accepted")
        if refused_by is None and not accepted:
            raise self.diverge("S3-CONF-5, REPLAY-CONF-1", f"the configuration {config} is valid, and the implementation refused it", "accepted", "refused")
        if refused_by is not None:
            self.reference = None

    @rule(
        kind=st.sampled_from(["extend", "fresh", "repeat", "branch", "scan"]),
        pick=st.integers(0, 7),
        blocks=st.integers(1, 4),
        keep=st.integers(0, 12),
        tokens=st.integers(0, 511),
    )
    def request(self, kind: str, pick: int, blocks: int, keep: int, tokens: int) -> None:
        """One request, sent to both; the hit tokens, resident count and queues must agree."""
        if self.reference is None:
            return  # both refused the configuration: nothing more to compare
        assert self.config is not None
        hash_ids = self.draw_request(kind, pick, blocks, keep)
        block_size = self.config.block_size
        input_length = (len(hash_ids) - 1) * block_size + 1 + tokens % block_size
        self.number += 1
        self.trace.append((hash_ids, input_length))
        where = f"request {self.number} (hash_ids {hash_ids}, input_length {input_length})"
        expected = hit_tokens(prefix_hit_blocks(hash_ids, self.reference.is_resident), block_size, input_length)
        state_level = self.adapter.level == "state"
        before = self.adapter.snapshot() if state_level else None
        actual = self.adapter.hit_tokens(hash_ids, input_length)
        if actual != expected:
            raise self.diverge("REPLAY-PREFIX-1, REPLAY-PREFIX-2, REPLAY-HIT-1", f"{where}: expected {expected} hit tokens, got {actual}", expected, actual)
        if state_level and self.adapter.snapshot() != before:
            raise self.diverge("REPLAY-PREFIX-3, REPLAY-POLICY-1", f"{where}: the hit-token check changed the cache", before, self.adapter.snapshot())
        for h in hash_ids:
            self.reference.access(h)
        self.adapter.access(hash_ids)
        self.conversations.requests.append(hash_ids)

    def draw_request(self, kind: str, pick: int, blocks: int, keep: int) -> list[int]:
        earlier = self.conversations.requests
        if not earlier or kind == "fresh":
            return self.conversations.fresh(blocks)
        if kind == "scan":
            return self.conversations.fresh(blocks + 6)
        parent = earlier[-1 - pick % len(earlier)]
        if kind == "repeat":
            return list(parent)
        if kind == "extend":
            return parent + self.conversations.fresh(blocks)
        return parent[: keep % len(parent)] + self.conversations.fresh(blocks)

    @invariant()
    def resident_counts_agree(self) -> None:
        """REPLAY-RESULT-4, S3-FINAL-1: |S| + |M|, never the ghost."""
        if self.reference is None:
            return
        expected, actual = self.reference.resident_count(), self.adapter.resident_count()
        if expected != actual:
            raise self.diverge("REPLAY-RESULT-4, S3-FINAL-1", f"after request {self.number}: expected {expected} resident blocks, got {actual}", expected, actual)

    @invariant()
    def queues_agree(self) -> None:
        """At the state level, every queue in order, with its freqs."""
        if self.reference is None or self.adapter.level != "state":
            return
        expected, actual = snapshot_of(self.reference), self.adapter.snapshot()
        if expected != actual:
            raise self.diverge(snapshot_clause(self.policy, expected, actual), f"after request {self.number}: expected {expected}, got {actual}", expected, actual)


def machine_for(adapter: Adapter, policy: str) -> type[CertificationMachine]:
    """A machine class that certifies ``adapter`` on ``policy``."""
    return type(f"Certify{policy.upper()}", (CertificationMachine,), {"adapter": adapter, "policy": policy})
