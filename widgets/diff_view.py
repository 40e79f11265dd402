"""DiffView: a Line-API diff viewer. Only visible rows are rendered; each row's Strip is built once
and cached. Syntax colours come from pygments (per line, token styles cached); changed words inside
paired -/+ lines are highlighted."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import ClassVar

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text
from widgets.diff_model import MAX_LINE, FileDiffModel, Row, build_model, ensure_word_spans, side_by_side

ROW_STYLES = {
    "add": Style(bgcolor="#12351f"),
    "del": Style(bgcolor="#3d1418"),
    "hunk": Style(color="#56b6c2", bgcolor="#1b2430"),
    "header": Style(color="#e5c07b", bold=True, bgcolor="#20232a"),
    "meta": Style(color="#7f848e"),
    "nonl": Style(color="#7f848e", italic=True),
    "binary": Style(color="#d19a66", italic=True),
    "ctx": Style(),
}
WORD_STYLES = {"add": Style(bgcolor="#1f6f3a", bold=True), "del": Style(bgcolor="#8a2a31", bold=True)}
GUTTER = Style(color="#5c6370")
EMPTY_SIDE = Style(bgcolor="#1a1c20")
MATCH = Style(color="black", bgcolor="#e5c07b")
MATCH_CURRENT = Style(color="black", bgcolor="#ff9e3b", bold=True, underline=True)
ESCAPE = Style(color="#ff5fd7", bgcolor="#3a1f3a", bold=True)  # a control character shown as an escape
LINE_CURSOR = Style(reverse=True)  # the line cursor / selected range, in the line-number gutter
HUNK_SKIPPED = Style(color="#e06c75", bold=True)  # a hunk left out of the approval (its @@ line)
HUNK_KEPT = Style(color="#98c379")
# Line marks (review comments): a marker after the sign, coloured by the comment type.
MARK_STYLES = {"issue": Style(color="#ff6b6b", bold=True), "suggestion": Style(color="#e5c07b", bold=True),
               "note": Style(color="#61afef", bold=True), "praise": Style(color="#98c379", bold=True)}
MARK_CHAR = "●"
NOTE_STYLE = Style(bgcolor="#23262e")  # an inline comment line under the commented line
CODE_X = 14  # cells before the code on a unified line: two 6-cell line numbers and the sign
HALF_CODE_X = 8  # cells before the code in one side-by-side half: its line number and the sign
SIGNS = {"add": "+", "del": "-", "ctx": " "}
NULL = Style()
SEPARATOR = Strip([Segment("│", GUTTER)], 1)
PREFETCH_DELAY = 0.02  # s after a frame before the neighbouring pages are built
PREFETCH_CHUNK = 12  # lines per prefetch step
# Built lines kept (~11 pages at 45 rows). Each cached Strip is ~20 objects for the cycle collector to walk
# (segments, Textual's per-strip caches): 4096 of them made its full passes over 100 ms on a big file.
STRIP_CACHE = 512
HIGHLIGHT_MAX_CHARS = 400
SYNC_HIGHLIGHT_ROWS = 2000  # above this, rows are lexed by a worker thread (plain until then)
HIGHLIGHT_MAX_ROWS = 100_000
AUTO_SPLIT_WIDTH = 160
WORKER_PARSE_LINES = 5000  # rows beyond this stay plain


# Common extensions by alias: get_lexer_by_name avoids compiling every lexer's filename globs
# (get_lexer_for_filename costs ~0.6 s on first use).
_ALIASES = {"php": "php", "inc": "php", "js": "javascript", "mjs": "javascript", "ts": "typescript",
            "jsx": "jsx", "tsx": "tsx", "css": "css", "scss": "scss", "json": "json", "html": "html",
            "htm": "html", "xml": "xml", "md": "markdown", "py": "python", "sh": "bash", "yml": "yaml",
            "yaml": "yaml", "sql": "sql", "txt": "text", "twig": "twig"}


@lru_cache(maxsize=64)
def _lexer(path: str):  # type: ignore[no-untyped-def]
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    options = {"startinline": True} if _ALIASES.get(ext) == "php" else {}
    try:
        if ext in _ALIASES:
            return get_lexer_by_name(_ALIASES[ext], **options)
        return get_lexer_for_filename(path)
    except ClassNotFound:
        return None


@lru_cache(maxsize=256)
def _token_style(token_type: object) -> Style:
    from pygments.styles import get_style_by_name

    style = get_style_by_name("monokai")
    spec = style.style_for_token(token_type)
    return Style(color=f"#{spec['color']}" if spec["color"] else None, bold=bool(spec["bold"]),
                 italic=bool(spec["italic"]))


def _lex(path: str, text: str) -> list[tuple[str, Style]]:
    lexer = _lexer(path) if len(text) <= HIGHLIGHT_MAX_CHARS else None
    if lexer is None:
        return [(text, NULL)]
    pieces: list[tuple[str, Style]] = []
    for token_type, value in lexer.get_tokens(text):
        value = value.replace("\n", "")
        if value:
            pieces.append((value, _token_style(token_type)))
    return pieces


# Lexed pieces are kept per row as ``(text, style number)`` tuples: tuples of strings and ints are
# untracked by Python's cycle collector, so its full passes do not walk the ~200,000 pieces of a big file
# while the user scrolls (with ``(text, Style)`` pairs they were 100–460 ms pauses at random key presses).
_STYLES: list[Style] = [NULL]
_STYLE_NUMBERS: dict[Style, int] = {NULL: 0}

Packed = tuple[tuple[str, int], ...]


def _pack(pieces: list[tuple[str, Style]]) -> Packed:
    out = []
    for text, style in pieces:
        number = _STYLE_NUMBERS.get(style)
        if number is None:  # a new style is appended before any piece names it
            number = len(_STYLES)
            _STYLES.append(style)
            _STYLE_NUMBERS[style] = number
        out.append((text, number))
    return tuple(out)


def _unpack(packed: Packed) -> list[tuple[str, Style]]:
    styles = _STYLES
    return [(text, styles[number]) for text, number in packed]


class DiffView(ScrollView, can_focus=True):
    """Shows one file's diff. ``}``/``{`` move between hunks, ``n``/``N`` between search matches."""

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
    ]

    DEFAULT_CSS = """
    DiffView { background: $surface; }
    """

    class HunkChanged(Message):
        def __init__(self, index: int, total: int) -> None:
            self.index, self.total = index, total
            super().__init__()

    class FileRequested(Message):
        """The user asked for the next (+1) or previous (-1) file; the screen decides which."""

        def __init__(self, step: int) -> None:
            self.step = step
            super().__init__()

    class SearchResult(Message):
        def __init__(self, query: str, index: int, total: int) -> None:
            self.search_query, self.index, self.total = query, index, total
            super().__init__()

    class CursorMoved(Message):
        """The line cursor or the selected range changed (``cursor_row``, ``selected_rows()``)."""

        def __init__(self, row: int) -> None:
            self.row = row
            super().__init__()

    class StatusChanged(Message):
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
        self._block = ""
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
        self._mark_ranges: tuple[str, list[tuple[str, int, int, str]]] = ("", [])  # path, (side, first, last, kind)
        self._marks: dict[int, str] = {}  # model row -> mark kind (see MARK_STYLES) for the shown model
        self._note_specs: tuple[str, list[tuple[str, int, str, str]]] = ("", [])  # path, (side, line, kind, text)
        self._notes: dict[int, list[tuple[str, str]]] = {}  # model row -> inline lines (kind, text) under it
        self._notes_version = 0
        self._base_counts: list[int] = []  # display lines of each logical line before its notes
        self.skipped_hunks: frozenset[int] = frozenset()  # 0-based hunks left out of the approval (shown file)

    def show_file(self, path: str, block: str, *, max_line: int = MAX_LINE) -> None:
        """Show one file's section of a patch (see ``diff_model.split_patch``).

        Blocks over ``WORKER_PARSE_LINES`` lines are parsed in a worker thread ("Parsing…" meanwhile)."""
        self._block = block
        if block.count("\n") > WORKER_PARSE_LINES:
            self.show_message(f"Parsing {path} …")
            self.run_worker(partial(self._parse_worker, path, block, max_line), thread=True, exclusive=True,
                            group="diff-parse", exit_on_error=False)
            return
        self._set_model(build_model(path, block, max_line=max_line, tab_size=self.tab_size), block)

    def _parse_worker(self, path: str, block: str, max_line: int) -> None:
        model = build_model(path, block, max_line=max_line, tab_size=self.tab_size)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._set_model, model, block)

    def _set_model(self, model: FileDiffModel, block: str) -> None:
        if block is not self._block:  # a newer show_file() won
            return
        self.model = model
        self.cursor_row, self.anchor_row = -1, None
        self._resolve_marks()
        self._resolve_notes()
        self.matches, self.match_index = [], -1
        self._match_set = set()
        self._tokens = {}
        self._highlighting = False
        if self.search_query:
            self._find_all()
        self._width = max((_cells(r.text) for r in self.model.rows), default=0) + CODE_X
        self._pairs, self._position = side_by_side(self.model)
        self._layout_rows()
        self.scroll_to(0, 0, animate=False)

    # -- layout: unified / side by side, wrapped or not -----------------------------------------
    @property
    def is_split(self) -> bool:
        return self.split_mode == "split" or (self.split_mode == "auto" and self.size.width >= self.auto_split_width)

    @property
    def _split_active(self) -> bool:
        return self.is_split and bool(self._pairs)

    def _code_width(self, width: int | None = None) -> int:
        """Cells for code on one display line (one half in side-by-side)."""
        width = self.size.width if width is None else width
        if self._split_active:
            return max(8, (width - 1) // 2 - HALF_CODE_X)
        return max(8, width - CODE_X)

    def _logical_count(self) -> int:
        return len(self._pairs) if self._split_active else len(self.rows)

    def _wrap_layout(self) -> list[int]:
        """First display line of each logical line (row, or side-by-side pair) when wrapped, plus the total
        at the end. Computed once per model, width and mode (row lengths only; nothing is rendered)."""
        split = self._split_active
        key = (id(self.model), self.size.width, split, self.wrap, self._notes_version)
        if self._wrap_key != key:
            avail = self._code_width()
            rows = self.rows

            wrap = self.wrap

            def lines(i: int) -> int:
                if i < 0 or rows[i].kind not in SIGNS or not wrap:
                    return 1
                return max(1, -(-_cells(rows[i].text) // avail))

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
        width = self.size.width
        if self.wrap:
            self.virtual_size = Size(width, self._display_count())
        elif self._split_active:
            longest = max((_cells(r.text) for r in self.rows if r.kind in SIGNS), default=0)
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

    def show_message(self, text: str) -> None:
        self.model = FileDiffModel("", [Row("meta", safe_text(text))], [], 0, 0, False)
        self._marks, self._notes = {}, {}
        self._notes_version += 1
        self._pairs, self._position = [], []
        self._tokens = {}
        self._cache.clear()
        self._final.clear()
        self.virtual_size = Size(_cells(text), 1)
        self.refresh()

    # -- horizontal position ----------------------------------------------------------------------
    def _h_max(self) -> int:
        return max(0, self.virtual_size.width - self.size.width)

    def action_half_left(self) -> None:
        self.scroll_to(x=max(0, int(self.scroll_offset.x) - max(1, self.size.width // 2)), animate=False)

    def action_half_right(self) -> None:
        self.scroll_to(x=min(self._h_max(), int(self.scroll_offset.x) + max(1, self.size.width // 2)),
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
            view_start, visible = int(self.scroll_offset.x), self.size.width
            target = column + (CODE_X if self.rows[row].kind in SIGNS else 2)
        if view_start <= target and target + length <= view_start + visible:
            return
        x = 0 if target + length <= visible else max(0, target - visible // 3)
        self.scroll_to(x=max(0, min(self._h_max(), x)), animate=False)

    def _first_change_column(self, hunk_row: int) -> tuple[int, int]:
        """(row, code column) of the first changed word (or changed line) after a hunk header."""
        rows = self.rows
        for i in range(hunk_row + 1, len(rows)):
            row = rows[i]
            if row.kind == "hunk":
                break
            if row.kind in ("add", "del"):
                if self.model is not None:
                    ensure_word_spans(self.model, i)
                if row.spans:
                    return i, row.spans[0][0]
                return i, len(row.text) - len(row.text.lstrip())
        return -1, 0

    def status_text(self) -> str:
        """``path · hunk 2/5 · col 41-160 of 230`` (``wrap`` when wrapped) ``· "term" 3/7``."""
        if self.model is None or not self.model.path:
            return ""
        parts = [self.model.rows[0].text if self.model.rows else self.model.path]
        if self.model.hunk_rows:
            parts.append(f"hunk {max(1, self._current_hunk() + 1)}/{len(self.model.hunk_rows)}")
            if self.skipped_hunks:
                kept = len(self.model.hunk_rows) - len(self.skipped_hunks)
                parts.append(f"{kept} of {len(self.model.hunk_rows)} hunks approved")
        if self.wrap:
            parts.append("wrap")
        else:
            x, width, total = int(self.scroll_offset.x), self.size.width, self.virtual_size.width
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

    # -- background highlighting ----------------------------------------------------------
    def _want_highlight(self) -> None:
        if not self._highlighting and self.model is not None:
            self._highlighting = True
            self.run_worker(partial(self._highlight_worker, self.model), thread=True, exclusive=True,
                            group="diff-highlight", exit_on_error=False)

    def _highlight_worker(self, model: FileDiffModel) -> None:
        """Lex the rows of ``model`` from the viewport on, in chunks; the UI re-renders lexed rows."""
        worker = get_current_worker()
        rows = model.rows
        start = max(0, int(self.scroll_offset.y) - 50)
        order = list(range(start, min(len(rows), HIGHLIGHT_MAX_ROWS))) + list(range(0, min(start, HIGHLIGHT_MAX_ROWS)))
        tokens = self._tokens
        chunk: list[int] = []
        for index in order:
            if worker.is_cancelled or self.model is not model:
                return
            row = ensure_word_spans(model, index)
            if row.kind in SIGNS and id(row) not in tokens:
                tokens[id(row)] = _pack(_lex(model.path, row.text))
                chunk.append(index)
            if len(chunk) >= 200:
                self.app.call_from_thread(self._rows_lexed, model, chunk)
                chunk = []
        if chunk:
            self.app.call_from_thread(self._rows_lexed, model, chunk)

    def _rows_lexed(self, model: FileDiffModel, indexes: list[int]) -> None:
        if self.model is not model:
            return
        top = int(self.scroll_offset.y)
        bottom = top + self.size.height
        if self._split_active or self.wrap:
            self._cache.clear()
        for i in indexes:
            self._cache.discard((i, 0))
        if self._mapped or any(top <= i < bottom for i in indexes):
            self.refresh()

    # -- search -------------------------------------------------------------------------------
    def _find_all(self) -> None:
        needle = self.search_query.lower()
        self.matches = [i for i, row in enumerate(self.rows) if needle and needle in row.text.lower()]
        self._match_set = set(self.matches)

    def search(self, query: str) -> int:
        """Highlight ``query`` (case-insensitive) and jump to the first match at or after the top of the
        view; returns the match count (an empty query clears the search)."""
        top_row = self._row_at(int(self.scroll_offset.y))
        self.search_query = query
        self._find_all()
        self.match_index = -1
        self._cache.clear()
        self._final.clear()
        self.refresh()
        if self.matches:
            first = bisect.bisect_left(self.matches, top_row)
            self._goto_match(first % len(self.matches))
        else:
            self.post_message(self.SearchResult(query, -1, 0))
            self._post_status()
        return len(self.matches)

    def _goto_match(self, index: int) -> None:
        self.match_index = index
        row = self.matches[index]
        top, height = int(self.scroll_offset.y), self.size.height
        y = self._y_of(row)
        if not top <= y < top + height - 1:
            self.scroll_to(y=max(0, y - height // 3), animate=False)
        column = self.rows[row].text.lower().find(self.search_query.lower())
        self._reveal_column(row, max(0, column), len(self.search_query))
        self._cache.clear()
        self._final.clear()
        self.refresh()
        self.post_message(self.SearchResult(self.search_query, index, len(self.matches)))
        self._post_status()

    def action_next_match(self) -> None:
        if self.matches:
            self._goto_match((self.match_index + 1) % len(self.matches))
        elif not self.search_query:
            self.action_next_hunk()

    def action_previous_match(self) -> None:
        if self.matches:
            self._goto_match((self.match_index - 1) % len(self.matches))
        elif not self.search_query:
            self.action_previous_hunk()

    # Not bound here (the review screen binds `]`/`[`); a host without file keys can bind these.
    def action_next_file(self) -> None:
        self.post_message(self.FileRequested(1))

    def action_previous_file(self) -> None:
        self.post_message(self.FileRequested(-1))

    def action_render_anyway(self) -> None:
        if self.model and self.model.truncated:
            top = self.scroll_offset.y
            self.show_file(self.model.path, self._block, max_line=1 << 30)
            self.scroll_to(y=top, animate=False)

    @property
    def rows(self) -> list[Row]:
        return self.model.rows if self.model else []

    def _parts(self, index: int) -> tuple[Segment | None, Segment | None, list[Segment]]:
        """(old-number gutter, new-number gutter, body) of a row; code rows only have gutters.

        The body of a code row is the sign and the highlighted code, with search matches marked."""
        if self.model is not None:
            ensure_word_spans(self.model, index)
        row = self.rows[index]
        base = ROW_STYLES.get(row.kind, NULL)
        if row.kind in SIGNS:
            gutter = GUTTER + base
            old = Segment(f"{row.old_no:>5} " if row.old_no is not None else "      ", gutter)
            new = Segment(f"{row.new_no:>5} " if row.new_no is not None else "      ", gutter)
            body = [Segment(SIGNS[row.kind] + " ", base), *self._code(row, base)]
            if self._marks or self.cursor_row >= 0:
                old, new, body[0] = self._line_marks(index, row.kind, old, new, body[0], base)
            if self.search_query and index in self._match_set:
                body = self._mark_query(body, 2, self._is_current_match(index))
            return old, new, body
        lead = "  " if row.kind != "header" else ""
        body = [Segment(lead, base), *_overlay(row.text, [(row.text, NULL)], row.escapes, base, ESCAPE)]
        if row.kind == "hunk" and self.skipped_hunks and self.model is not None:
            skipped = bisect.bisect_right(self.model.hunk_rows, index) - 1 in self.skipped_hunks
            body[0] = Segment("✗ " if skipped else "✓ ", HUNK_SKIPPED if skipped else HUNK_KEPT)
            if skipped:
                body.append(Segment("  not approved", HUNK_SKIPPED))
        if self.search_query and index in self._match_set:
            body = self._mark_query(body, 0, self._is_current_match(index))
        return None, None, body

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
        Kept until replaced; drawn whenever that file is shown."""
        if (path, list(ranges)) == self._mark_ranges:
            return
        self._mark_ranges = (path, list(ranges))
        self._resolve_marks()
        self._redraw_lines()

    def _resolve_marks(self) -> None:
        path, ranges = self._mark_ranges
        self._marks = {}
        if self.model is None or self.model.path != path or not ranges:
            return
        for index, row in enumerate(self.model.rows):
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

    def _redraw_lines(self) -> None:
        self._cache.clear()
        self._final.clear()
        self.refresh()

    def move_cursor_to(self, row: int) -> None:
        """Put the line cursor on model row ``row`` (kept on screen)."""
        if not self.rows:
            return
        self.cursor_row = max(0, min(len(self.rows) - 1, row))
        top, height = int(self.scroll_offset.y), self.size.height
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
        bottom = self._row_at(int(self.scroll_offset.y) + max(0, self.size.height - 1))
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

    def _code(self, row: Row, base: Style) -> list[Segment]:
        packed = self._tokens.get(id(row))
        if packed is not None:
            pieces = _unpack(packed)
        else:
            if len(self.rows) <= SYNC_HIGHLIGHT_ROWS:
                pieces = _lex(self.model.path if self.model else "", row.text)
            else:  # big file: plain until the highlight worker has lexed this row
                pieces = [(row.text, NULL)]
                self._want_highlight()
        word = WORD_STYLES.get(row.kind)
        marks = row.spans if word else []
        segments = _overlay(row.text, pieces, marks, base, word or NULL)
        if row.escapes:  # escapes drawn distinctly, above syntax and word colours
            segments = _restyle(segments, row.escapes, ESCAPE)
        return segments

    def _mark_query(self, segments: list[Segment], text_offset: int, current: bool) -> list[Segment]:
        """Paint occurrences of the search query inside already-styled segments."""
        plain = "".join(seg.text for seg in segments)
        needle = self.search_query.lower()
        hits: list[tuple[int, int]] = []
        start = plain.lower().find(needle, text_offset)
        while needle and start >= 0:
            hits.append((start, start + len(needle)))
            start = plain.lower().find(needle, start + len(needle))
        if not hits:
            return segments
        return _restyle(segments, hits, MATCH_CURRENT if current else MATCH)

    def _is_current_match(self, index: int) -> bool:
        return self.match_index >= 0 and self.matches[self.match_index] == index

    def _row_segments(self, index: int) -> list[Segment]:
        """A unified line: both line numbers, the sign and the code."""
        old, new, body = self._parts(index)
        return [old, new, *body] if old is not None and new is not None else body

    def _half(self, index: int, width: int, left: bool, base: Style, part: int = 0, offset: int = 0) -> Strip:
        """One side of a side-by-side line: that side's line number, then the code from code column
        ``offset`` (horizontal scroll), or wrapped part ``part``."""
        if index < 0:
            return Strip.blank(width, base + EMPTY_SIDE)
        old, new, body = self._parts(index)
        row_style = base + ROW_STYLES.get(self.rows[index].kind, NULL)
        gutter = old if left else new
        if gutter is None:
            return Strip(body).crop_extend(0, width, row_style)
        avail = max(1, width - HALF_CODE_X)
        start = 2 + offset + part * avail
        code = Strip(body).crop(start, start + avail)
        lead = [gutter, body[0]] if part == 0 else [Segment(" " * 6, gutter.style), Segment("  ", body[0].style)]
        return Strip([*lead, *code]).crop_extend(0, width, row_style)

    def _unified_part(self, index: int, part: int, width: int, base: Style) -> Strip:
        """Wrapped part ``part`` of a unified row: numbers and sign on the first part only."""
        old, new, body = self._parts(index)
        row_style = base + ROW_STYLES.get(self.rows[index].kind, NULL)
        if old is None or new is None:
            return Strip(body).crop_extend(0, width, row_style)
        avail = max(1, width - CODE_X)
        start = 2 + part * avail
        code = Strip(body).crop(start, start + avail)
        lead = [old, new, body[0]] if part == 0 else [Segment(" " * 12, old.style), Segment("  ", body[0].style)]
        return Strip([*lead, *code]).crop_extend(0, width, row_style)

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's own style is looked up once per frame, not once per line (rich_style walks
        # the DOM and the theme each time).
        base = self.rich_style
        if base != self._base_style:  # theme changed: split lines embed the background in their padding
            self._cache.clear()
            self._base_style = base
        lines = super().render_lines(crop)
        self._schedule_prefetch()
        self._post_status()
        return lines

    def _build_display_line(self, index: int, width: int, base: Style) -> Strip:
        """The unstyled strip for display line ``index`` (cached; the theme is applied afterwards)."""
        split = self._split_active
        note = self._note_line(index, width, base) if self._notes else None
        if note is not None:
            return note
        if self.wrap or split:
            logical, part = self._locate(index)
            offset = 0 if self.wrap else int(self.scroll_offset.x)
            key: tuple[object, ...] = (index, width, self.wrap, offset)
            strip = self._cache.get(key)
            if strip is None:
                if split:
                    left, right = self._pairs[logical]
                    half = (width - 1) // 2
                    if left == right and self.rows[left].kind != "ctx":  # header, hunk, meta: across both sides
                        pad = ROW_STYLES.get(self.rows[left].kind, NULL)
                        strip = Strip(self._row_segments(left)).crop_extend(0, width, base + pad)
                    else:
                        strip = Strip.join([self._half(left, half, True, base, part, offset), SEPARATOR,
                                            self._half(right, width - half - 1, False, base, part, offset)])
                else:
                    strip = self._unified_part(logical, part, width, base)
                self._cache[key] = strip
            return strip
        row = self._locate(index)[0]
        key = (row, 0)
        strip = self._cache.get(key)
        if strip is None:
            strip = Strip(self._row_segments(row))
            self._cache[key] = strip
        return strip

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
        replaced; drawn whenever that file is shown. Text is shown with control characters as escapes."""
        if (path, list(notes)) == self._note_specs:
            return
        self._note_specs = (path, list(notes))
        top_row = self._row_at(int(self.scroll_offset.y)) if self.model is not None else 0
        self._resolve_notes()
        if self.model is not None:
            self._layout_rows()
            self.scroll_to(y=self._y_of(top_row), animate=False)

    def _resolve_notes(self) -> None:
        path, specs = self._note_specs
        notes: dict[int, list[tuple[str, str]]] = {}
        if self.model is not None and self.model.path == path and specs:
            rows = self.model.rows
            new_at = {r.new_no: i for i, r in enumerate(rows) if r.kind in ("ctx", "add") and r.new_no is not None}
            old_at = {r.old_no: i for i, r in enumerate(rows) if r.kind in ("ctx", "del") and r.old_no is not None}
            for side, line, kind, text in specs:
                row = (new_at if side == "new" else old_at).get(line)
                if row is not None:
                    shown = safe_text(text.replace("\n", " ⏎ "))
                    notes.setdefault(row, []).append((kind, shown))
        self._notes = notes
        self._notes_version += 1
        self._wrap_key = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self._base_style if self._base_style is not None else self.rich_style
        fitted = self._split_active or self.wrap or self._is_note_line(index)  # built at the view's width
        if index >= self._display_count():
            return Strip.blank(width, base)
        strip = self._build_display_line(index, width, base)
        key = (fitted, self.wrap, index, scroll_x, width, base)
        final = self._final.get(key)
        if final is not None and final[0] is strip:  # same source strip: nothing changed
            return final[1]
        if fitted:
            out = strip.apply_style(base)
        else:
            pad = ROW_STYLES.get(self.rows[self._locate(index)[0]].kind, NULL)
            out = strip.crop_extend(scroll_x, scroll_x + width, base + pad).apply_style(base)
        self._final[key] = (strip, out)
        return out

    # -- prefetch: build the pages around the viewport while the user reads ------------------
    def _schedule_prefetch(self) -> None:
        if not self._prefetch_pending and self.model is not None:
            self._prefetch_pending = True
            self.set_timer(PREFETCH_DELAY, self._prefetch_step)

    def _prefetch_step(self) -> None:
        """Build up to ``PREFETCH_CHUNK`` uncached lines of the next page (then the previous one), in
        short steps so a key press never waits long behind it."""
        self._prefetch_pending = False
        if self.model is None or not self.is_attached:
            return
        fitted = self._split_active or self.wrap
        total = self._display_count()
        top, height = int(self.scroll_offset.y), self.size.height
        width = self.size.width
        offset = 0 if self.wrap else int(self.scroll_offset.x)
        base = self._base_style if self._base_style is not None else self.rich_style
        built = 0
        for index in itertools.chain(range(top + height, min(total, top + 2 * height)),
                                     range(max(0, top - height), top)):
            if ((index, width, self.wrap, offset) if fitted else (index, 0)) in self._cache:
                continue
            self._build_display_line(index, width, base)
            built += 1
            if built >= PREFETCH_CHUNK:
                self._schedule_prefetch()
                return

    def set_skipped_hunks(self, skipped: frozenset[int]) -> None:
        """Mark the shown file's hunks left out of the approval (0-based; empty = all approved)."""
        if skipped != self.skipped_hunks:
            self.skipped_hunks = skipped
            self._cache.clear()
            self._final.clear()
            self.refresh()
            self._post_status()

    def hunk_at_cursor(self) -> int:
        """The 0-based hunk holding the line cursor (else the hunk at the top of the view); -1 if none."""
        if not self.model or not self.model.hunk_rows:
            return -1
        if self.cursor_row >= 0:
            return max(0, bisect.bisect_right(self.model.hunk_rows, self.cursor_row) - 1)
        return max(0, self._current_hunk())

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
        assert self.model is not None
        row = self.model.hunk_rows[i]
        self.scroll_to(y=self._y_of(row), animate=False)
        change_row, column = self._first_change_column(row)
        self._reveal_column(change_row, column)
        self.post_message(self.HunkChanged(i, len(self.model.hunk_rows)))

    def action_next_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        top = int(self.scroll_offset.y)
        for i, row in enumerate(self.model.hunk_rows):
            if self._y_of(row) > top:
                self._goto_hunk(i)
                return

    def action_previous_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        top = int(self.scroll_offset.y)
        for i in range(len(self.model.hunk_rows) - 1, -1, -1):
            if self._y_of(self.model.hunk_rows[i]) < top:
                self._goto_hunk(i)
                return


def _cells(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)


def _restyle(segments: list[Segment], spans: Sequence[tuple[int, int]], mark: Style) -> list[Segment]:
    """``segments`` with the characters inside ``spans`` (offsets into their joined text) styled ``mark``."""
    out: list[Segment] = []
    pos = 0
    for seg in segments:
        seg_start, seg_end = pos, pos + len(seg.text)
        pos = seg_end
        inside_spans = [(s, e) for s, e in spans if s < seg_end and e > seg_start]
        if not inside_spans:
            out.append(seg)
            continue
        cuts = sorted({seg_start, seg_end, *(max(seg_start, min(seg_end, c)) for h in inside_spans for c in h)})
        for a, b in itertools.pairwise(cuts):
            if a < b:
                inside = any(s <= a and b <= e for s, e in inside_spans)
                out.append(Segment(seg.text[a - seg_start:b - seg_start],
                                   (seg.style or NULL) + mark if inside else seg.style))
    return out


def _overlay(text: str, pieces: list[tuple[str, Style]], spans: Sequence[tuple[int, int]], base: Style,
             mark: Style) -> list[Segment]:
    """Lexed ``pieces`` of ``text`` as segments on ``base``, with ``spans`` also styled ``mark``."""
    segments = [Segment(value, base + style) for value, style in pieces if value]
    return _restyle(segments, spans, mark) if spans else segments
