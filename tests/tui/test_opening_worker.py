"""Opening a bundle never blocks the keyboard: the bundle is read and verified in a worker behind a
'Verifying…' screen (screens/opening.py). The real verification runs; the test only holds it back until it has
pressed its keys, so nothing depends on how fast the machine is."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from codebox_tui.app import CodeboxApp
from codebox_tui.screens import opening
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.home import HomeScreen
from codebox_tui.screens.opening import OpeningScreen
from codebox_tui.screens.review import ReviewScreen
from store.db import Store
from store.decisions import register_bundle
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.tui import review_opened
from tests.factories.widget_hosts import wait_for


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The real prepare_review, started only once the returned event is set."""
    release = threading.Event()
    real = opening.prepare_review

    def held_back(bundle_dir: Path) -> Any:
        assert release.wait(120)
        return real(bundle_dir)

    monkeypatch.setattr(opening, "prepare_review", held_back)
    return release


async def _press_enter_on_home(tmp_path: Path, store: Store, app: CodeboxApp, pilot: Any) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    register_bundle(store, summary.path)
    await pilot.pause()
    assert isinstance(app.screen, HomeScreen)
    app.screen.action_refresh()
    await wait_for(pilot, lambda: app.screen.query_one(DataTable).row_count == 1)
    await pilot.press("enter")
    await pilot.pause()


async def test_keys_answer_while_a_bundle_is_verified(tmp_path: Path, store: Store, held: threading.Event) -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await _press_enter_on_home(tmp_path, store, app, pilot)
        assert isinstance(app.screen, OpeningScreen)  # says what it waits for
        await pilot.press("f1")  # the UI answers while the worker verifies
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog))
        assert "Opening a bundle" in app.screen.markdown
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OpeningScreen))
        held.set()
        assert isinstance(await review_opened(pilot), ReviewScreen)


async def test_escape_while_verifying_goes_back_and_stays_there(
    tmp_path: Path, store: Store, held: threading.Event
) -> None:
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await _press_enter_on_home(tmp_path, store, app, pilot)
        opening_screen = app.screen
        assert isinstance(opening_screen, OpeningScreen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen))
        held.set()
        workers = list(opening_screen.workers)
        for worker in workers:
            await worker.wait()
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)  # the late result is dropped, not pushed over Home
