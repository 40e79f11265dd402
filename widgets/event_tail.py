"""EventTail: a live tail of events.jsonl with the Line API.

The file is indexed by byte offsets in a worker thread (chunk by chunk, then polled for appends;
torn lines wait for their newline, truncation is detected); the UI shows what is indexed so far, so a
1 GB file opens as fast as a small one, and only visible lines are read back from disk and formatted.
Follow mode turns off when the user scrolls up, and a counter shows how many lines arrived since."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from codebox_tui.textsafe import safe_text
from widgets.line_index import LineIndex

LEVEL_STYLES = {
    "debug": Style(color="#5c6370"),
    "info": Style(color="#abb2bf"),
    "warning": Style(color="#e5c07b"),
    "error": Style(color="#e06c75", bold=True),
}
LEVELS = ["debug", "info", "warning", "error"]
FIRST_CHUNK = 1 << 20  # the first read is small, so the first screen comes quickly
INDEX_CHUNK = 16 << 20
__all__ = ["EventTail", "LineIndex", "format_event", "pretty_event"]


def format_event(line: str) -> tuple[str, str, str]:
    """(level, type, one-line text) for an events.jsonl line."""
    try:
        event = json.loads(line)
    except ValueError:
        return "warning", "unparsed", line
    level = str(event.get("level", "info"))
    kind = str(event.get("type", "?"))
    stamp = str(event.get("timestamp", ""))[11:23]
    data = event.get("data") or {}
    detail = ""
    if isinstance(data, dict):
        for key in ("phase", "command", "message", "previewUrl", "exitCode", "durationMs", "target"):
            if key in data:
                detail += f" {key}={data[key]}"
    return level, kind, f"{stamp} {level:<7} {kind:<24}{detail}"


def pretty_event(event: dict[str, object] | str) -> str:
    """Indented JSON for one event (for a modal or a Static); unparsed lines come back unchanged."""
    return json.dumps(event, indent=2, ensure_ascii=False, sort_keys=False) if isinstance(event, dict) else event


CURSOR_STYLE = Style(reverse=True)


class EventTail(ScrollView, can_focus=True):
    HELP = """\
## Event log
- Follows new events live; scroll up to pause following (a counter shows new lines), `End` to follow again
- `l`: cycle the minimum level (debug → info → warning → error)
- `↑`/`↓` (or `k`/`j`): move the cursor (the highlighted event); moving up pauses following
- `enter`: show the event under the cursor in full
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("end", "follow", "Follow", id="events.follow"),
        Binding("l", "cycle_level", "Level", id="events.level"),
        Binding("enter", "inspect", "Inspect", id="events.inspect"),
        Binding("up,k", "cursor_up", "Previous event", show=False, id="events.cursor_up"),
        Binding("down,j", "cursor_down", "Next event", show=False, id="events.cursor_down"),
    ]

    DEFAULT_CSS = """
    EventTail { background: $surface; }
    """

    following: reactive[bool] = reactive(True)
    pending: reactive[int] = reactive(0)
    min_level: reactive[str] = reactive("debug")
    # The highlighted event: an index into the visible lines; while following, always the last one.
    cursor: reactive[int] = reactive(0)

    class Inspect(Message):
        def __init__(self, event: dict[str, object] | str) -> None:
            self.event = event
            super().__init__()

    class Updated(Message):
        def __init__(self, total: int, pending: int, following: bool) -> None:
            self.total, self.pending, self.following = total, pending, following
            super().__init__()

    def __init__(
        self,
        path: Path,
        *,
        poll_interval: float = 0.05,
        index: LineIndex | None = None,
        index_chunk: int = INDEX_CHUNK,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.index = index if index is not None else LineIndex(Path(path))
        self.poll_interval = poll_interval
        self.index_chunk = index_chunk
        self._shown = 0  # index lines the UI has taken in
        self._resets = 0
        self._stop = threading.Event()
        self._visible: list[int] = []  # indexes of lines passing the level filter
        self._cache: LRUCache[int, tuple[str, str, Strip]] = LRUCache(2048)
        self.types: set[str] | None = None  # None: every event type

    def set_type_filter(self, types: set[str] | None) -> None:
        """Show only events whose ``type`` is in ``types`` (``None`` shows all)."""
        self.types = types
        self._refilter()

    def on_mount(self) -> None:
        self.run_worker(
            self._index_loop,
            thread=True,
            group="event-index",
            exit_on_error=False,
            name=f"index {self.index.path.name}",
        )

    def on_unmount(self) -> None:
        self._stop.set()

    @property
    def indexing(self) -> bool:
        """The file has bytes the index has not reached yet (a big file still being indexed)."""
        return self.index.pending_bytes > 0

    def _index_loop(self) -> None:
        """Worker thread: index the file chunk by chunk (the UI takes in each chunk's lines), then poll
        for appends every ``poll_interval``."""
        worker = get_current_worker()
        chunk = min(FIRST_CHUNK, self.index_chunk)
        while not worker.is_cancelled and not self._stop.is_set():
            resets = self.index.resets
            read_to = self.index.read_to
            added = self.index.update(chunk)
            chunk = self.index_chunk
            if added or self.index.resets != resets:
                try:
                    self.app.call_from_thread(self.poll)
                except Exception:  # the app is closing
                    return
            if self.index.read_to > read_to and self.index.pending_bytes > 0:
                continue  # more of a big file to index: no pause
            self._stop.wait(self.poll_interval)

    def _passes(self, i: int) -> bool:
        if self.min_level == "debug" and self.types is None:
            return True
        level, kind, _strip = self._line(i)
        if self.types is not None and kind not in self.types:
            return False
        return LEVELS.index(level) >= LEVELS.index(self.min_level) if level in LEVELS else True

    def _line(self, i: int) -> tuple[str, str, Strip]:
        cached = self._cache.get(i)
        if cached is None:
            level, kind, text = format_event(self.index.read_line(i))
            # events carry sandbox-written text: control characters become visible escapes
            cached = (level, kind, Strip([Segment(safe_text(text, tab_size=4), LEVEL_STYLES.get(level, Style()))]))
            self._cache[i] = cached
        return cached

    def _refilter(self) -> None:
        self._visible = [i for i in range(self._shown) if self._passes(i)]
        self.virtual_size = Size(max(self.size.width, 120), len(self._visible))
        self.refresh()

    def _status(self) -> str:
        state = "following" if self.following else f"paused · {self.pending} new"
        return f"{state} · level ≥ {self.min_level}"

    def watch_following(self) -> None:
        self.border_subtitle = self._status()

    def watch_pending(self) -> None:
        self.border_subtitle = self._status()

    def poll(self) -> None:
        """Take in the lines the indexer has added since last time (UI thread)."""
        before = self._shown
        if self.index.resets != self._resets:  # truncated or rotated
            self._resets = self.index.resets
            self._visible.clear()
            self._cache.clear()
            self.virtual_size = Size(max(self.size.width, 120), 0)
            self.refresh()
            before = 0
        total = len(self.index.offsets)
        self._shown = total
        if total <= before:
            return
        if self.min_level == "debug" and self.types is None:
            new: list[int] | range = range(before, total)
        else:
            new = [i for i in range(before, total) if self._passes(i)]
        self._visible.extend(new)
        self.virtual_size = Size(max(self.size.width, 120), len(self._visible))
        if self.following:
            self._to_end()
        else:
            self.pending += len(new)
        self.refresh()
        self.post_message(self.Updated(len(self._visible), self.pending, self.following))

    def _to_end(self) -> None:
        self.scroll_end(animate=False, immediate=True)
        # The first poll runs before layout gives the widget a size: scroll again once it has one.
        self.call_after_refresh(self._follow_to_end)

    def _follow_to_end(self) -> None:
        """A deferred scroll to the end, still wanted only if the tail still follows: a reader who scrolled up
        in the meantime keeps their place."""
        if self.following:
            self.scroll_end(animate=False, immediate=True)

    def on_resize(self) -> None:
        if self.following:
            self._to_end()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # Textual scrolls only once layout has shown the scrollbar, which can come after both scroll
        # requests of `_to_end` on a busy machine: follow again the moment scrolling becomes possible.
        if shown and self.following:
            self.call_after_refresh(self._follow_to_end)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old and new < self.max_scroll_y:
            if self.following:  # the cursor stays on the event it was on
                self.cursor = len(self._visible) - 1
            self.following = False
        elif new >= self.max_scroll_y:
            self.following = True
            self.pending = 0

    def action_follow(self) -> None:
        self.following = True
        self.pending = 0
        self.scroll_end(animate=False)

    def action_cycle_level(self) -> None:
        self.min_level = LEVELS[(LEVELS.index(self.min_level) + 1) % len(LEVELS)]
        self.border_subtitle = self._status()
        self._refilter()

    @property
    def cursor_row(self) -> int:
        """The visible line under the cursor (-1 when nothing is shown)."""
        if not self._visible:
            return -1
        return len(self._visible) - 1 if self.following else max(0, min(self.cursor, len(self._visible) - 1))

    def selected_event(self) -> dict[str, object] | str | None:
        """The event under the cursor, parsed (its raw text when it is not JSON), or None."""
        row = self.cursor_row
        if row < 0:
            return None
        raw = self.index.read_line(self._visible[row])
        try:
            event = json.loads(raw)
        except ValueError:
            return raw
        return event if isinstance(event, dict) else raw

    def _move_cursor(self, step: int) -> None:
        row = self.cursor_row
        if row < 0:
            return
        target = max(0, min(len(self._visible) - 1, row + step))
        if step < 0 and target < len(self._visible) - 1:
            self.following = False
        self.cursor = target
        if target == len(self._visible) - 1 and step > 0:
            self.action_follow()
            return
        if target < self.scroll_offset.y:
            self.scroll_to(y=target, animate=False)
        elif target >= self.scroll_offset.y + self.size.height:
            self.scroll_to(y=target - self.size.height + 1, animate=False)
        self.refresh()

    def action_cursor_up(self) -> None:
        self._move_cursor(-1)

    def action_cursor_down(self) -> None:
        self._move_cursor(1)

    def action_inspect(self) -> None:
        event = self.selected_event()
        if event is not None:
            self.post_message(self.Inspect(event))

    @property
    def total(self) -> int:
        return len(self._visible)

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.size.width
        if index >= len(self._visible):
            return Strip.blank(width)
        strip = self._line(self._visible[index])[2].crop_extend(
            int(self.scroll_offset.x), int(self.scroll_offset.x) + width, None
        )
        if index == self.cursor_row and self.has_focus:
            strip = strip.apply_style(CURSOR_STYLE)
        return strip

    def watch_cursor(self) -> None:
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
