"""Kit adapters of cachetools (docs/certifications/cachetools/adapter.py) with one thing changed,
for tests/test_adapter_kit.py: each is what a user of the kit could write."""

import importlib.util
from pathlib import Path
from typing import Any

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "certifications" / "cachetools" / "adapter.py"
_spec = importlib.util.spec_from_file_location("cachetools_adapter", PUBLISHED)  # by its path: every published adapter is adapter.py
assert _spec is not None and _spec.loader is not None
_published = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_published)
Cachetools = _published.Cachetools


class CapacityChecked(Cachetools):
    """The kit's default: REPLAY-CONF-1 checked before cachetools sees the capacity."""

    checks_capacity = True


class ReorderingScan(CapacityChecked):
    """The trap of REPLAY-PREFIX-3: the scan asks ``get``, which is LRU's use, where ``in`` is a peek."""

    def is_resident(self, block: int) -> bool:
        return self.cache.get(block) is not None


class RefusesLargeCapacities(CapacityChecked):
    """A library that allocates its table up front, and refuses a capacity above 2^32 - 1 at its constructor."""

    def make_cache(self, policy: str, capacity: int) -> Any:
        if capacity >= 2**32:
            raise MemoryError(f"cannot allocate a table of {capacity} entries")
        return super().make_cache(policy, capacity)


def capacity_checked() -> CapacityChecked:
    return CapacityChecked()


def reordering_scan() -> ReorderingScan:
    return ReorderingScan()


def refuses_large_capacities() -> RefusesLargeCapacities:
    return RefusesLargeCapacities()
