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
from tests.factories.bundles import make_bundle, second_try, typical_change
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


async def test_compare_two_bundles_from_the_review_screen(tmp_path: Path, store: Store) -> None:
    from textual.widgets import DataTable, Input

    from codebox_tui.screens.compare import CompareDialog, CompareScreen

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, _ = make_bundle(tmp_path / "one", typical_change)
    second, _ = make_bundle(tmp_path / "two", second_try)
    app = CodeboxApp(first.path)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, CompareDialog)
        app.screen.query_one(Input).value = str(second.path)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        table = screen.query_one(DataTable)
        rows = {str(key.value): table.get_row(key) for key in table.rows}
        assert rows["plugin.php"][3] == "differs" and rows["added.php"][3] == "same"
        assert rows["readme.txt"][1:] == ["deleted +0 -1", "—", "only A"]
        head = str(screen.query_one("#compare-head").render())
        assert "@1" in head and "@2" in head
        table.move_cursor(row=list(rows).index("plugin.php"))
        await pilot.pause()
        left, right = screen.query_one("#diff-a", DiffView), screen.query_one("#diff-b", DiffView)
        assert screen.shown == "plugin.php"
        assert left.model is not None and right.model is not None
        assert any(r.text == "<?php // LINE twenty" for r in left.rows)
        assert any(r.text == "<?php // line five" for r in right.rows)
        table.move_cursor(row=list(rows).index("readme.txt"))
        await pilot.pause()
        assert "B does not change readme.txt" in right.rows[0].text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
    assert sorted(b.path for b in store.list_bundles()) == sorted(str(p.resolve()) for p in (first.path, second.path))
