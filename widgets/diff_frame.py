"""What one frame of the diff view shares (``Drawing``), and how its lines are finished for the screen
(``Finish``) so that a finished line can be cached with the built one.

Textual's default path (``Widget.render_lines`` through its styles cache) keeps a widget's lines by their
row on screen, so a scroll throws all of them away: every PageDown padded each line to the widget's width,
ran the app's line filters over every segment and cut it at the scrollbar again, each step a new Strip.
For a widget with no border, padding, outline, hatch, tint or opacity that path does exactly three things
to a content line: pad it to the widget's width with the widget's background, apply the app's line filters
and crop it to the requested columns. ``Finish`` does the same, so the diff view can cache the finished
line by what it shows (docs/performance.md, "Seventeenth session"); any other style takes Textual's path.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter
from textual.strip import Strip
from textual.widget import Widget


class Finish(NamedTuple):
    """The widget's width, the background its lines are padded with, and the app's line filters with the
    background they are applied over: what Textual's styles cache does to a plain widget's content line."""

    width: int
    pad: Style
    filters: tuple[LineFilter, ...]
    background: Color

    def apply(self, strip: Strip) -> Strip:
        strip = strip.adjust_cell_length(self.width, self.pad)
        for line_filter in self.filters:
            strip = strip.apply_filter(line_filter, self.background)
        return strip


def plain_finish(widget: Widget) -> Finish | None:
    """The ``Finish`` of ``widget``'s lines, or None when its styles need Textual's full path (a border,
    padding, outline, hatch, tint, text opacity or opacity anywhere above it)."""
    styles = widget.styles
    if (
        any(styles.gutter)
        or any(edge for edge, _color in styles.outline)
        or styles.tint.a
        or styles.text_opacity != 1.0
        or (styles.has_rule("hatch") and styles.hatch != "none")
        or widget.opacity != 1.0
    ):
        return None
    base_background, background = widget.background_colors
    # the same padding style as Textual's styles cache ("inner": the widget's background over its parent's)
    pad = widget._styles_cache.get_inner_outer(base_background, background)[0].rich_style
    return Finish(widget.size.width, pad, tuple(widget.get_line_filters()), background)


class Drawing(NamedTuple):
    """What every line drawn at once shares: the widget's style, the width and horizontal position, how
    lines are finished for the screen (None: built lines as they are), and the part of a line's cache key
    they and the state objects' versions make."""

    base: Style
    width: int
    x: int
    finish: Finish | None
    shared: tuple[object, ...]
