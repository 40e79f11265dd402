"""DiffView: a Line-API diff viewer. Only visible rows are rendered; each row's Strip is built once
and cached. Syntax colours come from pygments (per line, token styles cached); changed words inside
paired -/+ lines are highlighted.

One concept per module: layout and hunks (``diff_layout``), cursor, comment marks and notes
(``diff_marks``), search (``diff_search``), lexing and styling (``diff_highlight``), colours
(``diff_styles``); this module draws the lines and owns the keys, the model and background work."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Collection
from functools import partial
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.worker import get_current_worker

from codebox_tui.textsafe import safe_text
from widgets.diff_highlight import cells, lex, overlay, pack, restyle, unpack
from widgets.diff_model import (
    MAX_LINE,
    FileDiffModel,
    Row,
    build_continuous_model,
    build_model,
    ensure_word_spans,
    side_by_side,
)
from widgets.diff_search import DiffSearch
from widgets.diff_styles import (
    CODE_X,
    EMPTY_SIDE,
    ESCAPE,
    GUTTER,
    HALF_CODE_X,
    HUNK_KEPT,
    HUNK_SKIPPED,
    NULL,
    ROW_STYLES,
    SEPARATOR,
    SIGNS,
    WORD_STYLES,
)

PREFETCH_DELAY = 0.02  # s after a frame before the neighbouring pages are built
PREFETCH_CHUNK = 12  # lines per prefetch step
SYNC_HIGHLIGHT_ROWS = 2000  # above this, rows are lexed by a worker thread (plain until then)
HIGHLIGHT_MAX_ROWS = 100_000
WORKER_PARSE_LINES = 5000  # rows beyond this stay plain


class DiffView(DiffSearch, can_focus=True):
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

    def show_file(self, path: str, block: str, *, max_line: int = MAX_LINE) -> None:
        """Show one file's section of a patch (see ``diff_model.split_patch``).

        Blocks over ``WORKER_PARSE_LINES`` lines are parsed in a worker thread ("Parsing…" meanwhile)."""
        self._block, self._files = block, None
        self._parse(path, partial(build_model, path, block, max_line=max_line, tab_size=self.tab_size),
                    block.count("\n"), block)

    def show_files(self, files: list[tuple[str, str]], *, collapsed: Collection[str] = (), at: str | None = None,
                   max_line: int = MAX_LINE) -> None:
        """Show every file's section in one scroll (the continuous view): ``(path, block)`` in order, each
        under its header; files in ``collapsed`` (e.g. viewed ones) as their header only (``z`` toggles
        the file at the cursor). The view opens at file ``at`` (else at the top)."""
        token = object()
        self._block, self._files, self._collapsed, self._open_at = token, list(files), set(collapsed), at
        self._max_line = max_line
        lines = sum(block.count("\n") for path, block in files if path not in self._collapsed)
        builder = partial(build_continuous_model, self._files, collapsed=set(self._collapsed), max_line=max_line,
                          tab_size=self.tab_size)
        self._parse(f"{len(files)} files", builder, lines, token)

    def _parse(self, what: str, builder: Callable[[], FileDiffModel], lines: int, token: object) -> None:
        if lines > WORKER_PARSE_LINES:
            self.show_message(f"Parsing {what} …")
            self.run_worker(partial(self._parse_worker, builder, token), thread=True, exclusive=True,
                            group="diff-parse", exit_on_error=False)
            return
        self._set_model(builder(), token)

    def _parse_worker(self, builder: Callable[[], FileDiffModel], token: object) -> None:
        model = builder()
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._set_model, model, token)

    def action_toggle_collapse(self) -> None:
        """Continuous view: collapse the file at the cursor (or the top) to its header, or show it again."""
        path = self.current_path() if self.continuous else None
        if path is None or self._files is None:
            return
        self._collapsed.symmetric_difference_update({path})
        self.show_files(self._files, collapsed=self._collapsed, at=path, max_line=self._max_line)

    def _set_model(self, model: FileDiffModel, token: object) -> None:
        if token is not self._block:  # a newer show_file() won
            return
        self.model = model
        self.cursor_row, self.anchor_row = -1, None
        self._focus_row = None
        self._resolve_marks()
        self._resolve_notes()
        self.matches, self.match_index = [], -1
        self._match_set = set()
        self._tokens = {}
        self._highlighting = False
        if self.search_query:
            self._find_all()
        self._width = max((cells(r.text) for r in self.model.rows), default=0) + CODE_X
        self._pairs, self._position = side_by_side(self.model)
        self._layout_rows()
        self.scroll_to(0, 0, animate=False)
        at, self._open_at = self._open_at, None
        if at is not None and model.sections:
            self.scroll_to_file(at)

    def show_message(self, text: str) -> None:
        self.model = FileDiffModel("", [Row("meta", safe_text(text))], [], 0, 0, False)
        self._marks, self._notes = {}, {}
        self._notes_version += 1
        self._pairs, self._position = [], []
        self._tokens = {}
        self._cache.clear()
        self._final.clear()
        self.virtual_size = Size(cells(text), 1)
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
                tokens[id(row)] = pack(lex(model.section_of(index)[0], row.text))
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
        bottom = top + self._view_height
        if self._split_active or self.wrap:
            self._cache.clear()
        for i in indexes:
            self._cache.discard((i, 0))
        if self._mapped or any(top <= i < bottom for i in indexes):
            self.refresh()

    # Not bound here (the review screen binds `]`/`[`); a host without file keys can bind these.
    def action_next_file(self) -> None:
        self.post_message(self.FileRequested(1))

    def action_previous_file(self) -> None:
        self.post_message(self.FileRequested(-1))

    def action_render_anyway(self) -> None:
        if self.model and self.model.truncated:
            top = self.scroll_offset.y
            if self._files is not None and self.continuous:
                self.show_files(self._files, collapsed=self._collapsed, max_line=1 << 30)
            elif isinstance(self._block, str):
                self.show_file(self.model.path, self._block, max_line=1 << 30)
            self.scroll_to(y=top, animate=False)

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
            body = [Segment(SIGNS[row.kind] + " ", base), *self._code(index, row, base)]
            if self._marks or self.cursor_row >= 0:
                old, new, body[0] = self._line_marks(index, row.kind, old, new, body[0], base)
            if self.search_query and index in self._match_set:
                body = self._mark_query(body, 2, self._is_current_match(index))
            return old, new, body
        lead = "  " if row.kind != "header" else ""
        body = [Segment(lead, base), *overlay(row.text, [(row.text, NULL)], row.escapes, base, ESCAPE)]
        skipped_here = self._skipped.get(self.path_at(index), frozenset()) if self._skipped else frozenset()
        if row.kind == "hunk" and skipped_here and self.model is not None:
            first_hunk = self.model.section_of(index)[2]
            skipped = bisect.bisect_right(self.model.hunk_rows, index) - 1 - first_hunk in skipped_here
            body[0] = Segment("✗ " if skipped else "✓ ", HUNK_SKIPPED if skipped else HUNK_KEPT)
            if skipped:
                body.append(Segment("  not approved", HUNK_SKIPPED))
        if self.search_query and index in self._match_set:
            body = self._mark_query(body, 0, self._is_current_match(index))
        return None, None, body

    def _code(self, index: int, row: Row, base: Style) -> list[Segment]:
        packed = self._tokens.get(id(row))
        if packed is not None:
            pieces = unpack(packed)
        else:
            if len(self.rows) <= SYNC_HIGHLIGHT_ROWS:
                pieces = lex(self.model.section_of(index)[0] if self.model else "", row.text)
            else:  # big file: plain until the highlight worker has lexed this row
                pieces = [(row.text, NULL)]
                self._want_highlight()
        word = WORD_STYLES.get(row.kind)
        marks = row.spans if word else []
        segments = overlay(row.text, pieces, marks, base, word or NULL)
        if row.escapes:  # escapes drawn distinctly, above syntax and word colours
            segments = restyle(segments, row.escapes, ESCAPE)
        return segments

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

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self._view_width
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
        top, height = int(self.scroll_offset.y), self._view_height
        width = self._view_width
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
