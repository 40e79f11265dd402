"""The Backend field of the Launch, Evaluate a patch and Reproduce a bug forms (screens/backend_field.py): at
first CODEBOX_BACKEND's; picked with keys, it is what the run gets, and a choice the flow cannot use on that
backend says why under the field at once, by the check the command line makes (nothing boots here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Label, Select

from codebox_tui.app import CodeboxApp
from codebox_tui.runtime.backends import default_php
from codebox_tui.screens.evaluate import EvaluatePatchScreen, ReproduceScreen
from codebox_tui.screens.launch import LaunchScreen
from codebox_tui.screens.live_run import LiveRunScreen
from codebox_tui.settings import get_settings
from codebox_tui.versions import DEFAULT_PHP_VERSION
from tests.factories.tui import choose_backend, type_into
from tests.factories.widget_hosts import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def under_backend(app: CodeboxApp) -> str:
    label = app.screen.query_one("#backend-error", Label)
    return str(label.render()) if label.has_class("-shown") else ""


async def test_launch_form_backend_follows_codebox_backend_and_holds_on_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBOX_BACKEND", "native")
    get_settings.cache_clear()
    try:
        app = CodeboxApp()
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            await pilot.press("n")
            await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
            assert app.screen.query_one("#backend", Select).value == "native"  # CODEBOX_BACKEND's
    finally:
        monkeypatch.delenv("CODEBOX_BACKEND")
        get_settings.cache_clear()
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        screen = app.screen
        assert screen.query_one("#backend", Select).value == "playground"
        await type_into(pilot, "hold", "15m")
        await choose_backend(pilot, "native")
        assert screen.query_one("#backend", Select).value == "native"
        assert screen.query_one("#php", Input).value == default_php("native")  # the host's PHP
        assert under_backend(app) == ""  # a held preview works on native too
        await choose_backend(pilot, "playground")
        assert under_backend(app) == "" and screen.query_one("#php", Input).value == DEFAULT_PHP_VERSION
        # native without a hold: the run request gets it and launches (nothing is refused)
        await choose_backend(pilot, "native")
        await type_into(pilot, "hold", "")
        await type_into(pilot, "args", "code='echo 1;'")
        assert under_backend(app) == ""  # said again as the form changed: nothing is wrong now
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen))
        live = app.screen
        assert isinstance(live, LiveRunScreen) and live.request is not None
        assert live.request.backend == "native" and live.request.php == default_php("native")
        live.control.cancel("the test only checks the request")


async def test_evaluate_form_on_native_launches_with_nothing_under_the_field() -> None:
    """The native backend serves the probes' pages through its own preview (docs/backends.md): an evaluation on
    it is not refused, and the form launches it."""
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, EvaluatePatchScreen))
        await choose_backend(pilot, "native")
        assert under_backend(app) == ""
        await type_into(pilot, "plugin", str(EXAMPLES / "plugins-for-recipes" / "buggy-counter"))
        await type_into(pilot, "patch", str(EXAMPLES / "patches" / "buggy-counter-fix.patch"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen))
        live = app.screen
        assert isinstance(live, LiveRunScreen)
        live.control.cancel("the test only checks that the form launches")


async def test_reproduce_form_accepts_a_plan_that_requests_pages_on_native() -> None:
    app = CodeboxApp()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ReproduceScreen))
        await type_into(pilot, "recipe", str(EXAMPLES / "episode" / "plan.json"))
        await choose_backend(pilot, "native")
        assert under_backend(app) == ""  # its http-response observation is served by native's preview
        await choose_backend(pilot, "playground")
        assert under_backend(app) == ""
