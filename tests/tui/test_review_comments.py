"""Pilot tests of review comments: added, edited and deleted on diff lines, ranges and files through the keys,
recorded with a request-changes decision, exported as feedback next to the bundle. Asserts on the store and
the files (a real captured bundle, a real SQLite store)."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, Select

from codebox_tui.app import CodeboxApp
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.screens.comments import CommentDialog
from codebox_tui.screens.review import ReviewScreen
from store.comments import list_comments
from store.db import Store
from tests.factories.tui import type_text
from widgets.diff_styles import MARK_CHAR
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree


async def _cursor_to(pilot, view: DiffView, kind: str, new_no: int | None = None, key: str = "J") -> None:  # type: ignore[no-untyped-def]
    for _ in range(40):
        await pilot.press(key)
        await pilot.pause()
        row = view.rows[view.cursor_row]
        if row.kind == kind and (new_no is None or row.new_no == new_no):
            return
    raise AssertionError(f"the line cursor never reached a {kind} line")


async def _type_comment(app: CodeboxApp, pilot, text: str, kind: str | None = None) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause()
    dialog = app.screen
    assert isinstance(dialog, CommentDialog)
    if kind is not None:
        dialog.query_one(Select).value = kind
    field = dialog.query_one(Input)
    field.value = ""
    await type_text(pilot, text)
    await pilot.press("enter")
    await pilot.pause()


async def test_comments_through_the_keys_and_feedback_on_request_changes(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        tree = screen.query_one(ChangedFileTree)
        tree.move_cursor(tree._leaves["plugin.php"])
        await pilot.pause()
        view = screen.query_one(DiffView)
        assert view.model is not None and view.model.path == "plugin.php"
        view.focus()

        # a line comment on the added line 21
        await _cursor_to(pilot, view, "add", 21)
        await pilot.press("c")
        await _type_comment(app, pilot, "keep it lower case")
        # a range comment: new lines 20-21 (context 20, removed 21, added 21)
        await pilot.press("v")
        await _cursor_to(pilot, view, "ctx", 20, key="K")
        await pilot.press("c")
        await _type_comment(app, pilot, "reword these", kind="suggestion")
        # a file comment
        await pilot.press("C")
        await _type_comment(app, pilot, "nice work", kind="praise")

        record = store.list_bundles()[0]
        comments = {c.kind: c for c in list_comments(store, record.key)}
        assert set(comments) == {"issue", "suggestion", "praise"}
        issue, suggestion, praise = comments["issue"], comments["suggestion"], comments["praise"]
        assert (issue.path, issue.side, issue.line_start, issue.line_end) == ("plugin.php", "new", 21, 21)
        assert issue.lines == ["<?php // LINE twenty"] and issue.content_digest == record.content_digest
        assert (suggestion.side, suggestion.line_start, suggestion.line_end) == ("new", 20, 21)
        assert (praise.side, praise.line_start) == ("file", None)

        # shown inline: the commented lines carry a mark, the panel shows the comments at the cursor
        marked = view.marked_rows()
        added = next(i for i, r in enumerate(view.rows) if r.kind == "add" and r.new_no == 21)
        assert added in marked and MARK_CHAR in view.row_text(added)
        assert not any(view.rows[i].new_no == 40 for i in marked)
        shown = [view.display_line(y).text for y in range(view.display_index.display_count())]
        added_y = view.display_index.y_of(added)
        below = shown[added_y + 1 : added_y + 3]  # the comments ending on line 21, inline
        assert any("issue: keep it lower case" in line for line in below)
        assert any("suggestion: reword these" in line for line in below)
        panel = str(screen.query_one("#comment-panel").render())
        assert "reword these" in panel and "nice work" in panel

        # edit the comment at the cursor (the range's first line: the suggestion), then delete the praise
        await pilot.press("e")
        await _type_comment(app, pilot, "reword lines 20 and 21")
        assert (
            next(c for c in list_comments(store, record.key) if c.id == suggestion.id).body == "reword lines 20 and 21"
        )
        await _cursor_to(pilot, view, "ctx", 24)  # no comment there: x falls back to the file comment
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert {c.id for c in list_comments(store, record.key)} == {issue.id, suggestion.id}

        # copy: feedback written and on the clipboard
        await pilot.press("Y")
        await pilot.pause()
        assert "keep it lower case" in app.clipboard

        # request changes: the comments are recorded with the decision, feedback written next to the bundle
        await pilot.press("i")
        await pilot.pause()
        await type_text(pilot, "two things")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert all(c.decision_id is not None for c in screen.comments)

    (decision,) = store.list_decisions()
    assert decision.action == "iterate"
    assert {c.decision_id for c in list_comments(store, record.key)} == {decision.id}
    review_dir = bundle_dir.with_name(bundle_dir.name + ".review")
    doc = json.loads((review_dir / "feedback.json").read_text())
    assert doc["decision"]["id"] == decision.id and doc["decision"]["reason"] == "two things"
    assert [(c["kind"], c["body"]) for c in doc["comments"]] == [
        ("issue", "keep it lower case"),
        ("suggestion", "reword lines 20 and 21"),
    ]
    md = (review_dir / "feedback.md").read_text()
    assert "two things" in md and "`plugin.php` lines 20-21" in md
    assert verify_bundle(bundle_dir).valid


async def test_a_refused_comment_is_shown_and_nothing_is_stored(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        view = screen.query_one(DiffView)
        await pilot.press("c")  # no line cursor yet: a hint, no dialog
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        with open(bundle_dir / "files/patch.diff", "a") as handle:  # tampered after opening
            handle.write("tampered\n")
        view.focus()
        await _cursor_to(pilot, view, "add")
        await pilot.press("c")
        await _type_comment(app, pilot, "text")
        assert isinstance(app.screen, ReviewScreen)
    assert store.list_bundles() == [] or all(list_comments(store, b.key) == [] for b in store.list_bundles())


async def test_a_click_puts_the_line_cursor_on_the_clicked_line(bundle_dir: Path, store: Store) -> None:
    app = CodeboxApp(bundle_dir)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.screen
        tree = screen.query_one(ChangedFileTree)
        tree.move_cursor(tree._leaves["plugin.php"])
        await pilot.pause()
        view = screen.query_one(DiffView)
        assert not view.is_split and view.cursor_row == -1
        await pilot.click("#diff", offset=(20, 6))
        await pilot.pause()
        assert view.cursor_row == 6
        lines = view.selected_lines()
        row = view.rows[6]
        assert lines is not None and lines[1] == (row.old_no if row.kind == "del" else row.new_no)
