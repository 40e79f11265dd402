"""Reading real code in the Review screen (Pilot): the search field (`/`, enter, `n`/`N`), soft wrap,
the horizontal position in the status line, fast sideways jumps, hunk jumps that bring a change in a
long line into view; keys bound by id (keymap file), listed in help and the footer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.widgets import Footer, Input, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.settings import get_settings, reload_settings
from tests.factories.capture import capture_plain_run
from tests.factories.hostile_bundle import HOSTILE_NAME, build_recorded_bundle
from tests.factories.tui import type_text
from widgets.diff_styles import MATCH_CURRENT
from widgets.diff_view import DiffView

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


async def _open(pilot: Any, rel: str) -> tuple[ReviewScreen, DiffView]:
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, ReviewScreen)
    tree = screen.query_one("#files")
    assert tree.highlight_path(rel)
    await pilot.pause()
    view = screen.query_one(DiffView)
    view.focus()
    await pilot.pause()
    return screen, view


def _status(screen: ReviewScreen) -> str:
    return str(screen.query_one("#diff-status", Static).render())


async def test_search_field_finds_cycles_and_closes(tmp_path: Path) -> None:
    app = CodeboxApp(build_recorded_bundle(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        screen, view = await _open(pilot, HOSTILE_NAME)
        await pilot.press("slash")
        await pilot.pause()
        field = screen.query_one("#diff-search", Input)
        assert field.display and field.has_focus
        await type_text(pilot, "echo")
        await pilot.press("enter")
        await pilot.pause()
        assert view.has_focus and not field.display and len(view.matches) == 2
        assert '"echo" 1/2' in _status(screen)
        first = view.matches[view.match_index]
        strip = view.render_line(view.display_index.y_of(first) - int(view.scroll_offset.y))
        assert "".join(s.text for s in strip if s.style and s.style.bgcolor == MATCH_CURRENT.bgcolor) == "echo"
        await pilot.press("n")
        await pilot.pause()
        assert view.match_index == 1 and '"echo" 2/2' in _status(screen)
        await pilot.press("N")
        await pilot.pause()
        assert view.match_index == 0
        await pilot.press("slash")  # the field keeps the term; escape closes it and stays on Review
        await pilot.pause()
        assert field.value == "echo" and field.has_focus
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and not field.display and view.has_focus
        await pilot.press("slash", *"nowhere", "enter")
        await pilot.pause()
        assert view.matches == [] and '"nowhere" no match' in _status(screen)


async def test_soft_wrap_and_horizontal_position(tmp_path: Path) -> None:
    app = CodeboxApp(build_recorded_bundle(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        screen, view = await _open(pilot, HOSTILE_NAME)
        width = view.size.width
        assert f"col 1-{width} of {view.virtual_size.width}" in _status(screen)
        await pilot.press("L")
        await pilot.pause()
        assert int(view.scroll_offset.x) == min(width // 2, view.max_scroll_x)
        await pilot.press("dollar_sign")
        await pilot.pause()
        total = view.virtual_size.width
        assert f"col {total - width + 1}-{total} of {total}" in _status(screen)
        await pilot.press("0")
        await pilot.pause()
        assert view.scroll_offset.x == 0
        rows = len(view.rows)
        await pilot.press("w")
        await pilot.pause()
        assert view.wrap and "wrap" in _status(screen) and view.virtual_size.width == width
        assert view.virtual_size.height > rows  # long lines take more than one screen line
        text = [view.render_line(y).text for y in range(view.size.height)]
        assert any(line.rstrip().endswith("begin admins only */") for line in text)
        assert all(len(line) == width for line in text)
        await pilot.press("w")
        await pilot.pause()
        assert not view.wrap and view.virtual_size.height == rows


def _bundle(work: Path, before: str, after: str) -> Path:
    """A bundle of one edited file, captured by the real capture code."""
    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo

    plugin = work / "plugin"
    plugin.mkdir()
    (plugin / "plugin.php").write_text(before)
    mount = MountSpec(source=str(plugin), target="/wordpress/wp-content/plugins/plugin")
    baselines = take_baselines([mount], work / "scratch")
    (plugin / "plugin.php").write_text(after)
    run_dir = work / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text("")
    summary = capture_plain_run(
        run_dir, [mount], baselines, RuntimeInfo(id="runtime-t", createdAt="2026-11-22T12:00:00.000Z")
    )
    return Path(summary.path)


async def test_hunk_jump_brings_a_change_far_right_into_view(tmp_path: Path) -> None:
    lines = [f"<?php // line {i}\n" for i in range(40)]
    lines[30] = "\t$config = array( " + "'key' => 'value', " * 20 + "'target' => 'old' );\n"
    before = "".join(lines)
    after = before.replace("'target' => 'old'", "'target' => 'new'")
    app = CodeboxApp(_bundle(tmp_path, before, after))
    async with app.run_test(size=(120, 30)) as pilot:
        _screen, view = await _open(pilot, "plugin.php")
        assert view.scroll_offset.x == 0
        await pilot.press("right_curly_bracket")  # `}`: next hunk
        await pilot.pause()
        assert view.scroll_offset.x > 0  # the changed word is ~390 columns in: scrolled there at once
        visible = "\n".join(view.render_line(y).text for y in range(view.size.height))
        assert "'target' => 'new'" in visible and "'target' => 'old'" in visible


async def test_wrap_key_is_bound_by_id_and_listed(tmp_path: Path) -> None:
    path = get_settings().keymap_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"diff.toggle_wrap": "W"}')
    reload_settings()
    app = CodeboxApp(build_recorded_bundle(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:
        _screen, view = await _open(pilot, "tabbed.php")
        footer_keys = {key for key, active in app.screen.active_bindings.items() if active.binding.show}
        assert "W" in footer_keys and "slash" in footer_keys
        assert app.screen.query_one(Footer)
        await pilot.press("w")
        await pilot.pause()
        assert not view.wrap
        await pilot.press("W")
        await pilot.pause()
        assert view.wrap
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        assert "Wrap" in app.screen.markdown and "`w`: soft wrap" in app.screen.markdown
