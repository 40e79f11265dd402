"""The app as screens see it, typed: ``self.app`` is the :class:`~codebox_tui.app.CodeboxApp` (every screen
runs inside it), so its own attributes (the keymap in force, the live runs) need no ``getattr`` and no
``type: ignore``. Type-checking only: at run time ``app`` is Textual's own property."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Select

if TYPE_CHECKING:
    from codebox_tui.app import CodeboxApp

ResultT = TypeVar("ResultT")


class CodeboxScreen(Screen[ResultT]):
    if TYPE_CHECKING:
        app: CodeboxApp


class CodeboxModal(ModalScreen[ResultT]):
    if TYPE_CHECKING:
        app: CodeboxApp


def fit_compact(screen: Screen[ResultT], compact: bool) -> None:
    """Forms on a short terminal: the ``-compact`` class and Textual's compact inputs, selects and buttons."""
    screen.set_class(compact, "-compact")
    for field in screen.query(Input):
        field.compact = compact
    for choice in screen.query(Select):
        choice.compact = compact
    for button in screen.query(Button):
        button.compact = compact
