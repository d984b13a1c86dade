"""spec/benefit.md section 20: the benefit policy as the prefix cache of a Mooncake trace, and
the block policies of spec/replay.md beside it at the same byte capacity, by the same measures."""

from collections.abc import Callable, Iterable
from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from ..caches import CANONICAL, Dialect, counting_stores
from ..constants import POLICIES
from ..errors import ConfigError
from ..replay import ReplayConfig, check_block_count, hit_tokens
from ..request import prefix_hit_blocks, step
from ..trace import TraceRecord
from .config import BenefitConfig, net_benefit
from .model import Model
from .policy import BenefitPolicy

UINT64 = 2**64


class PrefixSide(BaseModel):
    """BEN-PREFIX-7: one policy's measures over one trace at one byte capacity."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    policy: str
    capacity_bytes: int
    requests: int
    prompt_tokens: int
    hit_tokens: int
    saved_prefill_ms: float
    bytes_written: int
    peak_bytes: int  # the most bytes resident after any request: whether the capacity was ever used


def segment_id(hash_id: int) -> int:
    """BEN-PREFIX-1: the hash id as an unsigned 64-bit integer."""
    return hash_id % UINT64


def prefix_config(capacity: int) -> BenefitConfig:
    """BEN-PREFIX-5."""
    return replace(BenefitConfig(), probation_byte_budget=capacity // 10)


def ledger_bytes(policy: BenefitPolicy) -> int:
    """The sizes of the segments in the ledger: all the bytes the policy holds, as a prefix state's
    exclusive bytes are 0 (section 20)."""
    return policy.held


def serve_request(policy: BenefitPolicy, record: TraceRecord, capacity: int, block_size: int, model: Model) -> tuple[int, int]:
    """BEN-PREFIX-2 to BEN-PREFIX-4: one request; its hit blocks and the bytes it writes."""
    blocks = [segment_id(h) for h in record.hash_ids]
    k = prefix_hit_blocks(blocks, policy.ledger.__contains__)  # BEN-PREFIX-2
    for j in range(k):  # BEN-PREFIX-3
        if blocks[j] in policy.entries:
            policy.record_hit(blocks[j], model.cost_of_prefix(j + 1, block_size, record.input_length))
    full = record.input_length // block_size  # BEN-PREFIX-1: only full blocks are kept
    if full == 0 or blocks[full - 1] in policy.entries:
        return k, 0
    key = blocks[full - 1]
    size = model.block_bytes(block_size)
    before = len(policy.ledger)
    cost = model.cost_of_prefix(full, block_size, record.input_length)
    decision = policy.consider_admission(key, 0, [(block, size) for block in blocks[:full]], cost)  # BEN-PREFIX-4
    written = (len(policy.ledger) - before) * size
    for victim in decision.cap.victims if decision.cap is not None else ():
        policy.remove(victim)
    while (used := ledger_bytes(policy)) > capacity:
        victims = policy.choose_victims(used - capacity).keys
        if not victims:
            break
        for victim in victims:
            policy.remove(victim)
    return k, written


def replay_benefit(records: Iterable[tuple[int, TraceRecord]], capacity: int, block_size: int = 512, model: Model = Model(),
                   path: str = "<trace>", policy_class: Callable[[BenefitConfig], BenefitPolicy] = BenefitPolicy) -> PrefixSide:
    """BEN-PREFIX-1 to BEN-PREFIX-5 and BEN-PREFIX-7 for the benefit policy (the reference's, or
    another with its operations that ``policy_class`` builds)."""
    policy = policy_class(prefix_config(capacity))
    requests = prompt = hits = written = peak = 0
    saved = 0.0
    for line_number, record in records:
        check_block_count(path, line_number, record, block_size)
        k, wrote = serve_request(policy, record, capacity, block_size, model)
        requests, prompt, written = requests + 1, prompt + record.input_length, written + wrote
        hits += hit_tokens(k, block_size, record.input_length)
        saved += net_benefit(model.cost_of_prefix(k, block_size, record.input_length))
        peak = max(peak, ledger_bytes(policy))
    return PrefixSide(policy="benefit", capacity_bytes=capacity, requests=requests, prompt_tokens=prompt, hit_tokens=hits,
                      saved_prefill_ms=saved, bytes_written=written, peak_bytes=peak)


def replay_blocks(records: Iterable[tuple[int, TraceRecord]], policy_name: str, capacity: int, block_size: int = 512,
                  model: Model = Model(), path: str = "<trace>", dialect: Dialect = CANONICAL) -> PrefixSide:
    """BEN-PREFIX-6 and BEN-PREFIX-7 for S3FIFO, LRU or FIFO: spec/replay.md at capacity // block bytes blocks,
    in ``dialect`` (spec/dialects.md) where one is given."""
    size = model.block_bytes(block_size)
    blocks = capacity // size
    if blocks < 1:
        raise ConfigError("BEN-PREFIX-6", f"a capacity of {capacity} bytes holds no {size}-byte block")
    config = replace(ReplayConfig(), policy=policy_name, capacity=blocks, block_size=block_size, dialect=dialect)  # type: ignore[arg-type]
    cache = counting_stores(config)
    requests = prompt = hits = peak = 0
    saved = 0.0
    for line_number, record in records:
        check_block_count(path, line_number, record, block_size)
        k = step(cache, record.hash_ids, record.input_length)
        requests, prompt = requests + 1, prompt + record.input_length
        hits += hit_tokens(k, block_size, record.input_length)
        saved += net_benefit(model.cost_of_prefix(k, block_size, record.input_length))
        peak = max(peak, cache.resident_count() * size)
    return PrefixSide(policy=policy_name, capacity_bytes=capacity, requests=requests, prompt_tokens=prompt, hit_tokens=hits,
                      saved_prefill_ms=saved, bytes_written=cache.stored * size, peak_bytes=peak)


PREFIX_POLICIES = ("benefit", *POLICIES)
