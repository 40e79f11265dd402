"""Opening a bundle for review: its files are read and hashed (verification) in a worker thread while this
screen says so, so the keyboard never waits on a large bundle; then the Review screen takes its place."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Footer, LoadingIndicator, Static

from codebox_tui.errors import CodeboxError
from codebox_tui.screens.base import CodeboxScreen
from codebox_tui.screens.review import ReviewInputs, ReviewScreen, prepare_review
from codebox_tui.textsafe import safe_text
from widgets.app_header import AppHeader


class OpeningScreen(CodeboxScreen[None]):
    """``Verifying <bundle>…`` until :func:`prepare_review` is done; escape goes back without waiting."""

    DEFAULT_CSS = """
    OpeningScreen Vertical { align: center middle; }
    OpeningScreen #opening-text { width: auto; margin-bottom: 1; }
    OpeningScreen LoadingIndicator { height: 3; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", id="opening.back")]
    HELP = """\
# Opening a bundle
Every file of the bundle is read and its hash checked against the manifest before the review opens (a
bundle that fails is shown as invalid and cannot be approved). `escape` goes back without waiting.
"""

    def __init__(self, bundle_dir: Path, *, tab: str | None = None) -> None:
        super().__init__()
        self.bundle_dir = Path(bundle_dir)
        self.tab = tab  # the Review tab to open on
        self.cancelled = False

    def compose(self) -> ComposeResult:
        yield AppHeader(icon="◆")
        with Vertical():
            yield Static(
                f"Verifying {safe_text(self.bundle_dir)} (reading and hashing every file)…",
                id="opening-text",
                markup=False,
            )
            yield LoadingIndicator()
        yield Footer()

    def on_mount(self) -> None:
        self._prepare()

    @work(thread=True, exclusive=True, group="opening")
    def _prepare(self) -> None:
        try:
            inputs: ReviewInputs | None = prepare_review(self.bundle_dir)
            problem = None
        except (CodeboxError, OSError) as error:
            inputs, problem = None, f"Cannot open bundle: {error}"
        self.app.call_from_thread(self._ready, inputs, problem)

    def _ready(self, inputs: ReviewInputs | None, problem: str | None) -> None:
        if self.cancelled or not self.is_current:
            return
        if inputs is None:
            self.notify(safe_text(problem), severity="error", timeout=8, markup=False)
            self.app.pop_screen()
            return
        self.app.switch_screen(ReviewScreen(self.bundle_dir, inputs, tab=self.tab))

    def action_back(self) -> None:
        self.cancelled = True
        self.app.pop_screen()
