"""The contracts are installed while the tests run, and they cite their clauses."""

import icontract
import pytest

from kvspec.reference import contracts, s3fifo
from kvspec.reference.s3fifo import S3FIFO


def test_the_suite_runs_with_every_contract_installed() -> None:
    assert contracts.LEVEL == "all"
    assert contracts.CHEAP and contracts.STATE


def test_a_broken_precondition_names_its_clause() -> None:
    caps = s3fifo.Caps(small_cap=1, main_cap=1, ghost_cap=1, max_freq=3)
    with pytest.raises(icontract.ViolationError, match="S3-ADMIT-S-4"):
        s3fifo.admit_to_small(S3FIFO(caps, {7: 0}, {}, {}), 7)


def test_typeguard_checks_the_reference_while_the_tests_run() -> None:
    from typeguard import TypeCheckError

    with pytest.raises(TypeCheckError):
        s3fifo.caps_are_valid((1, 1, 1, 3))  # type: ignore[arg-type]
