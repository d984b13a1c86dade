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


def test_every_contract_the_hunt_searches_names_its_clause_and_each_postcondition_is_told_apart() -> None:
    """A counterexample is matched to the postcondition the concrete run breaks by its description
    (conformance/hunt/reproduce.py), so no two of one function's are alike."""
    from kvspec.conformance.core.citations import cited
    from kvspec.conformance.hunt.targets import SCOPE, scope_targets

    for target in scope_targets(SCOPE):
        posts = [c.description for c in getattr(target.function, "__postconditions__", [])]
        pres = [c.description for group in getattr(target.function, "__preconditions__", []) for c in group]
        assert all(cited(description) for description in posts + pres), target.name
        assert len(set(posts)) == len(posts), target.name


def test_with_the_contracts_off_the_rules_are_plain_functions() -> None:
    """KVSPEC_CONTRACTS=0, the default: no rule is wrapped, and icontract is not even imported."""
    import subprocess
    import sys

    script = ("import sys\nfrom kvspec.reference import s3fifo, lru, fifo\nfrom kvspec.reference.benefit import config, ledger\n"
              "rules = [s3fifo.access, s3fifo.admit_to_main, s3fifo.is_resident, s3fifo.S3FIFO.resident_count, lru.access, fifo.access,"
              " config.check_config, ledger.register]\n"
              "print(any(hasattr(rule, '__wrapped__') for rule in rules), 'icontract' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert run.stdout.split() == ["False", "False"], run.stdout + run.stderr
