"""Deliberately wrong in-process implementations (in-process:tests/fakes/inprocess.py:FACTORY): the
reference, which conforms, broken in one way at its third request after each configure, so that
every replay of an example fails alike; or at its construction, or at its close (PROTO-29); and,
for `kvspec replay --keep-going`, an LRU asked for S3FIFO at the results level, which diverges
on request after request, alone and raising late."""

import time

from kvspec.adapters.interface import Snapshot
from kvspec.adapters.reference import ReferenceAdapter
from kvspec.conformance.galleries.mutants import LruInsteadOfS3FIFO

FAULT_AT = 3
LATE_FAULT_AT = 40  # lru_raising_late's, after many divergences


class Counting(ReferenceAdapter):
    """The reference, counting requests (hit_tokens calls) since the last configure."""

    def configure(self, config: object) -> None:
        self.requests = 0
        super().configure(config)  # type: ignore[arg-type]

    def hit_tokens(self, hash_ids: list[int], input_length: int) -> int:
        self.requests += 1
        return self.answer(super().hit_tokens(hash_ids, input_length))

    def answer(self, hit: int) -> object:
        return hit

    def at_fault(self) -> bool:
        return self.requests == FAULT_AT


class Raising(Counting):
    def access(self, hash_ids: list[int]) -> None:
        if self.at_fault():
            raise KeyError(hash_ids[0])
        super().access(hash_ids)


class Hanging(Counting):
    def answer(self, hit: int) -> object:
        if self.at_fault():
            time.sleep(3600)
        return hit


class WrongType(Counting):
    def answer(self, hit: int) -> object:
        return str(hit) if self.at_fault() else hit


class NoneFreq(Counting):
    def snapshot(self) -> Snapshot:
        snapshot = super().snapshot()
        if self.at_fault() and snapshot.main:
            return Snapshot(small=snapshot.small, main=((snapshot.main[0][0], None), *snapshot.main[1:]), ghost=snapshot.ghost)  # type: ignore[arg-type]
        return snapshot


class CloseRaises(ReferenceAdapter):
    def close(self) -> None:
        raise RuntimeError("cannot release the cache")


def raising() -> Raising:
    return Raising()


def hanging() -> Hanging:
    return Hanging()


def wrong_type() -> WrongType:
    return WrongType()


def none_freq() -> NoneFreq:
    return NoneFreq()


def close_raises() -> CloseRaises:
    return CloseRaises()


def factory_raises() -> ReferenceAdapter:
    raise OSError("the cache's shared memory segment is missing")


def not_an_adapter() -> object:
    return 42


class HitRaises(ReferenceAdapter):
    """The benefit policy, failing every hit."""

    def record_hit(self, key: int, cost: object) -> None:
        raise ZeroDivisionError(f"no cost model for key {key}")


def hit_raises() -> HitRaises:
    return HitRaises()


class LruAtTheResultsLevel(LruInsteadOfS3FIFO):
    """Asked for S3FIFO, a plain LRU of capacity blocks, showing no queues: every difference is in its results."""

    level = "results"


class LruRaisingLate(LruAtTheResultsLevel):
    """The same, raising as it runs its LATE_FAULT_AT-th request since the last configure (counted
    in accesses: a diagnosis asks hit_tokens about single blocks between requests)."""

    def configure(self, config: object) -> None:
        self.requests = 0
        super().configure(config)  # type: ignore[arg-type]

    def access(self, hash_ids: list[int]) -> None:
        self.requests += 1
        if self.requests == LATE_FAULT_AT:
            raise MemoryError("the block table is full")
        super().access(hash_ids)



def lru_at_the_results_level() -> LruAtTheResultsLevel:
    return LruAtTheResultsLevel()


def lru_raising_late() -> LruRaisingLate:
    return LruRaisingLate()
