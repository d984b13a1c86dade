"""The integer bounds every consumer can represent, and the check that refuses a config value."""

from .errors import ConfigError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def check_count(value: object, low: int, clause: str, what: str) -> int:
    """An integer (never a bool) in [low, 2**63 - 1], or a ConfigError citing ``clause``."""
    if type(value) is not int or not low <= value <= INT64_MAX:
        raise ConfigError(clause, f"{what} must be an integer in [{low}, 2**63 - 1], not {value!r}")
    return value
