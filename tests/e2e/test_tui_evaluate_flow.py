"""Pilot, end to end through real sandboxes: `e` on Home opens the "Evaluate a patch" form, the plugin folder
and the patch are typed in, the Live run screen shows both test runs with their totals, and the run ends on the
Review screen's Tests tab with the verdict (docs/evaluate-patch.md, "From the TUI"). Every flow picks the
native backend in the form's Backend field (real PHP in bubblewrap, the faster one) and checks it ran there; the
same CLI flows on Playground are test_wp_unittestcase.py's and test_episodes.py's. The evaluation's Review is checked
against what its bundle records (verdict header, test delta, probes)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static, TabbedContent

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.evaluate import EvaluatePatchScreen, ReproduceScreen
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.screens.review import ReviewScreen
from tests.factories.parity import recorded_backend_option
from tests.factories.tui import choose_backend, type_into, wait_while
from tests.factories.widget_hosts import wait_for

pytestmark = pytest.mark.native

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


async def review_on_tab(pilot: Any, tab: str) -> ReviewScreen:
    """Wait (on the condition) for the Review screen the run opened by itself, showing ``tab``."""

    def shown() -> bool:
        screen = pilot.app.screen
        return (
            isinstance(screen, ReviewScreen)
            and screen.is_mounted
            and screen.query_one("#tabs", TabbedContent).active == tab
        )

    await wait_for(pilot, shown, 180)  # the bundle is verified in a worker first (screens/opening.py)
    review = pilot.app.screen
    assert isinstance(review, ReviewScreen)
    return review


@pytest.mark.timeout(900)  # a warm boot, the suite twice, the front-end and browser probes, capture
async def test_evaluate_a_patch_from_home_to_the_verdict(tmp_path: Path) -> None:
    plugin = tmp_path / "buggy-counter"
    shutil.copytree(EXAMPLES / "plugins-for-recipes" / "buggy-counter", plugin)
    original = (plugin / "buggy-counter.php").read_bytes()
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluatePatchScreen))
        await type_into(pilot, "plugin", str(plugin))
        await type_into(pilot, "patch", str(EXAMPLES / "patches" / "buggy-counter-fix.patch"))
        await choose_backend(pilot, "native")
        app.screen.query_one("#patch").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen))
        live = app.screen
        assert isinstance(live, LiveRunScreen)
        assert live.title_line == "evaluate buggy-counter + buggy-counter-fix.patch"
        await wait_while(lambda: live.state == "starting", 900)  # boot, tests before, patch, tests after, probe
        assert live.state == "done", live.query_one("#progress", Static).render()
        # each side's tests were announced and counted as the run went (the events the Live screen tails)
        assert live.progress.test_sides == {"before": "1/2 passed, 1 failed", "after": "2/2 passed"}
        assert live.run_dir is not None
        metadata = json.loads((live.run_dir / "metadata.json").read_text())
        assert metadata["runtime"]["backend"] == "native"  # as chosen in the form
        events = [json.loads(line) for line in (live.run_dir / "events.jsonl").read_text().splitlines()]
        kinds = [e["type"] for e in events]
        # tests were counted as they finished (PHPUnit's TeamCity log, read as the suite ran): on each side of
        # the patch up to 2/2, never down (tests that finish within one read of the log are counted together)
        applied = kinds.index("patch.applied")
        for side in (events[:applied], events[applied:]):
            counts = [(e["data"]["done"], e["data"]["total"]) for e in side if e["type"] == "tests.progress"]
            assert counts and counts[-1] == (2, 2) and counts == sorted(counts), counts
        assert (
            kinds.index("evaluate.tests-started")
            < kinds.index("patch.applied")
            < len(kinds) - 1 - kinds[::-1].index("evaluate.tests-finished")
        )
        # the run ends on the Review screen's Tests tab, with the verdict and the test delta as the bundle records
        # them (the header: fixed/broken counts and each side's passed tests; the tab: the fixed test, the suite's
        # status before, the front-end probe)
        review = await review_on_tab(pilot, "tab-tests")
        assert live.bundle_dir is not None and recorded_backend_option(live.bundle_dir) == "native"
        recorded = json.loads((live.bundle_dir / "files" / "evaluate-patch.json").read_text())["tests"]
        assert recorded["verdict"] == "improvement"
        verdict = str(review.query_one("#verdict", Static).render())
        assert "IMPROVEMENT" in verdict
        assert f"fixed {len(recorded['fixed'])} · broken {len(recorded['broken'])}" in verdict
        before, after = recorded["before"], recorded["after"]
        assert f"passed {before['passed']}/{before['tests']} → {after['passed']}/{after['tests']}" in verdict
        tests = str(review.query_one("#tests", Static).render())
        assert "Test delta (evaluate-patch): ✔ improvement" in tests
        fixed_block = tests.split("Fixed (1):", 1)[1].split("Broken", 1)[0]
        assert recorded["fixed"][0] in fixed_block  # CountTest::test_repeated_spaces
        assert f"Tests before {before['status']} — {before['passed']} passed" in tests
        assert "Probes (1)" in tests and "✔ front end /" in tests  # the front-end probe, as recorded
    assert (plugin / "buggy-counter.php").read_bytes() == original  # the plugin folder is never touched


@pytest.mark.timeout(900)
async def test_reproduce_a_bug_from_home_to_its_evidence() -> None:
    """`R`, the reproduction recipe typed in: it runs on the Live screen and ends on the Evidence tab, the
    header saying the bug was reproduced."""
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReproduceScreen))
        await type_into(pilot, "recipe", str(EXAMPLES / "recipes" / "reproduce-word-count.json"))
        await choose_backend(pilot, "native")
        app.screen.query_one("#recipe").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen), 30)
        live = app.screen
        assert isinstance(live, LiveRunScreen) and live.title_line == "recipe reproduce-word-count"
        assert live.backend == "native"
        await wait_while(lambda: live.state == "starting", 900)
        assert live.state == "done", live.query_one("#progress", Static).render()
        assert live.run_dir is not None and recorded_backend_option(live.run_dir) == "native"
        review = await review_on_tab(pilot, "tab-evidence")
        assert "RECIPE REPRODUCED" in str(review.query_one("#recipe-verdict", Static).render())


@pytest.mark.timeout(900)
async def test_reproduce_an_episode_plan_from_home_to_its_evidence() -> None:
    """`R`, the example episode plan typed in, native chosen: it runs on the Live screen (its steps as
    `episode.*` events) and ends on the bundle's Evidence tab with the episode trace."""
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReproduceScreen))
        await type_into(pilot, "recipe", str(EXAMPLES / "episode" / "plan.json"))
        await choose_backend(pilot, "native")
        app.screen.query_one("#recipe").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen), 30)
        live = app.screen
        assert isinstance(live, LiveRunScreen) and live.title_line == "episode" and live.backend == "native"
        await wait_while(lambda: live.state == "starting", 900)
        assert live.state == "done", live.query_one("#progress", Static).render()
        assert live.run_dir is not None and recorded_backend_option(live.run_dir) == "native"
        kinds = {json.loads(line)["type"] for line in (live.run_dir / "events.jsonl").read_text().splitlines()}
        assert {"episode.reset", "episode.step", "episode.snapshot", "episode.restore"} <= kinds
        review = await review_on_tab(pilot, "tab-evidence")
        shown = " ".join(str(s.render()) for s in review.query_one("#evidence").query(Static))
        assert "files/runtime-episode-trace.json" in shown
