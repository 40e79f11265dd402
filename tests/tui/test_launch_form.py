"""The Launch form: every field has a label, and the PHP version field reaches the run request (an
unsupported version is refused before anything boots, naming the field)."""

from __future__ import annotations

from textual.widgets import Input, Label

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.launch import LaunchScreen
from tests.factories.tui import type_text
from tests.factories.widget_hosts import wait_for


async def test_fields_are_labelled_and_php_reaches_the_request() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        screen = app.screen
        labels = [str(label.render()) for label in screen.query(".field-label").results(Label)]
        assert labels == [
            "Recipe",
            "Mounts",
            "Command",
            "Arguments",
            "WordPress",
            "PHP",
            "Backend",
            "Policy",
            "WP-CLI",
            "Hold",
        ]
        php = screen.query_one("#php", Input)
        assert php.value == "8.3"
        php.value = "5.6"
        screen.query_one("#args", Input).value = "code='echo 1;'"
        php.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)  # refused: nothing was launched
        error = str(screen.query_one("#launch-error", Label).render())
        assert "5.6" in error and "php" in error.lower()


async def test_an_invalid_episode_plan_is_refused_naming_each_json_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from tests.factories.tui import submit_launch_form

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "schema": "codebox/episode-plan/v1",
                "items": [{"action": {"command": "no.such-command"}}, {"restore": {}}],
            }
        )
    )
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await submit_launch_form(app, pilot, recipe=str(plan))
        assert isinstance(screen, LaunchScreen)  # refused before anything boots
        error = str(screen.query_one("#launch-error", Label).render())
        assert "plan.json: invalid episode plan; nothing was run" in error
        assert "$.items[1].restore.snapshot: Field required" in error
        # well formed, but a step names a command the catalog does not have: refused too
        plan.write_text(
            json.dumps({"schema": "codebox/episode-plan/v1", "items": [{"action": {"command": "no.such-command"}}]})
        )
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)
        error = str(screen.query_one("#launch-error", Label).render())
        assert "$.items[0].action:" in error and "no.such-command" in error


async def test_a_recipe_file_nested_too_deep_is_an_error_not_a_crash(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """200,000 nested arrays would exhaust Python's recursion in a plain json.loads: the form reports the file,
    the app keeps running and nothing boots."""
    from tests.factories.tui import submit_launch_form

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await submit_launch_form(app, pilot, recipe=str(deep))
        assert isinstance(app.screen, LaunchScreen)
        error = str(screen.query_one("#launch-error", Label).render())
        assert "deep.json" in error and "deeper than" in error


async def test_arguments_are_read_like_a_shell_and_shown_before_launch() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        screen = app.screen
        args = screen.query_one("#args", Input)
        assert args.value == ""  # nothing pre-filled: the example is a placeholder
        args.focus()
        await type_text(pilot, "code=require_once ABSPATH . 'x.php';")
        await pilot.pause()
        parsed = str(screen.query_one("#args-parsed", Label).render())
        assert parsed.startswith("✗") and "'ABSPATH' is not key=value" in parsed
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)  # refused before anything boots, naming the word
        assert "'ABSPATH' is not key=value" in str(screen.query_one("#launch-error", Label).render())
        args.value = ""
        await type_text(pilot, "code=\"require_once ABSPATH . 'x.php';\" bootstrap=none")
        await pilot.pause()
        parsed = str(screen.query_one("#args-parsed", Label).render())
        assert parsed == "→ 2 arguments: code=require_once ABSPATH . 'x.php';  bootstrap=none"
