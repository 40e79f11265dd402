"""Inline comment lines in the diff view (Line API): drawn under the commented row in unified, wrapped and
side-by-side views, skipped by line navigation, control characters shown as escapes."""

from __future__ import annotations

from pathlib import Path

from tests.factories.widget_hosts import Recorder, git_patch
from widgets.diff_model import split_patch
from widgets.diff_styles import MARK_CHAR
from widgets.diff_view import DiffView


def _text(view: DiffView, y: int) -> str:
    return "".join(seg.text for seg in view.render_line(y - int(view.scroll_offset.y)))


async def test_notes_are_drawn_under_their_line_in_every_view(tmp_path: Path) -> None:
    blocks = split_patch(git_patch(tmp_path, files=1, lines=60))
    view = DiffView(id="diff")
    app = Recorder(view)
    async with app.run_test(size=(100, 30)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        await pilot.pause()
        rows = view.rows
        added = next(i for i, r in enumerate(rows) if r.kind == "add")
        removed = next(i for i, r in enumerate(rows) if r.kind == "del")
        count = len(rows)
        view.set_notes(
            "f0.php",
            [
                ("new", rows[added].new_no, "issue", "fix this\x1b[2J"),
                ("old", rows[removed].old_no, "praise", "good"),
                ("new", 10_000, "note", "not a line of the diff: not drawn"),
            ],
        )
        await pilot.pause()
        assert view.display_index.display_count() == count + 2
        note_y = view.display_index.y_of(added) + 1
        assert f"{MARK_CHAR} issue: fix this\\x1b[2J" in _text(view, note_y)
        assert "\x1b" not in _text(view, note_y)
        assert f"{MARK_CHAR} praise: good" in _text(view, view.display_index.y_of(removed) + 1)
        assert view.display_index.row_at(note_y) == added  # a note line belongs to its row
        assert rows[added].text in _text(view, view.display_index.y_of(added))
        # the line cursor steps over note lines, from row to row
        view.move_cursor_to(added)
        view.action_cursor_down()
        assert view.cursor_row == added + 1

        view.action_toggle_wrap()
        await pilot.pause()
        assert "fix this" in _text(view, view.display_index.y_of(added) + 1)
        view.action_toggle_wrap()
        view.action_toggle_split()
        await pilot.pause()
        assert view.is_split
        pair_y = view.display_index.y_of(added)
        assert "fix this" in _text(view, pair_y + 1) or "fix this" in _text(view, pair_y + 2)

        view.set_notes("f0.php", [])
        await pilot.pause()
        assert view.display_index.display_count() == len(view.display_index.pairs)
