"""Drawing of the diff view's display lines (no Textual): the segments of one display line, cut to the
view's width and horizontal position, each segment's style combined with the widget's once.

``DiffView`` turns the segments of a line into one Strip and caches it; this module reads the model, the
display index, the review marks, the search state and the lexed pieces, and changes none of them."""

from __future__ import annotations

import bisect
from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style

from widgets.diff_highlight import Packed, cells, lex, overlay, restyle, unpack
from widgets.diff_layout import DisplayIndex
from widgets.diff_marks import ReviewMarks
from widgets.diff_model import Row, ensure_word_spans
from widgets.diff_search import SearchState
from widgets.diff_styles import (
    CODE_X,
    EMPTY_SIDE,
    ESCAPE,
    GUTTER,
    HALF_CODE_X,
    HUNK_KEPT,
    HUNK_SKIPPED,
    LINE_CURSOR,
    MARK_CHAR,
    MARK_STYLES,
    MATCH,
    MATCH_CURRENT,
    NOTE_STYLE,
    NULL,
    ROW_STYLES,
    SEPARATOR,
    SIGNS,
    WORD_STYLES,
)

SYNC_HIGHLIGHT_ROWS = 2000  # above this, rows are lexed by a worker thread (plain until then)

Segments = list[Segment]


def crop(segments: Segments, start: int, end: int) -> Segments:
    """The cells ``start`` to ``end`` of ``segments`` (a wide character cut in two becomes spaces)."""
    out: Segments = []
    pos = 0
    for segment in segments:
        if pos >= end:
            break
        text = segment.text
        after = pos + (len(text) if text.isascii() else cells(text))
        if after > start:
            if pos < start or after > end:
                if after > end:
                    segment = segment.split_cells(end - pos)[0]
                if pos < start:
                    segment = segment.split_cells(start - pos)[1]
            out.append(segment)
        pos = after
    return out


def fit(segments: Segments, start: int, end: int, pad: Style) -> Segments:
    """``crop`` to ``start``–``end``, then padded with ``pad`` to exactly that many cells."""
    out = crop(segments, start, end) if start or _width(segments) > end else list(segments)
    missing = end - start - _width(out)
    if missing > 0:
        out.append(Segment(" " * missing, pad))
    return out


def _width(segments: Segments) -> int:
    return sum(len(s.text) if s.text.isascii() else cells(s.text) for s in segments)


class Palette:
    """The diff's styles combined with the widget's own style (the theme's background and colour) once per
    theme, so a line's segments get their final style when they are made, with no pass over them after."""

    def __init__(self, base: Style) -> None:
        self.base = base
        self.row = {kind: base + style for kind, style in ROW_STYLES.items()}
        self.gutter = {kind: base + GUTTER + style for kind, style in ROW_STYLES.items()}
        self.empty_side = base + EMPTY_SIDE
        self.note = base + NOTE_STYLE
        self.separator = Segment(SEPARATOR.text, base + GUTTER)
        self.hunk_skipped, self.hunk_kept = base + HUNK_SKIPPED, base + HUNK_KEPT

    def row_style(self, kind: str) -> Style:
        return self.row.get(kind, self.base)


class LineBuilder:
    """Builds display lines from the view's state objects (read only)."""

    def __init__(
        self,
        index: DisplayIndex,
        marks: ReviewMarks,
        search: SearchState,
        tokens: dict[int, Packed],
        want_highlight: Callable[[], None],
    ) -> None:
        self.index, self.marks, self.search, self.tokens = index, marks, search, tokens
        self.model = index.model
        self.rows = index.model.rows
        self.want_highlight = want_highlight
        self.sync_highlight = len(self.rows) <= SYNC_HIGHLIGHT_ROWS
        self.palette = Palette(NULL)

    def lexed(self, y: int) -> bool:
        """Whether display line ``y``'s rows are drawn with their syntax colours (part of a built line's key)."""
        if self.sync_highlight:
            return True
        index, tokens, rows = self.index, self.tokens, self.rows
        if not (index.mapped or index.split_active):  # one row per line
            return y >= len(rows) or id(rows[y]) in tokens
        if y >= index.display_count():
            return True
        left, right = index.logical_rows(index.locate(y)[0])
        return (left < 0 or id(rows[left]) in tokens) and (right < 0 or id(rows[right]) in tokens)

    def line(self, y: int, width: int, x: int, base: Style) -> Segments:
        """Display line ``y`` at ``width`` cells from column ``x`` (unwrapped views), styled on ``base``."""
        if base is not self.palette.base and base != self.palette.base:  # another theme
            self.palette = Palette(base)
        palette, index = self.palette, self.index
        if y >= index.display_count():
            return [Segment(" " * width, base)]
        note = index.note_at(y)
        if note is not None:
            return self._note(note, width)
        if index.split_active:
            return self._split(y, width, 0 if index.wrap else x)
        if index.wrap:
            logical, part = index.locate(y)
            return self._unified_part(logical, part, width)
        row = index.locate(y)[0]
        return fit(self.row_segments(row), x, x + width, palette.row_style(self.rows[row].kind))

    # -- one model row ---------------------------------------------------------------------------
    def parts(self, index: int) -> tuple[Segment | None, Segment | None, Segments]:
        """(old-number gutter, new-number gutter, body) of model row ``index``; only code rows have gutters.

        The body of a code row is the sign and the highlighted code, with search matches marked."""
        row = ensure_word_spans(self.model, index)
        palette, search = self.palette, self.search
        base = palette.row_style(row.kind)
        if row.kind in SIGNS:
            gutter = palette.gutter[row.kind]
            old = Segment(f"{row.old_no:>5} " if row.old_no is not None else "      ", gutter)
            new = Segment(f"{row.new_no:>5} " if row.new_no is not None else "      ", gutter)
            body = [Segment(SIGNS[row.kind] + " ", base), *self._code(index, row, base)]
            marks = self.marks
            if marks.marks or marks.cursor_row >= 0:
                low, high = marks.selection_bounds()
                if low <= index <= high:
                    old = Segment(old.text, gutter + LINE_CURSOR)
                    new = Segment(new.text, gutter + LINE_CURSOR)
                mark = marks.marks.get(index)
                if mark is not None:
                    body[0] = Segment(SIGNS[row.kind] + MARK_CHAR, base + MARK_STYLES.get(mark, MARK_STYLES["note"]))
            if search.query and index in search:
                body = self._mark_query(body, 2, index)
            return old, new, body
        lead = "  " if row.kind != "header" else ""
        body = [Segment(lead, base), *overlay(row.text, [(row.text, NULL)], row.escapes, base, ESCAPE)]
        if row.kind == "hunk" and self.marks.skipped:
            path, _start, first_hunk = self.model.section_of(index)
            skipped_here = self.marks.skipped_in(path)
            if skipped_here:
                skipped = bisect.bisect_right(self.model.hunk_rows, index) - 1 - first_hunk in skipped_here
                body[0] = Segment("✗ " if skipped else "✓ ", palette.hunk_skipped if skipped else palette.hunk_kept)
                if skipped:
                    body.append(Segment("  not approved", palette.hunk_skipped))
        if search.query and index in search:
            body = self._mark_query(body, 0, index)
        return None, None, body

    def row_segments(self, index: int) -> Segments:
        """A unified line: both line numbers, the sign and the code."""
        old, new, body = self.parts(index)
        return [old, new, *body] if old is not None and new is not None else body

    def _code(self, index: int, row: Row, base: Style) -> Segments:
        packed = self.tokens.get(id(row))
        if packed is not None:
            pieces = unpack(packed)
        elif self.sync_highlight:
            pieces = lex(self.model.section_of(index)[0], row.text)
        else:  # big file: plain until the highlight worker has lexed this row
            pieces = [(row.text, NULL)]
            self.want_highlight()
        word = WORD_STYLES.get(row.kind)
        segments = overlay(row.text, pieces, row.spans if word else [], base, word or NULL)
        if row.escapes:  # escapes drawn distinctly, above syntax and word colours
            segments = restyle(segments, row.escapes, ESCAPE)
        return segments

    def _mark_query(self, segments: Segments, text_offset: int, index: int) -> Segments:
        """Occurrences of the search query painted inside already-styled segments."""
        hits = self.search.hits("".join(seg.text for seg in segments), text_offset)
        if not hits:
            return segments
        return restyle(segments, hits, MATCH_CURRENT if self.search.is_current(index) else MATCH)

    # -- display lines -----------------------------------------------------------------------------
    def _note(self, note: tuple[str, str], width: int) -> Segments:
        kind, text = note
        style = self.palette.note
        mark = MARK_STYLES.get(kind, MARK_STYLES["note"])
        return fit(
            [Segment(" " * CODE_X, style), Segment(f"{MARK_CHAR} {kind}: ", style + mark), Segment(text, style)],
            0,
            width,
            style,
        )

    def _split(self, y: int, width: int, offset: int) -> Segments:
        logical, part = self.index.locate(y)
        left, right = self.index.pairs[logical]
        if left == right and self.rows[left].kind != "ctx":  # header, hunk, meta: across both sides
            return fit(self.row_segments(left), 0, width, self.palette.row_style(self.rows[left].kind))
        half = (width - 1) // 2
        return [
            *self._half(left, half, True, part, offset),
            self.palette.separator,
            *self._half(right, width - half - 1, False, part, offset),
        ]

    def _half(self, index: int, width: int, left: bool, part: int, offset: int) -> Segments:
        """One side of a side-by-side line: that side's line number, then the code from code column
        ``offset`` (horizontal scroll), or wrapped part ``part``."""
        if index < 0:
            return [Segment(" " * width, self.palette.empty_side)] if width > 0 else []
        old, new, body = self.parts(index)
        row_style = self.palette.row_style(self.rows[index].kind)
        gutter = old if left else new
        if gutter is None:
            return fit(body, 0, width, row_style)
        avail = max(1, width - HALF_CODE_X)
        start = 2 + offset + part * avail
        lead = [gutter, body[0]] if part == 0 else [Segment(" " * 6, gutter.style), Segment("  ", body[0].style)]
        return fit([*lead, *crop(body, start, start + avail)], 0, width, row_style)

    def _unified_part(self, index: int, part: int, width: int) -> Segments:
        """Wrapped part ``part`` of a unified row: numbers and sign on the first part only."""
        old, new, body = self.parts(index)
        row_style = self.palette.row_style(self.rows[index].kind)
        if old is None or new is None:
            return fit(body, 0, width, row_style)
        avail = max(1, width - CODE_X)
        start = 2 + part * avail
        lead = [old, new, body[0]] if part == 0 else [Segment(" " * 12, old.style), Segment("  ", body[0].style)]
        return fit([*lead, *crop(body, start, start + avail)], 0, width, row_style)
