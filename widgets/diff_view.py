"""DiffView: a Line-API diff viewer. One widget owning small state objects, each a plain class without
Textual: the display index (``diff_layout.DisplayIndex``: which row each display line shows), the review
marks (``diff_marks.ReviewMarks``: cursor, selection, comment marks and notes, left-out hunks) and the
search (``diff_search.SearchState``). Lines are drawn by ``diff_lines.LineBuilder`` (syntax colours from
``diff_highlight``, colours from ``diff_styles``); this module owns the keys, the messages, scrolling,
the model and the background work, over ``diff_canvas.DiffCanvas`` (the line cache and the prefetch).

Only visible lines are built: each display line becomes one Strip, kept in a bounded cache keyed by what
it shows (line, width, horizontal position, theme, the version of the marks and search, and whether its
rows are lexed yet: ``_drawing`` here), so nothing is cleared by hand and a line is built again only when
one of those changes. Whole-model passes (parsing, side-by-side pairs, the widest row) run in the parse worker for a
big diff, after the "Parsing…" message has been painted."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection
from functools import partial
from typing import ClassVar, TypeAlias

from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.worker import get_current_worker

from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from widgets.diff_canvas import DiffCanvas
from widgets.diff_frame import Drawing, Finish
from widgets.diff_highlight import Packed, cells, lex, pack
from widgets.diff_layout import DisplayIndex
from widgets.diff_lines import LineBuilder
from widgets.diff_marks import MarkRange, NoteSpec, ReviewMarks
from widgets.diff_messages import CursorMoved, FileRequested, HunkChanged, SearchResult, StatusChanged
from widgets.diff_model import (
    MAX_LINE,
    FileDiffModel,
    Row,
    build_continuous_model,
    build_model,
    ensure_word_spans,
    first_change,
)
from widgets.diff_search import SearchState
from widgets.diff_styles import AUTO_SPLIT_WIDTH, CODE_X, HALF_CODE_X, SIGNS

HIGHLIGHT_MAX_ROWS = 100_000
WORKER_PARSE_LINES = 5000  # blocks with more lines are parsed in a worker thread

Prepared = tuple[FileDiffModel, DisplayIndex]


def _prepare(builder: Callable[[], FileDiffModel]) -> Prepared:
    """A model and its display index with every whole-model fact taken (for the parse worker)."""
    model = builder()
    return model, DisplayIndex.prepare(model)


class DiffView(DiffCanvas, can_focus=True):
    """Shows one file's diff, or every file's in one scroll. ``}``/``{`` move between hunks, ``n``/``N``
    between search matches."""

    HELP = """\
## Diff view
- `n` / `N`: next / previous search match (next / previous hunk while nothing is searched)
- `}` / `{` (or `p`): next / previous hunk (next / previous file: the screen's `]` / `[`)
- `h` (the Review screen): leave the hunk under the line cursor out of the approval, or take it back in;
  left-out hunks are marked `✗ not approved` on their `@@` line, the others `✓` (docs/contracts.md,
  "Hunk selection")
- `/`: search in the diff (the screen's search field; `enter` searches, `escape` closes it)
- `w`: soft wrap on / off (long lines continue on the next screen lines)
- `H` / `L`: half a screen left / right; `0` / `$`: first / last column (the status line shows `col A-B of N`)
- `s`: side-by-side / unified (side-by-side is automatic at 160 columns or more until toggled)
- `R`: render lines that were cut for length (very long lines show `… (+N chars)`)
- Tabs are expanded to tab stops (`CODEBOX_TAB_WIDTH`, default 4). Control characters and bidi
  overrides are drawn as escapes such as `\\x1b` or `\\u202e` in a distinct colour; they never reach the terminal.
- Binary files show a placeholder: their bytes travel as a git binary patch.
- `J` / `K` (or a click): move the line cursor (shown in the line numbers) down / up; `v`: start or end a
  range selection at the cursor. Lines with review comments carry a coloured `●` after the sign, and each
  comment is shown on its own line under the last line it names.
- All files in one scroll (the Review screen's `f`): each file under its header; `z` collapses the file at
  the cursor to its header or shows it again (files already viewed start collapsed)
- `↑` `↓` `PgUp` `PgDn` `Home` `End`: scroll
- Added lines are green, removed lines red; changed words are highlighted.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,f3", "next_match", "Next match", id="diff.next_match"),
        Binding("N,shift+f3", "previous_match", "Prev match", show=False, id="diff.previous_match"),
        Binding("}", "next_hunk", "Next hunk", id="diff.next_hunk"),
        Binding("{,p", "previous_hunk", "Prev hunk", show=False, id="diff.previous_hunk"),
        Binding("s", "toggle_split", "Split/unified", id="diff.toggle_split"),
        Binding("w", "toggle_wrap", "Wrap", id="diff.toggle_wrap"),
        Binding("H", "half_left", "Half screen left", show=False, id="diff.half_left"),
        Binding("L", "half_right", "Half screen right", show=False, id="diff.half_right"),
        Binding("0", "column_start", "First column", show=False, id="diff.column_start"),
        Binding("$", "column_end", "Last column", show=False, id="diff.column_end"),
        Binding("R", "render_anyway", "Render anyway", show=False, id="diff.render_anyway"),
        Binding("j", "scroll_down", "Down", show=False, id="diff.down"),
        Binding("k", "scroll_up", "Up", show=False, id="diff.up"),
        Binding("J", "cursor_down", "Line cursor down", show=False, id="diff.cursor_down"),
        Binding("K", "cursor_up", "Line cursor up", show=False, id="diff.cursor_up"),
        Binding("v", "select_range", "Select range", show=False, id="diff.select_range"),
        Binding("z", "toggle_collapse", "Collapse file", show=False, id="diff.toggle_collapse"),
    ]

    DEFAULT_CSS = """
    DiffView { background: $surface; }
    """

    HunkChanged: TypeAlias = HunkChanged
    FileRequested: TypeAlias = FileRequested
    SearchResult: TypeAlias = SearchResult
    CursorMoved: TypeAlias = CursorMoved
    StatusChanged: TypeAlias = StatusChanged

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None, tab_size: int | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.tab_size = tab_size if tab_size is not None else get_settings().tab_width
        self.split_mode = "auto"  # auto | unified | split
        self.auto_split_width = AUTO_SPLIT_WIDTH
        self.wrap = False
        self.marks = ReviewMarks()
        self.finder = SearchState()
        self.model: FileDiffModel | None = None
        self._index = DisplayIndex.message(FileDiffModel("", [], [], 0, 0, False))
        self._tokens: dict[int, Packed] = {}  # id(row) -> lexed pieces (highlight worker)
        self._builder = self._new_builder()
        self._shown = 0  # bumped whenever another model (or a message) is shown
        self._highlighting = False
        self._block: object = ""  # the shown source: one file's block, or a token for show_files()
        self._files: list[tuple[str, str]] | None = None  # the continuous view's files (show_files)
        self._collapsed: set[str] = set()
        self._open_at: str | None = None
        self._max_line = MAX_LINE
        self._focus_row: int | None = None  # the model row the last jump (file, hunk, match) brought up
        self._status = ""

    # -- the state objects, as the screens and tests read them ------------------------------------
    @property
    def rows(self) -> list[Row]:
        return self.model.rows if self.model else []

    @property
    def display_index(self) -> DisplayIndex:
        """The display index in the current mode (unified or side by side, wrapped, with notes)."""
        self._sync_mode()
        return self._index

    def _sync_mode(self) -> int:
        """Put the display index in the current mode; returns the view's width (cells a line can use)."""
        index = self._index
        split = self.is_split
        width = self._view_width
        code_width = max(8, (width - 1) // 2 - HALF_CODE_X) if split and index.pairs else max(8, width - CODE_X)
        index.set_mode(
            split=split,
            wrap=self.wrap,
            code_width=code_width,
            notes=self.marks.notes,
            notes_version=self.marks.notes_version,
        )
        return width

    @property
    def cursor_row(self) -> int:
        return self.marks.cursor_row

    @property
    def anchor_row(self) -> int | None:
        return self.marks.anchor_row

    @anchor_row.setter
    def anchor_row(self, row: int | None) -> None:
        self.marks.place_cursor(self.marks.cursor_row, row)
        self.refresh()

    @property
    def search_query(self) -> str:
        return self.finder.query

    @property
    def matches(self) -> list[int]:
        """Model rows containing the search query."""
        return self.finder.matches

    @property
    def match_index(self) -> int:
        return self.finder.index

    @property
    def skipped_hunks(self) -> frozenset[int]:
        """The 0-based hunks of the current file (``current_path``) left out of the approval."""
        return self.marks.skipped_in(self.current_path() or "")

    @property
    def continuous(self) -> bool:
        """All changed files in one scroll (``show_files``), not one file (``show_file``)."""
        return self.model is not None and bool(self.model.sections)

    @property
    def is_split(self) -> bool:
        return self.split_mode == "split" or (self.split_mode == "auto" and self.size.width >= self.auto_split_width)

    @property
    def _view_width(self) -> int:
        """Cells a display line can use: the widget's width less a vertical scrollbar, so nothing of the code is
        ever drawn under the scrollbar (wrapped lines break before it; the end of a line is reachable)."""
        return self.scrollable_content_region.width

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
        display = self.display_index
        top = int(self.scroll_offset.y)
        focus = self._focus_row  # the row a jump (file, hunk, match) brought up, while it is on screen
        if (
            focus is not None
            and focus < len(self.model.rows)
            and top <= display.y_of(focus) < top + max(1, self._view_height)
        ):
            return self.path_at(focus) or None
        return self.path_at(max(0, display.row_at(top))) or None

    # -- showing a diff ----------------------------------------------------------------------------
    def show_file(self, path: str, block: str, *, max_line: int = MAX_LINE) -> None:
        """Show one file's section of a patch (see ``diff_model.split_patch``).

        Blocks over ``WORKER_PARSE_LINES`` lines are parsed in a worker thread ("Parsing…" meanwhile)."""
        self._block, self._files = block, None
        self._parse(
            path, partial(build_model, path, block, max_line=max_line, tab_size=self.tab_size), block.count("\n"), block
        )

    def show_files(
        self,
        files: list[tuple[str, str]],
        *,
        collapsed: Collection[str] = (),
        at: str | None = None,
        max_line: int = MAX_LINE,
    ) -> None:
        """Show every file's section in one scroll (the continuous view): ``(path, block)`` in order, each
        under its header; files in ``collapsed`` (e.g. viewed ones) as their header only (``z`` toggles
        the file at the cursor). The view opens at file ``at`` (else at the top)."""
        token = object()
        self._block, self._files, self._collapsed, self._open_at = token, list(files), set(collapsed), at
        self._max_line = max_line
        lines = sum(block.count("\n") for path, block in files if path not in self._collapsed)
        builder = partial(
            build_continuous_model,
            self._files,
            collapsed=set(self._collapsed),
            max_line=max_line,
            tab_size=self.tab_size,
        )
        self._parse(f"{len(files)} files", builder, lines, token)

    def _parse(self, what: str, builder: Callable[[], FileDiffModel], lines: int, token: object) -> None:
        if lines > WORKER_PARSE_LINES:
            self.show_message(f"Parsing {what} …")
            # started once the message is on screen: the worker's pure-Python parse would otherwise share the
            # interpreter with the first frame and delay it
            self.call_after_refresh(self._start_parse, builder, token)
            return
        model = builder()
        self._set_model(model, DisplayIndex(model), token)

    def _start_parse(self, builder: Callable[[], FileDiffModel], token: object) -> None:
        if token is self._block:  # not replaced by a newer show_file() meanwhile
            self.run_worker(
                partial(self._parse_worker, builder, token),
                thread=True,
                exclusive=True,
                group="diff-parse",
                exit_on_error=False,
            )

    def _parse_worker(self, builder: Callable[[], FileDiffModel], token: object) -> None:
        model, index = _prepare(builder)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._set_model, model, index, token)

    def action_toggle_collapse(self) -> None:
        """Continuous view: collapse the file at the cursor (or the top) to its header, or show it again."""
        path = self.current_path() if self.continuous else None
        if path is None or self._files is None:
            return
        self._collapsed.symmetric_difference_update({path})
        self.show_files(self._files, collapsed=self._collapsed, at=path, max_line=self._max_line)

    def _set_model(self, model: FileDiffModel, index: DisplayIndex, token: object) -> None:
        if token is not self._block:  # a newer show_file() won
            return
        self.model, self._index = model, index
        self._focus_row = None
        self.marks.show_model(model)
        if self.finder.query:
            self.finder.find(model.rows)
        else:
            self.finder.forget_matches()
        self._tokens = {}
        self._highlighting = False
        self._builder = self._new_builder()
        self._shown += 1
        self._layout_rows()
        self.scroll_to(0, 0, animate=False)
        at, self._open_at = self._open_at, None
        if at is not None and model.sections:
            self.scroll_to_file(at)

    def show_message(self, text: str) -> None:
        """One line of text instead of a diff (marks, notes and search matches are not drawn on it)."""
        self.model = FileDiffModel("", [Row("meta", safe_text(text))], [], 0, 0, False)
        self._index = DisplayIndex.message(self.model)
        self.marks.show_nothing()
        self._tokens = {}
        self._builder = self._new_builder()
        self._shown += 1
        self.virtual_size = Size(cells(text), 1)
        self.refresh()

    def _new_builder(self) -> LineBuilder:
        return LineBuilder(self._index, self.marks, self.finder, self._tokens, self._want_highlight)

    def action_render_anyway(self) -> None:
        if self.model and self.model.truncated:
            top = self.scroll_offset.y
            if self._files is not None and self.continuous:
                self.show_files(self._files, collapsed=self._collapsed, max_line=1 << 30)
            elif isinstance(self._block, str):
                self.show_file(self.model.path, self._block, max_line=1 << 30)
            self.scroll_to(y=top, animate=False)

    # -- background highlighting ----------------------------------------------------------
    def _want_highlight(self) -> None:
        if not self._highlighting and self.model is not None:
            self._highlighting = True
            self.run_worker(
                partial(self._highlight_worker, self.model, self._tokens),
                thread=True,
                exclusive=True,
                group="diff-highlight",
                exit_on_error=False,
            )

    def _highlight_worker(self, model: FileDiffModel, tokens: dict[int, Packed]) -> None:
        """Lex the rows of ``model`` from the viewport on, in chunks; the UI re-renders lexed rows."""
        worker = get_current_worker()
        rows = model.rows
        start = max(0, int(self.scroll_offset.y) - 50)
        order = list(range(start, min(len(rows), HIGHLIGHT_MAX_ROWS))) + list(range(0, min(start, HIGHLIGHT_MAX_ROWS)))
        chunk: list[int] = []
        for index in order:
            if worker.is_cancelled or self.model is not model:
                return
            row = ensure_word_spans(model, index)
            if row.kind in SIGNS and id(row) not in tokens:
                tokens[id(row)] = pack(lex(model.section_of(index)[0], row.text))
                chunk.append(index)
            if len(chunk) >= 200:
                self.app.call_from_thread(self._rows_lexed, model, chunk)
                chunk = []
        if chunk:
            self.app.call_from_thread(self._rows_lexed, model, chunk)

    def _rows_lexed(self, model: FileDiffModel, indexes: list[int]) -> None:
        """Lexed rows are drawn again when on screen (a built line's key says whether its rows were lexed)."""
        if self.model is not model:
            return
        display = self.display_index
        top = int(self.scroll_offset.y)
        bottom = top + self._view_height
        if display.mapped or display.split_active or any(top <= i < bottom for i in indexes):
            self.refresh()

    # -- layout: unified / side by side, wrapped or not -----------------------------------------
    def _layout_rows(self) -> None:
        """Size the scroll area for the current model, mode and width, and draw again."""
        display = self.display_index
        width = self._view_width
        if self.wrap:
            self.virtual_size = Size(width, display.display_count())
        elif display.split_active:
            code_width = display.code_width
            self.virtual_size = Size(width + max(0, display.widest_code - code_width), display.display_count())
        else:
            self.virtual_size = Size(display.widest + CODE_X, display.display_count())
        self.refresh()

    def _relayout_keeping(self, change: Callable[[], None]) -> None:
        top_row = self.display_index.row_at(int(self.scroll_offset.y))
        change()
        self._layout_rows()
        self.scroll_to(y=self.display_index.y_of(top_row), animate=False)
        self._post_status()

    def set_split_mode(self, mode: str) -> None:
        """``auto`` (side by side from ``auto_split_width`` columns), ``unified`` or ``split``; the line at the
        top of the view stays there."""

        def change() -> None:
            self.split_mode = mode

        self._relayout_keeping(change)

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

    # -- horizontal position ----------------------------------------------------------------------
    def _h_max(self) -> int:
        return max(0, self.virtual_size.width - self._view_width)

    def action_half_left(self) -> None:
        self.scroll_to(x=max(0, int(self.scroll_offset.x) - max(1, self._view_width // 2)), animate=False)

    def action_half_right(self) -> None:
        self.scroll_to(x=min(self._h_max(), int(self.scroll_offset.x) + max(1, self._view_width // 2)), animate=False)

    def action_column_start(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_column_end(self) -> None:
        self.scroll_to(x=self._h_max(), animate=False)

    def _reveal_column(self, row: int, column: int, length: int = 1) -> None:
        """Scroll sideways so code column ``column`` of model row ``row`` is on screen (no-op when wrapped)."""
        if self.wrap or row < 0 or row >= len(self.rows):
            return
        display = self.display_index
        view_start = int(self.scroll_offset.x)
        if display.split_active:
            visible, target = display.code_width, column
        else:
            visible, target = self._view_width, column + (CODE_X if self.rows[row].kind in SIGNS else 2)
        if view_start <= target and target + length <= view_start + visible:
            return
        x = 0 if target + length <= visible else max(0, target - visible // 3)
        self.scroll_to(x=max(0, min(self._h_max(), x)), animate=False)

    # -- status line ------------------------------------------------------------------------------
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
            parts.append(f"file {(self.model.section_number(path) or 0) + 1}/{len(self.model.sections)}")
        total = end_hunk - first_hunk
        if total:
            current = self._shown_hunk() - first_hunk
            parts.append(f"hunk {max(1, min(total, current + 1))}/{total}")
            skipped = self.marks.skipped_in(path)
            if skipped:
                parts.append(f"{total - len(skipped)} of {total} hunks approved")
        if self.wrap:
            parts.append("wrap")
        else:
            x, width, total = int(self.scroll_offset.x), self._view_width, self.virtual_size.width
            if total > width:
                parts.append(f"col {x + 1}-{min(total, x + width)} of {total}")
        found = self.finder.status(safe_text(self.finder.query))
        if found:
            parts.append(found)
        return " · ".join(parts)

    def _post_status(self) -> None:
        text = self.status_text()
        if text != self._status:
            self._status = text
            self.post_message(self.StatusChanged(text))

    # -- hunks -------------------------------------------------------------------------------------
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
        index = self._shown_hunk()
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

    def _shown_hunk(self) -> int:
        """The hunk the status line names: the one holding the line cursor, else the one at the top."""
        assert self.model is not None
        if self.cursor_row >= 0:
            return max(0, bisect.bisect_right(self.model.hunk_rows, self.cursor_row) - 1)
        return max(0, self.display_index.hunk_at(int(self.scroll_offset.y)))

    def _goto_hunk(self, i: int) -> None:
        """Put the line cursor on hunk ``i``'s first changed character: the hunk is scrolled into view from its
        header where the screen allows, and sideways to the change (so ``c``, ``h`` and the status act on it)."""
        assert self.model is not None
        row = self.model.hunk_rows[i]
        change_row, column = first_change(self.model, row)
        target = change_row if change_row >= 0 else row
        self.marks.place_cursor(target)
        display = self.display_index
        top, height = int(self.scroll_offset.y), max(1, self._view_height)
        y_header, y_target = display.y_of(row), display.y_of(target)
        if not (top <= y_header and y_target < top + height):
            self.scroll_to(y=y_header if y_target - y_header < height else y_target, animate=False)
        self._focus_row = target
        if change_row >= 0:
            self._reveal_column(change_row, column)
        self.refresh()
        self.post_message(self.CursorMoved(target))
        self.post_message(self.HunkChanged(i, len(self.model.hunk_rows)))
        self._post_status()

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
        first, _column = first_change(self.model, self.model.hunk_rows[current])
        # back to the start of the hunk the cursor is inside (or, with no cursor yet, of the one the status names)
        inside = self.cursor_row < 0 or self.cursor_row > max(first, self.model.hunk_rows[current])
        index = current if inside else current - 1
        if index < 0:
            self.notify("No previous hunk: this is the first one.", timeout=2)
            return
        self._goto_hunk(index)

    # Not bound here (the review screen binds `]`/`[`); a host without file keys can bind these.
    def action_next_file(self) -> None:
        self.post_message(self.FileRequested(1))

    def action_previous_file(self) -> None:
        self.post_message(self.FileRequested(-1))

    def scroll_to_file(self, path: str) -> bool:
        """Bring file ``path``'s header to the top of the view (continuous view); False if not shown."""
        if self.model is None:
            return False
        place = self.model.section_end(path)
        if place is None:
            return False
        self.scroll_to(y=self.display_index.y_of(place[0]), animate=False)
        self._focus_row = place[0]
        if self.cursor_row >= 0 and self.path_at(self.cursor_row) != path:
            self.marks.clear_cursor()
            self.refresh()
        self._post_status()
        return True

    # -- line cursor, selection, comment marks and notes --------------------------------------------
    def selected_rows(self) -> list[int]:
        """The model rows under the cursor or in the selected range (empty without a cursor)."""
        return self.marks.selected_rows(len(self.rows))

    def selected_lines(self) -> tuple[str, int, int] | None:
        """``(side, first, last)`` line numbers of the code lines under the cursor or in the range: the old
        side when every selected code line is a removed one, else the new side; None without code lines."""
        return self.marks.selected_lines(self.rows)

    def set_marks_by_file(self, ranges: dict[str, list[MarkRange]]) -> None:
        """Mark lines of each file: ``(side, first, last, kind)`` with side ``new`` (added and context lines by new
        number) or ``old`` (removed and context lines by old number), kind one of MARK_STYLES. Kept until
        replaced; drawn whenever that file is shown. Replaces the marks of every file."""
        if self.marks.set_mark_ranges(ranges, self.model):
            self.refresh()

    def marked_rows(self) -> dict[int, str]:
        """Model row -> mark kind of the shown file."""
        return dict(self.marks.marks)

    def set_notes(self, path: str, notes: list[NoteSpec]) -> None:
        """Inline comment lines for file ``path``: ``(side, line, kind, text)`` drawn under the row showing
        ``line`` on ``side`` (``new``: added/context rows, ``old``: removed/context rows). Kept until
        replaced; drawn whenever that file is shown. Text is shown with control characters as escapes.
        Replaces the notes of every file."""
        self.set_notes_by_file({path: notes})

    def set_notes_by_file(self, notes: dict[str, list[NoteSpec]]) -> None:
        """``set_notes`` for several files at once (the continuous view shows them all)."""
        top_row = self.display_index.row_at(int(self.scroll_offset.y)) if self.model is not None else 0
        if self.marks.set_note_specs(notes, self.model) and self.model is not None:
            self._layout_rows()
            self.scroll_to(y=self.display_index.y_of(top_row), animate=False)

    def set_skipped_hunks(self, skipped: frozenset[int], path: str | None = None) -> None:
        """Mark hunks of file ``path`` (default: the current file) left out of the approval (0-based;
        empty = all approved)."""
        path = path if path is not None else self.current_path()
        if path is not None and self.marks.set_skipped(path, skipped):
            self.refresh()
            self._post_status()

    def move_cursor_to(self, row: int) -> None:
        """Put the line cursor on model row ``row`` (kept on screen)."""
        if not self.rows:
            return
        self.marks.place_cursor(max(0, min(len(self.rows) - 1, row)), self.marks.anchor_row)
        top, height = int(self.scroll_offset.y), self._view_height
        y = self.display_index.y_of(self.cursor_row)
        if not top <= y < top + max(1, height):
            self.scroll_to(y=max(0, y - height // 3), animate=False)
        self.refresh()
        self.post_message(self.CursorMoved(self.cursor_row))

    def _step_cursor(self, step: int) -> None:
        rows = self.rows
        if not rows:
            return
        display = self.display_index
        top = display.row_at(int(self.scroll_offset.y))
        bottom = display.row_at(int(self.scroll_offset.y) + max(0, self._view_height - 1))
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
        self.marks.place_cursor(self.cursor_row, self.cursor_row if self.anchor_row is None else None)
        self.refresh()
        self.post_message(self.CursorMoved(self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:  # on a scrollbar or the border, not on a line
            return
        index = self.display_index.row_at(int(self.scroll_offset.y) + offset.y)
        if 0 <= index < len(self.rows):
            self.move_cursor_to(index)

    # -- search -------------------------------------------------------------------------------
    def search(self, query: str) -> int:
        """Highlight ``query`` (case-insensitive) and jump to the first match at or after the top of the
        view; returns the match count (an empty query clears the search)."""
        top_row = self.display_index.row_at(int(self.scroll_offset.y))
        self.finder.set_query(query, self.rows)
        self.refresh()
        if self.finder.matches:
            self._goto_match(self.finder.first_from(top_row))
        else:
            self.post_message(self.SearchResult(query, -1, 0))
            self._post_status()
        return len(self.finder.matches)

    def _goto_match(self, index: int) -> None:
        finder = self.finder
        finder.select(index)
        row = finder.matches[index]
        self._focus_row = row
        # the line cursor follows the match: `c`, `h` and the status act where the reader's eyes are
        self.marks.place_cursor(row)
        self.post_message(self.CursorMoved(row))
        top, height = int(self.scroll_offset.y), self._view_height
        y = self.display_index.y_of(row)
        if not top <= y < top + height - 1:
            self.scroll_to(y=max(0, y - height // 3), animate=False)
        column = self.rows[row].text.lower().find(finder.query.lower())
        self._reveal_column(row, max(0, column), len(finder.query))
        self.refresh()
        self.post_message(self.SearchResult(finder.query, index, len(finder.matches)))
        self._post_status()

    def action_next_match(self) -> None:
        if self.finder.matches:
            self._goto_match(self.finder.step(1))
        elif not self.finder.query:
            self.action_next_hunk()

    def action_previous_match(self) -> None:
        if self.finder.matches:
            self._goto_match(self.finder.step(-1))
        elif not self.finder.query:
            self.action_previous_hunk()

    # -- drawing (the line cache and the prefetch: diff_canvas.py) ----------------------------------
    def _drawing(self, base: Style, finish: Finish | None = None) -> Drawing:
        width = self._sync_mode()
        x = 0 if self.wrap else int(self.scroll_offset.x)
        index = self._index
        shared = (
            width,
            x,
            base,
            finish,
            self._shown,
            index.split_active,
            index.wrap,
            self.marks.version,
            self.finder.version,
        )
        return Drawing(base, width, x, finish, shared)

    def _showing(self) -> bool:
        return self.model is not None

    def _display_count(self) -> int:
        return self._index.display_count()

    def _frame_drawn(self) -> None:
        self._post_status()

    def row_text(self, row: int) -> str:
        """Model row ``row`` as drawn on one unified line, unwrapped and unscrolled (numbers, sign, code)."""
        return "".join(segment.text for segment in self._builder.row_segments(row))
