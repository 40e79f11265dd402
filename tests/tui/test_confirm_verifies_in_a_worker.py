"""The decision's confirmation never hashes on the UI thread (#27): the dialog opens at once saying
"Verifying…" while a worker hashes the bundle's changes (the Mode B digest) and reads the store's warning,
then shows the result. The real bundle, digest and store; the test only holds the worker back (the store
read it makes) until it has looked, so nothing depends on how fast the machine is."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from codebox_tui.app import CodeboxApp
from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.screens import data
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog
from store.db import Store
from tests.factories.tui import review_opened
from tests.factories.widget_hosts import wait_for


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The real data.decision_warning (read by the dialog's worker), started once the event is set."""
    release = threading.Event()
    real = data.decision_warning

    def held_back(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "decision_warning", held_back)
    return release


def _body(app: CodeboxApp) -> str:
    return str(app.screen.query_one("#confirm-body", Static).render())


async def test_the_dialog_says_verifying_then_shows_the_digest(
    bundle_dir: Path, store: Store, held: threading.Event
) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await review_opened(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog) and dialog.verifying
        assert "Verifying…" in _body(app) and "Content digest" not in _body(app)
        assert "Action: approve" in _body(app)  # what is known at once is shown at once
        held.set()
        await wait_for(pilot, lambda: not dialog.verifying, timeout=60)
        body = _body(app)
        assert "Verifying" not in body
        assert f"Content digest (Mode B): {content_digest_b(bundle_dir)[:16]}…" in body
        await pilot.press("n")
    assert store.list_decisions() == []


async def test_y_while_verifying_records_once_verified(bundle_dir: Path, store: Store, held: threading.Event) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await review_opened(pilot)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog) and "recorded as soon as the bundle is verified" in _body(app)
        assert store.list_decisions() == []
        held.set()
        await wait_for(pilot, lambda: len(store.list_decisions()) == 1, timeout=120)
        assert not isinstance(app.screen, (ConfirmDialog, ApplyDialog))
    assert [d.action for d in store.list_decisions()] == ["discard"]
