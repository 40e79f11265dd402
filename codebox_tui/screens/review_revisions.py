"""The Review screen's revisions: the Revisions tab (review_text.revisions_text) and its key, ``m``, comparing
this bundle with another one (store/revisions.py and store/compare.py through screens/data.py)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType

from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxScreen, call_store
from codebox_tui.screens.compare import CompareDialog, CompareScreen
from codebox_tui.screens.review_text import revisions_text


class ReviewRevisions:
    """The revisions of the review one bundle directory belongs to (``view`` None: it has only one)."""

    # the screen's action ``revisions(name)`` runs :meth:`act` (screens/review.py)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "revisions('compare')", "Compare with…", show=False, id="review.compare"),
    ]

    def __init__(self, screen: CodeboxScreen[None], bundle_dir: Path, view: data.RevisionView | None) -> None:
        self.screen = screen
        self.bundle_dir = bundle_dir
        self.view = view

    def act(self, name: str) -> None:
        {"compare": self.compare}[name]()

    def tab_label(self) -> str:
        return f"Revisions ({len(self.view.revisions)})" if self.view is not None else ""

    def text(self) -> str:
        return revisions_text(self.view) if self.view is not None else ""

    def compare(self) -> None:
        """Ask for another bundle (the revision the interdiff starts from, suggested) and compare side by side."""
        suggestion = self.view.base.bundle.ref if self.view is not None and self.view.base is not None else ""

        def got(other: str | None) -> None:
            if not other:
                return
            result = call_store(self.screen, lambda store: data.compare(store, self.bundle_dir, other))
            if result is not None:
                self.screen.app.push_screen(CompareScreen(result))

        self.screen.app.push_screen(CompareDialog(suggestion), got)
