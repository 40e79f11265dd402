"""Home reads the inbox (every bundle's summary) in a worker: the status line says "Loading the inbox…" until
the rows arrive, and the keys answer meanwhile. The real store and the real inbox read run; the test only holds
the worker back until it has looked, so nothing depends on how fast the machine is."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens import data
from codebox_tui.screens.dialogs import HelpDialog
from codebox_tui.screens.home import HomeScreen
from store.db import Store
from store.decisions import register_bundle
from tests.factories.widget_hosts import wait_for


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The real inbox read (``screens/data.py``, Home's door to the store), started only once the returned event
    is set."""
    release = threading.Event()
    real = data.inbox

    def held_back(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "inbox", held_back)
    return release


def _status(app: CodeboxApp) -> str:
    return str(app.screen.query_one("#home-status", Static).render())


async def test_home_shows_loading_then_the_rows(bundle_dir: Path, store: Store, held: threading.Event) -> None:
    register_bundle(store, bundle_dir)
    app = CodeboxApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, HomeScreen) and "Loading the inbox" in _status(app))
        assert app.screen.query_one(DataTable).row_count == 0
        assert "no bundles yet" not in _status(app)  # not claimed before the inbox is read
        await pilot.press("f1")  # the keys answer while the worker reads
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog))
        held.set()
        await pilot.press("escape")
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, HomeScreen) and app.screen.query_one(DataTable).row_count == 1,
            timeout=60,
        )
        assert "Loading" not in _status(app) and "1 of 1 bundle(s)" in _status(app)
