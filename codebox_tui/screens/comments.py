"""The review comment dialog: a comment's type and text (issue #15 "Review like a pull request")."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Label, Select

from codebox_tui.contracts.feedback import COMMENT_KINDS
from codebox_tui.screens.base import CodeboxModal
from codebox_tui.screens.dialogs import DIALOG_CSS, HELP_KEY
from codebox_tui.textsafe import safe_text


class CommentDialog(CodeboxModal[tuple[str, str] | None]):
    """Ask for a comment: its type (``issue`` … ``praise``) and text; returns ``(kind, text)`` or None."""

    DEFAULT_CSS = DIALOG_CSS + "CommentDialog { align: center middle; }\n#comment-kind { width: 30; }"
    HELP = """\
# Comment
Choose the type (`issue`: must change; `suggestion`; `note`; `praise`), type the comment and press `enter`.
`tab` moves between the type and the text; `escape` cancels.
"""
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog.cancel"), HELP_KEY]

    def __init__(self, where: str, *, kind: str = "issue", body: str = "") -> None:
        super().__init__()
        self.where, self.kind, self.body = where, kind, body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Comment on {safe_text(self.where)}", classes="title", markup=False)
            yield Select(
                [(kind, kind) for kind in COMMENT_KINDS], value=self.kind, allow_blank=False, id="comment-kind"
            )
            yield Input(
                value=self.body,
                placeholder="the comment (enter saves, escape cancels)",
                id="comment-body",
                select_on_focus=False,
            )  # text typed after `tab` goes on after what is there

    def on_mount(self) -> None:
        self.query_one("#comment-body", Input).focus()

    def on_key(self, event: events.Key) -> None:
        """Text typed while the type list has the focus (after `tab`) goes into the comment, never lost."""
        body = self.query_one("#comment-body", Input)
        select = self.query_one("#comment-kind", Select)
        if self.focused is body or select.expanded or not (event.is_printable and event.character):
            return
        event.stop()
        event.prevent_default()
        body.focus()
        body.insert_text_at_cursor(event.character)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.notify("A comment needs some text.", severity="warning")
            return
        kind = self.query_one("#comment-kind", Select).value
        self.dismiss((str(kind), text))

    def action_cancel(self) -> None:
        self.dismiss(None)
