"""The diff view's layout (Line API): model rows as display lines, unified or side by side, wrapped or
not, with inline comment lines; scrolling sideways, hunk navigation and the status line. The widget
state lives here; ``diff_marks``, ``diff_search`` and ``diff_view`` build on it (in that order)."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable

from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from widgets.diff_highlight import Packed, cells
from widgets.diff_model import FileDiffModel, Row, ensure_word_spans
from widgets.diff_styles import AUTO_SPLIT_WIDTH, CODE_X, HALF_CODE_X, SIGNS

# Built lines kept (~11 pages at 45 rows). Each cached Strip is ~20 objects for the cycle collector to walk
# (segments, Textual's per-strip caches): 4096 of them made its full passes over 100 ms on a big file.
STRIP_CACHE = 512


class DiffLayout(ScrollView):
    """Display lines of a diff model (no drawing: ``DiffView`` renders them). Messages are named as the
    widget's (``on_diff_view_…`` handlers)."""

    class HunkChanged(Message, namespace="diff_view"):
        def __init__(self, index: int, total: int) -> None:
            self.index, self.total = index, total
            super().__init__()

    class FileRequested(Message, namespace="diff_view"):
        """The user asked for the next (+1) or previous (-1) file; the screen decides which."""

        def __init__(self, step: int) -> None:
            self.step = step
            super().__init__()

    class SearchResult(Message, namespace="diff_view"):
        def __init__(self, query: str, index: int, total: int) -> None:
            self.search_query, self.index, self.total = query, index, total
            super().__init__()

    class CursorMoved(Message, namespace="diff_view"):
        """The line cursor or the selected range changed (``cursor_row``, ``selected_rows()``)."""

        def __init__(self, row: int) -> None:
            self.row = row
            super().__init__()

    class StatusChanged(Message, namespace="diff_view"):
        """The status line (file, hunk, columns or wrap, search) changed; see ``status_text``."""

        def __init__(self, text: str) -> None:
            self.text = text
            super().__init__()

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None,
                 tab_size: int | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.model: FileDiffModel | None = None
        self._cache: LRUCache[tuple[object, ...], Strip] = LRUCache(STRIP_CACHE)
        self._final: LRUCache[tuple[object, ...], tuple[Strip, Strip]] = LRUCache(STRIP_CACHE // 4)  # lines shown
        self._base_style: Style | None = None
        self._prefetch_pending = False
        self._width = 0
        self._block: object = ""  # the shown source: one file's block, or a token for show_files()
        self._files: list[tuple[str, str]] | None = None  # the continuous view's files (show_files)
        self._collapsed: set[str] = set()
        self._open_at: str | None = None
        self._max_line = 0
        self._focus_row: int | None = None  # the model row the last jump (file, hunk, match) brought up
        self.tab_size = tab_size if tab_size is not None else get_settings().tab_width
        self.search_query = ""
        self.matches: list[int] = []  # row indexes containing the query
        self._match_set: set[int] = set()
        self.match_index = -1
        self._tokens: dict[int, Packed] = {}  # id(row) -> lexed pieces (worker)
        self._highlighting = False
        self.split_mode = "auto"  # auto | unified | split
        self.auto_split_width = AUTO_SPLIT_WIDTH
        self.wrap = False
        self._pairs: list[tuple[int, int]] = []
        self._position: list[int] = []
        self._wrap_key: tuple[object, ...] | None = None
        self._wrap_starts: list[int] = [0]
        self._status = ""
        self.cursor_row = -1  # model row of the line cursor (-1: none yet)
        self.anchor_row: int | None = None  # the other end of a range selection (``v``)
        self._mark_ranges: dict[str, list[tuple[str, int, int, str]]] = {}  # path -> (side, first, last, kind)
        self._marks: dict[int, str] = {}  # model row -> mark kind (see MARK_STYLES) for the shown model
        self._note_specs: dict[str, list[tuple[str, int, str, str]]] = {}  # path -> (side, line, kind, text)
        self._notes: dict[int, list[tuple[str, str]]] = {}  # model row -> inline lines (kind, text) under it
        self._notes_version = 0
        self._base_counts: list[int] = []  # display lines of each logical line before its notes
        self._skipped: dict[str, frozenset[int]] = {}  # path -> 0-based hunks left out of the approval

    @property
    def skipped_hunks(self) -> frozenset[int]:
        """The 0-based hunks of the current file (``current_path``) left out of the approval."""
        return self._skipped.get(self.current_path() or "", frozenset())

    @property
    def continuous(self) -> bool:
        """All changed files in one scroll (``show_files``), not one file (``show_file``)."""
        return self.model is not None and bool(self.model.sections)

    def path_at(self, row: int) -> str:
        """The file that model row ``row`` belongs to ("" without a model)."""
        return self.model.section_of(row)[0] if self.model is not None else ""

    def current_path(self) -> str | None:
        """The file under the line cursor, else the one at the top of the view; None without a file."""
        if self.model is None or not self.model.rows:
            return None
        if not self.model.sections:
            return self.model.path or None
        if self.cursor_row >= 0:
            return self.path_at(self.cursor_row) or None
        top = int(self.scroll_offset.y)
        focus = self._focus_row  # the row a jump (file, hunk, match) brought up, while it is on screen
        if focus is not None and focus < len(self.model.rows) and \
                top <= self._y_of(focus) < top + max(1, self._view_height):
            return self.path_at(focus) or None
        return self.path_at(max(0, self._row_at(top))) or None

    def scroll_to_file(self, path: str) -> bool:
        """Bring file ``path``'s header to the top of the view (continuous view); False if not shown."""
        if self.model is None:
            return False
        place = self.model.section_end(path)
        if place is None:
            return False
        self.scroll_to(y=self._y_of(place[0]), animate=False)
        self._focus_row = place[0]
        if self.cursor_row >= 0 and self.path_at(self.cursor_row) != path:
            self.cursor_row, self.anchor_row = -1, None
            self._redraw_lines()
        self._post_status()
        return True

    @property
    def rows(self) -> list[Row]:
        return self.model.rows if self.model else []

    # -- layout: unified / side by side, wrapped or not -----------------------------------------
    @property
    def is_split(self) -> bool:
        return self.split_mode == "split" or (self.split_mode == "auto" and self.size.width >= self.auto_split_width)

    @property
    def _split_active(self) -> bool:
        return self.is_split and bool(self._pairs)

    def _code_width(self, width: int | None = None) -> int:
        """Cells for code on one display line (one half in side-by-side)."""
        width = self._view_width if width is None else width
        if self._split_active:
            return max(8, (width - 1) // 2 - HALF_CODE_X)
        return max(8, width - CODE_X)

    def _logical_count(self) -> int:
        return len(self._pairs) if self._split_active else len(self.rows)

    def _wrap_layout(self) -> list[int]:
        """First display line of each logical line (row, or side-by-side pair) when wrapped, plus the total
        at the end. Computed once per model, width and mode (row lengths only; nothing is rendered)."""
        split = self._split_active
        key = (id(self.model), self._view_width, split, self.wrap, self._notes_version)
        if self._wrap_key != key:
            avail = self._code_width()
            rows = self.rows

            wrap = self.wrap

            def lines(i: int) -> int:
                if i < 0 or rows[i].kind not in SIGNS or not wrap:
                    return 1
                return max(1, -(-cells(rows[i].text) // avail))

            if split:
                counts = [1 if left == right and rows[left].kind not in SIGNS else max(lines(left), lines(right))
                          for left, right in self._pairs]
            else:
                counts = [lines(i) for i in range(len(rows))]
            self._base_counts = counts
            notes = self._notes
            if notes:  # inline comment lines after their row (after the pair, side by side)
                counts = list(counts)
                if split:
                    for logical, (left, right) in enumerate(self._pairs):
                        counts[logical] += len(notes.get(left, ())) + (len(notes.get(right, ())) if right != left
                                                                       else 0)
                else:
                    for row, items in notes.items():
                        if row < len(counts):
                            counts[row] += len(items)
            self._wrap_starts = list(itertools.accumulate(counts, initial=0))
            self._wrap_key = key
        return self._wrap_starts

    def _locate(self, y: int) -> tuple[int, int]:
        """(logical line, wrapped part) shown on display line ``y`` (a part past the line's own display lines
        is one of its inline comment lines)."""
        if not self._mapped:
            return y, 0
        starts = self._wrap_layout()
        logical = bisect.bisect_right(starts, y) - 1
        return logical, y - starts[logical]

    @property
    def _mapped(self) -> bool:
        """Display lines differ from logical lines (wrapped, or inline comment lines)."""
        return self.wrap or bool(self._notes)

    def _display_count(self) -> int:
        return self._wrap_layout()[-1] if self._mapped else self._logical_count()

    def _layout_rows(self) -> None:
        self._cache.clear()
        self._final.clear()
        width = self._view_width
        if self.wrap:
            self.virtual_size = Size(width, self._display_count())
        elif self._split_active:
            longest = max((cells(r.text) for r in self.rows if r.kind in SIGNS), default=0)
            self.virtual_size = Size(width + max(0, longest - self._code_width()), self._display_count())
        else:
            self.virtual_size = Size(self._width, self._display_count())
        self.refresh()

    def _y_of(self, row: int) -> int:
        """Display line of a model row in the current mode."""
        logical = self._position[row] if self._split_active and row < len(self._position) else row
        if self._mapped:
            starts = self._wrap_layout()
            return starts[min(logical, len(starts) - 1)]
        return logical

    def _row_at(self, y: int) -> int:
        logical, _part = self._locate(y)
        if self._split_active and 0 <= logical < len(self._pairs):
            left, right = self._pairs[logical]
            return left if left >= 0 else right
        return logical

    def _relayout_keeping(self, change: Callable[[], None]) -> None:
        top_row = self._row_at(int(self.scroll_offset.y))
        change()
        self._layout_rows()
        self.scroll_to(y=self._y_of(top_row), animate=False)
        self._post_status()

    def action_toggle_split(self) -> None:
        def change() -> None:
            self.split_mode = "unified" if self.is_split else "split"

        self._relayout_keeping(change)

    def action_toggle_wrap(self) -> None:
        def change() -> None:
            self.wrap = not self.wrap
            self.scroll_to(x=0, animate=False)

        self._relayout_keeping(change)

    def on_resize(self) -> None:
        if self.model is not None:
            self._layout_rows()

    # A scrollbar that appears or goes changes the cells the code can use (see ``_view_width``): lay out again.
    def watch_show_vertical_scrollbar(self) -> None:
        self.on_resize()

    def watch_show_horizontal_scrollbar(self) -> None:
        self.on_resize()

    @property
    def _view_width(self) -> int:
        """Cells a display line can use: the widget's width less a vertical scrollbar, so nothing of the code is
        ever drawn under the scrollbar (wrapped lines break before it; the end of a line is reachable)."""
        return self.scrollable_content_region.width

    @property
    def _view_height(self) -> int:
        """Display lines on screen: the widget's height less a horizontal scrollbar."""
        return self.scrollable_content_region.height

    # -- horizontal position ----------------------------------------------------------------------
    def _h_max(self) -> int:
        return max(0, self.virtual_size.width - self._view_width)

    def action_half_left(self) -> None:
        self.scroll_to(x=max(0, int(self.scroll_offset.x) - max(1, self._view_width // 2)), animate=False)

    def action_half_right(self) -> None:
        self.scroll_to(x=min(self._h_max(), int(self.scroll_offset.x) + max(1, self._view_width // 2)),
                       animate=False)

    def action_column_start(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_column_end(self) -> None:
        self.scroll_to(x=self._h_max(), animate=False)

    def _reveal_column(self, row: int, column: int, length: int = 1) -> None:
        """Scroll sideways so code column ``column`` of model row ``row`` is on screen (no-op when wrapped)."""
        if self.wrap or row < 0 or row >= len(self.rows):
            return
        if self._split_active:
            view_start, visible = int(self.scroll_offset.x), self._code_width()
            target = column
        else:
            view_start, visible = int(self.scroll_offset.x), self._view_width
            target = column + (CODE_X if self.rows[row].kind in SIGNS else 2)
        if view_start <= target and target + length <= view_start + visible:
            return
        x = 0 if target + length <= visible else max(0, target - visible // 3)
        self.scroll_to(x=max(0, min(self._h_max(), x)), animate=False)

    def _first_change_column(self, hunk_row: int) -> tuple[int, int]:
        """(row, code column) of the first changed word (or changed line) after a hunk header."""
        rows = self.rows
        fallback = (-1, 0)
        for i in range(hunk_row + 1, len(rows)):
            row = rows[i]
            if row.kind == "hunk":
                break
            if row.kind in ("add", "del"):
                if self.model is not None:
                    ensure_word_spans(self.model, i)
                if row.spans:
                    return i, row.spans[0][0]
                indent = (i, len(row.text) - len(row.text.lstrip()))
                if row.pair < 0:  # a line only added or only deleted: the whole line is the change
                    return indent
                # one side of a changed pair with no changed word (text only inserted on the other side)
                fallback = fallback if fallback[0] >= 0 else indent
        return fallback

    def status_text(self) -> str:
        """``path · hunk 2/5 · col 41-160 of 230`` (``wrap`` when wrapped) ``· "term" 3/7``."""
        if self.model is None or not (self.model.path or self.model.sections):
            return ""
        path = self.current_path() or ""
        place = self.model.section_end(path)
        if place is None:
            return ""
        start, _end, first_hunk, end_hunk = place
        parts = [self.model.rows[start].text if self.model.rows else path]
        if self.model.sections:
            names = [name for name, _row, _hunk in self.model.sections]
            parts.append(f"file {names.index(path) + 1}/{len(names)}")
        total = end_hunk - first_hunk
        if total:
            current = self._shown_hunk() - first_hunk
            parts.append(f"hunk {max(1, min(total, current + 1))}/{total}")
            skipped = self._skipped.get(path, frozenset())
            if skipped:
                parts.append(f"{total - len(skipped)} of {total} hunks approved")
        if self.wrap:
            parts.append("wrap")
        else:
            x, width, total = int(self.scroll_offset.x), self._view_width, self.virtual_size.width
            if total > width:
                parts.append(f"col {x + 1}-{min(total, x + width)} of {total}")
        if self.search_query:
            shown = safe_text(self.search_query)
            parts.append(f'"{shown}" {self.match_index + 1}/{len(self.matches)}' if self.matches
                         else f'"{shown}" no match')
        return " · ".join(parts)

    def _post_status(self) -> None:
        text = self.status_text()
        if text != self._status:
            self._status = text
            self.post_message(self.StatusChanged(text))

    def _redraw_lines(self) -> None:
        self._cache.clear()
        self._final.clear()
        self.refresh()

    def hunk_at_cursor(self) -> int:
        """The 0-based hunk (within its file) holding the line cursor, else the hunk at the top of the
        view; -1 if none. ``hunk_location`` also names the file."""
        place = self.hunk_location()
        return place[1] if place is not None else -1

    def hunk_location(self) -> tuple[str, int, int] | None:
        """(file, 0-based hunk within it, the file's number of hunks) of the hunk holding the line cursor
        (else the one at the top of the view); None when that file has no hunks."""
        if not self.model or not self.model.hunk_rows:
            return None
        if self.cursor_row >= 0:
            index = max(0, bisect.bisect_right(self.model.hunk_rows, self.cursor_row) - 1)
        else:
            index = max(0, self._current_hunk())
        path = self.current_path() or ""
        place = self.model.section_end(path)
        if place is None:
            return None
        _row_start, _row_end, first_hunk, end_hunk = place
        if not first_hunk <= index < end_hunk:  # a file header above the file's first hunk
            if first_hunk == end_hunk:
                return None
            index = first_hunk
        return path, index - first_hunk, end_hunk - first_hunk

    def _current_hunk(self) -> int:
        if not self.model or not self.model.hunk_rows:
            return -1
        top = int(self.scroll_offset.y)
        current = -1
        for i, row in enumerate(self.model.hunk_rows):
            if self._y_of(row) <= top:
                current = i
            else:
                break
        return current

    def _goto_hunk(self, i: int) -> None:
        """Put the line cursor on hunk ``i``'s first changed character: the hunk is scrolled into view from its
        header where the screen allows, and sideways to the change (so ``c``, ``h`` and the status act on it)."""
        assert self.model is not None
        row = self.model.hunk_rows[i]
        change_row, column = self._first_change_column(row)
        target = change_row if change_row >= 0 else row
        self.cursor_row, self.anchor_row = target, None
        top, height = int(self.scroll_offset.y), max(1, self._view_height)
        y_header, y_target = self._y_of(row), self._y_of(target)
        if not (top <= y_header and y_target < top + height):
            self.scroll_to(y=y_header if y_target - y_header < height else y_target, animate=False)
        self._focus_row = target
        if change_row >= 0:
            self._reveal_column(change_row, column)
        self._redraw_lines()
        self.post_message(self.CursorMoved(target))
        self.post_message(self.HunkChanged(i, len(self.model.hunk_rows)))
        self._post_status()

    def _shown_hunk(self) -> int:
        """The hunk the status line names: the one holding the line cursor, else the one at the top."""
        assert self.model is not None
        if self.cursor_row >= 0:
            return max(0, bisect.bisect_right(self.model.hunk_rows, self.cursor_row) - 1)
        return max(0, self._current_hunk())

    def action_next_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        # nothing visited yet (no line cursor): the hunk the status names, at its change; then the next one
        index = self._shown_hunk() + (1 if self.cursor_row >= 0 else 0)
        if index >= len(self.model.hunk_rows):
            self.notify("No next hunk: this is the last one.", timeout=2)
            return
        self._goto_hunk(index)

    def action_previous_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        current = self._shown_hunk()
        first_change, _column = self._first_change_column(self.model.hunk_rows[current])
        # back to the start of the hunk the cursor is inside (or, with no cursor yet, of the one the status names)
        inside = self.cursor_row < 0 or self.cursor_row > max(first_change, self.model.hunk_rows[current])
        index = current if inside else current - 1
        if index < 0:
            self.notify("No previous hunk: this is the first one.", timeout=2)
            return
        self._goto_hunk(index)
