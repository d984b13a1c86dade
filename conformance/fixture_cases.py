"""Golden fixtures (spec/fixtures.md section 2): the case kinds and where their inputs come from.

Each builder computes a case's expected results with the reference while recording the clauses
that ran (conformance/clauses.py). Inputs are seeded with xorshift64 (BEN-TRACE-1), so that
nothing depends on Python's own random numbers; the rest come from the findings, the bundled
traces, conformance/hunted.json (`kvspec hunt --record`) and conformance/counterexamples.json
(`kvspec fixtures collect`).
"""

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, replace
from itertools import count, islice
from pathlib import Path
from typing import Any

from kvspec.adapters.benefit import ReferenceBenefitAdapter
from kvspec.adapters.protocol import to_double
from kvspec.adapters.reference import snapshot_of
from kvspec.adapters.wire import answer_benefit, received
from kvspec.reference import ConfigError, KvspecError, ReplayConfig, TraceFile, TraceRecord, bundled_trace_path, make_policy, replay
from kvspec.reference.benefit import BenefitConfig
from kvspec.reference.benefit.traces import XorShift64
from kvspec.reference.errors import TraceError
from kvspec.reference.replay import PolicyServer
from kvspec.reference.validation import INT64_MAX, INT64_MIN

from .clauses import exercised
from .fixtures import FORMAT, Json
from .machine import long_queues
from .output import written_whole
from .strategies import ID_NUMBERINGS, KEY_NUMBERINGS, PLAIN, Numbering

NAN, INF = float("nan"), float("inf")


# Replay cases (FIX-6) ---------------------------------------------------------------------------

Request = tuple[list[int], int]


# FIX-6: what the expected values of an accepted replay case satisfy, and a consumer checks with them.
REPLAY_DECLARES = ("REPLAY-RESULT-1", "REPLAY-RESULT-2", "REPLAY-RESULT-3", "REPLAY-INV-1", "REPLAY-INV-2", "REPLAY-INV-3", "REPLAY-POLICY-1")
STATE_DECLARES = {"s3fifo": ("REPLAY-QUEUE-1", "S3-QUEUE-2", "S3-FREQ-1", "S3-GHOST-4", "S3-INV-1", "S3-INV-2", "S3-INV-3"),
                  "lru": ("REPLAY-QUEUE-1",), "fifo": ("REPLAY-QUEUE-1",)}


class Recorder:
    """A Server (kvspec.reference.replay) that also records what a consumer checks after each request."""

    def __init__(self, config: ReplayConfig, level: str) -> None:
        self.server = PolicyServer(make_policy(config), config.block_size)
        self.level = level
        self.steps: list[Json] = []

    def request(self, hash_ids: list[int], input_length: int) -> int:
        hit = self.server.request(hash_ids, input_length)
        expect: Json = {"hit_tokens": hit, "resident_count": self.server.resident_count()}
        if self.level == "state":
            snapshot = snapshot_of(self.server.policy)  # PROTO-12's shapes
            expect["snapshot"] = {"small": [list(e) for e in snapshot.small], "main": [list(e) for e in snapshot.main],
                                  "ghost": list(snapshot.ghost)}
        self.steps.append({"hash_ids": hash_ids, "input_length": input_length, "expect": expect})
        return hit

    def resident_count(self) -> int:
        return self.server.resident_count()


def replay_case(title: str, provenance: str, config: ReplayConfig, requests: list[Request], level: str = "state",
                clauses: tuple[str, ...] = ()) -> Json:
    """FIX-6: the expected results of ``requests`` under ``config``, or the clause that refuses it."""
    wire = {"policy": config.policy, "capacity": config.capacity, "block_size": config.block_size,
            "small_ratio": config.small_ratio, "max_freq": config.max_freq}
    case: Json = {"format": FORMAT, "kind": "replay", "title": title, "provenance": provenance, "level": level, "config": wire}
    records = [(line, TraceRecord(timestamp=line, input_length=length, output_length=1, hash_ids=list(ids)))
               for line, (ids, length) in enumerate(requests, start=1)]
    with exercised() as ran:
        try:
            recorder = Recorder(config, level)
        except ConfigError as error:
            case.update(refused=error.clause, requests=[], totals=None)
        else:
            result = replay(records, config, server=recorder)
            case.update(refused=None, requests=recorder.steps, totals={
                "total_hit_tokens": result.total_hit_tokens, "total_prompt_tokens": result.total_prompt_tokens,
                "final_cache_blocks": result.final_cache_blocks})
            ran.update(REPLAY_DECLARES)
            if level == "state":
                ran.update(STATE_DECLARES[config.policy])
    case["clauses"] = sorted(ran | set(clauses))
    return case


def conversation(rng: XorShift64, n: int, block_size: int, numbering: Numbering = PLAIN) -> list[Request]:
    """Requests that share chained prefixes as Mooncake's do: fresh conversations, next turns,
    branches part-way, exact repeats and one-off scans; last blocks often partial. The n-th fresh
    id is numbering(n)."""
    requests: list[list[int]] = []
    fresh = map(numbering, count(1))
    for _ in range(n):
        move = rng.u64() % 5 if requests else 0
        earlier = requests[rng.u64() % len(requests)] if requests else []
        if move == 0 or move == 4:  # a new conversation, or a scan nobody reuses
            ids = [next(fresh) for _ in range(1 + rng.u64() % 4)]
        elif move == 1:
            ids = earlier + [next(fresh) for _ in range(1 + rng.u64() % 3)]
        elif move == 2:
            ids = earlier[: 1 + rng.u64() % len(earlier)] + [next(fresh) for _ in range(1 + rng.u64() % 2)]
        else:
            ids = list(earlier)
        requests.append(ids)
    return [(ids, (len(ids) - 1) * block_size + 1 + rng.u64() % block_size) for ids in requests]


def arbitrary(rng: XorShift64, n: int, numbering: Numbering = PLAIN) -> list[Request]:
    """Ids from a pool of six, repeating inside a request and at any position (findings F-5)."""
    requests = []
    for _ in range(n):
        ids = [numbering(1 + rng.u64() % 6) for _ in range(1 + rng.u64() % 5)]
        requests.append((ids, len(ids)))
    return requests


def huge_blocks(block_size: int) -> list[Request]:
    """Two blocks brought in by one-token requests, then both asked for at once, the last block as
    full as input_length <= 2**63 - 1 allows (REPLAY-TRACE-2): k * block_size overflows a signed
    64-bit integer, and the totals stay counts."""
    both = [1, 2][: (INT64_MAX - 3) // block_size + 1]
    return [([2], 1), ([1], 1), (both, min(len(both) * block_size, INT64_MAX - 3)), ([3], 1)]


WIDE_CONFIGS = [
    *((f"capacity {c}", ReplayConfig(policy=p, capacity=c, block_size=4)) for p in ("s3fifo", "lru", "fifo")  # type: ignore[arg-type]
      for c in (INT64_MAX, -1, INT64_MIN)),
    *((f"block_size {b}", ReplayConfig(policy=p, capacity=10, block_size=b)) for p in ("s3fifo", "lru", "fifo")  # type: ignore[arg-type]
      for b in (INT64_MAX, 2**62 + 1, -1, INT64_MIN)),
    *((f"max_freq {m}", ReplayConfig(capacity=10, block_size=4, max_freq=m)) for m in (INT64_MAX, INT64_MIN)),
    *((f"small_ratio {r}", ReplayConfig(capacity=10, block_size=4, small_ratio=r)) for r in (1.5, -0.25)),
    # Only S3-CONF-1 refuses these: capacity × small_ratio overflows to an infinity, where any other
    # ratio outside [0, 1] leaves small_cap or main_cap below 1 (S3-CONF-5) ...
    *((f"small_ratio {r}", ReplayConfig(capacity=10, block_size=4, small_ratio=r)) for r in (sys.float_info.max, -sys.float_info.max)),
    # ... and these are accepted: at 2**63 - 1 blocks (2**63 as a double), small_cap is 2**63 - 2**10
    # and main_cap 1023, or small_cap 8 (S3-CONF-2's product on doubles).
    *((f"small_ratio {r} at capacity 2**63 - 1", ReplayConfig(capacity=INT64_MAX, block_size=4, small_ratio=r)) for r in (1 - 2**-53, 2**-60)),
]

# S3-ADMIT-M-2 at the results level (capacity 3: S holds 1 block, M 2): block 1 reaches M with freq
# 1 and is hit there (freq 2); blocks 2 and 3, ghosts of S's, follow it into M, so that M evicts
# twice with block 1 at its head. Lowered by one each time (2 to 1, 1 to 0), it outlives both, and
# the last request hits it; a cache that lowers it by two, or gives a freq-0 entry a second chance
# too, evicts it the second time instead.
SECOND_CHANCE = [([1, 1], 2), ([2], 1), ([1], 1), ([3], 1), ([2], 1), ([4], 1), ([3], 1), ([5], 1), ([4], 1), ([1], 1)]


def replay_cases() -> Iterator[Json]:
    base = ReplayConfig(block_size=4)
    edge_trace = conversation(XorShift64(7), 14, 4)
    for capacity in (0, 1, 2, 5, 6, 10, 11):
        for small_ratio in (0.1, 0.5, 0.99, 1.0, 0.0):
            config = replace(base, capacity=capacity, small_ratio=small_ratio)
            yield replay_case(f"s3fifo edge: capacity {capacity}, small_ratio {small_ratio}", "spec/findings.md F-1 to F-4", config, edge_trace)
    for max_freq in (-1, 0, 1, 3, 7):
        yield replay_case(f"s3fifo edge: max_freq {max_freq}", "spec/findings.md F-3", replace(base, capacity=10, max_freq=max_freq), edge_trace)
    yield replay_case("block_size 0", "REPLAY-CONF-2", replace(base, block_size=0), edge_trace)
    for title, config in WIDE_CONFIGS:  # FIX-6: the whole domain of each knob, 2**63 - 1 accepted, the rest refused
        trace = edge_trace if config.block_size <= 4 else huge_blocks(config.block_size)
        yield replay_case(f"{config.policy} whole domain: {title}", "REPLAY-CONF-1, REPLAY-CONF-2, S3-CONF-1, S3-CONF-6", config, trace)
    yield replay_case("s3fifo second chance: a block hit in M outlives two evictions", "spec/s3fifo.md S3-ADMIT-M-2, written by hand",
                      ReplayConfig(capacity=3, block_size=1, small_ratio=0.34), SECOND_CHANCE, level="results")
    for policy in ("s3fifo", "lru", "fifo"):  # FIX-6: every queue past 256 blocks, the hit tokens and resident counts show its bound
        probe = long_queues(policy)
        assert probe is not None  # unpinned, every policy has one
        c = probe.config
        yield replay_case(f"{policy} long queues: capacity {c.capacity}", "the long-queues probe of `kvspec certify` (conformance/machine.py)",
                          ReplayConfig(policy=policy, capacity=c.capacity, block_size=c.block_size, small_ratio=c.small_ratio,  # type: ignore[arg-type]
                                       max_freq=c.max_freq), [(list(ids), len(ids)) for ids in probe.requests], level="results")
    for policy in ("lru", "fifo"):
        for capacity in (0, 1, 2, 10):
            yield replay_case(f"{policy} edge: capacity {capacity}", "spec/findings.md F-4", replace(base, policy=policy, capacity=capacity),
                              edge_trace)
    for policy in ("s3fifo", "lru", "fifo"):
        for seed in range(1, 7):
            for capacity, block_size in ((10, 1), (20, 16), (40, 512)):
                trace = conversation(XorShift64(seed * 1000 + capacity), 24, block_size)
                config = ReplayConfig(policy=policy, capacity=capacity, block_size=block_size)  # type: ignore[arg-type]
                yield replay_case(f"{policy} conversations: seed {seed}, capacity {capacity}, block_size {block_size}",
                                  "xorshift64 conversations", config, trace)
        for seed in range(1, 4):
            config = ReplayConfig(policy=policy, capacity=10, block_size=1)  # type: ignore[arg-type]
            yield replay_case(f"{policy} repeated ids: seed {seed}", "spec/findings.md F-5", config, arbitrary(XorShift64(seed), 20),
                              clauses=("REPLAY-TRACE-4",))
        for numbering in ID_NUMBERINGS[1:]:  # FIX-6, REPLAY-TRACE-2: ids across the whole domain, colliding in narrower keys
            config = ReplayConfig(policy=policy, capacity=6, block_size=4)  # type: ignore[arg-type]
            yield replay_case(f"{policy} ids {numbering}: conversations", "xorshift64 conversations, ids across [-2**63, 2**63 - 1]", config,
                              conversation(XorShift64(11), 20, 4, numbering), clauses=("REPLAY-TRACE-2",))
            yield replay_case(f"{policy} ids {numbering}: repeated ids", "spec/findings.md F-5, ids across [-2**63, 2**63 - 1]",
                              replace(config, block_size=1), arbitrary(XorShift64(12), 20, numbering), clauses=("REPLAY-TRACE-2", "REPLAY-TRACE-4"))
        for name in BUNDLED:
            excerpt = [(record.hash_ids, record.input_length) for _, record in islice(TraceFile(bundled_trace_path(name)).records(), 150)]
            yield replay_case(f"{policy} on {name}, first 150 requests, 64 blocks", f"{name} lines 1 to 150 (Mooncake FAST'25, Apache-2.0)",
                              ReplayConfig(policy=policy, capacity=64), excerpt, level="results")  # type: ignore[arg-type]


BUNDLED = ("conversation_trace.jsonl.gz", "synthetic_trace.jsonl.gz")


COUNTEREXAMPLES = Path(__file__).with_name("counterexamples.json")  # as installed, for the fixtures
CHECKOUT_COUNTEREXAMPLES = Path("conformance/counterexamples.json")  # where `kvspec fixtures collect` writes: a kvspec checkout


def collect(reports: list[Path]) -> int:
    """Add the shrunk counterexamples of certification reports (report.json and its trace files)
    to conformance/counterexamples.json of the checkout in the current directory; how many were new."""
    if not CHECKOUT_COUNTEREXAMPLES.parent.is_dir():
        raise KvspecError("fixtures collect writes conformance/counterexamples.json: run it from a kvspec checkout")
    known = json.loads(CHECKOUT_COUNTEREXAMPLES.read_text(encoding="utf-8")) if CHECKOUT_COUNTEREXAMPLES.exists() else []
    seen = {json.dumps([c["adapter"], c["config"], c["requests"]]) for c in known}
    added = 0
    for folder in reports:
        try:
            report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise KvspecError(f"{folder / 'report.json'}: not a certification report: {error}") from None
        try:
            added += keep_counterexamples(folder, report, known, seen)
        except (KeyError, TypeError, AttributeError) as error:
            raise KvspecError(f"{folder / 'report.json'}: not a kvspec certification report (spec/schemas/certification-report.schema.json): "
                              f"{type(error).__name__}: {error}") from None
    with written_whole(CHECKOUT_COUNTEREXAMPLES) as temporary:
        temporary.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return added


def keep_counterexamples(folder: Path, report: Any, known: list[Any], seen: set[str]) -> int:
    """Add each failure of ``report`` with a shrunk trace to ``known``, once; how many were new."""
    added = 0
    for verdict in report["policies"]:
        for failure in verdict["failures"]:
            found = {"adapter": report["adapter"], "policy": verdict["policy"], "seed": report["seed"], "profile": report["profile"],
                     "clauses": failure["clauses"]}
            if verdict["policy"] == "benefit" and failure["trace_file"]:
                case = json.loads((folder / failure["trace_file"]).read_text(encoding="utf-8"))
                found.update(config=case["config"], requests=[step["request"] for step in case["operations"]])
            elif failure["config"] is not None:
                requests = []
                if failure["trace_file"]:
                    requests = [[r.hash_ids, r.input_length] for _, r in TraceFile(folder / failure["trace_file"]).records()]
                found.update(config=failure["config"], requests=requests)
            else:
                continue  # the implementation broke the protocol: nothing to replay
            key = json.dumps([found["adapter"], found["config"], found["requests"]])
            if key not in seen:
                seen.add(key)
                known.append(found)
                added += 1
    return added


def counterexample_cases() -> Iterator[Json]:
    """Every shrunk counterexample `kvspec fixtures collect` kept, as a state-level replay case."""
    for found in json.loads(COUNTEREXAMPLES.read_text(encoding="utf-8")):
        c = found["config"]
        provenance = (f"the shrunk counterexample of `kvspec certify --adapter {found['adapter']} --policy {found['policy']} "
                      f"--profile {found['profile']} --seed {found['seed']}`")
        title = f"counterexample: {found['adapter'].rsplit(':', 1)[-1]} ({found['clauses'][0]})"
        if found["policy"] == "benefit":
            yield benefit_case(title, provenance, c, found["requests"])
            continue
        config = ReplayConfig(policy=c["policy"], capacity=c["capacity"], block_size=c["block_size"], small_ratio=c["small_ratio"],
                              max_freq=c["max_freq"])
        yield replay_case(title, provenance, config, [(ids, length) for ids, length in found["requests"]])


def hunted_cases() -> Iterator[Json]:
    """Every counterexample `kvspec hunt --record` kept (conformance/hunted.json), as a replay case."""
    from .hunt import HUNTED

    for found in json.loads(HUNTED.read_text(encoding="utf-8")):
        args, provenance = found["args"], f"kvspec hunt {found['search']}: `{found['command']}`, {found['seconds']} s"
        call = ", ".join(f"{name}={value!r}" for name, value in args.items())
        title = f"hunted: {found['function'].rsplit('.', 1)[-1]}({call}): {found['found']}"
        if {"capacity", "small_ratio"} <= set(args):  # a configuration of the seed's that the spec refuses (S3-CONF-5)
            config = ReplayConfig(capacity=args["capacity"], small_ratio=float(args["small_ratio"]), block_size=4)
            yield replay_case(title, provenance, config, conversation(XorShift64(7), 14, 4))
        else:  # hit_tokens(k, block_size, input_length): the same request twice, so that the second hits k blocks
            k, block_size, length = args["k"], args["block_size"], args["input_length"]
            blocks = list(range(1, -(-length // block_size) + 1))
            config = ReplayConfig(policy="lru", capacity=len(blocks) + k + 1, block_size=block_size)
            yield replay_case(title, provenance, config, [(blocks, length), (blocks, length)])


# Benefit cases (FIX-7) --------------------------------------------------------------------------

DEFAULTS: Json = asdict(BenefitConfig())  # BEN-CONF-1 to BEN-CONF-7


def benefit_case(title: str, provenance: str, config: Json, operations: list[Json], level: str = "state",
                 clauses: tuple[str, ...] = ()) -> Json:
    """FIX-7: each operation, a protocol request without its seq, with the reply the reference gives
    (without its seq) and, at the state level, the state after it."""
    case: Json = {"format": FORMAT, "kind": "benefit", "title": title, "provenance": provenance, "level": level, "config": config}
    adapter = ReferenceBenefitAdapter()
    steps = []
    with exercised() as ran:
        reply = answer_benefit(adapter, received({"cmd": "configure_benefit", "config": config}))
        refused = reply["refused"].split(":")[0] if "refused" in reply else None
        for operation in operations if refused is None else []:
            step: Json = {"request": operation, "expect": answer_benefit(adapter, received(operation))}
            if level == "state":
                step["state"] = answer_benefit(adapter, received({"cmd": "benefit_state"}))
            steps.append(step)
        if refused is None and level == "state":  # FIX-7
            ran.update(("BEN-CLOCK-1", "BEN-ENTRY-1", "BEN-LEDGER-4"))
            if any(op["cmd"] in CLOCK_STILL for op in operations):
                ran.add("BEN-CLOCK-4")
    case.update(refused=refused, operations=steps, clauses=sorted(ran | set(clauses)))
    return case


CLOCK_STILL = ("remove", "observe_pressure", "choose_victims", "select_probation_cap_victims")  # BEN-CLOCK-4


def cost(cold: float, restore: float) -> Json:
    return {"cold_prefill_cost": to_double(cold), "restore_cost": to_double(restore)}


def offer(key: int, exclusive: int, shared: list[tuple[int, int]], cold: float, restore: float, pinned: tuple[int, ...] = ()) -> Json:
    return {"cmd": "consider_admission", "key": key, "exclusive_bytes": exclusive, "shared": [list(s) for s in shared],
            "cost": cost(cold, restore), "pinned": list(pinned)}


def hit(key: int, cold: float, restore: float) -> Json:
    return {"cmd": "record_hit", "key": key, "cost": cost(cold, restore)}


def victims(bytes_to_free: int, pinned: tuple[int, ...] = ()) -> Json:
    return {"cmd": "choose_victims", "bytes_to_free": bytes_to_free, "pinned": list(pinned)}


SEGMENT_SIZES = {1: 4, 2: 12, 3: 9, 4: 100}
COSTS = [(100.0, 30.0), (60.0, 10.0), (20.0, 20.0), (10.0, 30.0), (NAN, 1.0), (1.0, INF), (-1.0, 0.0), (450.0, 135.0)]
PRESSURES = [0.0, 0.5, 1.0, NAN, INF, -INF, 2.0, 0.25]
CONFIGS = [DEFAULTS, {**DEFAULTS, "probation_byte_budget": 20, "grace_observations": 0, "ghost_capacity": 2},
           {**DEFAULTS, "probation_byte_budget": 8, "persistence_hit_threshold": 1, "grace_observations": 3, "ghost_max_age_observations": 5},
           {**DEFAULTS, "probation_byte_budget": 40, "min_reuse_probability": 0.5, "decay_factor": 0.5, "ghost_capacity": 0},
           {**DEFAULTS, "probation_byte_budget": 0, "persistence_hit_threshold": 3, "min_reuse_probability": 0.0, "grace_observations": 1}]


def random_operations(rng: XorShift64, n: int, numbering: Numbering = KEY_NUMBERINGS[0]) -> list[Json]:
    """Operations drawn as the certification machine draws them (conformance/benefit_machine.py):
    five keys and four segments, numbered by ``numbering``."""
    operations = []
    for _ in range(n):
        key, pinned = numbering(1 + rng.u64() % 5), tuple(sorted({numbering(1 + rng.u64() % 5) for _ in range(rng.u64() % 3)}))
        cold, restore = COSTS[rng.u64() % len(COSTS)]
        move = rng.u64() % 8
        if move <= 2:
            segments = sorted({1 + rng.u64() % 4 for _ in range(rng.u64() % 4)})
            shared = [(numbering(s), SEGMENT_SIZES[s]) for s in segments]
            operations.append(offer(key, (0, 1, 3, 8, 10, 16)[rng.u64() % 6], shared, cold, restore, pinned))
        elif move == 3:
            operations.append(hit(key, cold, restore))
        elif move == 4:
            operations.append({"cmd": "record_miss", "key": key})
        elif move == 5:
            operations.append({"cmd": "observe_pressure", "pressure": to_double(PRESSURES[rng.u64() % len(PRESSURES)])})
        elif move == 6:
            operations.append(victims(rng.u64() % 40, pinned))
        elif rng.u64() % 2:
            operations.append({"cmd": "remove", "key": key, "pinned": list(pinned)})
        else:
            operations.append({"cmd": "select_probation_cap_victims", "pinned": list(pinned)})
    return operations


# Configurations under which reuse statistics decide results: no floor under the reuse probability
# (BEN-SCORE-2), little or no grace, small ghost tables and short ghost lives (BEN-GHOST-2, BEN-GHOST-4).
REUSE_CONFIGS = [
    {**DEFAULTS, "min_reuse_probability": 0.0, "grace_observations": 0, "persistence_hit_threshold": 3, "ghost_capacity": 2,
     "ghost_max_age_observations": 6},
    {**DEFAULTS, "min_reuse_probability": 0.0, "grace_observations": 0, "persistence_hit_threshold": 1, "decay_factor": 0.5, "ghost_capacity": 1,
     "ghost_max_age_observations": 3},
    {**DEFAULTS, "probation_byte_budget": 24, "min_reuse_probability": 0.25, "decay_factor": 0.75, "grace_observations": 2,
     "ghost_max_age_observations": 4},
    {**DEFAULTS, "probation_byte_budget": 12, "min_reuse_probability": 0.0, "grace_observations": 0, "ghost_capacity": 3,
     "ghost_max_age_observations": 2},
    {**DEFAULTS, "min_reuse_probability": 0.0, "decay_factor": 1e-200, "grace_observations": 0, "ghost_capacity": 2},  # ow underflows to 0
]
# Mostly one sample, so that scores differ by reuse alone; a net benefit in (0, 1]; a restore dearer than the prefill.
REUSE_COSTS = [(100.0, 30.0)] * 6 + [(1.5, 1.0), (60.0, 10.0), (10.0, 10.5)]
REUSE_PRESSURES = [0.0, 0.25, 0.5, 0.75, 1.0, 2.0, -1.0, NAN, INF, -INF]
REUSE_SEGMENT_SIZES = [0, 6, 6, 300]  # a zero-size segment, and one above CPython's small integers


def reuse_segment(rng: XorShift64, segment: int, size: int) -> list[tuple[int, int]]:
    """The one shared segment at its size, now and then a byte off (a conflict, BEN-ADMIT-1; a
    segment of no bytes stays at 0); once in eight named twice (a duplicate reference)."""
    off_by = (0, 0, 0, 1, -1)[rng.u64() % 5]
    times = 2 if rng.u64() % 8 == 7 else 1
    return [(segment, size + off_by if size > 0 else 0)] * times


def reuse_operations(rng: XorShift64, n: int, numbering: Numbering = KEY_NUMBERINGS[0]) -> list[Json]:
    """Operations whose results hang on the reuse statistics: four keys offered alike (one cost,
    one size) so that their scores differ by reuse probability alone (BEN-SCORE-4), hits, misses and
    pressures between (BEN-HIT-1, BEN-MISS-1, BEN-DECAY-2), removals and re-offers (ghost take-overs,
    BEN-ADMIT-5), and victims for every byte, which list the whole victim order (BEN-VICTIM-2)."""
    operations = []
    size = REUSE_SEGMENT_SIZES[rng.u64() % len(REUSE_SEGMENT_SIZES)]
    for _ in range(n):
        key, move = numbering(1 + rng.u64() % 4), rng.u64() % 16
        if move < 4:
            shared = reuse_segment(rng, numbering(5), size) if rng.u64() % 3 == 0 else []
            cold, restore = REUSE_COSTS[rng.u64() % len(REUSE_COSTS)]
            operations.append(offer(key, 8, shared, cold, restore))
        elif move < 7:
            cold, restore = REUSE_COSTS[rng.u64() % len(REUSE_COSTS)]
            operations.append(hit(key, cold, restore))
        elif move < 9:
            operations.append({"cmd": "record_miss", "key": key})
        elif move < 11:
            operations.append({"cmd": "observe_pressure", "pressure": to_double(REUSE_PRESSURES[rng.u64() % len(REUSE_PRESSURES)])})
        elif move < 13:
            operations.append({"cmd": "remove", "key": key, "pinned": []})
        elif move < 15:
            operations.append(victims((10**6, 10**6, 9, 17)[rng.u64() % 4]))
        else:
            operations.append({"cmd": "select_probation_cap_victims", "pinned": []})
    return operations


WIDE_BENEFIT_KNOBS = [*((knob, value) for knob in ("probation_byte_budget", "persistence_hit_threshold", "grace_observations", "ghost_capacity",
                                                     "ghost_max_age_observations") for value in (INT64_MAX, INT64_MIN)),
                      ("persistence_hit_threshold", 2**32 - 1),  # BEN-CONF-2's upper bound (findings F-18)
                      *(("min_reuse_probability", value) for value in (NAN, INF, -0.5, 1.0)),
                      *(("decay_factor", value) for value in (NAN, -INF, INF, 0.0, 1.0 - 2**-53))]
# The seeds of reuse_operations that, among the first 3,000, together tell apart from the spec every
# mutant of CanonicalBenefit's reuse arithmetic at the results level (docs/mutation-score.md).
REUSE_SEEDS = (19, 30, 45, 95, 151, 214, 278, 352, 472, 636, 2265)


def benefit_cases() -> Iterator[Json]:
    for knob, bad in (("probation_byte_budget", -1), ("persistence_hit_threshold", 0), ("persistence_hit_threshold", 2**32),
                      ("min_reuse_probability", 1.5), ("decay_factor", 1.0), ("grace_observations", -1), ("ghost_capacity", -1),
                      ("ghost_max_age_observations", -1)):
        yield benefit_case(f"refused: {knob} {bad}", "BEN-CONF-8", {**DEFAULTS, knob: bad}, [])
    for name, config, operations, clauses in SCENARIOS:
        yield benefit_case(name, "spec/benefit.md, written by hand", config, operations, clauses=clauses)
    for seed in range(1, 31):
        config = CONFIGS[seed % len(CONFIGS)]
        yield benefit_case(f"random operations: seed {seed}", "xorshift64 operations", config, random_operations(XorShift64(seed), 30))
    for seed, numbering in enumerate(KEY_NUMBERINGS[1:], start=101):  # FIX-7, BEN-KEY-1: keys across the whole domain
        yield benefit_case(f"random operations: keys {numbering}", "xorshift64 operations, keys and segment ids across [0, 2**64 - 1]",
                           CONFIGS[seed % len(CONFIGS)], random_operations(XorShift64(seed), 30, numbering), clauses=("BEN-KEY-1",))
    for knob, value in WIDE_BENEFIT_KNOBS:  # FIX-7: BEN-CONF-1 to BEN-CONF-7 at the ends of their domains
        config = {**DEFAULTS, knob: to_double(value) if isinstance(value, float) else value}
        yield benefit_case(f"whole domain: {knob} {value}", "BEN-CONF-8", config, random_operations(XorShift64(7), 12))
    for seed in REUSE_SEEDS:
        yield benefit_case(f"reuse decides: seed {seed}", "xorshift64 operations whose results hang on the reuse statistics",
                           REUSE_CONFIGS[seed % len(REUSE_CONFIGS)], reuse_operations(XorShift64(seed), 60))
    for name, config, operations, clauses in LARGE_SCENARIOS:  # results only: hundreds of operations
        yield benefit_case(name, "spec/benefit.md, written by hand", config, operations, level="results", clauses=clauses)


TWO_53 = 2.0**53
SCENARIOS: list[tuple[str, Json, list[Json], tuple[str, ...]]] = [
    # Doubles, not reals: 2**53 + 2 - 1 rounds to 2**53 (ties to even), so both nets are 2**53, the
    # scores tie, and the smaller key goes first. In exact arithmetic key 2's score is the lower and
    # it would go first; so would it by arrival, since it was offered first.
    ("float edge: net benefit 2**53 + 1 against 2**53", {**DEFAULTS, "grace_observations": 0},
     [offer(2, 8, [], TWO_53, 0.0), offer(1, 8, [], TWO_53 + 2, 1.0), hit(2, TWO_53, 0.0), hit(1, TWO_53 + 2, 1.0), victims(8)],
     ("BEN-ARITH-1", "BEN-VICTIM-2")),
    ("no net benefit: rejected, the clock untouched", DEFAULTS, [offer(1, 8, [], 20.0, 20.0), offer(2, 8, [], 100.0, 30.0)], ("BEN-ADMIT-2",)),
    # Findings F-16: key 1 stays a no-hit probationer, the first victim; counted, the hit would
    # give it no score and no eviction could choose it (victims [2]).
    ("a hit with an invalid cost sample changes nothing", {**DEFAULTS, "grace_observations": 0},
     [offer(1, 8, [], 100.0, 30.0), hit(1, NAN, 1.0), offer(2, 8, [], 100.0, 30.0), hit(2, 100.0, 30.0), victims(16)], ("BEN-HIT-3",)),
    ("a hit with an invalid cost sample does not promote at threshold 1", {**DEFAULTS, "persistence_hit_threshold": 1},
     [offer(1, 0, [], 100.0, 30.0), hit(1, NAN, 1.0), hit(1, 1.0, INF), hit(1, -1.0, 0.0), hit(2, NAN, 1.0)], ("BEN-HIT-3",)),
    # Findings F-15, seen in a decision: the ghost of key 1 is still young (max age 1) because the
    # rejection did not move the clock; had it, the re-offer would find no ghost (admit-probation).
    ("a rejection does not age the ghosts", {**DEFAULTS, "persistence_hit_threshold": 1, "ghost_max_age_observations": 1},
     [offer(1, 8, [], 100.0, 30.0), {"cmd": "remove", "key": 1, "pinned": []}, offer(2, 8, [], 20.0, 20.0), offer(1, 8, [], 100.0, 30.0)],
     ("BEN-ADMIT-2", "BEN-GHOST-4")),
    # Findings F-19: (-0.0, 0.0) is a valid sample whose net benefit is +0.0; IEEE-754 totalOrder on a
    # score of -0.0 would put key 2 first.
    ("negative zero: a score of zero ties and keys decide", {**DEFAULTS, "persistence_hit_threshold": 1, "grace_observations": 0},
     [offer(2, 8, [], 100.0, 30.0), offer(1, 8, [], 100.0, 30.0), hit(2, -0.0, 0.0), hit(1, 0.0, 0.0), victims(10**6)],
     ("BEN-COST-2", "BEN-VICTIM-2")),
    # Findings F-17: exclusive bytes and segments held at exactly 2**53; the sums the replies carry
    # (freed, the probation charge, the shortfall) reach it and fit.
    ("bytes held at the bound 2**53", {**DEFAULTS, "grace_observations": 0},
     [offer(1, 2**52, [], 100.0, 30.0), offer(2, 2**52 - 8, [(7, 4), (8, 4)], 100.0, 30.0), offer(3, 0, [(7, 4)], 60.0, 10.0),
      {"cmd": "select_probation_cap_victims", "pinned": [1, 2, 3]}, victims(2**63 - 1), victims(2**53),
      {"cmd": "remove", "key": 2, "pinned": [1, 3]}, offer(4, 2**52 - 4, [], 100.0, 30.0)], ("BEN-KEY-2", "BEN-VICTIM-4", "BEN-LEDGER-5")),
    ("a ghost takes over: the re-offer counts as a reuse", {**DEFAULTS, "persistence_hit_threshold": 2},
     [offer(1, 8, [], 100.0, 30.0), hit(1, 100.0, 30.0), {"cmd": "remove", "key": 1, "pinned": []}, offer(1, 8, [], 100.0, 30.0)], ()),
    ("shared segments: fractional shares and marginal release", {**DEFAULTS, "grace_observations": 0},
     [offer(1, 0, [(10, 12)], 100.0, 30.0), offer(2, 0, [(10, 12)], 100.0, 30.0), offer(3, 4, [(10, 12), (11, 9)], 60.0, 10.0),
      victims(9), victims(12), victims(21)], ()),
    ("the probation cap deferred with its exact shortfall", {**DEFAULTS, "probation_byte_budget": 10},
     [offer(1, 8, [], 100.0, 30.0, (1,)), offer(2, 8, [], 100.0, 30.0, (1, 2)), {"cmd": "select_probation_cap_victims", "pinned": [1, 2]}], ()),
    # Key 1's one exclusive byte against keys 2 and 3's halves of a 3-byte segment: 1.5 bytes each,
    # so their scores are lower and they go first; halves rounded down would tie all three.
    ("fractional shares are not rounded: 3 bytes shared by two", {**DEFAULTS, "persistence_hit_threshold": 1, "grace_observations": 0},
     [offer(2, 0, [(9, 3)], 100.0, 30.0), offer(3, 0, [(9, 3)], 100.0, 30.0), offer(1, 1, [], 100.0, 30.0), hit(1, 100.0, 30.0),
      hit(2, 100.0, 30.0), hit(3, 100.0, 30.0), victims(10**6)], ("BEN-LEDGER-3", "BEN-SCORE-3")),
    # BEN-LEDGER-5's own example: nine shares of a 4-byte segment sum to 4.000000000000001 and charge
    # 5, within a budget of 5; a ceiling per share would charge 1 for each, and the cap would choose.
    ("one ceiling for the whole charge: nine shares of 4 bytes", {**DEFAULTS, "probation_byte_budget": 5},
     [offer(key, 0, [(7, 4)], 100.0, 30.0) for key in range(1, 10)], ("BEN-LEDGER-5", "BEN-ARITH-3")),
    # Integers above 256 are distinct objects in CPython: counts and sizes compared by identity differ.
    ("integers above 256: 257 segments in one offer, a 300-byte segment offered twice", DEFAULTS,
     [offer(1, 0, [(s, 1) for s in range(1, 258)], 100.0, 30.0), offer(2, 0, [(300, 300)], 100.0, 30.0), offer(3, 0, [(300, 300)], 100.0, 30.0)],
     ("BEN-ADMIT-1", "BEN-LEDGER-1")),
]
LARGE_SCENARIOS: list[tuple[str, Json, list[Json], tuple[str, ...]]] = [
    ("promotion at a threshold above 256: the 257th hit", {**DEFAULTS, "persistence_hit_threshold": 257},
     [offer(1, 8, [], 100.0, 30.0), *(hit(1, 100.0, 30.0) for _ in range(257))], ("BEN-HIT-2",)),
    # The 258th ghost drops key 1's, the oldest: its re-offer finds none and starts at 0 hits.
    ("ghost_capacity 257 reached: the oldest ghost is dropped", {**DEFAULTS, "persistence_hit_threshold": 1, "ghost_capacity": 257},
     [*(op for key in range(1, 259) for op in (offer(key, 8, [], 100.0, 30.0), {"cmd": "remove", "key": key, "pinned": []})),
      offer(1, 8, [], 100.0, 30.0), offer(2, 8, [], 100.0, 30.0)], ("BEN-GHOST-2", "BEN-GHOST-3")),
]


# Trace, comparison and prefix cases (FIX-8 to FIX-10) ----------------------------------------


def trace_case(title: str, lines: list[str], block_size: int = 4, clauses: tuple[str, ...] = (), gzip: bool = False) -> Json:
    """FIX-8: a trace file's lines, and what the replay makes of them or the line it refuses."""
    import gzip as gz
    import tempfile

    case: Json = {"format": FORMAT, "kind": "trace", "title": title, "provenance": "spec/replay.md section 1, written by hand",
                  "level": "results", "block_size": block_size, "lines": lines, "gzip": gzip}
    with tempfile.TemporaryDirectory() as folder, exercised() as ran:
        path = Path(folder) / "trace.jsonl"  # no .gz: a reader knows gzip by its first two bytes (REPLAY-TRACE-6)
        text = "".join(line + "\n" for line in lines).encode()
        path.write_bytes(gz.compress(text, mtime=0) if gzip else text)
        try:
            records = [(n, r) for n, r in TraceFile(path).records()]
            result = replay(records, ReplayConfig(policy="lru", capacity=8, block_size=block_size), path=str(path))
            case.update(refused=None, expect={"requests": result.requests, "total_prompt_tokens": result.total_prompt_tokens,
                                              "total_hit_tokens": result.total_hit_tokens})
        except TraceError as error:
            case.update(refused=error.clause, expect={"line": error.line, "field": error.field})
    case["clauses"] = sorted(ran | set(clauses))
    return case


def trace_cases() -> Iterator[Json]:
    good = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2]}'
    yield trace_case("a good trace, read in file order", [good.replace(": 0,", ": 9,"), good, '{"timestamp": 3, "input_length": 8, '
                     '"output_length": 0, "hash_ids": [1, 2]}'], clauses=("REPLAY-TRACE-5",))
    yield trace_case("the same, gzip-compressed under a plain name", [good, good], gzip=True)
    for title, bad in (("a blank line", ""), ("not JSON", "{"), ("not an object", "[1, 2]"), ("a missing field", good.replace('"timestamp": 0, ', "")),
                       ("an extra field", good.replace("}", ', "x": 1}')), ("a float input_length", good.replace('"input_length": 5', '"input_length": 5.0')),
                       ("a string hash id", good.replace("[1, 2]", '[1, "2"]')), ("no hash ids", good.replace("[1, 2]", "[]")),
                       ("a hash id past 2**63 - 1", good.replace("[1, 2]", f"[1, {2**63}]")), ("a negative output_length", good.replace('"output_length": 1', '"output_length": -1')),
                       ("too few blocks for input_length", good.replace('"input_length": 5', '"input_length": 9')),
                       ("too many blocks for input_length", good.replace('"input_length": 5', '"input_length": 4')),
                       ("a key given twice", good.replace("}", ', "timestamp": 0}')),
                       ("a key given twice, once spelled with an escape", good.replace("}", ', "\\u0074imestamp": 0}')),
                       ("a byte order mark past the start of the file", "\ufeff" + good)):
        yield trace_case(f"refused at line 2: {title}", [good, bad], clauses=("REPLAY-TRACE-7",))
    yield trace_case("a byte order mark at the start of the file is ignored", ["\ufeff" + good, good])
    largest = f'{{"timestamp": 0, "input_length": {2**63 - 1}, "output_length": 0, "hash_ids": [1]}}'
    yield trace_case("refused at line 2: prompt tokens summing past 2**63 - 1", [largest, largest], block_size=2**63 - 1,
                     clauses=("REPLAY-RESULT-3", "REPLAY-TRACE-7"))


def comparison_cases() -> Iterator[Json]:
    """FIX-9: each seeded trace of BEN-CMP-1, its first accesses, and both sides' results."""
    from kvspec.reference.benefit import TRACES, compare

    for name, (make, capacity) in TRACES.items():
        with exercised() as ran:
            accesses = make()
            row = compare(name, accesses, capacity)
        case = {"format": FORMAT, "kind": "comparison", "title": f"{name} at {capacity} bytes", "provenance": "spec/benefit.md BEN-CMP-1",
                "level": "results", "refused": None, "trace": name, "capacity_bytes": capacity,
                "expect": {"accesses": len(accesses), "first": [[a.key, a.cost.cold_prefill_cost, a.cost.restore_cost, a.bytes] for a in accesses[:8]],
                           "policy": row.policy.model_dump(), "lru": row.lru.model_dump()}}
        yield {**case, "clauses": sorted(ran | {"BEN-TRACE-1", "BEN-LRU-1"})}  # FIX-9: xorshift64 and the LRU list, by construction


def prefix_cases() -> Iterator[Json]:
    """FIX-10: the first 60 requests of each bundled trace, every policy at one byte capacity."""
    from kvspec.reference.benefit.model import Model
    from kvspec.reference.benefit.prefix import PREFIX_POLICIES, replay_benefit, replay_blocks

    model = Model()
    for name in BUNDLED:
        excerpt = list(islice(TraceFile(bundled_trace_path(name)).records(), 60))
        capacity = 64 * model.block_bytes(512)
        with exercised() as ran:
            sides = [(replay_benefit(excerpt, capacity, 512, model) if policy == "benefit" else replay_blocks(excerpt, policy, capacity, 512, model))
                     for policy in PREFIX_POLICIES]
        case = {"format": FORMAT, "kind": "prefix", "title": f"{name}, first 60 requests, 4 GiB", "level": "results", "refused": None,
                "provenance": f"{name} lines 1 to 60 (Mooncake FAST'25, Apache-2.0); spec/benefit.md sections 19 and 20",
                "model": {k: v for k, v in vars(model).items()}, "block_size": 512, "capacity_bytes": capacity,
                "requests": [{"hash_ids": r.hash_ids, "input_length": r.input_length} for _, r in excerpt],
                "expect": [side.model_dump() for side in sides]}
        yield {**case, "clauses": sorted(ran | {"BEN-MODEL-1"})}  # FIX-10: the model's fields are in the case


