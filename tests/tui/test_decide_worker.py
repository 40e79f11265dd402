"""Deciding never blocks the keyboard: the bundle is verified and the decision recorded in a worker while the
decision bar says "Verifying…" (screens/review.py); a decision key pressed meanwhile says why it waits. The real
verification and the real store run; the test only holds the worker back until it has looked and pressed its
keys, so nothing depends on how fast the machine is."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens import data
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog
from codebox_tui.screens.review import ReviewScreen
from store.db import Store
from tests.factories.tui import confirm_ready, review_opened, screen_lines
from tests.factories.widget_hosts import wait_for
from widgets.decision_bar import DecisionBar


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The real data.decide, started only once the returned event is set."""
    release = threading.Event()
    real = data.decide

    def held_back(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "decide", held_back)
    return release


def _shown(app: CodeboxApp, text: str) -> bool:
    return any(text in line for line in screen_lines(app))


def _told(app: CodeboxApp, text: str) -> bool:
    """A notification (a toast, which may wrap on screen) says ``text``."""
    return any(text in str(n.message) for n in app._notifications)


async def test_approve_shows_verifying_then_the_result(bundle_dir: Path, store: Store, held: threading.Event) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await review_opened(pilot)
        assert isinstance(screen, ReviewScreen)
        await pilot.press("a")
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)
        await pilot.press("y")
        await wait_for(pilot, lambda: app.screen is screen and _shown(app, "Verifying the bundle"))
        assert "approve" in screen.query_one(DecisionBar).busy
        assert store.list_decisions() == []  # nothing recorded before the verification is done
        await pilot.press("d")  # a second decision while the first is verified: refused, with the reason
        await wait_for(pilot, lambda: _told(app, "discard waits until it is done"))
        assert not isinstance(app.screen, ConfirmDialog)
        held.set()  # (set before any assertion can fail, so a failing test never leaves the worker waiting)
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyDialog), timeout=120)
        assert screen.query_one(DecisionBar).busy == ""
        assert "approve (#1)" in screen.query_one(DecisionBar).decision
        await pilot.press("escape")
    assert [d.action for d in store.list_decisions()] == ["approve"]


async def test_a_refused_decision_clears_the_verifying_state_and_says_why(
    bundle_dir: Path, store: Store, held: threading.Event
) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await review_opened(pilot)
        (bundle_dir / "files" / "patch.diff").write_bytes(b"tampered after the review opened\n")
        await pilot.press("d")
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)
        await pilot.press("y")
        await wait_for(pilot, lambda: app.screen is screen and _shown(app, "Verifying the bundle"))
        held.set()
        await wait_for(pilot, lambda: not screen.query_one(DecisionBar).busy, timeout=120)
        await wait_for(pilot, lambda: _told(app, "fails verification"))
    assert store.list_decisions() == []


async def test_apply_shows_applying_then_the_result(
    bundle_dir: Path, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = data.apply

    def held_back(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "apply", held_back)
    target = tmp_path / "target"
    target.mkdir()
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(120, 40)) as pilot:
        await review_opened(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyDialog), timeout=120)
        dialog = app.screen
        assert isinstance(dialog, ApplyDialog)
        dialog.query_one("#target", Input).value = str(target)
        dialog.query_one("#target", Input).focus()
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: (
                dialog.applying
                and "Applying through directory" in str(dialog.query_one("#apply-result", Static).render())
            ),
        )
        await pilot.press("escape")  # cannot close halfway: says why
        await wait_for(pilot, lambda: _told(app, "Closing waits until it is done"))
        release.set()
        assert app.screen is dialog
        await wait_for(pilot, lambda: not dialog.applying, timeout=120)
        # the result arrives: an empty target is not the plugin the bundle changed, so the checks refuse it
        shown = str(dialog.query_one("#apply-result", Static).render())
        assert shown.startswith("Refused:") and "missing from the target" in shown, shown
    assert [d.action for d in store.list_decisions()] == ["approve"]
    assert list(target.iterdir()) == []  # a refusal writes nothing
