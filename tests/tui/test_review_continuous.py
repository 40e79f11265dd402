"""Pilot test of the continuous diff view (every changed file in one scroll, issue #15): file headers, viewed
files collapsed, `]` / `[` between files, search, the line cursor, a line comment recorded in the store on
the right file, a hunk left out of the right file, and back to one file. A real captured bundle and store."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.comments import CommentDialog
from codebox_tui.screens.review import ReviewScreen
from store.comments import list_comments
from store.db import Store
from tests.factories.tui import type_text
from widgets.diff_model import COLLAPSED_NOTE
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree

FILES = ["added.php", "keep.bin", "lib/run.sh", "plugin.php", "readme.txt"]  # typical_change, sorted


def _file_rows(view: DiffView, path: str) -> list[str]:
    assert view.model is not None
    place = view.model.section_end(path)
    assert place is not None, path
    return [row.kind for row in view.model.rows[place[0] : place[1]]]


async def test_all_files_in_one_scroll(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        tree = screen.query_one(ChangedFileTree)
        view = screen.query_one(DiffView)
        tree.move_cursor(tree._leaves["lib/run.sh"])  # lib/run.sh viewed, then back to added.php
        await pilot.pause()
        tree.move_cursor(tree._leaves["added.php"])
        await pilot.pause()
        await pilot.press("f")
        await pilot.pause()

        assert screen.continuous and view.continuous and view.model is not None
        assert [path for path, _row, _hunk in view.model.sections] == FILES
        headers = [row.text for row in view.model.rows if row.kind == "header"]
        assert headers == FILES
        # the viewed file is collapsed to its header; the shown one is not
        assert _file_rows(view, "lib/run.sh") == ["header", "meta"]
        assert view.model.rows[view.model.section_end("lib/run.sh")[0] + 1].text == COLLAPSED_NOTE  # type: ignore[index]
        assert "hunk" in _file_rows(view, "added.php")
        assert view.current_path() == "added.php"
        assert "file 1/5" in view.status_text()

        # `]` moves file by file in the order of the scroll; the tree follows
        view.focus()
        await pilot.press("]", "]", "]")
        await pilot.pause()
        assert view.current_path() == "plugin.php"
        assert tree.cursor_node is not None and tree.cursor_node.data is not None
        assert tree.cursor_node.data.relativePath == "plugin.php"
        assert "file 4/5" in view.status_text()
        await pilot.press("[")
        await pilot.pause()
        assert view.current_path() == "lib/run.sh"

        # `z` shows the collapsed file at the top, and collapses it again
        await pilot.press("z")
        await pilot.pause()
        assert "add" in _file_rows(view, "lib/run.sh") and view.current_path() == "lib/run.sh"
        await pilot.press("z")
        await pilot.pause()
        assert _file_rows(view, "lib/run.sh") == ["header", "meta"]

        # search across files: the match is in plugin.php, far below
        await pilot.press("/")
        await pilot.pause()
        field = screen.query_one("#diff-search", Input)
        assert field.has_focus
        await type_text(pilot, "LINE twenty")
        await pilot.press("enter")
        await pilot.pause()
        assert view.matches and all(view.path_at(row) == "plugin.php" for row in view.matches)
        assert view.current_path() == "plugin.php"

        # the line cursor walks into plugin.php's added line; a comment is stored on that file and line
        view.move_cursor_to(view.matches[-1])
        await pilot.pause()
        row = view.rows[view.cursor_row]
        assert row.kind == "add" and view.current_path() == "plugin.php"
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CommentDialog)
        await type_text(pilot, "say line 20")
        await pilot.press("enter")
        await pilot.pause()
        record = store.list_bundles()[0]
        [comment] = list_comments(store, record.key)
        assert (comment.path, comment.side, comment.line_start) == ("plugin.php", "new", row.new_no)
        assert view.marked_rows().get(view.cursor_row) == "issue"

        # `h` leaves plugin.php's hunk under the cursor out, not a hunk of another file
        place = view.hunk_location()
        assert place is not None and place[0] == "plugin.php"
        await pilot.press("h")
        await pilot.pause()
        assert screen.skipped_hunks == {"plugin.php": {place[1]}}
        hunk_row = view.model.hunk_rows[view.model.section_end("plugin.php")[2] + place[1]]  # type: ignore[index]
        header = view.row_text(hunk_row)
        assert header.startswith("✗ ") and "not approved" in header

        # back to one file: the file under the cursor
        await pilot.press("f")
        await pilot.pause()
        assert not screen.continuous and not view.continuous
        assert view.model is not None and view.model.path == "plugin.php"
        assert view.skipped_hunks == frozenset({place[1]})
