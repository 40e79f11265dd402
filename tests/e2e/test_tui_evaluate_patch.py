"""Pilot, end to end: a real `codebox evaluate-patch` bundle (native backend, Debian PHPUnit, Chromium) opened in
Review shows the verdict in the header and the test delta in the Tests tab, as recorded in the bundle. What is
shown is read from the bundle, whatever the backend: the native one is the faster. The bundle is made through the
CLI's entry point (``codebox_tui.cli.main``) in the test's process, before the app starts (tests/factories/holds.py:
a new process costs over a CPU-second of imports)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.widgets import Static, TabbedContent

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from tests.factories.holds import codebox_in_process
from tests.factories.native import recorded_backend

pytestmark = pytest.mark.native

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def evaluated(codebox_home: Path, tmp_path: Path) -> Path:
    """The bundle of ``codebox evaluate-patch`` of buggy-counter and its fix, made before the test's event loop runs
    (the browser probe drives Chromium through a synchronous client)."""
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    proc = codebox_in_process(
        codebox_home,
        "evaluate-patch",
        "--backend",
        "native",
        "--plugin",
        str(plugin),
        "--patch",
        str(EXAMPLES / "patches" / "buggy-counter-fix.patch"),
        "--artifacts-dir",
        str(tmp_path / "art"),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout)["bundleDir"])


async def test_review_shows_the_evaluate_patch_verdict_and_delta(evaluated: Path) -> None:
    bundle = evaluated
    assert recorded_backend(bundle) == "native"
    recorded = json.loads((bundle / "files" / "evaluate-patch.json").read_text())["tests"]
    assert recorded["verdict"] == "improvement"

    app = CodeboxApp(bundle)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        verdict = str(screen.query_one("#verdict", Static).render())
        assert "IMPROVEMENT" in verdict
        assert f"fixed {len(recorded['fixed'])} · broken {len(recorded['broken'])}" in verdict
        before, after = recorded["before"], recorded["after"]
        assert f"passed {before['passed']}/{before['tests']} → {after['passed']}/{after['tests']}" in verdict
        await pilot.press("t")
        await pilot.pause()
        assert screen.query_one("#tabs", TabbedContent).active == "tab-tests"
        tests = str(screen.query_one("#tests", Static).render())
        assert "Test delta (evaluate-patch): ✔ improvement" in tests
        fixed_block = tests.split("Fixed (1):", 1)[1].split("Broken", 1)[0]
        assert recorded["fixed"][0] in fixed_block  # CountTest::test_repeated_spaces
        assert f"Tests before {before['status']} — {before['passed']} passed" in tests
        assert "Probes (1)" in tests and "✔ front end /" in tests  # the front-end probe, as recorded
