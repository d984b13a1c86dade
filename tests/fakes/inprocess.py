"""Deliberately wrong in-process implementations (python:tests/fakes/inprocess.py:FACTORY): the
reference, which conforms, broken in one way at its third request after each configure, so that
every replay of an example fails alike; or at its construction, or at its close (PROTO-29)."""

import time

from kvspec.adapters.interface import Snapshot
from kvspec.adapters.reference import ReferenceAdapter

FAULT_AT = 3


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
