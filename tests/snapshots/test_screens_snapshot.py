"""SVG snapshots of every screen at 120x40 and 80x24 (pytest-textual-snapshot).

Data are real (a captured bundle in a real store) but fixed: the Home screen gets a fixed clock and
the store rows a fixed creation time, so nothing depends on the wall clock or on temp paths. Nothing
depends on timing either: each picture is taken once the event tails have taken in their whole file
(not after a fixed pause, which a loaded machine outlasts), with text cursors steady (an Input's
cursor blinks every 0.5 s), and with spare sandboxes off (tests/conftest.py), so no background prewarm
status can change under the picture."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.settings import get_settings
from tests.factories.screenshots import FIXED_NOW
from tests.factories.tui import review_opened
from widgets.event_tail import EventTail

SIZES = [(120, 40), (80, 24)]


def DemoApp() -> CodeboxApp:
    return CodeboxApp(now=FIXED_NOW)


async def _open_review(pilot: Any, bundle: Path) -> None:
    await pilot.pause()
    pilot.app.open_bundle(bundle)
    await review_opened(pilot)  # verified in a worker first: wait for the screen, not for time
    tree = pilot.app.screen.query_one("#files")
    assert tree.highlight_path("greeting-cards.php")
    await pilot.pause()


async def _settle(pilot: Any) -> None:
    """Pin everything that would otherwise depend on timing before the picture is taken."""
    screen = pilot.app.screen
    for _ in range(1200):  # every event tail has taken in all of its file (a condition, not a pause)
        tails = list(screen.query(EventTail))
        if all(not tail.indexing and tail.total == _line_count(tail.index.path) for tail in tails):
            break
        await pilot.pause(0.05)
    else:
        raise AssertionError("the event tails did not take in their files within 60 s")
    for field in screen.query(Input):
        field.cursor_blink = False  # a steady cursor: a blink toggles it every 0.5 s
    await pilot.pause()


def _line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _steps(name: str, bundle: Path) -> Callable[[Any], Awaitable[None]]:
    async def run_before(pilot: Any) -> None:
        assert get_settings().spare_sandboxes == "off"  # no background boot, no prewarm status to race
        await pilot.pause()
        if name == "launch":
            await pilot.press("n")
        elif name == "live-run":
            pilot.app.push_screen(LiveRunScreen(run_dir=bundle))
        elif name != "home":
            await _open_review(pilot, bundle)
            if name == "review-tests":
                pilot.app.screen.query_one("#tabs").active = "tab-tests"
            elif name == "review-evidence":
                pilot.app.screen.query_one("#tabs").active = "tab-evidence"
            elif name == "review-events":
                pilot.app.screen.query_one("#tabs").active = "tab-events"
            elif name == "decide-confirm":
                await pilot.press("space", "A")
            elif name == "help":
                await pilot.press("f1")
        await pilot.pause()
        await _settle(pilot)

    return run_before


SCREENS = [
    "home",
    "launch",
    "live-run",
    "review-diff",
    "review-tests",
    "review-events",
    "review-evidence",
    "decide-confirm",
    "help",
]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", SCREENS)
def test_screen_snapshot(snap_compare: Any, demo_bundle: Path, name: str, size: tuple[int, int]) -> None:
    assert snap_compare(DemoApp(), terminal_size=size, run_before=_steps(name, demo_bundle))
