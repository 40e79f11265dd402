"""Pilot tests of the app shell: keymap file, themes, help, command palette entries, small terminals."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.home import HomeScreen
from codebox_tui.screens.launch import LaunchScreen
from codebox_tui.settings import get_settings, reload_settings


async def test_keymap_file_remaps_a_binding_by_id() -> None:
    path = get_settings().keymap_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"home.new": "m"}')
    reload_settings()  # settings (the keymap among them) are read once per process
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)


async def test_broken_keymap_file_is_a_warning_not_a_crash() -> None:
    path = get_settings().keymap_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    reload_settings()
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert any("not valid JSON" in str(n.message) for n in app._notifications)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)


async def test_keymap_setting_from_the_environment_wins_over_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    path = get_settings().keymap_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"home.new": "m"}')
    monkeypatch.setenv("CODEBOX_KEYMAP", '{"home.new": "j"}')
    assert reload_settings().keymap == {"home.new": "j"}
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("j")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)


async def test_theme_toggle_and_help() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        first = app.theme
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme != first and {first, app.theme} == {"textual-dark", "textual-light"}
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


async def test_every_home_action_has_a_palette_entry() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        titles = {command.title for command in app.get_system_commands(app.screen)}
        for description in ("Review", "New sandbox", "Filter", "Refresh", "Help", "Theme"):
            assert description in titles, titles


async def test_too_small_terminal_gets_a_clear_message(tmp_path: Path) -> None:
    app = CodeboxApp()
    async with app.run_test(size=(50, 12)) as pilot:
        await pilot.pause()
        messages = [str(n.message) for n in app._notifications]
        assert any("needs at least" in m for m in messages), messages


async def test_launch_form_reports_an_invalid_recipe_with_json_paths_and_boots_nothing(tmp_path: Path) -> None:
    from textual.widgets import Input, Label

    recipe = tmp_path / "broken.json"
    recipe.write_text(
        '{"schema": "wp-codebox/workspace-recipe/v1", "workflow": {"steps": [{"command": 7}]},'
        ' "runtime": {"wp": "1.0"}}'
    )
    from tests.factories.tui import submit_launch_form

    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await submit_launch_form(app, pilot, recipe=str(recipe)), LaunchScreen)  # nothing launched
        field = app.screen.query_one("#recipe", Input)
        shown = str(app.screen.query_one("#launch-error", Label).render())
        assert "broken.json: invalid recipe" in shown and "nothing was run" in shown
        assert "$.workflow.steps[0].command" in shown
        field.value = str(tmp_path / "missing.json")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)
        assert "missing.json" in str(app.screen.query_one("#launch-error", Label).render())
