"""spec/benefit.md sections 1 and 2: the configuration, the inputs, and cost samples."""

import math
from dataclasses import dataclass
from typing import NamedTuple, no_type_check

from ..contracts import ensure
from ..errors import ConfigError, KvspecError
from ..validation import INT64_MAX, check_count

UINT64_MAX = 2**64 - 1
UINT32_MAX = 2**32 - 1  # BEN-CONF-2: the threshold is a 32-bit count (findings F-18)
HELD_BYTES_MAX = 2**53  # BEN-KEY-2: every byte count up to it is exact as a double (findings F-17)


@dataclass(frozen=True)
class BenefitConfig:
    """BEN-CONF-1 to BEN-CONF-7, with their defaults."""

    probation_byte_budget: int = 256 << 20
    persistence_hit_threshold: int = 2
    min_reuse_probability: float = 0.01
    decay_factor: float = 0.9
    grace_observations: int = 32
    ghost_capacity: int = 4096
    ghost_max_age_observations: int = 1024


@no_type_check  # a state check of the contracts: see reference/s3fifo.py, above queues_are_disjoint
def is_count(value: object, low: int, high: int = INT64_MAX) -> bool:
    """An integer, never a bool, in [low, high] (for the contracts)."""
    return type(value) is int and low <= value <= high


@ensure(lambda result: is_count(result.probation_byte_budget, 0), "BEN-CONF-1: probation_byte_budget in [0, 2^63 - 1]")
@ensure(lambda result: is_count(result.persistence_hit_threshold, 1, UINT32_MAX), "BEN-CONF-2: persistence_hit_threshold in [1, 2^32 - 1]")
@ensure(lambda result: type(result.min_reuse_probability) is float and 0.0 <= result.min_reuse_probability <= 1.0,
        "BEN-CONF-3: min_reuse_probability a double in [0, 1]")
@ensure(lambda result: type(result.decay_factor) is float and 0.0 < result.decay_factor < 1.0,
        "BEN-CONF-4: decay_factor a double in (0, 1)")
@ensure(lambda result: is_count(result.grace_observations, 0), "BEN-CONF-5: grace_observations in [0, 2^63 - 1]")
@ensure(lambda result: is_count(result.ghost_capacity, 0), "BEN-CONF-6: ghost_capacity in [0, 2^63 - 1]")
@ensure(lambda result: is_count(result.ghost_max_age_observations, 0), "BEN-CONF-7: ghost_max_age_observations in [0, 2^63 - 1]")
def check_config(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-8: the configuration, or a ConfigError naming the clause it breaks."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def is_float(value: object) -> bool:
    return type(value) is float and math.isfinite(value)


class CostSample(NamedTuple):
    """BEN-COST-1: what serving the entry costs cold and what restoring it costs, in caller units."""

    cold_prefill_cost: float
    restore_cost: float


def is_valid(cost: CostSample) -> bool:
    """BEN-COST-1: both finite and >= 0."""
    return all(type(v) is float and math.isfinite(v) and v >= 0.0 for v in cost)


def net_benefit(cost: CostSample) -> float:
    """BEN-COST-2: cold - restore when positive, else +0.0 (never -0.0, findings F-19)."""
    net = cost.cold_prefill_cost - cost.restore_cost
    return net if net > 0.0 else 0.0


@ensure(lambda result: is_count(result, 0, UINT64_MAX), "BEN-KEY-1: a key or segment id in [0, 2^64 - 1]", per_access_state=True)
def check_id(value: object, what: str) -> int:
    """BEN-KEY-1: a key or segment id in [0, 2**64 - 1]."""
    if type(value) is not int or not 0 <= value <= UINT64_MAX:
        raise KvspecError(f"BEN-KEY-1: {what} must be an integer in [0, 2**64 - 1], not {value!r}")
    return value


@ensure(lambda result: is_count(result, 0), "BEN-KEY-1: a byte count in [0, 2^63 - 1]", per_access_state=True)
def check_bytes(value: object, what: str) -> int:
    """BEN-KEY-1: a byte count in [0, 2**63 - 1]."""
    if type(value) is not int or not 0 <= value <= INT64_MAX:
        raise KvspecError(f"BEN-KEY-1: {what} must be an integer in [0, 2**63 - 1], not {value!r}")
    return value
