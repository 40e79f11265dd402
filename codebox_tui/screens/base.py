"""The screens' base classes and helpers. A screen's ``self.app`` is typed by the ``AppApi`` protocol
(screens/app_api.py: what screens use of the app, the keymap in force, the live runs, the Textual calls), so
screens need no ``getattr`` and no ``type: ignore`` and never import the app, which imports them.
Type-checking only: at run time ``app`` is Textual's own property (the running ``CodeboxApp``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Select

from codebox_tui.screens import data
from codebox_tui.textsafe import safe_text

if TYPE_CHECKING:
    from codebox_tui.screens.app_api import ScreensApp

ResultT = TypeVar("ResultT")
T = TypeVar("T")


class CodeboxScreen(Screen[ResultT]):
    if TYPE_CHECKING:
        app: ScreensApp


class CodeboxModal(ModalScreen[ResultT]):
    if TYPE_CHECKING:
        app: ScreensApp


def fit_compact(screen: Screen[ResultT], compact: bool) -> None:
    """Forms on a short terminal: the ``-compact`` class and Textual's compact inputs, selects and buttons."""
    screen.set_class(compact, "-compact")
    for field in screen.query(Input):
        field.compact = compact
    for choice in screen.query(Select):
        choice.compact = compact
    for button in screen.query(Button):
        button.compact = compact


def call_store(screen: Screen[ResultT], call: Callable[[data.Store], T]) -> T | None:
    """Run ``call(store)`` on a freshly opened store; a refusal is shown on ``screen`` (never a traceback) and
    None returned."""
    store = data.open_store()
    try:
        return call(store)
    except Exception as error:
        screen.notify(safe_text(error), severity="error", timeout=8, markup=False)
        return None
    finally:
        store.close()
