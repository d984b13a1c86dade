"""The spec-level mutants of spec/benefit.md (spec_mutants.py plants them): each restates one rule of
reference/benefit/config.py or reference/benefit/ledger.py, over plain integers and the
configuration, with its mistake, whole. A mutant's body reads the rules it calls from its copy of
the reference (its globals are the copy's): the imports below are the reference's names, for the
reader and the linter.
"""

from kvspec.reference.benefit.config import UINT32_MAX, BenefitConfig, is_float
from kvspec.reference.benefit.ledger import Ledger, Segment
from kvspec.reference.errors import ConfigError, KvspecError
from kvspec.reference.validation import check_count

# --- the benefit policy (spec/benefit.md): its rules over plain integers and the configuration ----


def budget_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-1 forgotten: a negative probation_byte_budget accepted."""
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def threshold_zero_accepted(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-2 from 0: a persistence_hit_threshold of 0 accepted (every entry persists at once)."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 0, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def reuse_floor_above_one(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-3 half checked: a min_reuse_probability above 1 accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float >= 0, not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def decay_one_accepted(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-4 closed at 1: a decay_factor of 1.0 accepted (nothing decays)."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor <= 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f <= 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def grace_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-5 forgotten: a negative grace_observations accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def ghost_capacity_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-6 forgotten: a negative ghost_capacity accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_max_age_observations, 0, "BEN-CONF-7", "ghost_max_age_observations")
    return config


def ghost_age_unchecked(config: BenefitConfig) -> BenefitConfig:
    """BEN-CONF-7 forgotten: a negative ghost_max_age_observations accepted."""
    check_count(config.probation_byte_budget, 0, "BEN-CONF-1", "probation_byte_budget")
    check_count(config.persistence_hit_threshold, 1, "BEN-CONF-2", "persistence_hit_threshold", UINT32_MAX, "2**32 - 1")
    if not is_float(config.min_reuse_probability) or not 0.0 <= config.min_reuse_probability <= 1.0:
        raise ConfigError("BEN-CONF-3", f"min_reuse_probability must be a finite float in [0, 1], not {config.min_reuse_probability!r}")
    if not is_float(config.decay_factor) or not 0.0 < config.decay_factor < 1.0:
        raise ConfigError("BEN-CONF-4", f"decay_factor must be a finite float with 0 < f < 1, not {config.decay_factor!r}")
    check_count(config.grace_observations, 0, "BEN-CONF-5", "grace_observations")
    check_count(config.ghost_capacity, 0, "BEN-CONF-6", "ghost_capacity")
    return config


def negative_key_accepted(value: object, what: str) -> int:
    """BEN-KEY-1 read as a signed 64-bit id: a negative key accepted."""
    if type(value) is not int or not -(2**63) <= value <= 2**63 - 1:
        raise KvspecError(f"BEN-KEY-1: {what} must be a signed 64-bit integer, not {value!r}")
    return value


def repeated_segment_counted_twice(ledger: Ledger, shared: list[tuple[int, int]]) -> int:
    """BEN-KEY-2 without "each id once": a segment id offered twice counted twice."""
    return sum(size for segment_id, size in shared if segment_id not in ledger)


def later_size_wins(ledger: Ledger, key: int, shared: list[tuple[int, int]]) -> None:
    """BEN-LEDGER-1 read the other way: the latest registration sets the size."""
    for segment_id, size in shared:
        segment = ledger.setdefault(segment_id, Segment(size))
        segment.size = size
        segment.refs[key] = True


def empty_segment_kept(ledger: Ledger, key: int, segment_ids: list[int]) -> int:
    """BEN-LEDGER-2 half done: a segment whose last reference is released stays in the ledger."""
    dropped = 0
    for segment_id in segment_ids:
        segment = ledger.get(segment_id)
        if segment is None or key not in segment.refs:
            continue
        del segment.refs[key]
        if not segment.refs:
            dropped += segment.size
    return dropped
