"""Pilot, end to end: a real `codebox evaluate-patch` bundle (native backend, Debian PHPUnit, Chromium) opened in
Review shows the verdict in the header and the test delta in the Tests tab, as recorded in the bundle. What is
shown is read from the bundle, whatever the backend: the native one is the faster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TabbedContent

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen

pytestmark = pytest.mark.native

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def test_review_shows_the_evaluate_patch_verdict_and_delta(playground_session: Any, tmp_path: Path) -> None:
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    proc = subprocess.run([sys.executable, "-m", "codebox_tui", "evaluate-patch", "--backend", "native",
                           "--plugin", str(plugin),
                           "--patch", str(EXAMPLES / "patches" / "buggy-counter-fix.patch"),
                           "--artifacts-dir", str(tmp_path / "art"), "--json"],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CODEBOX_HOME": str(playground_session.home)})
    assert proc.returncode == 0, proc.stderr
    bundle = Path(json.loads(proc.stdout)["bundleDir"])
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
