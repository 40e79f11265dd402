"""Search state of the diff view (pure; no Textual): the query, the model rows that contain it
(case-insensitive, over each row's display text) and the current match. ``DiffView`` owns one and
brings the current match on screen; ``diff_lines`` paints the hits inside a line."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from widgets.diff_model import Row


class SearchState:
    """The query, its matching rows (in order) and the current match (-1: none chosen yet)."""

    __slots__ = ("_match_set", "index", "matches", "query", "version")

    def __init__(self) -> None:
        self.query = ""
        self.matches: list[int] = []
        self._match_set: frozenset[int] = frozenset()
        self.index = -1
        self.version = 0  # changes whenever the painted matches change

    def set_query(self, query: str, rows: Sequence[Row]) -> None:
        """Search ``rows`` for ``query`` (an empty query clears the search); no match is current yet."""
        self.query = query
        self.find(rows)

    def find(self, rows: Sequence[Row]) -> None:
        """Find the query again in ``rows`` (a new model): every match is new, none is current."""
        needle = self.query.lower()
        self.matches = [i for i, row in enumerate(rows) if needle in row.text.lower()] if needle else []
        self._match_set = frozenset(self.matches)
        self.index = -1
        self.version += 1

    def forget_matches(self) -> None:
        """No matches (the shown model is gone); the query is kept for the next model."""
        self.matches, self._match_set, self.index = [], frozenset(), -1
        self.version += 1

    def select(self, index: int) -> None:
        """Make match ``index`` the current one."""
        self.index = index
        self.version += 1

    def __contains__(self, row: int) -> bool:
        return row in self._match_set

    def first_from(self, row: int) -> int:
        """The match index of the first match at or after model row ``row`` (wrapping to the first)."""
        return bisect.bisect_left(self.matches, row) % len(self.matches) if self.matches else -1

    def step(self, delta: int) -> int:
        """The match index ``delta`` matches away from the current one, wrapping (-1 without matches)."""
        return (self.index + delta) % len(self.matches) if self.matches else -1

    def is_current(self, row: int) -> bool:
        return self.index >= 0 and self.matches[self.index] == row

    def hits(self, plain: str, offset: int) -> list[tuple[int, int]]:
        """``(start, end)`` of each occurrence of the query in ``plain`` from character ``offset`` on."""
        needle = self.query.lower()
        if not needle:
            return []
        lowered = plain.lower()
        out: list[tuple[int, int]] = []
        start = lowered.find(needle, offset)
        while start >= 0:
            out.append((start, start + len(needle)))
            start = lowered.find(needle, start + len(needle))
        return out

    def status(self, shown_query: str) -> str:
        """The status line's part: ``"term" 3/7`` or ``"term" no match`` ("" without a query)."""
        if not self.query:
            return ""
        if self.matches:
            return f'"{shown_query}" {self.index + 1}/{len(self.matches)}'
        return f'"{shown_query}" no match'
