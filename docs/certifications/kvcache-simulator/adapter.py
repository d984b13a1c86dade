"""kvspec adapter for the FIFO and LRU of kvcache-simulator 0.1.3 (PyPI; Apache-2.0), driven
through the longest-prefix replay of spec/replay.md.

    kvspec certify --adapter python:docs/certifications/kvcache-simulator/adapter.py:adapter

The package has no step-by-step API: it simulates a whole trace at once and reports only the hit
tokens of its measured window (the requests from ``warmup_requests`` on). So the adapter keeps the
requests accessed so far and answers each question with a fresh whole-trace run of its pure-Python
backend (``kvcache_sim.policies``; the default C++ backend would need a compiler):

- hit tokens (PROTO-9): the accessed requests and then the one asked about, measuring that one
  alone (``warmup_requests`` = the number accessed). Nothing is kept, so the cache is not changed.
  Where the package reports the window "underfilled" (the cache never filled before it, so it
  measures nothing), nothing was ever evicted and every block was admitted: the package's own
  infinite cache, ``simulate_ceiling``, on the same plan gives the hit tokens.
- access (PROTO-10): appends the request to those accessed; nothing runs.
- resident count (PROTO-11): the accessed requests, all as warmup so that the run goes to the end,
  reading the simulation's own local ``cache_size`` as its function returns (the package reports
  no count); none when no cache was built (a capacity <= 0, or nothing accessed yet).

Each question costs a run over every request accessed so far, O(n^2) blocks over n requests: fine
for the certification's examples, too slow for a whole Mooncake trace. The package is configured
as its users get it: a capacity in blocks (its CLI derives one from GiB budgets), the token weight
of each block from its own ``block_tokens`` (min(block_size, what is left of input_length), whose
prefix sums are REPLAY-HIT-1's min(k * block_size, input_length)), and every capacity passed through,
as the package takes any (<= 0: no cache), so that the dialect kvspec certifies it against,
kvcache-simulator (spec/dialects.md), is the package's own. It uses internals that its
``__all__`` does not export (trace, plan, policies): pin the version. The results level: the
package's state is in local variables of a function that has returned.
"""

import json
import sys
from importlib.metadata import version
from types import FrameType
from typing import Any

from kvcache_sim.plan import ExecutionPlan, build_execution_plan
from kvcache_sim.policies import simulate_ceiling, simulate_fifo, simulate_policy, simulate_trie_policy
from kvcache_sim.trace import parse_trace_lines

from kvspec.adapters.interface import AdapterConfig, AdapterFailure, ConfigRefused, Identity, Level, Snapshot

SIMULATIONS = {"fifo": simulate_fifo.__code__, "lru": simulate_trie_policy.__code__}


class KvcacheSimulator:
    identity = Identity(name="kvcache-simulator (PyPI), python backend", language="python", version=version("kvcache-simulator"))
    level: Level = "results"
    policies = ("lru", "fifo")

    def __init__(self) -> None:
        self.config: AdapterConfig | None = None
        self.accessed: list[str] = []  # the requests accessed so far, as trace lines

    def configure(self, config: AdapterConfig) -> None:
        self.config, self.accessed = None, []
        if config.policy not in self.policies:
            raise ConfigRefused("kvcache-simulator implements FIFO and LRU (and an optimal policy kvspec does not have)")
        if config.block_size < 1:  # the package refuses it only as it parses a trace
            raise ConfigRefused(f"REPLAY-CONF-2: block_size must be at least 1, not {config.block_size}")
        self.config = config

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        config = self.configured()
        plan = self.plan([*self.accessed, self.line(hash_ids, input_length)])
        result = simulate_policy(plan, config.policy, config.capacity)
        if result.measurementMode == "underfilled_at_window":  # never full, so nothing evicted: all admitted
            return simulate_ceiling(plan).hitTokens
        return result.hitTokens

    def access(self, hash_ids: list[int]) -> None:
        block_size = self.configured().block_size
        self.accessed.append(self.line(hash_ids, len(hash_ids) * block_size))  # a warmup request: its tokens are never measured

    def resident_count(self) -> int:
        config = self.configured()
        if not self.accessed:
            return 0
        simulation = SIMULATIONS[config.policy]
        final: dict[str, Any] = {}

        def on_return(frame: FrameType, event: str, arg: object) -> None:
            if event == "return":
                final.update(frame.f_locals)

        def on_call(frame: FrameType, event: str, arg: object) -> Any:
            if frame.f_code is not simulation:
                return None
            frame.f_trace_lines = False  # only its return is wanted
            return on_return

        plan, previous = self.plan(self.accessed), sys.gettrace()  # a debugger's or coverage's tracer is put back after
        sys.settrace(on_call)
        try:
            simulate_policy(plan, config.policy, config.capacity)
        finally:
            sys.settrace(previous)
        return final.get("cache_size", 0)  # no cache_size: it returned before building a cache (capacity <= 0)

    def snapshot(self) -> Snapshot:
        raise AdapterFailure("the results level has no snapshot")

    def close(self) -> None:
        self.config, self.accessed = None, []

    def configured(self) -> AdapterConfig:
        if self.config is None:
            raise ConfigRefused("no cache is configured")
        return self.config

    def line(self, hash_ids: list[int], input_length: int) -> str:
        return json.dumps({"hash_ids": hash_ids, "input_length": input_length, "block_size": self.configured().block_size})

    def plan(self, lines: list[str]) -> ExecutionPlan:
        """The package's execution plan of ``lines``, measuring the last one (none, if it is an access)."""
        plan = build_execution_plan(parse_trace_lines(lines), warmup_fraction=0.0)
        plan.warmup_requests = len(self.accessed)
        return plan


def adapter() -> KvcacheSimulator:
    return KvcacheSimulator()
