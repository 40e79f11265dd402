"""The diff view's review marks: the line cursor and range selection, lines marked by comments, inline
comment lines under the commented line, and hunks left out of the approval."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.strip import Strip

from codebox_tui.textsafe import safe_text
from widgets.diff_layout import DiffLayout
from widgets.diff_styles import CODE_X, LINE_CURSOR, MARK_CHAR, MARK_STYLES, NOTE_STYLE, NULL, SIGNS


class DiffMarks(DiffLayout):
    """Cursor, selection, comment marks and notes over ``DiffLayout``."""

    # -- line cursor, range selection and line marks (review comments) ---------------------------
    def _line_marks(self, index: int, kind: str, old: Segment, new: Segment, sign: Segment,
                    base: Style) -> tuple[Segment, Segment, Segment]:
        """The gutters and sign of code row ``index`` with the cursor/selection and its mark drawn."""
        low, high = self._selection_bounds()
        if low <= index <= high:
            old = Segment(old.text, (old.style or NULL) + LINE_CURSOR)
            new = Segment(new.text, (new.style or NULL) + LINE_CURSOR)
        mark = self._marks.get(index)
        if mark is not None:
            sign = Segment(SIGNS[kind] + MARK_CHAR, base + MARK_STYLES.get(mark, MARK_STYLES["note"]))
        return old, new, sign

    def _selection_bounds(self) -> tuple[int, int]:
        if self.cursor_row < 0:
            return 0, -1
        anchor = self.cursor_row if self.anchor_row is None else self.anchor_row
        return min(anchor, self.cursor_row), max(anchor, self.cursor_row)

    def selected_rows(self) -> list[int]:
        """The model rows under the cursor or in the selected range (empty without a cursor)."""
        low, high = self._selection_bounds()
        return list(range(low, high + 1)) if self.rows else []

    def selected_lines(self) -> tuple[str, int, int] | None:
        """``(side, first, last)`` line numbers of the code lines under the cursor or in the range: the old
        side when every selected code line is a removed one, else the new side; None without code lines."""
        code = [self.rows[i] for i in self.selected_rows() if 0 <= i < len(self.rows) and self.rows[i].kind in SIGNS]
        if not code:
            return None
        if all(r.kind == "del" for r in code):
            olds = [r.old_no for r in code if r.old_no is not None]
            return ("old", min(olds), max(olds)) if olds else None
        news = [r.new_no for r in code if r.kind != "del" and r.new_no is not None]
        return ("new", min(news), max(news)) if news else None

    def set_marks(self, path: str, ranges: list[tuple[str, int, int, str]]) -> None:
        """Mark lines of file ``path``: ``(side, first, last, kind)`` with side ``new`` (added and context
        lines by new number) or ``old`` (removed and context lines by old number), kind one of MARK_STYLES.
        Kept until replaced; drawn whenever that file is shown. Replaces the marks of every file."""
        self.set_marks_by_file({path: ranges})

    def set_marks_by_file(self, ranges: dict[str, list[tuple[str, int, int, str]]]) -> None:
        """``set_marks`` for several files at once (the continuous view shows them all)."""
        wanted = {path: list(items) for path, items in ranges.items() if items}
        if wanted == self._mark_ranges:
            return
        self._mark_ranges = wanted
        self._resolve_marks()
        self._redraw_lines()

    def _file_rows(self, path: str) -> range:
        """The model rows of file ``path`` in the shown model (empty when it is not shown)."""
        place = self.model.section_end(path) if self.model is not None else None
        return range(place[0], place[1]) if place is not None else range(0)

    def _resolve_marks(self) -> None:
        self._marks = {}
        if self.model is None:
            return
        rows = self.model.rows
        for path, ranges in self._mark_ranges.items():
            for index in self._file_rows(path):
                row = rows[index]
                if row.kind not in SIGNS:
                    continue
                for side, first, last, kind in ranges:
                    number = row.new_no if side == "new" and row.kind != "del" else \
                        row.old_no if side == "old" and row.kind != "add" else None
                    if number is not None and first <= number <= last:
                        self._marks[index] = kind
                        break

    def marked_rows(self) -> dict[int, str]:
        """Model row -> mark kind of the shown file."""
        return dict(self._marks)

    def move_cursor_to(self, row: int) -> None:
        """Put the line cursor on model row ``row`` (kept on screen)."""
        if not self.rows:
            return
        self.cursor_row = max(0, min(len(self.rows) - 1, row))
        top, height = int(self.scroll_offset.y), self._view_height
        y = self._y_of(self.cursor_row)
        if not top <= y < top + max(1, height):
            self.scroll_to(y=max(0, y - height // 3), animate=False)
        self._redraw_lines()
        self.post_message(self.CursorMoved(self.cursor_row))

    def _step_cursor(self, step: int) -> None:
        rows = self.rows
        if not rows:
            return
        top = self._row_at(int(self.scroll_offset.y))
        bottom = self._row_at(int(self.scroll_offset.y) + max(0, self._view_height - 1))
        current = self.cursor_row
        if current < 0 or not top <= current <= bottom:  # no cursor on screen: start at the view's top
            current = top - step
        index = current + step
        while 0 <= index < len(rows) and rows[index].kind not in SIGNS:
            index += step
        if 0 <= index < len(rows):
            self.move_cursor_to(index)

    def action_cursor_down(self) -> None:
        self._step_cursor(1)

    def action_cursor_up(self) -> None:
        self._step_cursor(-1)

    def action_select_range(self) -> None:
        """Start a range at the cursor, or (with a range started) drop the anchor to select one line."""
        if self.cursor_row < 0:
            self._step_cursor(1)
        self.anchor_row = self.cursor_row if self.anchor_row is None else None
        self._redraw_lines()
        self.post_message(self.CursorMoved(self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:  # on a scrollbar or the border, not on a line
            return
        index = self._row_at(int(self.scroll_offset.y) + offset.y)
        if 0 <= index < len(self.rows):
            self.move_cursor_to(index)

    def _note_line(self, index: int, width: int, base: Style) -> Strip | None:
        """Display line ``index`` when it is an inline comment line, else None."""
        logical, part = self._locate(index)
        self._wrap_layout()
        if logical >= len(self._base_counts) or part < self._base_counts[logical]:
            return None
        key = ("note", index, width)
        strip = self._cache.get(key)
        if strip is None:
            if self._split_active:
                left, right = self._pairs[logical]
                items = self._notes.get(left, []) + (self._notes.get(right, []) if right != left else [])
            else:
                items = self._notes.get(logical, [])
            kind, text = items[min(len(items) - 1, part - self._base_counts[logical])]
            mark = MARK_STYLES.get(kind, MARK_STYLES["note"])
            style = base + NOTE_STYLE
            strip = Strip([Segment(" " * CODE_X, style), Segment(f"{MARK_CHAR} {kind}: ", style + mark),
                           Segment(text, style)]).crop_extend(0, width, style)
            self._cache[key] = strip
        return strip

    def _is_note_line(self, index: int) -> bool:
        if not self._notes:
            return False
        logical, part = self._locate(index)
        return logical < len(self._base_counts) and part >= self._base_counts[logical]

    def set_notes(self, path: str, notes: list[tuple[str, int, str, str]]) -> None:
        """Inline comment lines for file ``path``: ``(side, line, kind, text)`` drawn under the row showing
        ``line`` on ``side`` (``new``: added/context rows, ``old``: removed/context rows). Kept until
        replaced; drawn whenever that file is shown. Text is shown with control characters as escapes.
        Replaces the notes of every file."""
        self.set_notes_by_file({path: notes})

    def set_notes_by_file(self, notes: dict[str, list[tuple[str, int, str, str]]]) -> None:
        """``set_notes`` for several files at once (the continuous view shows them all)."""
        wanted = {path: list(items) for path, items in notes.items() if items}
        if wanted == self._note_specs:
            return
        self._note_specs = wanted
        top_row = self._row_at(int(self.scroll_offset.y)) if self.model is not None else 0
        self._resolve_notes()
        if self.model is not None:
            self._layout_rows()
            self.scroll_to(y=self._y_of(top_row), animate=False)

    def _resolve_notes(self) -> None:
        notes: dict[int, list[tuple[str, str]]] = {}
        if self.model is not None:
            rows = self.model.rows
            for path, specs in self._note_specs.items():
                span = self._file_rows(path)
                new_at = {rows[i].new_no: i for i in span if rows[i].kind in ("ctx", "add")}
                old_at = {rows[i].old_no: i for i in span if rows[i].kind in ("ctx", "del")}
                for side, line, kind, text in specs:
                    row = (new_at if side == "new" else old_at).get(line)
                    if row is not None:
                        shown = safe_text(text.replace("\n", " ⏎ "))
                        notes.setdefault(row, []).append((kind, shown))
        self._notes = notes
        self._notes_version += 1
        self._wrap_key = None

    def set_skipped_hunks(self, skipped: frozenset[int], path: str | None = None) -> None:
        """Mark hunks of file ``path`` (default: the current file) left out of the approval (0-based;
        empty = all approved)."""
        path = path if path is not None else self.current_path()
        if path is None:
            return
        if skipped != self._skipped.get(path, frozenset()):
            self._skipped = {**self._skipped, path: skipped}
            self._cache.clear()
            self._final.clear()
            self.refresh()
            self._post_status()
