"""Home: the review inbox. Per bundle: title (plugin / recipe / command), source, verdict and test delta,
risk flags, changed files, decision and age; filter, sort, text search, bulk discard.

What each row says is computed by ``store/inbox.py`` (Textual-free, tested on its own); this screen only
lays it out, and records decisions through the store."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from codebox_tui.errors import CodeboxError
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.data import (
    FILTERS,
    OUTPUT_ONLY_LABEL,
    OUTPUT_ONLY_STATUS,
    SORTS,
    InboxRow,
    group_batches,
    select_rows,
)
from codebox_tui.screens.dialogs import ConfirmDialog, OpenBundleDialog
from codebox_tui.screens.messages import OpenBundle
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader

STATUSES = list(FILTERS)  # kept for callers that cycle through them
SOURCE_LABELS = {
    "evaluate-patch": "eval",
    "imported": "import",
    "recipe": "recipe",
    "run": "run",
    "agent": "agent",
    "exec": "exec",
    "episode": "episode",
    "mcp": "mcp",
    "boot": "boot",
}
VERDICT_COLOURS = {
    "improvement": "green",
    "passed": "green",
    "neutral": "white",
    "regression": "red",
    "plugin-broken": "red",
    "failed": "red",
    "untested": "yellow",
    "unknown": "yellow",
}
DECISION_LABELS = {
    "approved": "approved",
    "applied": "applied",
    "discarded": "discard",
    "iterate": "iterate",
    "pending": "—",
    OUTPUT_ONLY_STATUS: OUTPUT_ONLY_LABEL,
}
# (label, widest) of every column but the title: each is as wide as its widest cell (never wider than this),
# so verdict, tests and risk stay whole, and the title takes what is left (at least MIN_TITLE)
SITES_SHOWN = 3  # prepared sites listed under the inbox; `codebox site list` has them all
COLUMNS = [
    ("source", 7),
    ("verdict", 16),
    ("tests", 13),
    ("risk", 4),
    ("files", 5),
    ("decision", len(OUTPUT_ONLY_LABEL)),
    ("age", 3),
]
MIN_TITLE = 16


def column_widths(cells: list[list[str]], total: int) -> tuple[int, list[int]]:
    """(title width, widths of ``COLUMNS``) for rows of ``cells`` (one list of the non-title cells per row) in a
    table ``total`` cells wide: each column fits its header and its widest cell up to its cap; the title takes
    the rest (a narrow screen gives the title at least MIN_TITLE and the columns what is left)."""
    widths = [min(cap, max([len(label), *(len(row[i]) for row in cells)])) for i, (label, cap) in enumerate(COLUMNS)]
    padding = 2 * (len(COLUMNS) + 1)  # one cell each side of every column
    return max(MIN_TITLE, total - sum(widths) - padding - 2), widths  # 2: the scroll bar


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


def shorten_middle(text: str, width: int) -> str:
    """``text`` in ``width`` cells, cut in the middle so both its start and its end stay readable
    (a plugin name and its patch, a folder and its command)."""
    if len(text) <= width:
        return text
    if width < 5:
        return text[:width]
    head = (width - 1) * 3 // 5
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


class HomeScreen(CodeboxScreen[None]):
    CSS_PATH = "home.tcss"
    HELP = """\
# Home
The review inbox: bundles captured by sandbox runs (`codebox run`, `recipe-run`, `evaluate-patch`, the
Launch screen) or imported. Each row: title, source, verdict, test delta (before → after for
evaluate-patch), risk flags, changed files, decision, age.
- `enter`: review the highlighted bundle · `n`: launch a new sandbox · `r`: refresh
- `e`: evaluate a patch (or a git range) against a plugin · `R`: reproduce a bug (a recipe or an episode plan)
- `f`: filter by status (`approved` includes applied bundles) · `s`: sort · `/`: search (every word
  must match the title, source, verdict, flags, id or path; `escape` clears it)
- `space`: select bundles · `D`: discard the selected ones (or the highlighted one), after a
  confirmation; one decision is recorded per bundle
- `output only` in the decision column: a command that changed nothing (a read-only `codebox exec`); its
  output is kept in the bundle, and there is nothing to decide (docs/exec.md, "Nothing to decide")
- `o`: open a bundle by path (made elsewhere, e.g. by the reference implementation): verified, added, never moved
- Batches and fan-outs (`codebox batch`): their candidates stay together, titled `┃ item: …`. `m`: compare
  the highlighted candidate with the next one of its batch side by side (files, patches, tests, verdicts) ·
  `P`: promote it for review (marked `★`; one per batch) · `b`: the live progress table of the highlighted
  candidate's batch (else the newest batch)
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Review", id="home.open"),
        Binding("n", "new_run", "New sandbox", id="home.new"),
        Binding("e", "app.evaluate_patch", "Evaluate a patch", id="home.evaluate"),
        Binding("R", "app.reproduce_bug", "Reproduce a bug", show=False, id="home.reproduce"),
        Binding("f", "cycle_filter", "Filter", id="home.filter"),
        Binding("s", "cycle_sort", "Sort", id="home.sort"),
        Binding("/", "search", "Search", id="home.search"),
        Binding("space", "toggle_select", "Select", show=False, id="home.select"),
        Binding("D", "discard_selected", "Discard", show=False, id="home.discard"),
        Binding("r", "refresh", "Refresh", id="home.refresh"),
        Binding("o", "open_path", "Open path", id="home.open_path"),
        Binding("b", "batches", "Batches", show=False, id="home.batches"),
        Binding("m", "compare_candidates", "Compare candidates", show=False, id="home.compare"),
        Binding("P", "promote", "Promote candidate", show=False, id="home.promote"),
        Binding("escape", "clear", "Clear", show=False, id="home.clear"),
        Binding("l", "live_run", "Live run", id="home.live_run"),
    ]

    def __init__(self, now: datetime | None = None) -> None:
        super().__init__()
        self.filter_index = 0
        self.sort_index = 0
        self.search = ""
        self.now = now
        self.rows: list[InboxRow] = []  # every recorded bundle
        self.shown: list[InboxRow] = []  # after filter, search and sort, in table order
        self.selected: set[int] = set()  # store keys
        self.paths: dict[str, str] = {}  # row key (the store record's key) → bundle directory
        self._width = 0
        self.loading_rows = False  # a refresh worker is reading the inbox

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        yield Static("", id="home-status", markup=False)
        yield Input(
            placeholder="search: every word must match (title, source, verdict, flags, id, path); "
            "enter applies, escape clears",
            id="home-search",
            classes="hidden",
        )
        yield DataTable(id="bundles", cursor_type="row", zebra_stripes=True)
        yield Static("", id="home-sites", markup=False, classes="hidden")  # prepared sites (docs/sites.md)
        yield Footer()

    def on_mount(self) -> None:
        self.action_refresh()
        self.query_one(DataTable).focus()

    def on_screen_resume(self) -> None:
        self.action_refresh()
        self.refresh_bindings()  # `l` shows while a run goes on

    def _live_screens(self) -> list[Any]:
        """The Live run screens whose run goes on (oldest first), left with `escape`."""
        return list(self.app.live_runs.values())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "live_run":
            return bool(self._live_screens())  # shown only while a run goes on
        return True

    def action_live_run(self) -> None:
        """Back to the newest live run's screen (its events, its held preview's console)."""
        live = self._live_screens()
        if not live:
            self.notify("No run is going on: n launches one.", severity="warning")
            return
        self.app.push_screen(live[-1])

    def on_resize(self) -> None:
        if self.size.width != self._width:
            self._render_table()

    @property
    def status_filter(self) -> str:
        return FILTERS[self.filter_index]

    @property
    def sort(self) -> str:
        return SORTS[self.sort_index]

    def action_refresh(self) -> None:
        """Re-read the inbox in a worker (every bundle's summary is read: slow with many bundles) while the
        status line says "Loading…"; the rows already shown stay usable meanwhile."""
        self.loading_rows = True
        self._update_status()
        self._load_rows()
        self._load_sites()

    @work(thread=True, exclusive=True, group="home-sites")
    def _load_sites(self) -> None:
        try:
            sites = data.prepared_sites()
        except Exception:  # an unreadable sites folder leaves the section hidden; the inbox is what matters here
            sites = []
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._sites_loaded, sites)

    def _sites_loaded(self, sites: list[Any]) -> None:
        """A few lines under the inbox: each prepared site and how to open it (`codebox site open ID`)."""
        if not self.is_mounted:
            return
        panel = self.query_one("#home-sites", Static)
        panel.set_class(not sites, "hidden")
        lines = [f" Prepared sites ({len(sites)}) — open one with: codebox site open ID"]
        for site in sites[:SITES_SHOWN]:
            lines.append(
                f"   {site.site_id}  "
                + (site.problem or f"{site.runtime} · {site.mounts} mount(s) · {age(site.created_at, self.now)}")
            )
        if len(sites) > SITES_SHOWN:
            lines.append(f"   … {len(sites) - SITES_SHOWN} more: codebox site list")
        panel.update("\n".join(safe_text(line) for line in lines))

    @work(thread=True, exclusive=True, group="home-refresh")
    def _load_rows(self) -> None:
        store = data.open_store()
        try:
            rows, problem = data.inbox(store), None
        except Exception as error:  # an unreadable store is reported, never a traceback
            rows, problem = None, safe_text(error)
        finally:
            store.close()
        if not get_current_worker().is_cancelled:  # a newer refresh replaced this one
            self.app.call_from_thread(self._rows_loaded, rows, problem)

    def _rows_loaded(self, rows: list[InboxRow] | None, problem: str | None) -> None:
        if not self.is_mounted or not self.query(DataTable):  # gone, or its widgets removed as the app closes
            return
        self.loading_rows = False
        if rows is None:
            self.notify(f"The inbox could not be read: {problem}", severity="error", timeout=8, markup=False)
            self._update_status()
            return
        self.rows = rows
        self.selected &= {r.key for r in self.rows}
        self._render_table()

    def _render_table(self) -> None:
        table = self.query_one(DataTable)
        self._width = self.size.width
        current = self._cursor_key()
        table.clear(columns=True)
        # the candidates of a batch or fan-out stay together (docs/scale-out.md, "In the inbox")
        self.shown = group_batches(select_rows(self.rows, status=self.status_filter, text=self.search, sort=self.sort))
        cells = [self._cells(row) for row in self.shown]
        title_width, widths = column_widths([[c.plain for c in row[1:]] for row in cells], self.size.width or 80)
        table.add_column("title", width=title_width, key="title")
        for (label, _cap), width in zip(COLUMNS, widths, strict=True):
            table.add_column(label, width=width, key=label)
        self.paths = {}
        for row, row_cells in zip(self.shown, cells, strict=True):
            self.paths[str(row.key)] = row.path  # one row per directory: runs sharing a Mode A id all show
            title, *rest = row_cells
            shortened = Text(shorten_middle(title.plain, title_width), style=title.style)
            table.add_row(shortened, *(self._fit(c, w) for c, w in zip(rest, widths, strict=True)), key=str(row.key))
        if current is not None and current in self.paths:
            table.move_cursor(row=list(self.paths).index(current))
        self._update_status()

    @staticmethod
    def _fit(cell: Text, width: int) -> Text:
        """A cell cut in the middle to its column (only a cell past its column's cap is cut)."""
        return cell if len(cell.plain) <= width else Text(shorten_middle(cell.plain, width), style=cell.style)

    def _cells(self, row: InboxRow) -> list[Text]:
        mark = "● " if row.key in self.selected else ""
        # a batch's candidates: "┃ item: title", the promoted one starred
        batch = (f"{'★' if row.promoted else '┃'} {row.batch_item}: ") if row.batch else ""
        title = Text(mark + batch + row.title, style="bold" if mark else "")
        warn = f" ⚠{row.warnings}" if row.warnings else ""  # a recipe's advisory failures
        verdict_cell = Text(row.verdict + warn, style=VERDICT_COLOURS.get(row.verdict, ""))
        risk = Text(
            f"⚠{len(row.risk_flags)}" if row.risk_flags else "—", style="bold yellow" if row.risk_flags else "dim"
        )
        decision = DECISION_LABELS.get(row.status, row.status)
        return [
            title,
            Text(SOURCE_LABELS.get(row.source, row.source)),
            verdict_cell,
            Text(row.delta.replace(" → ", "→")),
            risk,
            Text(str(row.changed)),
            Text(decision, style="dim" if decision == "—" else ""),
            Text(age(row.created_at, self.now).removesuffix(" ago")),
        ]

    def _update_status(self) -> None:
        parts = [
            f" {len(self.shown)} of {len(self.rows)} bundle(s)",
            f"filter: {self.status_filter}",
            f"sort: {self.sort}",
        ]
        if self.loading_rows:
            parts.insert(0, " ⟳ Loading the inbox…")
        if self.search:
            parts.append(f"search: {self.search}")
        if self.selected:
            parts.append(f"{len(self.selected)} selected (D discards)")
        live = self._live_screens()
        if live:
            parts.append(
                f"▶ {len(live)} live run{'s' if len(live) != 1 else ''}: "
                f"{safe_text(getattr(live[-1], 'title_line', 'run'))} (l returns)"
            )
        if not self.rows and not self.loading_rows:
            parts.append("no bundles yet: press n to launch a sandbox, or run `codebox run`")
        elif not self.shown:
            parts.append("nothing matches (f: filter, escape: clear the search)")
        self.query_one("#home-status", Static).update(" · ".join(parts))

    def _cursor_key(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def action_cycle_filter(self) -> None:
        self.filter_index = (self.filter_index + 1) % len(FILTERS)
        self._render_table()

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self._render_table()

    def action_search(self) -> None:
        field = self.query_one("#home-search", Input)
        field.remove_class("hidden")
        field.focus()

    def on_input_changed(self, message: Input.Changed) -> None:
        if message.input.id == "home-search":
            self.search = message.value.strip()
            self._render_table()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input.id == "home-search":
            if not message.value.strip():
                message.input.add_class("hidden")
            self.query_one(DataTable).focus()

    def action_clear(self) -> None:
        field = self.query_one("#home-search", Input)
        if self.search or field.has_focus:
            field.value = ""
            self.search = ""
            field.add_class("hidden")
            self.query_one(DataTable).focus()
            self._render_table()
        elif self.selected:
            self.selected.clear()
            self._render_table()

    def action_toggle_select(self) -> None:
        key = self._cursor_key()
        if key is None:
            return
        self.selected ^= {int(key)}
        self._render_table()

    def action_discard_selected(self) -> None:
        keys = sorted(self.selected) or ([int(k)] if (k := self._cursor_key()) else [])
        rows = [r for r in self.rows if r.key in keys]
        if not rows:
            return
        output_only = [r for r in rows if r.status == OUTPUT_ONLY_STATUS]
        if len(output_only) == len(rows):  # the key tells why it cannot act
            why = data.output_only(f"@{rows[0].key}", rows[0].status) if len(rows) == 1 else None
            self.notify(
                why or "The selected bundles are output only: nothing to discard.", severity="warning", markup=False
            )
            return
        skipped = [r for r in rows if r.status == "discarded"]
        todo = [r for r in rows if r.status not in ("discarded", OUTPUT_ONLY_STATUS)]
        lines = [
            f"Discard {len(todo)} bundle(s)? One decision is recorded per bundle (approver: {data.current_user()})."
        ]
        lines += [f"  - @{r.key} {r.title} [{r.source}, {r.verdict}]" for r in todo]
        for row in todo:
            warning = data.status_warning(row.status)
            if warning:
                lines.append(f"⚠ @{row.key} {row.title}: {warning}")
        if skipped:
            lines.append(f"Already discarded, left as they are: {', '.join(f'@{r.key}' for r in skipped)}")
        if output_only:
            lines.append(f"Output only, nothing to discard: {', '.join(f'@{r.key}' for r in output_only)}")
        if not todo:
            self.notify("The selected bundles are already discarded.", severity="warning")
            return

        def done(confirmed: bool | None) -> None:
            if not confirmed:
                return
            store = data.open_store()
            try:
                decisions = data.discard(store, [r.key for r in todo])
            except CodeboxError as error:  # a refusal is shown, never a traceback
                self.notify(f"Discard stopped: {error}", severity="error", timeout=8, markup=False)
                decisions = []
            finally:
                store.close()
            if decisions:
                self.notify(
                    f"Discarded {len(decisions)} bundle(s): decisions " + ", ".join(f"#{d.id}" for d in decisions) + "."
                )
            self.selected.clear()
            self.action_refresh()

        self.app.push_screen(ConfirmDialog("Discard bundles?", "\n".join(lines)), done)

    def action_open(self) -> None:
        key = self._cursor_key()
        path = self.paths.get(key) if key is not None else None
        if path:
            self.post_message(OpenBundle(Path(path)))

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open_path(self) -> None:
        self.app.push_screen(OpenBundleDialog(), self._open_path)

    def _open_path(self, folder: str | None) -> None:
        if not folder:
            return

        store = data.open_store()
        try:
            imported, rejected = data.import_bundles(store, Path(folder))
        except CodeboxError as error:
            self.notify(f"Cannot open: {error}", severity="error", timeout=8)
            return
        finally:
            store.close()
        for entry in rejected[:3]:
            self.notify(
                f"Not added (fails verification): {entry['path']}: {entry['message']}", severity="error", timeout=10
            )
        self.action_refresh()
        if len(imported) == 1 and not rejected:
            self.post_message(OpenBundle(Path(imported[0].path)))
        elif imported:
            self.notify(f"Added {len(imported)} bundle(s) to the inbox.")

    # -- batches and fan-outs: compare candidates, promote one (store/batches.py) -------------------------
    def _cursor_row(self) -> InboxRow | None:
        key = self._cursor_key()
        return next((r for r in self.shown if str(r.key) == key), None)

    def _candidates(self, row: InboxRow) -> list[InboxRow]:
        return [r for r in self.rows if r.batch == row.batch]

    def action_compare_candidates(self) -> None:
        """The highlighted candidate (A) side by side with the next candidate of its batch (B)."""
        row = self._cursor_row()
        if row is None or not row.batch:
            self.notify("Not a candidate of a batch or fan-out: nothing to compare it with", severity="warning")
            return
        others = self._candidates(row)
        if len(others) < 2:
            self.notify("This batch has no other candidate with a bundle", severity="warning")
            return
        other = others[(others.index(row) + 1) % len(others)]
        store = data.open_store()
        try:
            comparison = data.compare(store, Path(row.path), f"@{other.key}")
        except CodeboxError as error:
            self.notify(str(error), severity="error")
            return
        finally:
            store.close()
        from codebox_tui.screens.compare import CompareScreen  # noqa: PLC0415 - opened on demand: its run lifecycle is not loaded at start-up

        self.app.push_screen(CompareScreen(comparison))

    def action_promote(self) -> None:
        """Record the highlighted candidate as the one of its batch to review."""
        row = self._cursor_row()
        if row is None or not row.batch:
            self.notify("Not a candidate of a batch or fan-out", severity="warning")
            return
        store = data.open_store()
        try:
            data.promote(store, row.batch, row.key)
        finally:
            store.close()
        self.notify(f"@{row.key} ({row.batch_item}) promoted for review in {row.batch}")
        self.action_refresh()

    def action_batches(self) -> None:
        """The live progress table of the newest batch or fan-out (``[`` / ``]`` for the others)."""
        row = self._cursor_row()
        from codebox_tui.screens.batch import BatchScreen  # noqa: PLC0415 - opened on demand: its run lifecycle is not loaded at start-up

        self.app.push_screen(BatchScreen(row.batch if row is not None and row.batch else None))

    def action_new_run(self) -> None:
        from codebox_tui.screens.launch import LaunchScreen  # noqa: PLC0415 - opened on demand: its run lifecycle is not loaded at start-up

        self.app.push_screen(LaunchScreen())
