"""Display index of the diff view (pure; no Textual): which model row (or side-by-side pair) and which
wrapped part or inline comment line each display line shows, and back.

A model's facts that need a pass over every row (the side-by-side pairs, the widest row) are taken by
``prepare`` where the model is built (the parse worker for a big diff), or lazily on first use; the
wrapped layout is computed on first use per mode and width. Nothing here draws."""

from __future__ import annotations

import bisect
import itertools

from widgets.diff_highlight import cells
from widgets.diff_marks import Note
from widgets.diff_model import FileDiffModel, side_by_side
from widgets.diff_styles import SIGNS


class DisplayIndex:
    """Display lines of one model in one mode (unified or side by side, wrapped or not, with notes)."""

    def __init__(
        self, model: FileDiffModel, pairs: list[tuple[int, int]] | None = None, position: list[int] | None = None
    ) -> None:
        self.model = model
        self._pairs = pairs
        self._position = position if position is not None else [] if pairs is not None else None
        self._widest: int | None = None
        self._widest_code: int | None = None
        self.split = False  # side by side asked for (``split_active`` also needs pairs)
        self.wrap = False
        self.code_width = 8  # cells for code on one display line (one half, side by side)
        self.notes: dict[int, list[Note]] = {}
        self._mode: tuple[object, ...] | None = None
        self._starts: list[int] | None = None
        self._base_counts: list[int] = []

    @classmethod
    def prepare(cls, model: FileDiffModel) -> DisplayIndex:
        """An index with every whole-model fact computed now (call it off the UI thread for big models)."""
        index = cls(model)
        _ = index.pairs, index.widest, index.widest_code
        return index

    @classmethod
    def message(cls, model: FileDiffModel) -> DisplayIndex:
        """An index for a one-line message: never side by side."""
        return cls(model, pairs=[], position=[])

    # -- whole-model facts (lazy) ----------------------------------------------------------------
    @property
    def pairs(self) -> list[tuple[int, int]]:
        """``(left, right)`` model rows of each side-by-side line (``diff_model.side_by_side``)."""
        if self._pairs is None:
            self._pairs, self._position = side_by_side(self.model)
        return self._pairs

    @property
    def position(self) -> list[int]:
        """Each model row's side-by-side line."""
        if self._position is None:
            self._pairs, self._position = side_by_side(self.model)
        return self._position

    @property
    def widest(self) -> int:
        """Cells of the widest row's text."""
        if self._widest is None:
            self._widest = max((cells(r.text) for r in self.model.rows), default=0)
        return self._widest

    @property
    def widest_code(self) -> int:
        """Cells of the widest code row's text."""
        if self._widest_code is None:
            self._widest_code = max((cells(r.text) for r in self.model.rows if r.kind in SIGNS), default=0)
        return self._widest_code

    # -- mode -----------------------------------------------------------------------------------
    def set_mode(
        self, *, split: bool, wrap: bool, code_width: int, notes: dict[int, list[Note]], notes_version: int
    ) -> None:
        """The view's mode; the wrapped layout is computed again (lazily) only when it changed."""
        mode = (split, wrap, code_width, notes_version)
        if mode != self._mode:
            self._mode, self._starts = mode, None
            self.split, self.wrap, self.code_width, self.notes = split, wrap, code_width, notes

    @property
    def split_active(self) -> bool:
        return self.split and bool(self.pairs)

    @property
    def mapped(self) -> bool:
        """Display lines differ from logical lines (wrapped, or inline comment lines)."""
        return self.wrap or bool(self.notes)

    def logical_count(self) -> int:
        return len(self.pairs) if self.split_active else len(self.model.rows)

    def logical_rows(self, logical: int) -> tuple[int, int]:
        """(left, right) model rows of a logical line; a unified row is its own both sides."""
        return self.pairs[logical] if self.split_active else (logical, logical)

    def starts(self) -> list[int]:
        """First display line of each logical line (row, or side-by-side pair), plus the total at the end.
        Computed once per mode (row lengths only; nothing is rendered)."""
        if self._starts is None:
            rows, avail, wrap = self.model.rows, self.code_width, self.wrap

            def lines(i: int) -> int:
                if i < 0 or rows[i].kind not in SIGNS or not wrap:
                    return 1
                return max(1, -(-cells(rows[i].text) // avail))

            split = self.split_active
            if split:
                counts = [
                    1 if left == right and rows[left].kind not in SIGNS else max(lines(left), lines(right))
                    for left, right in self.pairs
                ]
            else:
                counts = [lines(i) for i in range(len(rows))]
            self._base_counts = counts
            notes = self.notes
            if notes:  # inline comment lines after their row (after the pair, side by side)
                counts = list(counts)
                if split:
                    for logical, (left, right) in enumerate(self.pairs):
                        counts[logical] += len(notes.get(left, ())) + (
                            len(notes.get(right, ())) if right != left else 0
                        )
                else:
                    for row, items in notes.items():
                        if row < len(counts):
                            counts[row] += len(items)
            self._starts = list(itertools.accumulate(counts, initial=0))
        return self._starts

    # -- display line <-> model row ---------------------------------------------------------------
    def locate(self, y: int) -> tuple[int, int]:
        """(logical line, part) shown on display line ``y``: a part past the line's own wrapped lines is one
        of its inline comment lines."""
        if not self.mapped:
            return y, 0
        starts = self.starts()
        logical = bisect.bisect_right(starts, y) - 1
        return logical, y - starts[logical]

    def display_count(self) -> int:
        return self.starts()[-1] if self.mapped else self.logical_count()

    def y_of(self, row: int) -> int:
        """Display line of model row ``row``."""
        position = self.position if self.split_active else None
        logical = position[row] if position is not None and row < len(position) else row
        if self.mapped:
            starts = self.starts()
            return starts[min(logical, len(starts) - 1)]
        return logical

    def row_at(self, y: int) -> int:
        """The model row display line ``y`` belongs to (a pair's left row, else its right one)."""
        logical, _part = self.locate(y)
        if self.split_active and 0 <= logical < len(self.pairs):
            left, right = self.pairs[logical]
            return left if left >= 0 else right
        return logical

    def hunk_at(self, y: int) -> int:
        """The last hunk whose header is at or above display line ``y`` (-1: none)."""
        return bisect.bisect_right(self.model.hunk_rows, y, key=self.y_of) - 1

    def note_at(self, y: int) -> Note | None:
        """The inline comment shown on display line ``y``, else None."""
        if not self.notes:
            return None
        logical, part = self.locate(y)
        base = self._base_counts
        if logical >= len(base) or part < base[logical]:
            return None
        left, right = self.logical_rows(logical)
        items = self.notes.get(left, []) + (self.notes.get(right, []) if right != left else [])
        return items[min(len(items) - 1, part - base[logical])]
