"""Pilot test of approving single hunks in the Review diff (docs/contracts.md, "Hunk selection"): the key
toggles the hunk under the line cursor, the confirmation says "k of n hunks", and the recorded decision
and the applied file hold exactly the approved hunks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.dialogs import ApplyDialog, ConfirmDialog, HelpDialog
from codebox_tui.screens.review import ReviewScreen
from codebox_tui.settings import reload_settings
from store.content import read_content
from store.db import Store
from tests.factories.apply_back import CHANGES
from tests.factories.hunks import big_after, captured
from tests.factories.tui import confirm_ready
from tests.factories.widget_hosts import wait_for
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree


async def test_leaving_a_hunk_out_records_and_applies_the_others_only(tmp_path: Path, store: Store) -> None:
    cap = captured(tmp_path / "cap")
    target = tmp_path / "target"
    shutil.copytree(cap.baseline, target)
    app = CodeboxApp(cap.bundle_dir)
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        tree = screen.query_one(ChangedFileTree)
        tree.focus()
        assert tree.highlight_path("big.txt")
        await pilot.pause()
        view = screen.query_one(DiffView)
        assert view.model is not None and view.model.path == "big.txt" and len(view.model.hunk_rows) == 3
        view.focus()
        while view.hunk_at_cursor() != 1 or view.cursor_row <= view.model.hunk_rows[1]:  # into hunk 2
            before = view.cursor_row
            await pilot.press("J")
            await pilot.pause()
            assert view.cursor_row != before, "the line cursor stopped before hunk 2"
        await pilot.press("h")
        await pilot.pause()
        assert view.skipped_hunks == frozenset({1})
        header = view.row_text(view.model.hunk_rows[1])
        assert header.startswith("✗ ") and "not approved" in header  # visibly marked
        assert "2 of 3 hunks approved" in view.status_text()
        await pilot.press("a")
        await wait_for(pilot, lambda: confirm_ready(app), timeout=60)
        assert isinstance(app.screen, ConfirmDialog)
        body = str(app.screen.query_one("#confirm-body", Static).render())
        assert "big.txt  (2 of 3 hunks)" in body, body
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyDialog), timeout=120)  # decided in a worker
        dialog = app.screen
        assert isinstance(dialog, ApplyDialog)
        dialog.query_one("#target", Input).value = str(target)
        dialog.query_one("#target", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        await wait_for(pilot, lambda: not dialog.applying, timeout=120)  # applied in a worker
        shown = str(app.screen.query_one("#apply-result", Static).render())
        assert "wp-codebox/apply-result/v1" in shown, shown
    (decision,) = store.list_decisions()
    hunks = read_content(cap.bundle_dir).hunks("big.txt")
    assert decision.action == "approve"
    assert decision.approved_hunks == {"big.txt": [hunks[0].sha256, hunks[2].sha256]}
    assert (target / "big.txt").read_bytes() == big_after({3, 37})
    assert (target / "demo.php").read_bytes() == CHANGES["demo.php"]


async def test_the_hunk_toggle_is_remappable_and_listed_in_help(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBOX_KEYMAP", '{"review.toggle_hunk": "ctrl+t"}')
    reload_settings()
    cap = captured(tmp_path / "cap")
    app = CodeboxApp(cap.bundle_dir)
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert screen.query_one(ChangedFileTree).highlight_path("big.txt")
        await pilot.pause()
        view = screen.query_one(DiffView)
        view.focus()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpDialog)
        assert "- `ctrl+t`: Toggle hunk" in app.screen.markdown
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("h")  # the default key no longer toggles
        await pilot.pause()
        assert view.skipped_hunks == frozenset()
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert view.skipped_hunks == frozenset({0})
        await pilot.press("ctrl+t")  # and back in
        await pilot.pause()
        assert view.skipped_hunks == frozenset()
