"""Hand-made implementations that read configurations as popular library caches do, and are
otherwise correct: each is the gallery's canonical LRU, FIFO and S3FIFO
(conformance/galleries/mutants.py) with one way of taking a configuration, to test that a
configuration finding does not end the certification (docs/certification.md, "Configuration
findings"). ``python:tests/handmade/configuration_mistakes.py:NAME``."""

import json
import os
import time
from dataclasses import asdict

from kvspec.adapters.interface import AdapterConfig, ConfigRefused
from kvspec.conformance.galleries.mutants import CanonicalS3FIFO, LruInsteadOfS3FIFO

LARGE = 2**40  # blocks past what these caches can hold


class AcceptsCapacity0(CanonicalS3FIFO):
    """Accepts capacity 0 and then fails on every insert, as cachetools 8.0.0's LRUCache(maxsize=0)
    does (cachetools/__init__.py:65, Cache.__setitem__: ``if maxsize < 1: raise ValueError("value
    too large")``): breaks REPLAY-CONF-1."""

    name = "accepts-capacity-0"

    def configure(self, config: AdapterConfig) -> None:
        if config.capacity == 0 and config.policy != "s3fifo":
            super().configure(AdapterConfig(config.policy, 1, config.block_size, config.small_ratio, config.max_freq))
            self.main_cap = -1  # as cachetools keeps maxsize 0: every insert fails
            return
        super().configure(config)

    def access(self, hash_ids: list[int]) -> None:
        if self.main_cap < 0:
            raise ValueError("value too large")
        super().access(hash_ids)


class Refuses32BitCapacities(CanonicalS3FIFO):
    """Refuses a capacity above 2^32 - 1, as issue 28 found npm lru-cache doing (it sizes its
    arrays by max): breaks REPLAY-CONF-1, which accepts every capacity up to 2^63 - 1."""

    name = "refuses-32-bit-capacities"

    def configure(self, config: AdapterConfig) -> None:
        if type(config.capacity) is int and config.capacity > 2**32 - 1:
            raise ConfigRefused("invalid max value")
        super().configure(config)


class HangsAtLargeCapacities(CanonicalS3FIFO):
    """Hangs at configure when the capacity is past 2^40 blocks, as issue 28 found pylru doing at
    2^63 - 1 (it links its whole list of nodes in its constructor)."""

    name = "hangs-at-large-capacities"

    def configure(self, config: AdapterConfig) -> None:
        if type(config.capacity) is int and config.capacity > LARGE:
            if "KVSPEC_HANGS" in os.environ:  # a file to list the hangs in
                with open(os.environ["KVSPEC_HANGS"], "a") as hangs:
                    hangs.write(json.dumps(asdict(config)) + "\n")
            time.sleep(3600)
        super().configure(config)


def accepts_capacity_0() -> CanonicalS3FIFO:
    return AcceptsCapacity0()


def refuses_32_bit_capacities() -> CanonicalS3FIFO:
    return Refuses32BitCapacities()


def hangs_at_large_capacities() -> CanonicalS3FIFO:
    return HangsAtLargeCapacities()


class HangsAtLargeCapacitiesFloorsSmallCap(HangsAtLargeCapacities):
    """Hangs as HangsAtLargeCapacities does, and sizes S by truncation, as libCacheSim does
    (S3-DIALECT-1, small-cap-floor): a dialect the search must still find, without waiting the
    hang out again."""

    name = "hangs-at-large-capacities-floors-small-cap"

    def small_cap_for(self, capacity: int, small_ratio: float) -> int:
        return int(capacity * small_ratio)


def hangs_at_large_capacities_floors_small_cap() -> CanonicalS3FIFO:
    return HangsAtLargeCapacitiesFloorsSmallCap()


class Refuses32BitCapacitiesAndIsLru(LruInsteadOfS3FIFO, Refuses32BitCapacities):
    """Refuses as Refuses32BitCapacities does, and runs LRU when asked for S3FIFO: both findings."""

    name = "refuses-32-bit-capacities-and-is-lru"


def refuses_32_bit_capacities_and_is_lru() -> CanonicalS3FIFO:
    return Refuses32BitCapacitiesAndIsLru()


class CrashesAtBlockSize16(CanonicalS3FIFO):
    """Crashes at configure whenever block_size is 16, whatever the other knobs: a failure no
    whole-domain knob explains, so no configuration finding, though a knob of the configuration it
    first meets it at may take one."""

    name = "crashes-at-block-size-16"

    def configure(self, config: AdapterConfig) -> None:
        if config.block_size == 16:
            raise RuntimeError("block size 16 not supported")
        super().configure(config)


class ReadsTheRatio(CanonicalS3FIFO):
    """An LRU that reads small_ratio, which REPLAY-CONF-3 says it ignores: below -1e300 it keeps a
    block fewer."""

    name = "reads-the-ratio"

    def configure(self, config: AdapterConfig) -> None:
        if config.policy == "lru" and config.small_ratio < -1e300 and type(config.capacity) is int and config.capacity > 1:
            config = AdapterConfig(config.policy, config.capacity - 1, config.block_size, config.small_ratio, config.max_freq)
        super().configure(config)


class RefusesEverything(CanonicalS3FIFO):
    """Refuses every configuration: its behaviour is never certified."""

    name = "refuses-everything"

    def configure(self, config: AdapterConfig) -> None:
        raise ConfigRefused("no")


def crashes_at_block_size_16() -> CanonicalS3FIFO:
    return CrashesAtBlockSize16()


def reads_the_ratio() -> CanonicalS3FIFO:
    return ReadsTheRatio()


def refuses_everything() -> CanonicalS3FIFO:
    return RefusesEverything()
