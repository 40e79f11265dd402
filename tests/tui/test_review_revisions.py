"""Pilot test of revisions in the TUI: the Revisions tab (revisions with decision and tests, what changed since
the revision reviewed), comments of the earlier revision carried over and marked outdated. Real captured
bundles, a real SQLite store."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.review import ReviewScreen
from store.comments import add_comment
from store.db import Store
from store.decisions import decide_on, register_bundle
from store.revisions import link
from tests.unit.test_bundle_capture_verify import make_bundle, typical_change
from tests.unit.test_store_revisions import second_try
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree


async def test_second_revision_shows_interdiff_and_carried_comments(tmp_path: Path, store: Store) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first_summary, _ = make_bundle(tmp_path / "one", typical_change)
    second_summary, _ = make_bundle(tmp_path / "two", second_try)
    first = register_bundle(store, first_summary.path)
    second = register_bundle(store, second_summary.path)
    add_comment(store, first, path="plugin.php", kind="issue", body="keep lower case", author="ana", line_start=21)
    add_comment(store, first, path="plugin.php", kind="note", body="context is fine", author="ana", line_start=19)
    decide_on(store, first, "iterate", approver="ana", reason="see comments")
    link(store, second, first)

    app = CodeboxApp(second_summary.path)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        tabs = screen.query_one("#tabs", TabbedContent)
        tabs.active = "tab-revisions"
        await pilot.pause()
        text = str(screen.query_one("#revisions").render())
        assert "Revision 2 of 2" in text
        assert "What changed since revision 1 (the one reviewed)" in text
        assert "++<?php // line twenty" in text and "-+<?php // LINE twenty" in text
        assert "iterate" in text and "outdated" in text and "keep lower case" in text

        tabs.active = "tab-diff"
        tree = screen.query_one(ChangedFileTree)
        tree.move_cursor(tree._leaves["plugin.php"])
        await pilot.pause()
        view = screen.query_one(DiffView)
        marked = {view.rows[i].new_no for i in view.marked_rows()}
        assert marked == {19}  # the carried comment whose line reads the same; the outdated one is not on a line
        panel = str(screen.query_one("#comment-panel").render())
        assert "revision 1:" in panel and "outdated" in panel and "keep lower case" in panel
