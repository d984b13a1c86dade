"""PROTO-34: a certification report covers its policy's spec whole, and which clauses it lists is
derived (conformance/certification/findings/clauses.py), never kept by hand."""

import json
from pathlib import Path

import pytest

from kvspec.conformance.certification.findings import clauses
from kvspec.conformance.certification.findings.clauses import (
    IN_FLIGHT_MODULES,
    LIFECYCLE_SPEC,
    NOT_CHECKABLE,
    POLICY_LIFE,
    POLICY_SPECS,
    checked,
    configuration_clauses,
    lifecycle_clauses,
    own,
    policy_clauses,
)
from kvspec.conformance.core.citations import CLAUSE_LINE
from kvspec.reference.dialects import VARIATIONS, in_catalogue_order, replaced_clauses

ROOT = Path(__file__).resolve().parent.parent
REPORTS = sorted((ROOT / "docs" / "certifications").rglob("report.json"))


def checkout_clauses(name: str) -> list[str]:
    return CLAUSE_LINE.findall((ROOT / "spec" / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("policy", POLICY_SPECS)
def test_PROTO_34_every_clause_of_a_policy_spec_is_checked_or_not_checkable(policy: str) -> None:
    """A clause added to a spec fails here until a checking module cites it or NOT_CHECKABLE gives the reason."""
    spec = [c for name in POLICY_SPECS[policy] for c in checkout_clauses(name)]
    assert [c for c in spec if c not in checked() and c not in NOT_CHECKABLE] == []
    assert list(policy_clauses(policy)) == [c for c in spec if c in checked()]


@pytest.mark.parametrize("policy", ["s3fifo", "lru", "fifo"])
def test_PROTO_34_every_lifecycle_clause_of_a_policy_is_checked_or_not_checkable(policy: str) -> None:
    """A policy's requests in flight are certified on spec/lifecycle.md sections 1 to 5 and its own rules for blocks in use."""
    others = tuple(p for name, p in POLICY_LIFE.items() if name != policy)
    spec = [c for c in checkout_clauses(LIFECYCLE_SPEC) if not c.startswith(("LIFE-SERVE-", "LIFE-BEN-", *others))]
    assert [c for c in spec if c not in checked(IN_FLIGHT_MODULES) and c not in NOT_CHECKABLE] == []
    assert list(lifecycle_clauses(policy)) == [c for c in spec if c in checked(IN_FLIGHT_MODULES)]
    assert {c for c in lifecycle_clauses(policy) if not c.startswith("LIFE-")} == {c for c in spec if c.startswith(POLICY_LIFE[policy])}


def test_PROTO_34_each_clause_not_checkable_is_a_clause_of_a_policy_spec_with_a_reason_and_not_checked() -> None:
    spec = {c for names in [*POLICY_SPECS.values(), [LIFECYCLE_SPEC]] for name in names for c in checkout_clauses(name)}
    assert sorted(set(NOT_CHECKABLE) - spec) == []
    assert sorted(set(NOT_CHECKABLE) & (checked() | checked(IN_FLIGHT_MODULES))) == []
    assert [c for c, reason in NOT_CHECKABLE.items() if len(reason.split()) < 4] == []


def test_PROTO_34_the_installed_spec_is_the_checkout_s() -> None:
    """The clauses are read from spec/ as installed (pyproject's package-data), which must be the checkout's."""
    for names in POLICY_SPECS.values():
        for name in names:
            assert list(clauses.spec_clauses(name)) == checkout_clauses(name)


def test_PROTO_34_own_clauses_and_configuration_clauses_come_from_the_policy_s_spec() -> None:
    assert {policy: own(policy) for policy in POLICY_SPECS} == {"s3fifo": "S3-", "lru": "LRU-", "fifo": "FIFO-", "benefit": "BEN-"}
    for policy, names in POLICY_SPECS.items():
        expected = tuple(c for name in names for c in checkout_clauses(name) if c.split("-")[1] == "CONF")
        assert configuration_clauses(policy) == expected and expected
    assert set(configuration_clauses("lru")) == set(configuration_clauses("fifo")) < set(configuration_clauses("s3fifo"))


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: str(p.parent.relative_to(ROOT / "docs" / "certifications")))
def test_PROTO_34_a_committed_report_lists_the_derived_clauses_in_the_spec_s_order(path: Path) -> None:
    """Each policy's clauses: its spec's checked ones but those its dialect replaces, then its variation points' clauses."""
    for verdict in json.loads(path.read_text(encoding="utf-8"))["policies"]:
        dialect = frozenset(verdict["dialect"])
        expected = [c for c in policy_clauses(verdict["policy"]) if c not in replaced_clauses(dialect)]
        assert list(verdict["clauses"]) == expected + [VARIATIONS[v].clause for v in in_catalogue_order(dialect)]
