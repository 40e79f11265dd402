"""Compare two bundles side by side (issue #15): both bundles' decision, tests and verdict, every file either
changes, and the selected file's patch from each in two diff views."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.markup import escape as _markup_escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Input, Label, Static

from codebox_tui.screens.base import CodeboxModal, CodeboxScreen
from codebox_tui.screens.dialogs import DIALOG_CSS, HELP_KEY
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader
from widgets.diff_view import DiffView


def escape(value: object) -> str:
    return _markup_escape(safe_text(value))


class CompareDialog(CodeboxModal[str | None]):
    """Ask which bundle to compare with: ``@key`` (from the inbox) or a bundle folder."""

    HELP = """\
# Compare with
Type `@key` (a bundle's key in the inbox, e.g. `@2`) or a bundle folder and press `enter`: both bundles
are shown side by side (files, patches, tests, verdicts). `escape` cancels.
"""
    DEFAULT_CSS = DIALOG_CSS + "CompareDialog { align: center middle; }"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog.cancel"), HELP_KEY]

    def __init__(self, suggestion: str = "") -> None:
        super().__init__()
        self.suggestion = suggestion

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Compare with which bundle? (@key from the inbox, or a bundle folder)", classes="title")
            yield Input(value=self.suggestion, placeholder="@2 or /path/to/bundle", id="compare-with")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class CompareScreen(CodeboxScreen[None]):
    HELP = """\
# Compare
Two bundles side by side: the top lines show each bundle's decision, tests and verdict; the table lists
every file either bundle changes (status and line counts in A and B, and whether the patches are the
same). The highlighted file's patch from A is on the left, from B on the right.
- `↑` / `↓`: choose a file; `tab`: move to the diffs; `escape`: back
"""
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", id="compare.back")]
    DEFAULT_CSS = """
    #compare-head { height: auto; padding: 0 1; background: $boost; }
    #compare-files { height: 12; }
    #compare-diffs { height: 1fr; }
    #compare-diffs DiffView { width: 1fr; border-left: solid $primary-darken-2; }
    """

    def __init__(self, comparison: Any) -> None:
        super().__init__()
        self.comparison = comparison  # store.compare.Comparison
        self.shown = ""  # the file shown in the two diff views

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        yield Static(self._head(), id="compare-head")
        yield DataTable(id="compare-files", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="compare-diffs"):
            yield DiffView(id="diff-a")
            yield DiffView(id="diff-b")
        yield Footer()

    def _head(self) -> str:
        lines = []
        for label, side in (("A", self.comparison.a), ("B", self.comparison.b)):
            decision = side.decision.action if side.decision else "undecided"
            tests = side.tests
            text = (
                f"{tests.get('passed', 0)}/{tests.get('total', 0)} passed, {tests.get('failed', 0)} failed"
                if "total" in tests
                else "no tests"
            )
            verdict = f" · verdict {escape(side.verdict)}" if side.verdict else ""
            lines.append(
                f"[b]{label}[/b] {side.bundle.ref} [dim]{side.bundle.content_digest[:12]}[/] · "
                f"{len(side.status)} file(s) · {escape(decision)} · {escape(text)}{verdict} "
                f"[dim]{escape(side.bundle.path)}[/]"
            )
        return "\n".join(lines)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("file", "A", "B", "patch")

        def cell(status: str | None, counts: tuple[int, int] | None) -> str:
            return "—" if status is None else f"{status} +{counts[0]} -{counts[1]}" if counts else status

        for f in self.comparison.files:
            state = "same" if f.same else ("only A" if f.b is None else "only B" if f.a is None else "differs")
            table.add_row(safe_text(f.path), cell(f.a, f.a_counts), cell(f.b, f.b_counts), state, key=f.path)
        if self.comparison.files:
            self._show(self.comparison.files[0].path)
        table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show(str(event.row_key.value))

    def _show(self, path: str) -> None:
        self.shown = path
        for view_id, side, label in (("#diff-a", self.comparison.a, "A"), ("#diff-b", self.comparison.b, "B")):
            view = self.query_one(view_id, DiffView)
            section = side.sections.get(path)
            if section is None:
                view.show_message(f"{label} does not change {path}.")
            else:
                view.show_file(path, section)

    def action_back(self) -> None:
        self.app.pop_screen()
