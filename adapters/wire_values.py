"""The values of the adapter protocol's messages (spec/adapter-protocol.md section 2) as JSON carries
them, and the base of every message: integers exactly (PROTO-3), keys as unsigned 64-bit integers
and doubles with their non-finite values (PROTO-19), booleans that are booleans (PROTO-16). Every
field's description says what JSON Schema cannot state.
"""

import math
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from kvspec.reference.validation import INT64_MAX, INT64_MIN

# What JSON Schema cannot state, stated in the descriptions: its integer type admits 3.0 and 1e3,
# and a validator that reads numbers as doubles cannot tell 64-bit integers above 2^53 apart.
INTEGER = ("A JSON integer, never written with a fraction or an exponent (3.0, 1e3), which JSON Schema's integer type would admit; read "
           "and written exactly, since above 2^53 a double does not hold every integer, and the suite sends such integers (PROTO-3).")
COUNT = f"A count, in [0, 2^63 − 1]. {INTEGER}"
DOUBLE = ('A double (PROTO-19): a JSON number, or the string "NaN", "Infinity" or "-Infinity" for the values JSON has no number for; '
          "a number that overflows a double (1e400) is a wrong shape. Written so that it reads back as the same double, −0.0 included "
          "(the shortest such text, or 17 significant digits): the suite compares doubles exactly (BEN-ARITH-1).")

# PROTO-3: every integer is a JSON integer in 64 bits; hash ids are signed, counts are not.
HashId = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX, description=f"A hash id, a signed 64-bit integer (PROTO-3). {INTEGER}")]
Count = Annotated[int, Field(ge=0, le=INT64_MAX, description=COUNT)]
# Configuration values travel in the full signed range: the suite sends the values the clauses
# refuse (capacity 0, max_freq -1) to see them refused (PROTO-8), so the wire must carry them.
CONFIG_INT = f"Any signed 64-bit integer travels, the values a clause refuses too (PROTO-8). {INTEGER}"
ConfigInt = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX, description=CONFIG_INT)]
Seq = Annotated[int, Field(ge=0, le=INT64_MAX, description="PROTO-2: 0 for the first request, growing by 1 with each request; a reply "
                           f"carries the seq of the request it answers. {COUNT}")]
Blocks = Annotated[list[HashId], Field(min_length=1)]
Freq = Annotated[int, Field(ge=0, le=INT64_MAX, description=f"A freq, in [0, max_freq] (S3-FREQ-1); 0 for LRU and FIFO (PROTO-12). "
                                                         f"{INTEGER}")]
Entries = list[tuple[HashId, Freq]]
Policy = Literal["s3fifo", "lru", "fifo", "benefit"]  # PROTO-6
# PROTO-19: the benefit policy's keys and segment ids are unsigned (BEN-KEY-1); a double is a
# JSON number, or one of three strings for the values JSON has no number for.
KEY = f"A key or segment id, an unsigned 64-bit integer in [0, 2^64 − 1] (BEN-KEY-1, PROTO-19). {INTEGER}"
Key = Annotated[int, Field(ge=0, le=2**64 - 1, description=KEY)]
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
Double = Annotated[Annotated[float, Field(allow_inf_nan=False)] | Literal["NaN", "Infinity", "-Infinity"], Field(description=DOUBLE)]
Pinned = Annotated[list[Key], Field(description="PROTO-19: the pinned set, as a list of keys in ascending order, each once.")]
CMD = "PROTO-2: the request's name."


def exactly_a_boolean(value: object) -> object:
    """PROTO-16: a boolean literal refuses the numbers Python holds equal to it (1, 0, 1.0)."""
    if not isinstance(value, bool):
        raise PydanticCustomError("bool_type", "Input should be a valid boolean")
    return value


Yes = Annotated[Literal[True], BeforeValidator(exactly_a_boolean)]
No = Annotated[Literal[False], BeforeValidator(exactly_a_boolean)]


class Message(BaseModel):
    """Every message: strict JSON types, no field the schema does not name (PROTO-16), one line of
    UTF-8 JSON (PROTO-1)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def to_double(value: float) -> float | str:
    """PROTO-19: a double as it travels."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def from_double(value: float | str) -> float:
    """PROTO-19: a double as it arrived."""
    return NON_FINITE[value] if isinstance(value, str) else float(value)
