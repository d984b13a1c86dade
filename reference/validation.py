"""The integer bounds every consumer can represent, and the check that refuses a config value."""

from .errors import ConfigError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def check_count(value: object, low: int, clause: str, what: str, high: int = INT64_MAX, high_text: str = "2**63 - 1",
                low_text: str | None = None) -> int:
    """An integer (never a bool) in [low, high], or a ConfigError citing ``clause``."""
    if type(value) is not int or not low <= value <= high:
        raise ConfigError(clause, f"{what} must be an integer in [{low_text or low}, {high_text}], not {value!r}")
    return value
