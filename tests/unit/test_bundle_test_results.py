"""files/test-results.json: a suite run on both sides of a patch is summarised per side, never summed."""

from __future__ import annotations

from codebox_tui.bundle.capture_docs import build_test_results
from codebox_tui.contracts.bundle import TestSuite


def _suite(phase: str | None, passed: int, failed: int) -> TestSuite:
    return TestSuite(
        name="plugin",
        phase=phase,
        status="failed" if failed else "passed",
        tests=passed + failed,
        passed=passed,
        failed=failed,
    )


def test_before_and_after_suites_summarise_the_after_side() -> None:
    results = build_test_results([_suite("before", 4, 2), _suite("after", 6, 0)])
    assert (results.summary.total, results.summary.passed, results.summary.failed) == (6, 6, 0)
    assert results.status == "passed"
    assert [s.phase for s in results.suites] == ["before", "after"]  # each side kept with its own counts


def test_an_after_side_that_fails_is_the_status() -> None:
    results = build_test_results([_suite("before", 6, 0), _suite("after", 5, 1)])
    assert (results.summary.total, results.summary.failed, results.status) == (6, 1, "failed")


def test_suites_without_phases_are_all_counted() -> None:
    results = build_test_results([_suite(None, 3, 0), _suite(None, 2, 1)])
    assert (results.summary.total, results.summary.passed, results.summary.failed) == (6, 5, 1)
    assert results.status == "failed"
