"""SVG snapshots of real code in the Review screen: a tab-indented WordPress file and a file whose
content and name carry control characters and bidi overrides (the patch recorded from a real Playground
run, ``tests/factories/hostile_bundle.py``), unified, side by side, wrapped and searched."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.settings import reload_settings
from tests.factories.hostile_bundle import HOSTILE_NAME, build_recorded_bundle
from tests.factories.screenshots import FIXED_NOW


@pytest.fixture
def hostile_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CODEBOX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.delenv("CODEBOX_TAB_WIDTH", raising=False)
    reload_settings()
    yield build_recorded_bundle(tmp_path / "work")
    monkeypatch.undo()
    reload_settings()


def _steps(rel: str, *keys: str) -> Callable[[Any], Awaitable[None]]:
    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        tree = pilot.app.screen.query_one("#files")
        assert tree.highlight_path(rel)
        await pilot.pause()
        pilot.app.screen.query_one("#diff").focus()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
        await pilot.pause()

    return run_before


CASES = {
    "control-characters-unified": (HOSTILE_NAME, (120, 32), ()),
    "control-characters-wrapped": (HOSTILE_NAME, (100, 32), ("w",)),
    "tabs-side-by-side": ("tabbed.php", (170, 24), ()),
    "tabs-searched": ("tabbed.php", (120, 24), ("slash", *"greeting", "enter")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_diff_text_snapshot(snap_compare: Any, hostile_bundle: Path, case: str) -> None:
    rel, size, keys = CASES[case]
    assert snap_compare(CodeboxApp(hostile_bundle, now=FIXED_NOW), terminal_size=size, run_before=_steps(rel, *keys))
