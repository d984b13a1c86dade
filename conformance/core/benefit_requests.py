"""The benefit policy's requests as the protocol carries them, without their seq (PROTO-21,
PROTO-22, PROTO-25): what the certification machine sends, its diagnosis replays and the fixtures
record.
"""

from typing import Any

from kvspec.adapters.protocol import to_double

Json = dict[str, Any]
# By slot (segment ids are numbered as keys are): shares that are not whole. The machine and the
# fixtures each add their own fourth size.
SEGMENT_SIZES = {1: 4, 2: 12, 3: 9}


def cost(cold: float, restore: float) -> Json:
    return {"cold_prefill_cost": to_double(cold), "restore_cost": to_double(restore)}


def offer(key: int, exclusive: int, shared: list[tuple[int, int]], cold: float, restore: float, pinned: tuple[int, ...] = ()) -> Json:
    return {"cmd": "consider_admission", "key": key, "exclusive_bytes": exclusive, "shared": [list(s) for s in shared],
            "cost": cost(cold, restore), "pinned": list(pinned)}


def hit(key: int, cold: float, restore: float) -> Json:
    return {"cmd": "record_hit", "key": key, "cost": cost(cold, restore)}


def victims(bytes_to_free: int, pinned: tuple[int, ...] = ()) -> Json:
    return {"cmd": "choose_victims", "bytes_to_free": bytes_to_free, "pinned": list(pinned)}
