"""The evaluate-patch verdict line in Review: absent for ordinary bundles, a clear message (never a
traceback) when the bundle's files/evaluate-patch.json is unreadable."""

from __future__ import annotations

from pathlib import Path

from textual.css.query import NoMatches
from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen


async def test_ordinary_bundle_has_no_verdict_line(bundle_dir: Path) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        try:
            app.screen.query_one("#verdict")
        except NoMatches:
            pass
        else:
            raise AssertionError("a bundle without files/evaluate-patch.json shows a verdict")


async def test_unreadable_evaluation_is_reported_in_the_header(bundle_dir: Path) -> None:
    (bundle_dir / "files" / "evaluate-patch.json").write_text("{not json")
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        line = str(app.screen.query_one("#verdict", Static).render())
        assert "unreadable" in line and "files/evaluate-patch.json is not readable JSON" in line
        assert "Patch evaluation unreadable" in str(app.screen.query_one("#tests", Static).render())


async def test_untested_verdict_shows_its_reason(bundle_dir: Path) -> None:
    import json

    reason = "before: Could not find /tmp/wordpress-tests-lib/includes/functions.php [no toolchain]"
    (bundle_dir / "files" / "evaluate-patch.json").write_text(json.dumps({
        "schema": "wp-codebox/patch-evaluation/v1", "plugin": "p", "patch": "x.patch", "applied": True,
        "tests": {"verdict": "untested", "reason": reason, "fixed": [], "broken": [], "stillFailing": [],
                  "added": [], "removed": [], "before": None, "after": None}}))
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert "? UNTESTED" in str(app.screen.query_one("#verdict", Static).render())
        tests = str(app.screen.query_one("#tests", Static).render())
        assert "Test delta (evaluate-patch): ? untested" in tests
        assert reason in tests.replace("\n", "")  # markup-like text in the reason is shown as is


async def test_tests_tab_names_the_tests_that_proved_the_fix(bundle_dir: Path) -> None:
    import json

    (bundle_dir / "files" / "evaluate-patch.json").write_text(json.dumps({
        "schema": "wp-codebox/patch-evaluation/v1", "plugin": "p", "patch": "x.patch", "applied": True,
        "tests": {"verdict": "improvement", "fixed": ["WhitespaceTest::test_tabs"], "broken": [],
                  "stillFailing": [], "added": [], "removed": [], "provedBy": ["WhitespaceTest::test_tabs", 7],
                  "before": None, "after": None},
        "split": {"rule": "default", "testFiles": ["tests/[b]WhitespaceTest.php"], "codeFiles": ["p.php"],
                  "testsRunBefore": True}}))
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        tests = str(app.screen.query_one("#tests", Static).render())
        assert "Proved by (1): failed before the fix, pass after it" in tests
        assert "✔ WhitespaceTest::test_tabs" in tests
        assert "the patch's tests (tests/[b]WhitespaceTest.php) also ran on the old code" in tests
