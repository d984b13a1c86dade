"""The pytest plugin: `kvspec certify` as test items of an implementer's own suite."""

import sys
from pathlib import Path

import pytest

from kvspec.conformance.certification.certify import PROFILES

pytest_plugins = ["pytester"]

# The adapter of the session, wrapped to count how often the plugin loads and closes it.
COUNTING_ADAPTER = """
from pathlib import Path

from kvspec.adapters.reference import ReferenceAdapter

LOG = Path(__file__).with_name("adapter.log")


class Counting(ReferenceAdapter):
    def close(self):
        with LOG.open("a") as log:
            log.write("close\\n")
        super().close()


def make():
    with LOG.open("a") as log:
        log.write("load\\n")
    return Counting()
"""


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("KVSPEC_CONTRACTS", "0")  # the certification's speed, not the reference's contracts, is under test
    return pytester


def test_a_conforming_implementation_passes_as_one_test(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--kvspec-adapter=reference", "--kvspec-policy=lru", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*collected 1 item*", "kvspec-certify?lru? .*"])


def test_a_mutant_fails_with_the_clause_and_the_shrunk_requests_in_their_replay_command(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--kvspec-adapter=in-process:kvspec.conformance.galleries.mutants:no_min_clamp", "--kvspec-policy=s3fifo", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*s3fifo: DOES NOT CONFORM", "*examples/s", "REPLAY-HIT-1: *", "*the shrunk counterexample, * request*",
         "kvspec replay - --adapter in-process:kvspec.conformance.galleries.mutants:no_min_clamp --policy s3fifo * <<'EOF'",
         '{"timestamp": 0, "input_length": *, "output_length": 0, "hash_ids": [[]*[]]}', "EOF", "FAILED kvspec-certify?s3fifo?*"]
    )


def test_each_item_starts_the_implementation_and_stops_it(pytester: pytest.Pytester) -> None:
    """PROTO-13: an item stops the implementation it certified, so that a failure to stop is that item's."""
    pytester.makepyfile(counting=COUNTING_ADAPTER)
    result = pytester.runpytest_subprocess(
        "--kvspec-adapter=in-process:counting:make", "--kvspec-policy=lru", "--kvspec-policy=fifo", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    assert (pytester.path / "adapter.log").read_text().split() == ["load", "close", "load", "close"]


def test_a_failure_to_start_or_to_stop_fails_an_item(pytester: pytest.Pytester) -> None:
    """PROTO-30: without a start there are no policies to list, so one item says how it failed."""
    result = pytester.runpytest_subprocess("--kvspec-adapter=cmd:true", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*kvspec-certify?start? F*", "start: DOES NOT CONFORM", "PROTO-15: at its start: true: start (seq 0): *"])
    stops_badly = f"cmd:{sys.executable} {Path(__file__).with_name('fakes') / 'faulty.py'} stop-status 1"
    result = pytester.runpytest_subprocess(f"--kvspec-adapter={stops_badly}", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["lru: DOES NOT CONFORM", "*PROTO-13: at its stop: *the process exited with status 1 after stop*"])


def test_without_the_option_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_theirs():\n    pass\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert "kvspec-certify" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*test_theirs*", "1 test collected*"])


def test_without_policies_every_policy_is_an_item_and_k_selects_among_them(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--kvspec-adapter=reference", "--collect-only", "-q", "-k", "not s3fifo", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["kvspec-certify?lru?", "kvspec-certify?fifo?", "kvspec-certify?benefit?", "3/4 tests collected (1 deselected)*"])


def test_a_bad_adapter_spec_or_policy_is_a_usage_error(pytester: pytest.Pytester) -> None:
    bad_spec = pytester.runpytest_subprocess("--kvspec-adapter=bogus", "-p", "no:cacheprovider")
    assert bad_spec.ret == pytest.ExitCode.USAGE_ERROR
    bad_spec.stderr.fnmatch_lines(["*PROTO-18*"])
    bad_policy = pytester.runpytest_subprocess("--kvspec-adapter=reference", "--kvspec-policy=arc", "-p", "no:cacheprovider")
    assert bad_policy.ret == pytest.ExitCode.USAGE_ERROR
    bad_policy.stderr.fnmatch_lines(["*--kvspec-policy arc*"])


def test_a_profile_certify_does_not_have_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--kvspec-adapter=reference", "--kvspec-profile=fast", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--kvspec-profile fast: not one of {', '.join(PROFILES)}*"])
