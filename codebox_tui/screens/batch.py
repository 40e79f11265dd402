"""Batches: the live progress table of a batch or fan-out (docs/scale-out.md, "In the TUI").

The runner (``codebox batch``, ``codebox agent-task --fan-out``, in this process or another) records every
item's state, attempts, verdict, bundle and current phase in the store; this screen reads them back twice a
second in a worker thread, so it follows a batch started anywhere on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from codebox_tui.batch.progress import STATE_MARKS
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.messages import OpenBundle
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader

POLL_S = 0.5
STATE_COLOURS = {
    "queued": "white",
    "running": "cyan",
    "retrying": "yellow",
    "completed": "green",
    "failed": "red",
    "timed-out": "red",
    "cancelled": "yellow",
}
COLUMNS = [("item", 16), ("kind", 14), ("state", 12), ("tries", 5), ("verdict", 12), ("bundle", 6), ("now", 0)]
NARROW = 110  # below this width the kind column goes (a fan-out's kind is in the title) and the rest shrink


def column_widths(width: int) -> list[tuple[str, int]]:
    """Each column's width for a screen ``width`` cells wide; ``now`` takes what is left (at least 12)."""
    columns = (
        COLUMNS
        if width >= NARROW
        else [("item", 13), ("state", 12), ("tries", 5), ("verdict", 10), ("bundle", 6), ("now", 0)]
    )
    used = sum(w + 2 for _, w in columns) + 2  # DataTable pads each cell by one on both sides
    return [(name, w or max(12, width - used - 2)) for name, w in columns]


class BatchScreen(CodeboxScreen[None]):
    HELP = """\
# Batches
The items of a batch or fan-out (`codebox batch FILE`, `codebox agent-task --fan-out N`), live: state
(queued, running, retrying, completed, failed, timed-out, cancelled), attempts, verdict, bundle and
what each item is doing now. It follows a batch running in another terminal too.
- `enter`: review the highlighted item's bundle · `[` / `]`: an older / newer batch · `escape`: back
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Review", id="batch.open"),
        Binding("[", "older", "Older batch", id="batch.older"),
        Binding("]", "newer", "Newer batch", id="batch.newer"),
        Binding("escape", "back", "Back", id="batch.back"),
    ]

    def __init__(self, batch_id: str | None = None, *, poll_s: float = POLL_S) -> None:
        """Shows ``batch_id`` (default: the newest batch in the store) and follows it."""
        super().__init__()
        self.batch_id = batch_id
        self.poll_s = poll_s
        self.batch_ids: list[str] = []  # newest first
        self.items: list[data.BatchItemRecord] = []
        self._shown: tuple[object, ...] | None = None
        self._columns: list[tuple[str, int]] = []

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        yield Static("reading the store…", id="batch-title")
        yield DataTable(id="batch-items", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        self._columns = column_widths(self.size.width)
        for label, width in self._columns:
            table.add_column(label, width=width, key=label)
        self.poll()
        self.set_interval(self.poll_s, self.poll)
        table.focus()

    @work(thread=True, exclusive=True, group="batch-poll")
    def poll(self) -> None:
        """Read the batch list and the shown batch's items (off the UI thread)."""
        self.app.call_from_thread(self._show, data.batch_snapshot(self.batch_id))

    def _show(self, read: data.BatchSnapshot) -> None:
        ids, batch, items = read.ids, read.batch, read.items
        self.batch_ids = ids
        title = self.query_one("#batch-title", Static)
        if batch is None:
            title.update("No batches yet: run [b]codebox batch FILE[/b] or [b]codebox agent-task --fan-out N[/b]")
            return
        self.batch_id = batch.batch_id
        snapshot = (
            batch.status,
            tuple((i.item_id, i.state, i.attempts, i.verdict, i.bundle_key, i.phase, i.error) for i in items),
        )
        if snapshot == self._shown:
            return
        self._shown = snapshot
        self.items = items
        counts: dict[str, int] = {}
        for item in items:
            counts[item.state] = counts.get(item.state, 0) + 1
        position = f"{ids.index(batch.batch_id) + 1} of {len(ids)}"
        title.update(
            Text.assemble(
                (f" {batch.kind} ", "bold reverse"),
                " ",
                (safe_text(batch.batch_id), "bold"),
                f" · {batch.status} · ",
                ", ".join(f"{n} {state}" for state, n in sorted(counts.items())),
                f" · batch {position}",
                (f" · {safe_text(batch.source)[:60]}" if batch.source else "", "dim"),
            )
        )
        self._fill(items)

    def _fill(self, items: list[data.BatchItemRecord]) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        columns = column_widths(self.size.width)
        if columns != self._columns:
            self._columns = columns
            table.clear(columns=True)
            for label, width in columns:
                table.add_column(label, width=width, key=label)
        table.clear()
        names = [name for name, _ in columns]
        for item in items:
            colour = STATE_COLOURS.get(item.state, "white")
            now = item.phase if item.state in ("running", "retrying") else (item.error or "")
            cells = {
                "item": safe_text(item.item_id),
                "kind": item.kind,
                "state": Text(f"{STATE_MARKS.get(item.state, '?')} {item.state}", style=colour),
                "tries": str(item.attempts),
                "verdict": safe_text(item.verdict) or "—",
                "bundle": f"@{item.bundle_key}" if item.bundle_key is not None else "—",
                "now": Text(safe_text(now)[:200], style="dim" if item.state == "queued" else ""),
            }
            table.add_row(*(cells[name] for name in names), key=item.item_id)
        if items:
            table.move_cursor(row=min(max(row, 0), len(items) - 1))

    def on_resize(self) -> None:
        if self.items and column_widths(self.size.width) != self._columns:
            self._fill(self.items)

    def _highlighted(self) -> data.BatchItemRecord | None:
        table = self.query_one(DataTable)
        if not self.items or not 0 <= table.cursor_row < len(self.items):
            return None
        return self.items[table.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # enter on the table (the table's own binding) opens the item's bundle
        self.action_open()

    def action_open(self) -> None:
        item = self._highlighted()
        if item is None or item.bundle_key is None:
            self.notify("This item has no bundle (yet)", severity="warning")
            return
        path = data.bundle_path(item.bundle_key)
        if path is None:
            self.notify(f"bundle @{item.bundle_key} is no longer in the store", severity="error")
            return
        self.post_message(OpenBundle(Path(path)))

    def _switch(self, step: int) -> None:
        if self.batch_id not in self.batch_ids:
            return
        index = self.batch_ids.index(self.batch_id) + step
        if not 0 <= index < len(self.batch_ids):
            self.notify("No " + ("older" if step > 0 else "newer") + " batch", severity="information")
            return
        self.batch_id, self._shown = self.batch_ids[index], None
        self.poll()

    def action_older(self) -> None:
        self._switch(+1)

    def action_newer(self) -> None:
        self._switch(-1)

    def action_back(self) -> None:
        self.app.pop_screen()
