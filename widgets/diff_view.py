"""DiffView: a Line-API diff viewer. Only visible rows are rendered; each row's Strip is built once
and cached. Syntax colours come from pygments (per line, token styles cached); changed words inside
paired -/+ lines are highlighted."""

from __future__ import annotations

import gc
import itertools
from functools import lru_cache, partial
from typing import ClassVar

from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

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
SIGNS = {"add": "+", "del": "-", "ctx": " "}
NULL = Style()
SEPARATOR = Strip([Segment("│", GUTTER)], 1)
PREFETCH_DELAY = 0.02  # s after a frame before the neighbouring pages are built
PREFETCH_CHUNK = 12  # lines per prefetch step
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


def settle_memory() -> None:
    """Collect once, then freeze what is alive (a big diff model is tens of thousands of objects).

    Python's full GC passes otherwise walk every row again and again while the user scrolls: measured
    here as 100–460 ms pauses at random key presses in a 20,000-line file. One collection when a big
    file opens (the previous model is freed) costs less than that and happens once."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class DiffView(ScrollView, can_focus=True):
    """Shows one file's diff. ``n``/``p`` move between hunks."""

    HELP = """\
## Diff view
- `n` / `p`: next / previous hunk (next / previous file: the screen's `]` / `[`)
- `F3` / `shift+F3`: next / previous search match (the screen calls `search(text)`)
- `s`: side-by-side / unified (side-by-side is automatic at 160 columns or more until toggled)
- `R`: render lines that were cut for length (very long lines show `… (+N chars)`)
- Binary files show a placeholder: their bytes travel as a git binary patch.
- `↑` `↓` `PgUp` `PgDn` `Home` `End`: scroll
- Added lines are green, removed lines red; changed words are highlighted.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_hunk", "Next hunk", id="diff.next_hunk"),
        Binding("p", "previous_hunk", "Prev hunk", id="diff.previous_hunk"),
        Binding("f3", "next_match", "Next match", show=False, id="diff.next_match"),
        Binding("shift+f3", "previous_match", "Prev match", show=False, id="diff.previous_match"),
        Binding("s", "toggle_split", "Split/unified", id="diff.toggle_split"),
        Binding("R", "render_anyway", "Render anyway", show=False, id="diff.render_anyway"),
        Binding("j", "scroll_down", "Down", show=False, id="diff.down"),
        Binding("k", "scroll_up", "Up", show=False, id="diff.up"),
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

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.model: FileDiffModel | None = None
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(4096)
        self._final: LRUCache[tuple[object, ...], tuple[Strip, Strip]] = LRUCache(1024)
        self._base_style: Style | None = None
        self._prefetch_pending = False
        self._width = 0
        self._block = ""
        self.search_query = ""
        self.matches: list[int] = []  # row indexes containing the query
        self._match_set: set[int] = set()
        self.match_index = -1
        self._tokens: dict[int, list[tuple[str, Style]]] = {}  # id(row) -> lexed pieces (worker)
        self._highlighting = False
        self.split_mode = "auto"  # auto | unified | split
        self.auto_split_width = AUTO_SPLIT_WIDTH
        self._pairs: list[tuple[int, int]] = []
        self._position: list[int] = []

    def show_file(self, path: str, block: str, *, max_line: int = MAX_LINE) -> None:
        """Show one file's ``diff --git`` block (see ``diff_model.split_patch``).

        Blocks over ``WORKER_PARSE_LINES`` lines are parsed in a worker thread ("Parsing…" meanwhile)."""
        self._block = block
        if block.count("\n") > WORKER_PARSE_LINES:
            self.show_message(f"Parsing {path} …")
            self.run_worker(partial(self._parse_worker, path, block, max_line), thread=True, exclusive=True,
                            group="diff-parse", exit_on_error=False)
            return
        self._set_model(build_model(path, block, max_line=max_line), block)

    def _parse_worker(self, path: str, block: str, max_line: int) -> None:
        model = build_model(path, block, max_line=max_line)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._set_model, model, block)

    def _set_model(self, model: FileDiffModel, block: str) -> None:
        if block is not self._block:  # a newer show_file() won
            return
        self.model = model
        self.matches, self.match_index = [], -1
        self._match_set = set()
        self._tokens = {}
        self._highlighting = False
        if self.search_query:
            self._find_all()
        self._width = max((len(r.text) for r in self.model.rows), default=0) + 14
        self._pairs, self._position = side_by_side(self.model)
        self._layout_rows()
        self.scroll_to(0, 0, animate=False)
        if len(model.rows) > SYNC_HIGHLIGHT_ROWS:
            settle_memory()

    # -- side by side ---------------------------------------------------------------------------
    @property
    def is_split(self) -> bool:
        return self.split_mode == "split" or (self.split_mode == "auto" and self.size.width >= self.auto_split_width)

    def _layout_rows(self) -> None:
        self._cache.clear()
        if self.is_split and self.model is not None and self._pairs:
            self.virtual_size = Size(self.size.width, len(self._pairs))
        else:
            self.virtual_size = Size(self._width, len(self.rows))
        self.refresh()

    def _y_of(self, row: int) -> int:
        """Display line of a model row in the current mode."""
        return self._position[row] if self.is_split and row < len(self._position) else row

    def action_toggle_split(self) -> None:
        top_row = self._row_at(int(self.scroll_offset.y))
        self.split_mode = "unified" if self.is_split else "split"
        self._layout_rows()
        self.scroll_to(y=self._y_of(top_row), animate=False)

    def _row_at(self, y: int) -> int:
        if self.is_split and 0 <= y < len(self._pairs):
            left, right = self._pairs[y]
            return left if left >= 0 else right
        return y

    def on_resize(self) -> None:
        if self.model is not None and (self.split_mode == "auto" or self.is_split):
            self._layout_rows()

    def show_message(self, text: str) -> None:
        self.model = FileDiffModel("", [Row("meta", text)], [], 0, 0, False)
        self._pairs, self._position = [], []
        self._tokens = {}
        self._cache.clear()
        self.virtual_size = Size(len(text), 1)
        self.refresh()

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
                tokens[id(row)] = _lex(model.path, row.text)
                chunk.append(index)
            if len(chunk) >= 200:
                self.app.call_from_thread(self._rows_lexed, model, chunk)
                chunk = []
        if chunk:
            self.app.call_from_thread(self._rows_lexed, model, chunk)
        gc.freeze()  # the tokens just made live as long as the model: keep them out of later GC passes

    def _rows_lexed(self, model: FileDiffModel, indexes: list[int]) -> None:
        if self.model is not model:
            return
        top = int(self.scroll_offset.y)
        bottom = top + self.size.height
        if self.is_split:
            self._cache.clear()
        for i in indexes:
            self._cache.discard((i, 0))
        if any(top <= i < bottom for i in indexes):
            self.refresh()

    # -- search -------------------------------------------------------------------------------
    def _find_all(self) -> None:
        needle = self.search_query.lower()
        self.matches = [i for i, row in enumerate(self.rows) if needle and needle in row.text.lower()]
        self._match_set = set(self.matches)

    def search(self, query: str) -> int:
        """Highlight ``query`` (case-insensitive) and jump to the first match; returns the match count."""
        self.search_query = query
        self._find_all()
        self.match_index = -1
        self._cache.clear()
        self.refresh()
        if self.matches:
            self.action_next_match()
        else:
            self.post_message(self.SearchResult(query, -1, 0))
        return len(self.matches)

    def _goto_match(self, index: int) -> None:
        self.match_index = index
        row = self.matches[index]
        self.scroll_to(y=max(0, self._y_of(row) - self.size.height // 3), animate=False)
        self._cache.clear()
        self.refresh()
        self.post_message(self.SearchResult(self.search_query, index, len(self.matches)))

    def action_next_match(self) -> None:
        if self.matches:
            self._goto_match((self.match_index + 1) % len(self.matches))

    def action_previous_match(self) -> None:
        if self.matches:
            self._goto_match((self.match_index - 1) % len(self.matches))

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
            if self.search_query and index in self._match_set:
                body = self._mark_query(body, 2, self._is_current_match(index))
            return old, new, body
        body = [Segment(("  " if row.kind != "header" else "") + row.text, base)]
        if self.search_query and index in self._match_set:
            body = self._mark_query(body, 0, self._is_current_match(index))
        return None, None, body

    def _code(self, row: Row, base: Style) -> list[Segment]:
        pieces = self._tokens.get(id(row))
        if pieces is None:
            if len(self.rows) <= SYNC_HIGHLIGHT_ROWS:
                pieces = _lex(self.model.path if self.model else "", row.text)
            else:  # big file: plain until the highlight worker has lexed this row
                pieces = [(row.text, NULL)]
                self._want_highlight()
        word = WORD_STYLES.get(row.kind)
        out: list[Segment] = []
        pos = 0
        for value, style in pieces:
            start, end = pos, pos + len(value)
            pos = end
            if not word or not row.spans:
                out.append(Segment(value, base + style))
                continue
            cuts = sorted({start, end, *(max(start, min(end, s)) for span in row.spans for s in span)})
            for a, b in itertools.pairwise(cuts):
                if a == b:
                    continue
                marked = any(s <= a and b <= e for s, e in row.spans)
                out.append(Segment(value[a - start:b - start], base + style + (word if marked else NULL)))
        return out

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
        mark = MATCH_CURRENT if current else MATCH
        out: list[Segment] = []
        pos = 0
        for seg in segments:
            seg_start, seg_end = pos, pos + len(seg.text)
            pos = seg_end
            cuts = sorted({seg_start, seg_end, *(max(seg_start, min(seg_end, c)) for h in hits for c in h)})
            for a, b in itertools.pairwise(cuts):
                if a < b:
                    inside = any(s <= a and b <= e for s, e in hits)
                    out.append(Segment(seg.text[a - seg_start:b - seg_start], (seg.style or Style()) + mark
                                       if inside else seg.style))
        return out

    def _is_current_match(self, index: int) -> bool:
        return self.match_index >= 0 and self.matches[self.match_index] == index

    def _row_segments(self, index: int) -> list[Segment]:
        """A unified line: both line numbers, the sign and the code."""
        old, new, body = self._parts(index)
        return [old, new, *body] if old is not None and new is not None else body

    def _half(self, index: int, width: int, left: bool, base: Style) -> Strip:
        """One side of a side-by-side line: that side's line number, then the code."""
        if index < 0:
            return Strip.blank(width, base + EMPTY_SIDE)
        old, new, body = self._parts(index)
        gutter = old if left else new
        segments = [gutter, *body] if gutter is not None else body
        return Strip(segments).crop_extend(0, width, base + ROW_STYLES.get(self.rows[index].kind, NULL))

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's own style is looked up once per frame, not once per line (rich_style walks
        # the DOM and the theme each time).
        base = self.rich_style
        if base != self._base_style:  # theme changed: split lines embed the background in their padding
            self._cache.clear()
            self._base_style = base
        lines = super().render_lines(crop)
        self._schedule_prefetch()
        return lines

    def _build_display_line(self, index: int, width: int, base: Style) -> Strip:
        """The unstyled strip for display line ``index`` (cached; the theme is applied afterwards)."""
        if self.is_split and self._pairs:
            key = (index, width)
            strip = self._cache.get(key)
            if strip is None:
                left, right = self._pairs[index]
                half = (width - 1) // 2
                if left == right and self.rows[left].kind != "ctx":  # header, hunk, meta: across both sides
                    pad = ROW_STYLES.get(self.rows[left].kind, NULL)
                    strip = Strip(self._row_segments(left)).crop_extend(0, width, base + pad)
                else:
                    strip = Strip.join([self._half(left, half, True, base), SEPARATOR,
                                        self._half(right, width - half - 1, False, base)])
                self._cache[key] = strip
            return strip
        key = (index, 0)
        strip = self._cache.get(key)
        if strip is None:
            strip = Strip(self._row_segments(index))
            self._cache[key] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        base = self._base_style if self._base_style is not None else self.rich_style
        split = self.is_split and bool(self._pairs)
        if index >= (len(self._pairs) if split else len(self.rows)):
            return Strip.blank(width, base)
        strip = self._build_display_line(index, width, base)
        key = (split, index, 0 if split else scroll_x, width, base)
        final = self._final.get(key)
        if final is not None and final[0] is strip:  # same source strip: nothing changed
            return final[1]
        if split:
            out = strip.apply_style(base)
        else:
            pad = ROW_STYLES.get(self.rows[index].kind, NULL)
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
        split = self.is_split and bool(self._pairs)
        total = len(self._pairs) if split else len(self.rows)
        top, height = int(self.scroll_offset.y), self.size.height
        width = self.size.width
        base = self._base_style if self._base_style is not None else self.rich_style
        built = 0
        for index in itertools.chain(range(top + height, min(total, top + 2 * height)),
                                     range(max(0, top - height), top)):
            if (index, width if split else 0) in self._cache:
                continue
            self._build_display_line(index, width, base)
            built += 1
            if built >= PREFETCH_CHUNK:
                self._schedule_prefetch()
                return

    def _current_hunk(self) -> int:
        if not self.model or not self.model.hunk_rows:
            return -1
        top = int(self.scroll_offset.y)
        current = -1
        for i, row in enumerate(self.model.hunk_rows):
            if self._y_of(row) <= top:
                current = i
        return current

    def action_next_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        top = int(self.scroll_offset.y)
        for i, row in enumerate(self.model.hunk_rows):
            if self._y_of(row) > top:
                self.scroll_to(y=self._y_of(row), animate=False)
                self.post_message(self.HunkChanged(i, len(self.model.hunk_rows)))
                return

    def action_previous_hunk(self) -> None:
        if not self.model or not self.model.hunk_rows:
            return
        top = int(self.scroll_offset.y)
        for i in range(len(self.model.hunk_rows) - 1, -1, -1):
            if self._y_of(self.model.hunk_rows[i]) < top:
                self.scroll_to(y=self._y_of(self.model.hunk_rows[i]), animate=False)
                self.post_message(self.HunkChanged(i, len(self.model.hunk_rows)))
                return
