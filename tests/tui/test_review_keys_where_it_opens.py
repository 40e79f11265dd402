"""Review keys pressed from where the Review screen opens (the file tree has the focus), on code shaped like a
real plugin's (tab-indented PHP, a long line whose fix sits at column ~95), reading the screen the terminal
shows: soft wrap hides no character, hunk jumps move the line cursor and scroll sideways to the change, a
comment lands where a search jumped, text typed after `tab` in the comment dialog is kept, and approving with
an open `issue` comment warns (issue #29, points 1-4)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.widgets import Input, Static

from codebox_tui.app import CodeboxApp
from codebox_tui.screens.comments import CommentDialog
from codebox_tui.screens.dialogs import ConfirmDialog
from codebox_tui.screens.review import ReviewScreen
from tests.factories.bundles import make_bundle
from tests.factories.tui import review_opened, screen_lines, type_text
from widgets.diff_view import DiffView
from widgets.file_tree import ChangedFileTree

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

BEFORE_CALL = "echo '<a href=\"' . $url . '\" class=\"attachment-link\" data-id=\"' . $id . '\">' . "
LONG_BEFORE = "\t\t" + BEFORE_CALL + "$_GET['attachment'] . '</a>'; // keep the link text as the visitor typed it"
LONG_AFTER = (
    "\t\t" + BEFORE_CALL + "esc_html( $_GET['attachment'] ) . '</a>'; // keep the link text as the visitor typed it"
)
FIRST_BEFORE = "\t$id = $_GET['id'];"
FIRST_AFTER = "\t$id = absint( $_GET['id'] );"
WRAPPED = "\t\t" + "".join(chr(ord("a") + i % 26) + ("" if i % 7 else " ") for i in range(260)) + " // end"


def _prepare(source: Path) -> None:
    lines = ["<?php", "function render_attachment_link( $url ) {", FIRST_BEFORE]
    lines += [f"\t$step_{i} = {i}; // unchanged line {i}" for i in range(40)]
    lines += [LONG_BEFORE, "}"]
    lines += [f"// tail {i}" for i in range(40)]
    (source / "plugin.php").write_text("\n".join(lines) + "\n")


def _fix(source: Path) -> None:
    text = (source / "plugin.php").read_text()
    text = text.replace(FIRST_BEFORE, FIRST_AFTER).replace(LONG_BEFORE, LONG_AFTER)
    text = text.replace("// tail 39", WRAPPED)
    (source / "plugin.php").write_text(text)


async def _opened(pilot: Any) -> tuple[ReviewScreen, DiffView]:
    screen = await review_opened(pilot)
    assert isinstance(screen, ReviewScreen)
    view = screen.query_one(DiffView)
    assert isinstance(pilot.app.focused, ChangedFileTree)  # where a review opens: nothing focused by the test
    return screen, view


def _status(screen: ReviewScreen) -> str:
    return str(screen.query_one("#diff-status", Static).render())


def _diff_pane(app: Any, view: DiffView) -> list[str]:
    """The diff pane's lines as shown (the pane's columns of the composed screen, scrollbar included)."""
    region = view.region
    return [line[region.x : region.right] for line in screen_lines(app)[region.y : region.bottom]]


def _expand(text: str) -> str:
    return text.expandtabs(4)


async def test_soft_wrap_from_the_tree_shows_every_character(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, _fix, prepare=_prepare)
    app = CodeboxApp(summary.path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, view = await _opened(pilot)
        await pilot.press("w")
        await pilot.pause()
        assert view.wrap and "wrap" in _status(screen)
        target = view.model.rows.index(next(r for r in view.model.rows if r.text.endswith("// end")))
        view.scroll_to(y=view.display_index.y_of(target), animate=False)
        await pilot.pause()
        pane = _diff_pane(app, view)
        code_x = next(i for i, line in enumerate(pane) if "// end" in line)
        start = next(i for i in range(code_x, -1, -1) if " + " in pane[i][:16])
        gutter = pane[start].index(" + ") + 3
        shown = "".join(line[gutter:].rstrip("▁▂▃▄▅▆▇█▉▊▋▌▍▎▏ ") for line in pane[start : code_x + 1])
        assert shown.replace(" ", "") == _expand(WRAPPED).replace(" ", "")
        await pilot.press("w", "$")  # unwrapped, at the last column: the end of the longest line is on screen
        await pilot.pause()
        view.scroll_to(y=view.display_index.y_of(target), animate=False)
        await pilot.pause()
        assert any(line.rstrip("▁▂▃▄▅▆▇█▉▊▋▌▍▎▏ ").endswith("// end") for line in _diff_pane(app, view))


async def test_hunk_jumps_move_the_cursor_and_scroll_sideways_to_the_change(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, _fix, prepare=_prepare)
    app = CodeboxApp(summary.path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, view = await _opened(pilot)
        assert "hunk 1/3" in _status(screen)
        await pilot.press("}")  # nothing visited yet: the first hunk's change gets the cursor
        await pilot.pause()
        assert "hunk 1/3" in _status(screen) and "absint" in view.model.rows[view.cursor_row].text
        await pilot.press("}")
        await pilot.pause()
        assert "hunk 2/3" in _status(screen)
        row = view.model.rows[view.cursor_row]
        assert row.kind == "add" and "esc_html(" in row.text  # the fixed line's new side: the change is there
        assert int(view.scroll_offset.x) > 0  # brought sideways to the change at column ~95
        assert any("esc_html(" in line for line in _diff_pane(app, view))
        await pilot.press("}")
        await pilot.pause()
        assert "hunk 3/3" in _status(screen)
        await pilot.press("}")  # the last hunk: nothing moves
        await pilot.pause()
        assert "hunk 3/3" in _status(screen)
        await pilot.press("{")
        await pilot.pause()
        assert "hunk 2/3" in _status(screen)
        await pilot.press("{")
        await pilot.pause()
        assert "hunk 1/3" in _status(screen) and "absint" in view.model.rows[view.cursor_row].text


async def test_a_comment_lands_where_the_search_jumped_and_tab_loses_no_text(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, _fix, prepare=_prepare)
    app = CodeboxApp(summary.path)
    async with app.run_test(size=(140, 40)) as pilot:
        screen, view = await _opened(pilot)
        await pilot.press("slash", *"esc_html", "enter")
        await pilot.pause()
        row = view.model.rows[view.cursor_row]
        assert "esc_html(" in row.text
        await pilot.press("c")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, CommentDialog)
        assert dialog.where == f"plugin.php:{row.new_no}"
        await type_text(pilot, "escape the ")
        await pilot.press("tab")
        await type_text(pilot, "link text")
        await pilot.pause()
        assert dialog.query_one("#comment-body", Input).value == "escape the link text"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("a")  # approve all with the open `issue` comment: the confirmation warns first
        await pilot.pause()
        confirm = app.screen
        assert isinstance(confirm, ConfirmDialog)
        text = "\n".join(screen_lines(app))
        assert "1 open issue comment (must change)" in text and f"plugin.php:{row.new_no}" in text
