"""The diff view's messages (``DiffView.HunkChanged`` and the rest; handlers are named ``on_diff_view_…``)."""

from __future__ import annotations

from textual.message import Message


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
