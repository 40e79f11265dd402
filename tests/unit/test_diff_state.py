"""The diff view's state objects, without Textual: search (``SearchState``), review marks (``ReviewMarks``),
the display index (``DisplayIndex``) and the line cutting of ``diff_lines`` (checked against Textual's own
``Strip.crop_extend`` on wide and narrow characters)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from widgets.diff_layout import DisplayIndex
from widgets.diff_lines import fit
from widgets.diff_marks import ReviewMarks
from widgets.diff_model import build_continuous_model, build_model, first_change
from widgets.diff_search import SearchState

BLOCK = """\
diff --git a/p.php b/p.php
--- a/p.php
+++ b/p.php
@@ -1,4 +1,3 @@ function f()
 keep();
-$a = compute(1);
+$a = compute(2, true);
 echo $a;
-gone();
@@ -20,1 +20,3 @@
 tail();
+added();
+another_added_line_that_is_long_enough_to_wrap();
"""


def test_search_finds_cycles_and_paints_hits() -> None:
    model = build_model("p.php", BLOCK)
    search = SearchState()
    search.set_query("COMPUTE", model.rows)
    assert [model.rows[i].text for i in search.matches] == ["$a = compute(1);", "$a = compute(2, true);"]
    assert search.index == -1 and search.matches[0] in search
    version = search.version
    search.select(search.first_from(search.matches[1]))
    assert search.is_current(search.matches[1]) and search.version > version
    assert search.step(1) == 0 and search.step(-1) == 0  # wraps both ways
    assert search.hits("+ $a = Compute(compute)", 2) == [(7, 14), (15, 22)]
    assert search.status("COMPUTE") == '"COMPUTE" 2/2'
    search.find(build_model("p.php", BLOCK.replace("compute", "other")).rows)  # a new model: no match kept
    assert search.matches == [] and search.status("COMPUTE") == '"COMPUTE" no match'
    search.set_query("", model.rows)
    assert search.matches == [] and search.status("") == "" and search.hits("anything", 0) == []


def test_marks_resolve_by_side_and_line_and_follow_a_new_model() -> None:
    model = build_model("p.php", BLOCK)
    rows = model.rows
    marks = ReviewMarks()
    assert marks.set_mark_ranges({"p.php": [("new", 2, 2, "issue"), ("old", 4, 4, "note")]}, model)
    assert not marks.set_mark_ranges({"p.php": [("new", 2, 2, "issue"), ("old", 4, 4, "note")]}, model)
    assert {rows[i].text: kind for i, kind in marks.marks.items()} == {
        "$a = compute(2, true);": "issue",
        "gone();": "note",
    }
    assert marks.set_note_specs(
        {"p.php": [("new", 21, "praise", "good\x1b[2J\nline"), ("new", 99, "note", "x")]}, model
    )
    [(row, notes)] = marks.notes.items()
    assert rows[row].text == "added();" and notes == [("praise", "good\\x1b[2J ⏎ line")]
    added = next(i for i, r in enumerate(rows) if r.text == "$a = compute(2, true);")
    marks.place_cursor(added + 2, anchor=added)
    assert marks.selection_bounds() == (added, added + 2)
    assert marks.selected_lines(rows) == ("new", 2, 3)  # a removed line in the range has no new number
    marks.place_cursor(added - 1)
    assert marks.selected_lines(rows) == ("old", 2, 2)  # only a removed line: the old side
    version = marks.version
    assert marks.set_skipped("p.php", frozenset({1})) and not marks.set_skipped("p.php", frozenset({1}))
    assert marks.version > version and marks.skipped_in("p.php") == {1} and marks.skipped_in("q.php") == set()
    marks.show_model(build_model("p.php", BLOCK.replace("compute(2", "compute(3")))
    assert marks.cursor_row == -1 and marks.anchor_row is None and len(marks.marks) == 2  # asked-for marks kept


def test_display_index_maps_lines_in_every_mode() -> None:
    model = build_model("p.php", BLOCK)
    rows = model.rows
    index = DisplayIndex(model)
    index.set_mode(split=False, wrap=False, code_width=80, notes={}, notes_version=0)
    assert index.display_count() == len(rows) and index.y_of(5) == 5 and index.row_at(5) == 5
    second = model.hunk_rows[1]
    assert index.hunk_at(0) == -1 and index.hunk_at(second - 1) == 0 and index.hunk_at(second) == 1
    index.set_mode(split=True, wrap=False, code_width=80, notes={}, notes_version=0)
    assert index.split_active and index.display_count() == len(index.pairs) < len(rows)
    removed = next(i for i, r in enumerate(rows) if r.kind == "del")
    y = index.y_of(removed)
    assert index.pairs[y] == (removed, removed + 1) and index.row_at(y) == removed
    long_row = len(rows) - 1
    index.set_mode(split=False, wrap=True, code_width=10, notes={}, notes_version=0)
    # at 10 cells a line: 16 cells take 2 lines, 22 take 3, 49 take 5
    assert index.display_count() == len(rows) + 1 + 2 + 4
    assert index.locate(index.y_of(long_row) + 3) == (long_row, 3)
    notes = {removed: [("issue", "one"), ("note", "two")]}
    index.set_mode(split=False, wrap=False, code_width=80, notes=notes, notes_version=1)
    assert index.display_count() == len(rows) + 2 and index.note_at(index.y_of(removed)) is None
    assert (
        index.note_at(index.y_of(removed) + 2) == ("note", "two") and index.row_at(index.y_of(removed) + 1) == removed
    )
    message = DisplayIndex.message(build_model("p.php", BLOCK))
    message.set_mode(split=True, wrap=False, code_width=80, notes={}, notes_version=0)
    assert not message.split_active


def test_prepare_takes_the_whole_model_facts_once() -> None:
    model = build_continuous_model(
        [("a.php", BLOCK.replace("p.php", "a.php")), ("b.php", BLOCK.replace("p.php", "b.php"))]
    )
    prepared = DisplayIndex.prepare(model)
    assert prepared._pairs is not None and prepared._widest is not None  # nothing left for the UI thread
    assert prepared.widest == max(len(r.text) for r in model.rows)
    assert prepared.widest_code == len("another_added_line_that_is_long_enough_to_wrap();")
    assert first_change(model, model.hunk_rows[0]) == (3, 13)  # the changed word "1" of compute(1)


TEXT = st.text(alphabet=st.sampled_from([*"ab c\t", "漢", "字", "é", "😀"]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(TEXT, min_size=1, max_size=5), start=st.integers(0, 30), length=st.integers(0, 30))
def test_fit_cuts_and_pads_like_strip_crop_extend(pieces: list[str], start: int, length: int) -> None:
    styles = [Style(color="red"), Style(bold=True), Style(italic=True)]
    segments = [Segment(text.replace("\t", " "), styles[i % 3]) for i, text in enumerate(pieces)]
    pad = Style(bgcolor="blue")
    ours = Strip(fit(segments, start, start + length, pad))
    textual = Strip(segments).crop_extend(start, start + length, pad)
    assert ours.cell_length == textual.cell_length == length
    assert _chars(ours) == _chars(textual)


def _chars(strip: Strip) -> list[tuple[str, Style | None]]:
    """Each character with its style (the same line whatever its cut into segments)."""
    return [(char, segment.style) for segment in strip for char in segment.text]
