"""TextLines: a read-only, scrollable list of one-line texts with the Line API (only the visible lines are
turned into strips), used by the Review screen's Site tab for the site-state diff.

Each line passes through :func:`~codebox_tui.textsafe.safe_text` again when it is drawn, so even a caller
that forgot to escape sandbox text cannot send a control sequence to the terminal."""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from codebox_tui.textsafe import safe_text

Styler = Callable[[str], Style]


def _plain(_: str) -> Style:
    return Style()


class TextLines(ScrollView, can_focus=True):
    """``lines`` shown as they are (one row each), styled per line by ``styler``."""

    DEFAULT_CSS = """
    TextLines { height: 1fr; }
    """

    def __init__(self, lines: list[str] | None = None, *, styler: Styler = _plain, id: str | None = None) -> None:
        super().__init__(id=id)
        self.styler = styler
        self.lines: list[str] = []
        self.set_lines(lines or [])

    def set_lines(self, lines: list[str]) -> None:
        self.lines = [safe_text(line) for line in lines]
        width = max((cell_len(line) for line in self.lines), default=0)
        self.virtual_size = Size(width, len(self.lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.size.width
        if index >= len(self.lines):
            return Strip.blank(width)
        text = self.lines[index]
        x = int(self.scroll_offset.x)
        return Strip([Segment(text, self.styler(text))]).crop_extend(x, x + width, None)
