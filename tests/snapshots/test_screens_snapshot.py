"""SVG snapshots of every screen at 120x40 and 80x24 (pytest-textual-snapshot).

Data are real (a captured bundle in a real store) but fixed: the Home screen gets a fixed clock and
the store rows a fixed creation time, so nothing depends on the wall clock or on temp paths."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.screenshots import FIXED_NOW

SIZES = [(120, 40), (80, 24)]


def DemoApp() -> CodeboxApp:
    return CodeboxApp(now=FIXED_NOW)


async def _open_review(pilot: Any, bundle: Path) -> None:
    await pilot.pause()
    pilot.app.open_bundle(bundle)
    await pilot.pause()
    tree = pilot.app.screen.query_one("#files")
    assert tree.highlight_path("greeting-cards.php")
    await pilot.pause()


def _steps(name: str, bundle: Path) -> Callable[[Any], Awaitable[None]]:
    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        if name == "home":
            return
        if name == "launch":
            await pilot.press("n")
            return
        if name == "live-run":
            pilot.app.push_screen(LiveRunScreen(None, "wordpress.phpunit", [], bundle.parent, run_dir=bundle))
            await pilot.pause(0.3)
            return
        await _open_review(pilot, bundle)
        if name == "review-tests":
            pilot.app.screen.query_one("#tabs").active = "tab-tests"
        elif name == "review-evidence":
            pilot.app.screen.query_one("#tabs").active = "tab-evidence"
            await pilot.pause(0.3)
        elif name == "review-events":
            pilot.app.screen.query_one("#tabs").active = "tab-events"
            await pilot.pause(0.3)
        elif name == "decide-confirm":
            await pilot.press("space", "A")
        elif name == "help":
            await pilot.press("f1")
        await pilot.pause()

    return run_before


SCREENS = ["home", "launch", "live-run", "review-diff", "review-tests", "review-events", "review-evidence",
           "decide-confirm", "help"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", SCREENS)
def test_screen_snapshot(snap_compare: Any, demo_bundle: Path, name: str, size: tuple[int, int]) -> None:
    assert snap_compare(DemoApp(), terminal_size=size, run_before=_steps(name, demo_bundle))
