"""Review marks of the diff view (pure; no Textual): the line cursor and range selection, lines marked by
review comments, inline comment lines under the commented line, and hunks left out of the approval.

Marks and notes are asked for per file (by line number and side) and resolved to the rows of the model
shown; ``DiffView`` owns one ``ReviewMarks`` and resolves it again whenever it shows a new model."""

from __future__ import annotations

from codebox_tui.textsafe import safe_text
from widgets.diff_model import FileDiffModel, Row
from widgets.diff_styles import SIGNS

MarkRange = tuple[str, int, int, str]  # (side, first line, last line, kind)
NoteSpec = tuple[str, int, str, str]  # (side, line, kind, text)
Note = tuple[str, str]  # (kind, text as drawn)


def file_rows(model: FileDiffModel | None, path: str) -> range:
    """The model rows of file ``path`` in ``model`` (empty when it is not in it)."""
    place = model.section_end(path) if model is not None else None
    return range(place[0], place[1]) if place is not None else range(0)


class ReviewMarks:
    """Cursor, selection, comment marks, notes and left-out hunks of the diff view.

    ``version`` changes whenever something drawn changes (cursor, selection, marks, skipped hunks);
    ``notes_version`` whenever the inline comment lines change (they change the layout too)."""

    def __init__(self) -> None:
        self.cursor_row = -1  # model row of the line cursor (-1: none yet)
        self.anchor_row: int | None = None  # the other end of a range selection (``v``)
        self.mark_ranges: dict[str, list[MarkRange]] = {}
        self.marks: dict[int, str] = {}  # model row -> mark kind (see MARK_STYLES) in the shown model
        self.note_specs: dict[str, list[NoteSpec]] = {}
        self.notes: dict[int, list[Note]] = {}  # model row -> inline lines under it
        self.notes_version = 0
        self.skipped: dict[str, frozenset[int]] = {}  # path -> 0-based hunks left out of the approval
        self.version = 0

    def changed(self) -> None:
        """Something drawn changed (lines built before must be built again)."""
        self.version += 1

    # -- cursor and selection ---------------------------------------------------------------
    def place_cursor(self, row: int, anchor: int | None = None) -> None:
        self.cursor_row, self.anchor_row = row, anchor
        self.changed()

    def clear_cursor(self) -> None:
        self.place_cursor(-1)

    def selection_bounds(self) -> tuple[int, int]:
        """(first, last) model row of the cursor or the selected range; (0, -1) without a cursor."""
        if self.cursor_row < 0:
            return 0, -1
        anchor = self.cursor_row if self.anchor_row is None else self.anchor_row
        return min(anchor, self.cursor_row), max(anchor, self.cursor_row)

    def selected_rows(self, row_count: int) -> list[int]:
        low, high = self.selection_bounds()
        return list(range(low, high + 1)) if row_count else []

    def selected_lines(self, rows: list[Row]) -> tuple[str, int, int] | None:
        """``(side, first, last)`` line numbers of the selected code lines: the old side when every one is a
        removed line, else the new side; None without code lines."""
        code = [rows[i] for i in self.selected_rows(len(rows)) if 0 <= i < len(rows) and rows[i].kind in SIGNS]
        if not code:
            return None
        if all(r.kind == "del" for r in code):
            olds = [r.old_no for r in code if r.old_no is not None]
            return ("old", min(olds), max(olds)) if olds else None
        news = [r.new_no for r in code if r.kind != "del" and r.new_no is not None]
        return ("new", min(news), max(news)) if news else None

    # -- comment marks and notes -----------------------------------------------------------------
    def set_mark_ranges(self, ranges: dict[str, list[MarkRange]], model: FileDiffModel | None) -> bool:
        """Replace the marked lines of every file; False when nothing changed."""
        wanted = {path: list(items) for path, items in ranges.items() if items}
        if wanted == self.mark_ranges:
            return False
        self.mark_ranges = wanted
        self.resolve_marks(model)
        return True

    def resolve_marks(self, model: FileDiffModel | None) -> None:
        marks: dict[int, str] = {}
        rows = model.rows if model is not None else []
        for path, ranges in self.mark_ranges.items():
            for index in file_rows(model, path):
                row = rows[index]
                if row.kind not in SIGNS:
                    continue
                for side, first, last, kind in ranges:
                    number = (
                        row.new_no
                        if side == "new" and row.kind != "del"
                        else row.old_no
                        if side == "old" and row.kind != "add"
                        else None
                    )
                    if number is not None and first <= number <= last:
                        marks[index] = kind
                        break
        self.marks = marks
        self.changed()

    def set_note_specs(self, notes: dict[str, list[NoteSpec]], model: FileDiffModel | None) -> bool:
        """Replace the inline comment lines of every file; False when nothing changed."""
        wanted = {path: list(items) for path, items in notes.items() if items}
        if wanted == self.note_specs:
            return False
        self.note_specs = wanted
        self.resolve_notes(model)
        return True

    def resolve_notes(self, model: FileDiffModel | None) -> None:
        """Each note under the row showing its line (``new``: added/context rows, ``old``: removed/context
        rows), with control characters shown as escapes; notes naming no shown line are left out."""
        notes: dict[int, list[Note]] = {}
        if model is not None:
            rows = model.rows
            for path, specs in self.note_specs.items():
                span = file_rows(model, path)
                new_at = {rows[i].new_no: i for i in span if rows[i].kind in ("ctx", "add")}
                old_at = {rows[i].old_no: i for i in span if rows[i].kind in ("ctx", "del")}
                for side, line, kind, text in specs:
                    row = (new_at if side == "new" else old_at).get(line)
                    if row is not None:
                        notes.setdefault(row, []).append((kind, safe_text(text.replace("\n", " ⏎ "))))
        self.notes = notes
        self.notes_version += 1
        self.changed()

    def show_model(self, model: FileDiffModel | None) -> None:
        """A new model is shown: no cursor; marks and notes resolved against its rows."""
        self.cursor_row, self.anchor_row = -1, None
        self.resolve_marks(model)
        self.resolve_notes(model)

    def show_nothing(self) -> None:
        """A message is shown instead of a diff: no marks or notes on it (the asked-for ones are kept)."""
        self.marks, self.notes = {}, {}
        self.notes_version += 1
        self.changed()

    # -- hunks left out of the approval --------------------------------------------------------
    def skipped_in(self, path: str) -> frozenset[int]:
        return self.skipped.get(path, frozenset())

    def set_skipped(self, path: str, skipped: frozenset[int]) -> bool:
        """Hunks of ``path`` left out of the approval; False when nothing changed."""
        if skipped == self.skipped_in(path):
            return False
        self.skipped = {**self.skipped, path: skipped}
        self.changed()
        return True
