"""Search in the diff view: case-insensitive matches over the display text of every row, the current one
brought on screen (sideways too), and matches painted inside the styled segments of a line."""

from __future__ import annotations

import bisect

from rich.segment import Segment

from widgets.diff_highlight import restyle
from widgets.diff_marks import DiffMarks
from widgets.diff_styles import MATCH, MATCH_CURRENT


class DiffSearch(DiffMarks):
    """``search`` / ``n`` / ``N`` over ``DiffMarks``."""

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
        self._focus_row = row
        # the line cursor follows the match: `c`, `h` and the status act where the reader's eyes are
        self.cursor_row, self.anchor_row = row, None
        self.post_message(self.CursorMoved(row))
        top, height = int(self.scroll_offset.y), self._view_height
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
        return restyle(segments, hits, MATCH_CURRENT if current else MATCH)

    def _is_current_match(self, index: int) -> bool:
        return self.match_index >= 0 and self.matches[self.match_index] == index
