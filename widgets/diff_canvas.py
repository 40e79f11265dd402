"""The diff view's drawing surface: each display line built once (by ``diff_lines.LineBuilder``), finished for
the screen (``diff_frame.Finish``) and kept in a bounded cache keyed by what it shows, and the pages around the
viewport built ahead while the reader reads (the prefetch, in short steps that give way to a due frame).

``DiffView`` (diff_view.py) is this surface plus the keys, the messages, the model and the workers: it supplies
the line builder and what a frame shares (``_drawing``), and hears when a frame is drawn (``_frame_drawn``)."""

from __future__ import annotations

import itertools
import time

from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Region
from textual.scroll_view import ScrollView
from textual.strip import Strip

from widgets.diff_frame import Drawing, Finish, plain_finish
from widgets.diff_lines import LineBuilder

PREFETCH_DELAY = 0.005  # s after a frame before the neighbouring pages are built
PREFETCH_BUDGET = 0.003  # s of building per prefetch step: what a key press may wait behind one
PREFETCH_GAP = 0.001  # s between prefetch steps (the event loop takes keys and timers in between)
# Built lines kept (~11 pages at 45 rows). Each cached Strip is a few objects for the cycle collector to walk:
# thousands of them made its full passes take over 100 ms on a big file.
LINE_CACHE = 512


class DiffCanvas(ScrollView):
    """A scroll view whose display lines come from a ``LineBuilder``, cached as finished Strips."""

    _builder: LineBuilder  # set by the subclass: draws display line ``y``

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._lines: LRUCache[tuple[object, ...], Strip] = LRUCache(LINE_CACHE)
        self._prefetch_pending = False
        self._frame: Drawing | None = None  # while a frame is drawn
        self._last_frame: Drawing | None = None  # the last frame's drawing (for prefetch)
        self._drawn_top = 0  # the display line at the top of the last frame

    # -- what the subclass supplies ----------------------------------------------------------------
    def _drawing(self, base: Style, finish: Finish | None = None) -> Drawing:
        """What every line of a frame drawn now shares (width, position, theme, finish and versions)."""
        raise NotImplementedError

    def _showing(self) -> bool:
        """Whether anything is shown (nothing is prefetched before it is)."""
        raise NotImplementedError

    def _display_count(self) -> int:
        """Display lines of what is shown, in the mode the last ``_drawing`` put it in."""
        raise NotImplementedError

    def _frame_drawn(self) -> None:
        """Called after each frame (the subclass posts its status line)."""

    @property
    def _view_height(self) -> int:
        """Display lines on screen: the widget's height less a horizontal scrollbar."""
        return self.scrollable_content_region.height

    # -- drawing ----------------------------------------------------------------------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        # Once per frame, not once per line: the widget's own style (rich_style walks the DOM and the theme),
        # its width, the display index put in the current mode, how lines are finished for the screen, and
        # what every line's key shares.
        finish = plain_finish(self)
        self._frame = self._drawing(self.rich_style, finish)
        top = self._drawn_top = int(self.scroll_offset.y)
        try:
            if finish is None:  # a border, padding or tint: Textual's own path, line by line (render_line)
                lines = super().render_lines(crop)
            else:  # finished lines, cached with what they show: a scroll reuses them (widgets/diff_frame.py)
                lines = [self._line(top + y, self._frame) for y in crop.line_range]
                x1, x2 = crop.column_span
                if (x1, x2) != (0, finish.width):
                    lines = [line.crop(x1, x2) for line in lines]
        finally:
            self._last_frame, self._frame = self._frame, None
        self._schedule_prefetch()
        self._frame_drawn()
        return lines

    def render_line(self, y: int) -> Strip:
        y += int(self.scroll_offset.y)
        return self._line(y, self._frame) if self._frame is not None else self.display_line(y)

    def display_line(self, y: int) -> Strip:
        """Display line ``y`` (from the top of the diff, not of the view) as drawn at the current width,
        horizontal position and theme (that of the last frame): one Strip, built once and cached."""
        last = self._last_frame
        return self._line(y, self._drawing(last.base if last is not None else self.rich_style))

    def _line(self, y: int, drawing: Drawing) -> Strip:
        # A built line is reused while what it shows is the same: the line, whether its rows are lexed yet,
        # and the drawing's width, position, theme, finish, model, mode and the marks' and search's versions.
        key = (y, self._builder.lexed(y), drawing.shared)
        strip = self._lines.get(key)
        if strip is None:
            strip = Strip(self._builder.line(y, drawing.width, drawing.x, drawing.base), drawing.width)
            if drawing.finish is not None:
                strip = drawing.finish.apply(strip)
            self._lines[key] = strip
        return strip

    # -- prefetch: build the pages around the viewport while the user reads ------------------
    def _schedule_prefetch(self) -> None:
        if not self._prefetch_pending and self._showing():
            self._prefetch_pending = True
            self.set_timer(PREFETCH_DELAY, self._prefetch_step)

    def _prefetch_step(self) -> None:
        """Build uncached lines of the next page (then the previous one) for up to ``PREFETCH_BUDGET`` seconds,
        then yield, so a key press never waits long behind it; again ``PREFETCH_GAP`` later until both are built."""
        self._prefetch_pending = False
        if not self._showing() or not self.is_attached:
            return
        if int(self.scroll_offset.y) != self._drawn_top:
            return  # a frame is due (a key scrolled): it comes first, and schedules the prefetch again
        last = self._last_frame
        drawing = self._drawing(last.base, last.finish) if last is not None else self._drawing(self.rich_style)
        total = self._display_count()
        top, height = int(self.scroll_offset.y), self._view_height
        deadline = time.perf_counter() + PREFETCH_BUDGET
        for y in itertools.chain(range(top + height, min(total, top + 2 * height)), range(max(0, top - height), top)):
            if (y, self._builder.lexed(y), drawing.shared) in self._lines:
                continue
            self._line(y, drawing)
            if time.perf_counter() >= deadline and not self._prefetch_pending:  # the rest in a later step
                self._prefetch_pending = True
                self.set_timer(PREFETCH_GAP, self._prefetch_step)
                return

    @property
    def built_lines(self) -> int:
        """Distinct display lines built and kept (only those on screen and the pages around them); a line
        built again (lexed since, another width or mode) counts once."""
        return len({key[0] for key in self._lines.keys()})  # noqa: SIM118 (an LRUCache is not iterable)
