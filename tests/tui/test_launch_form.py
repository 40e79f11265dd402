"""The Launch form: every field has a label, and the PHP version field reaches the run request (an
unsupported version is refused before anything boots, naming the field)."""

from __future__ import annotations

from textual.widgets import Input, Label

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.launch import LaunchScreen
from tests.factories.widget_hosts import wait_for


async def test_fields_are_labelled_and_php_reaches_the_request() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        screen = app.screen
        labels = [str(label.render()) for label in screen.query(".field-label").results(Label)]
        assert labels == ["Recipe", "Mounts", "Command", "Arguments", "WordPress", "PHP", "Policy", "Hold"]
        php = screen.query_one("#php", Input)
        assert php.value == "8.3"
        php.value = "5.6"
        screen.query_one("#args", Input).value = "code=echo 1;"
        php.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)  # refused: nothing was launched
        error = str(screen.query_one("#launch-error", Label).render())
        assert "5.6" in error and "php" in error.lower()
