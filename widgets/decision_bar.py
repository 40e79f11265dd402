"""DecisionBar: always-visible verification status, selection count and the decision keys."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static


class DecisionBar(Static):
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

    def render(self) -> Text:
        text = Text()
        if self.valid:
            text.append(" ✔ verified ", style="bold black on green")
        else:
            text.append(" ✘ INVALID BUNDLE — approval disabled ", style="bold white on red")
        text.append(f"  {self.selected}/{self.total} selected", style="bold")
        if self.decision:
            text.append(f"  decision: {self.decision}", style="bold cyan")
        text.append("   a approve all · space select · A approve selected · d discard · i request changes",
                    style="dim")
        return text
