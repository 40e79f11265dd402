"""Home: bundles and runs from the store, filterable by status."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from codebox_tui.screens import data

STATUSES = [None, "pending", "approved", "discarded", "iterate"]


def age(stamp: str, now: datetime | None = None) -> str:
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{max(seconds, 0)}s ago"


class HomeScreen(Screen[None]):
    CSS_PATH = "home.tcss"
    HELP = """\
# Home
Bundles captured by sandbox runs, newest first.
- `enter`: review the highlighted bundle · `n`: launch a new sandbox · `f`: filter by status · `r`: refresh
- `o`: open a bundle by path (made elsewhere, e.g. by the reference implementation): verified, added, never moved
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Review", id="home.open"),
        Binding("n", "new_run", "New sandbox", id="home.new"),
        Binding("f", "cycle_filter", "Filter", id="home.filter"),
        Binding("r", "refresh", "Refresh", id="home.refresh"),
        Binding("o", "open_path", "Open path", id="home.open_path"),
    ]

    def __init__(self, now: datetime | None = None) -> None:
        super().__init__()
        self.filter_index = 0
        self.now = now
        self.paths: dict[str, str] = {}  # row key (the store record's key) → bundle directory

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        yield Static("", id="home-status")
        yield DataTable(id="bundles", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("bundle", "status", "files", "decision", "age", "run")
        self.action_refresh()
        table.focus()

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def action_refresh(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        status = STATUSES[self.filter_index]
        store = data.open_store()
        try:
            rows = data.bundle_rows(store, status)
        finally:
            store.close()
        self.paths = {}
        for row in rows:
            short = row.bundle_id.removeprefix("artifact-bundle-sha256-")[:16]
            self.paths[str(row.key)] = row.path  # one row per directory: runs sharing a Mode A id all show
            table.add_row(short, row.status, str(row.changed), row.decision or "—", age(row.created_at, self.now),
                          (row.run_id or "")[:26], key=str(row.key))
        label = status or "all"
        hint = "" if rows else "  — no bundles yet: press n to launch a sandbox, or run `codebox run`"
        self.query_one("#home-status", Static).update(f" {len(rows)} bundle(s) · filter: {label}{hint}")

    def action_cycle_filter(self) -> None:
        self.filter_index = (self.filter_index + 1) % len(STATUSES)
        self.action_refresh()

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        path = self.paths.get(str(key))
        if path:
            self.app.open_bundle(Path(path))  # type: ignore[attr-defined]

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open_path(self) -> None:
        from codebox_tui.screens.dialogs import OpenBundleDialog

        self.app.push_screen(OpenBundleDialog(), self._open_path)

    def _open_path(self, folder: str | None) -> None:
        if not folder:
            return
        from codebox_tui.errors import CodeboxError

        store = data.open_store()
        try:
            imported, rejected = data.import_bundles(store, Path(folder))
        except CodeboxError as error:
            self.notify(f"Cannot open: {error}", severity="error", timeout=8)
            return
        finally:
            store.close()
        for entry in rejected[:3]:
            self.notify(f"Not added (fails verification): {entry['path']}: {entry['message']}", severity="error",
                        timeout=10)
        self.action_refresh()
        if len(imported) == 1 and not rejected:
            self.app.open_bundle(Path(imported[0].path))  # type: ignore[attr-defined]
        elif imported:
            self.notify(f"Added {len(imported)} bundle(s) to the inbox.")

    def action_new_run(self) -> None:
        from codebox_tui.screens.launch import LaunchScreen

        self.app.push_screen(LaunchScreen())
