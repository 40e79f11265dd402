"""The Backend field of the Launch, Evaluate a patch and Reproduce a bug forms (docs/backends.md): playground
or native, what the chosen backend cannot do for the form's flow said under it at once, by the check the
command line makes for the same flow."""

from __future__ import annotations

from rich.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select

from codebox_tui.runtime.backends import BACKEND_NAMES, default_php
from codebox_tui.settings import get_settings


class BackendProblem(ValueError):
    """What the chosen backend cannot do for this flow (shown under the Backend field)."""


def backend_select() -> Select[str]:
    """The Backend field: playground or native (docs/backends.md), at first ``CODEBOX_BACKEND``'s."""
    default = get_settings().backend
    return Select(
        [(name, name) for name in BACKEND_NAMES],
        allow_blank=False,
        id="backend",
        value=default if default in BACKEND_NAMES else BACKEND_NAMES[0],
    )


def follow_backend_php(screen: ModalScreen[None], backend: str) -> None:
    """A PHP field still holding the other backend's default takes this one's (the host's PHP on native)."""
    field = screen.query_one("#php", Input)
    if field.value.strip() in {default_php(name) for name in BACKEND_NAMES if name != backend}:
        field.value = default_php(backend)


def show_backend_problem(screen: ModalScreen[None], problem: str | None) -> None:
    """``problem`` (or nothing) under the Backend field."""
    label = screen.query_one("#backend-error", Label)
    label.update(escape(problem or ""))
    label.set_class(bool(problem), "-shown")
