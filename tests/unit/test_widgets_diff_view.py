"""DiffView in a host app: hunk/file keys, search with highlight, render-anyway, only visible strips built."""

from __future__ import annotations

import os
from pathlib import Path

from tests.factories.widget_hosts import Recorder, git_patch
from widgets.diff_model import split_patch
from widgets.diff_styles import MATCH_CURRENT
from widgets.diff_view import DiffView

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")


async def test_hunk_keys_scroll_and_post(tmp_path: Path) -> None:
    blocks = split_patch(git_patch(tmp_path, files=1, lines=60))
    view = DiffView(id="diff")
    app = Recorder(view)
    async with app.run_test(size=(100, 12)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        view.focus()
        await pilot.pause()
        hunks = view.model.hunk_rows if view.model else []
        assert len(hunks) >= 3
        await pilot.press("n")  # nothing searched, nothing visited: the first hunk's change gets the cursor
        await pilot.pause()
        first = view.cursor_row
        assert hunks[0] < first < hunks[1] and view.rows[first].kind in ("add", "del")
        await pilot.press("n")  # then the next hunk: its header scrolled into view, the cursor on its change
        await pilot.pause()
        assert hunks[1] < view.cursor_row < hunks[2]
        top = int(view.scroll_offset.y)
        assert top <= hunks[1] and view.cursor_row < top + view.scrollable_content_region.height
        changed = app.of(DiffView.HunkChanged)
        assert [m.index for m in changed[-2:]] == [0, 1] and changed[-1].total == len(hunks)
        view.action_next_file()
        view.action_previous_file()
        await pilot.pause()
        assert [m.step for m in app.of(DiffView.FileRequested)] == [1, -1]


async def test_search_highlights_and_cycles(tmp_path: Path) -> None:
    blocks = split_patch(git_patch(tmp_path, files=1, lines=60))
    view = DiffView(id="diff")
    app = Recorder(view)
    async with app.run_test(size=(100, 12)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        view.focus()
        await pilot.pause()
        total = view.search("$v45 = 90")
        await pilot.pause()
        assert total == 1
        row = view.matches[0]
        assert view.scroll_offset.y <= row < view.scroll_offset.y + view.size.height
        strip = view.render_line(row - int(view.scroll_offset.y))
        marked = "".join(seg.text for seg in strip if seg.style and seg.style.bgcolor == MATCH_CURRENT.bgcolor)
        assert marked.lower() == "$v45 = 90"
        assert view.search("= 1") >= 2
        first = view.match_index
        await pilot.press("f3")
        await pilot.pause()
        assert view.match_index == (first + 1) % len(view.matches)
        results = app.of(DiffView.SearchResult)
        assert results[-1].search_query == "= 1" and results[-1].total == len(view.matches)
        assert view.search("no such text") == 0
        await pilot.pause()
        assert app.of(DiffView.SearchResult)[-1].total == 0


async def test_long_lines_cut_then_render_anyway() -> None:
    block = (
        "diff --git a/x.js b/x.js\n--- a/x.js\n+++ b/x.js\n@@ -1 +1 @@\n-var a = 1;\n+var a = '" + "y" * 5000 + "';\n"
    )
    view = DiffView()
    app = Recorder(view)
    async with app.run_test(size=(80, 10)) as pilot:
        view.show_file("x.js", block)
        view.focus()
        await pilot.pause()
        assert view.model and view.model.truncated
        assert view.virtual_size.width < 2100
        await pilot.press("R")
        await pilot.pause()
        assert view.model and not view.model.truncated and view.virtual_size.width > 5000


async def test_only_visible_rows_are_built(tmp_path: Path) -> None:
    blocks = split_patch(git_patch(tmp_path, files=1, lines=2000))
    view = DiffView()
    app = Recorder(view)
    async with app.run_test(size=(100, 20)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        await pilot.pause()
        assert len(view.rows) > 500
        assert view.built_lines <= 2 * view.size.height


async def test_binary_placeholder() -> None:
    block = (
        "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nGIT binary patch\nliteral 12\n"
        "zcmZ?wbhEHbWMW`qkPrZ3KmZE^\n\nliteral 9\n"
    )
    view = DiffView()
    app = Recorder(view)
    async with app.run_test(size=(100, 10)) as pilot:
        view.show_file("logo.png", block)
        await pilot.pause()
        text = "".join(seg.text for y in range(view.size.height) for seg in view.render_line(y))
        assert "Binary file" in text and "zcmZ" not in text


async def test_side_by_side_toggle_and_auto_split(tmp_path: Path) -> None:
    blocks = split_patch(git_patch(tmp_path, files=1, lines=60))
    view = DiffView()
    app = Recorder(view)
    async with app.run_test(size=(120, 12)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        view.focus()
        await pilot.pause()
        assert not view.is_split and view.virtual_size.height == len(view.rows)
        await pilot.press("s")
        await pilot.pause()
        assert view.is_split and view.virtual_size.height < len(view.rows)  # -/+ pairs share a line
        pair_y = next(
            y
            for y, (left, right) in enumerate(view.display_index.pairs)
            if left >= 0 and right >= 0 and view.rows[left].kind == "del"
        )
        view.scroll_to(y=pair_y, animate=False, immediate=True)
        await pilot.pause()
        line = "".join(seg.text for seg in view.render_line(0))
        left, right = line.split("│", 1)
        old, new = view.rows[view.display_index.pairs[pair_y][0]], view.rows[view.display_index.pairs[pair_y][1]]
        assert old.text in left and new.text in right and str(old.old_no) in left and str(new.new_no) in right
        await pilot.press("n")
        await pilot.pause()
        assert view.display_index.pairs[int(view.scroll_offset.y)][0] in (view.model.hunk_rows if view.model else [])
        await pilot.press("s")
        await pilot.pause()
        assert not view.is_split
    wide = DiffView()
    app = Recorder(wide)
    async with app.run_test(size=(170, 12)) as pilot:
        wide.show_file("f0.php", blocks["f0.php"])
        await pilot.pause()
        assert wide.is_split  # auto-split at >= 160 columns


async def test_wrap_and_sideways_scroll_in_both_views() -> None:
    """Soft wrap shows every character of a long line (unified and side by side, recomputed per width);
    unwrapped side-by-side scrolls its code sideways; a match near the start brings the view back."""
    long_old = "$a = array( " + ", ".join(f"'k{i}' => {i}" for i in range(40)) + " );"
    long_new = long_old.replace("'k39' => 39", "'k39' => 390")
    block = (
        f"diff --git a/x.php b/x.php\n--- a/x.php\n+++ b/x.php\n@@ -1,2 +1,2 @@\n \tshort();\n"
        f"-{long_old}\n+{long_new}\n"
    )
    view = DiffView(tab_size=4)
    app = Recorder(view)
    async with app.run_test(size=(100, 20)) as pilot:
        view.show_file("x.php", block)
        view.focus()
        await pilot.pause()
        assert not view.is_split and view.rows[-1].text == long_new
        await pilot.press("w")
        await pilot.pause()
        joined = "".join(view.render_line(y).text[14:] for y in range(view.size.height))
        assert long_new.replace(" ", "") in joined.replace(" ", "")
        assert "\t" not in joined and "    short();" in joined
        await pilot.resize_terminal(70, 20)
        await pilot.pause()
        # wrapped at the cells left of the vertical scrollbar: nothing is drawn under it
        assert view.show_vertical_scrollbar and view.virtual_size.width == 70 - view.styles.scrollbar_size_vertical
        assert view.virtual_size.height > len(view.rows) + 2
        view.set_split_mode("split")
        await pilot.pause()
        # every display line, also those below the viewport
        halves = [view.display_line(y).text for y in range(view.display_index.display_count())]
        right = "".join(line.split("│", 1)[1][8:] for line in halves if "│" in line)
        assert "'k39' => 390 );" in right.replace("  ", " ")
        await pilot.press("w")  # unwrapped side by side: sideways scrolling moves the code
        await pilot.pause()
        assert not view.wrap and view.virtual_size.width > 70
        await pilot.press("dollar_sign")
        await pilot.pause()
        assert view.scroll_offset.x > 0
        right = [line.split("│", 1)[1] for line in (view.render_line(y).text for y in range(4)) if "│" in line]
        assert any("390" in line for line in right)
        view.search("short")
        await pilot.pause()
        assert view.scroll_offset.x == 0  # the match is near the start: back to the first column


async def test_finished_lines_match_textual_and_are_reused_after_a_scroll(tmp_path: Path) -> None:
    """The frame path pads, filters and crops cached lines itself (widgets/diff_frame.py): the strips must be
    Textual's own (its styles cache's path, taken when the widget has a border or padding), and a page
    scrolled away from and back to must come from the cache, not be built or finished again."""
    from textual.geometry import Region
    from textual.widget import Widget

    blocks = split_patch(git_patch(tmp_path, files=1, lines=400))
    view = DiffView()
    app = Recorder(view)
    async with app.run_test(size=(100, 20)) as pilot:
        view.show_file("f0.php", blocks["f0.php"])
        view.marks.place_cursor(3)  # a cursor, a search hit and a sideways scroll: every kind of segment
        view.search("= 1")
        await pilot.pause()
        for crop in (Region(0, 0, view.size.width, view.size.height), Region(5, 2, 40, 7)):
            ours = view.render_lines(crop)
            view._styles_cache.clear()
            textual = Widget.render_lines(view, crop)
            assert [list(strip) for strip in ours] == [list(strip) for strip in textual]
            assert [strip.cell_length for strip in ours] == [crop.width] * crop.height
        page = Region(0, 0, view.size.width, view.size.height)
        first = view.render_lines(page)
        view.scroll_to(y=view.size.height * 3, animate=False, immediate=True)
        assert view.render_lines(page) != first
        view.scroll_to(y=0, animate=False, immediate=True)
        again = view.render_lines(page)
        assert all(a is b for a, b in zip(first, again, strict=True))
