"""Pilot steps several TUI tests share: open the Launch form, fill it in, submit; wait for a live run."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

from textual import events
from textual.keys import _character_to_key
from textual.screen import Screen
from textual.widgets import Input, Select

from codebox_tui.screens.launch import LaunchScreen
from codebox_tui.screens.live_run import LiveRunScreen


async def submit_launch_form(app: Any, pilot: Any, *, command: str | None = None, **fields: str) -> Screen[Any]:
    """Press ``n`` on Home, pick ``command`` (when given), set each Launch input (by id) to its value, press
    enter in the last one and return the screen on top afterwards (the Live run screen, or Launch itself
    when it refused)."""
    await pilot.pause()
    await pilot.press("n")
    await pilot.pause()
    assert isinstance(app.screen, LaunchScreen)
    if command is not None:
        app.screen.query_one("#command", Select).value = command
    field = None
    for field_id, value in fields.items():
        field = app.screen.query_one(f"#{field_id}", Input)
        field.value = value
    assert field is not None, "give at least one field"
    field.focus()
    await pilot.press("enter")
    await pilot.pause()
    screen: Screen[Any] = app.screen
    return screen


async def command_running(app: Any, pilot: Any, plugin_copy: Path, code: str) -> LiveRunScreen:
    """Launch ``wordpress.run-php`` of ``code`` (one that keeps running: it sleeps) from the Launch form, with
    ``plugin_copy`` mounted read-write as simple-plugin, and return the Live run screen once its progress says the
    command is running (polling, up to 180 s: the boot comes first)."""
    live = await submit_launch_form(
        app,
        pilot,
        mounts=f"{plugin_copy}:/wordpress/wp-content/plugins/simple-plugin:readwrite",
        args=shlex.quote(f"code={code}"),
    )
    assert isinstance(live, LiveRunScreen)
    for _ in range(1800):  # boot, then the command starts (its sleep keeps it running)
        if live.progress.step.startswith("running wordpress.run-php"):
            break
        await asyncio.sleep(0.1)
    assert live.progress.step.startswith("running"), live.progress.line()
    return live


async def wait_while(condition: Any, seconds: float = 180.0) -> None:
    """Poll ``condition()`` every 0.1 s until it is false or ``seconds`` pass (the caller asserts after)."""
    for _ in range(int(seconds * 10)):
        if not condition():
            return
        await asyncio.sleep(0.1)


def screen_lines(app: Any) -> list[str]:
    """The text of every line of the screen as the terminal would show it (all layers composed: scrollbars,
    dialogs and toasts over the widgets), for tests that read what the user sees."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def review_opened(pilot: Any, seconds: float = 120.0) -> Any:
    """Wait (on conditions, polling) until the Review screen is on top with its first file's diff drawn and
    its status line set, then return it: opening a bundle verifies it in a worker first (screens/opening.py)."""
    from textual.widgets import Static

    from codebox_tui.screens.review import ReviewScreen
    from widgets.diff_view import DiffView

    def ready() -> bool:
        screen = pilot.app.screen
        if not isinstance(screen, ReviewScreen) or not screen.is_mounted:
            return False
        if not screen.bundle.changed_files:
            return True
        view = screen.query_one(DiffView)
        status = str(screen.query_one("#diff-status", Static).render())
        return view.model is not None and bool(view.model.rows) and bool(status.strip())

    for _ in range(int(seconds * 20)):
        if ready():
            break
        await pilot.pause(0.05)
    else:
        raise AssertionError(f"the Review screen did not open within {seconds:g} s (on top: {pilot.app.screen!r})")
    await pilot.pause()
    return pilot.app.screen


async def type_into(pilot: Any, field_id: str, text: str) -> None:
    """Focus the input ``#field_id`` of the screen on top, clear it and type ``text`` key by key, as a user does."""
    from textual.widgets import Input

    from tests.factories.widget_hosts import wait_for

    # a screen just pushed may not have composed its fields yet (a loaded machine): wait for the field
    await wait_for(pilot, lambda: bool(pilot.app.screen.query(f"#{field_id}")), 30)
    field = pilot.app.screen.query_one(f"#{field_id}", Input)
    field.focus()
    await pilot.pause()
    field.value = ""  # the form's own default (e.g. a version), which a user would select and overwrite
    await type_text(pilot, text)
    assert field.value == text, f"#{field_id} reads {field.value!r} after typing {text!r}"


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` into whatever has focus, one key event per character through the app's driver (the path
    ``pilot.press`` and a terminal take), as a fast typist or a paste without bracketed paste delivers them:
    the app settles once after the last key, not after each (``pilot.press`` waits for idle twice per key,
    about 50 ms a character)."""
    app = pilot.app
    for character in text:
        key = events.Key(_character_to_key(character), character)
        key.set_sender(app)
        app._driver.send_message(key)
    await pilot.pause()


async def choose_backend(pilot: Any, name: str) -> None:
    """Pick ``name`` in the Backend field of the form on top as a user does: focus it, open its list with enter,
    move to the entry and take it with enter."""
    from textual.widgets import Select

    from codebox_tui.runtime.backends import BACKEND_NAMES

    field = pilot.app.screen.query_one("#backend", Select)
    field.focus()
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()
    moves = BACKEND_NAMES.index(name) - BACKEND_NAMES.index(str(field.value))
    await pilot.press(*(["down"] * moves if moves > 0 else ["up"] * -moves), "enter")
    await pilot.pause()


def confirm_ready(app: Any) -> bool:
    """A confirmation dialog is shown and done verifying (its `y` records): a condition for ``wait_for``."""
    from codebox_tui.screens.dialogs import ConfirmDialog

    return isinstance(app.screen, ConfirmDialog) and not app.screen.verifying
