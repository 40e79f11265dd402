"""DecisionBar: always-visible verification status, selection count and the decision keys."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

ACTIONS = {"approve_all": "approve", "approve_selected": "approve-selected", "discard": "discard",
           "request_changes": "request-changes"}


class DecisionBar(Static):
    """One line: verification status (always visible), selection count, last decision, key hints.

    The screen owns the decision keys; the bar's own bindings (when it has focus) post ``Decide``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "decide('approve_all')", "Approve all", show=False, id="decision.approve_all"),
        Binding("A", "decide('approve_selected')", "Approve selected", show=False, id="decision.approve_selected"),
        Binding("d", "decide('discard')", "Discard", show=False, id="decision.discard"),
        Binding("i", "decide('request_changes')", "Request changes", show=False, id="decision.request_changes"),
    ]

    class Decide(Message):
        def __init__(self, action: str) -> None:
            self.action = action  # approve | approve-selected | discard | request-changes
            super().__init__()

    def action_decide(self, which: str) -> None:
        if which.startswith("approve") and not self.valid:
            self.app.bell()
            return
        self.post_message(self.Decide(ACTIONS[which]))

    HELP = """\
## Decide
- `a`: approve all changes · `A`: approve the selected files · `d`: discard · `i`: request changes
- An invalid bundle can be inspected but not approved.
"""

    DEFAULT_CSS = """
    DecisionBar { height: 1; background: $panel; padding: 0 1; }
    """

    valid: reactive[bool] = reactive(True)
    selected: reactive[int] = reactive(0)
    total: reactive[int] = reactive(0)
    decision: reactive[str] = reactive("")
    reason: reactive[str] = reactive("")  # why verification failed, shown beside the INVALID badge

    def render(self) -> Text:
        text = Text()
        if self.valid:
            text.append(" ✔ verified ", style="bold black on green")
        else:
            text.append(" ✘ INVALID BUNDLE — approval disabled ", style="bold white on red")
            if self.reason:
                text.append(f" {self.reason}", style="red")
        text.append(f"  {self.selected}/{self.total} selected", style="bold")
        if self.decision:
            text.append(f"  decision: {self.decision}", style="bold cyan")
        # The decision keys live here, not in the footer: the longest wording that fits the width.
        room = self.size.width - 2 - text.cell_len
        for hint in HINTS:
            if sum(len(key) + len(label) + 4 for key, label in hint) + 1 <= room or hint is HINTS[-1]:
                text.append("  ")
                for index, (key, label) in enumerate(hint):
                    text.append(" · " if index else " ", style="dim")
                    text.append(key, style="bold")
                    text.append(f" {label}", style="dim")
                break
        return text


HINTS = (
    (("a", "approve all"), ("space", "select"), ("A", "approve selected"), ("d", "discard"),
     ("i", "request changes")),
    (("a", "approve all"), ("A", "approve selected"), ("d", "discard"), ("i", "request changes")),
    (("a", "all"), ("A", "selected"), ("d", "discard"), ("i", "changes")),
)
