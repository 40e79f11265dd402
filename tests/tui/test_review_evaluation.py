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
    (bundle_dir / "files" / "evaluate-patch.json").write_text(
        json.dumps(
            {
                "schema": "wp-codebox/patch-evaluation/v1",
                "plugin": "p",
                "patch": "x.patch",
                "applied": True,
                "tests": {
                    "verdict": "untested",
                    "reason": reason,
                    "fixed": [],
                    "broken": [],
                    "stillFailing": [],
                    "added": [],
                    "removed": [],
                    "before": None,
                    "after": None,
                },
            }
        )
    )
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

    (bundle_dir / "files" / "evaluate-patch.json").write_text(
        json.dumps(
            {
                "schema": "wp-codebox/patch-evaluation/v1",
                "plugin": "p",
                "patch": "x.patch",
                "applied": True,
                "tests": {
                    "verdict": "improvement",
                    "fixed": ["WhitespaceTest::test_tabs"],
                    "broken": [],
                    "stillFailing": [],
                    "added": [],
                    "removed": [],
                    "provedBy": ["WhitespaceTest::test_tabs", 7],
                    "before": None,
                    "after": None,
                },
                "split": {
                    "rule": "default",
                    "testFiles": ["tests/[b]WhitespaceTest.php"],
                    "codeFiles": ["p.php"],
                    "testsRunBefore": True,
                },
            }
        )
    )
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        tests = str(app.screen.query_one("#tests", Static).render())
        assert "Proved by (1): failed before the fix, pass after it" in tests
        assert "✔ WhitespaceTest::test_tabs" in tests
        assert "the patch's tests (tests/[b]WhitespaceTest.php) also ran on the old code" in tests


async def test_tests_tab_says_whether_the_plugin_survived_the_front_end_request(bundle_dir: Path) -> None:
    """The front-end probe's pluginLoaded (a single-file must-use plugin) and pluginActive (a plugin folder) read
    on the Tests tab, reached with `t` from where the review opens."""
    import json

    from codebox_tui.screens.data import bundle_checks

    def evaluation(front: dict[str, object]) -> str:
        return json.dumps(
            {
                "schema": "wp-codebox/patch-evaluation/v1",
                "plugin": "p",
                "patch": "x.patch",
                "applied": True,
                "tests": {
                    "verdict": "neutral",
                    "fixed": [],
                    "broken": [],
                    "stillFailing": [],
                    "added": [],
                    "removed": [],
                    "before": None,
                    "after": None,
                },
                "probe": {"status": "passed", "frontEnd": {"url": "/", **front}},
            }
        )

    (bundle_dir / "files" / "evaluate-patch.json").write_text(
        evaluation({"status": "passed", "problems": [], "pluginLoaded": True})
    )
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("t")
        await pilot.pause()
        assert app.screen.query_one("#tabs").active == "tab-tests"  # type: ignore[attr-defined]
        tests = str(app.screen.query_one("#tests", Static).render())
        assert "✔ front end / · must-use plugin still loaded" in tests

    cases = [
        (
            {"status": "failed", "problems": ["p is not loaded after the request"], "pluginLoaded": False},
            "✘ front end /: failed · must-use plugin NOT loaded after the request",
        ),
        ({"status": "passed", "problems": [], "pluginActive": True}, "✔ front end /: passed · plugin still active"),
        ({"status": "passed", "problems": [], "pluginActive": "yes"}, "✔ front end /: passed"),
    ]  # not a boolean
    for front, line in cases:
        (bundle_dir / "files" / "evaluate-patch.json").write_text(evaluation(front))
        rows = [text for label, text in bundle_checks(bundle_dir, {}).lines() if label == "probe"]
        assert rows == [line] or rows[0].startswith(line + " — "), rows
