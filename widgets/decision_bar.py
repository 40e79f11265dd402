"""DecisionBar: always-visible verification status, selection count and the decision keys."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

# The keys the bar names, by hint: the screen that owns the decision bindings passes the keys in force
# (``show_keys``), so a key remapped in the keymap (docs/settings.md) is the key shown.
DEFAULT_KEYS = {"approve_all": "a", "select": "space", "approve_selected": "A", "discard": "d", "request_changes": "i"}


class DecisionBar(Static):
    """One line: verification status (always visible), selection count, last decision, key hints.

    It has no bindings of its own: the screen owns the decision keys and tells the bar which they are."""

    HELP = """\
## Decide
- Approve all changes, approve the selected files, discard, or request changes: the keys are shown in
  the bar (and under "Keys on this screen").
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
    busy: reactive[str] = reactive("")  # what a worker is doing ("Verifying…"), shown instead of the decision keys
    blocked: reactive[str] = reactive("")  # why no decision can be made here (output only), shown instead of the keys

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.decision_keys: dict[str, str] = dict(DEFAULT_KEYS)

    def show_keys(self, keys: Mapping[str, str]) -> None:
        """The keys to name, as displayed (``a``, ``^a``, ``space``…), by hint (see ``DEFAULT_KEYS``)."""
        self.decision_keys = {**DEFAULT_KEYS, **keys}
        self.refresh()

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
        if self.busy:  # the decision keys wait for the worker (the screen says so when one is pressed)
            text.append(f"  ⟳ {self.busy}", style="bold yellow")
            return text
        if self.blocked:  # nothing to decide: the keys would only say why (the screen does)
            text.append(f"  {self.blocked}", style="bold cyan")
            return text
        # The decision keys live here, not in the footer: the longest wording that fits the width.
        room = self.size.width - 2 - text.cell_len
        for hint in HINTS:
            pairs = [(self.decision_keys[name], label) for name, label in hint]
            if sum(len(key) + len(label) + 4 for key, label in pairs) + 1 <= room or hint is HINTS[-1]:
                text.append("  ")
                for index, (key, label) in enumerate(pairs):
                    text.append(" · " if index else " ", style="dim")
                    text.append(key, style="bold")
                    text.append(f" {label}", style="dim")
                break
        return text


HINTS = (
    (
        ("approve_all", "approve all"),
        ("select", "select"),
        ("approve_selected", "approve selected"),
        ("discard", "discard"),
        ("request_changes", "request changes"),
    ),
    (
        ("approve_all", "approve all"),
        ("approve_selected", "approve selected"),
        ("discard", "discard"),
        ("request_changes", "request changes"),
    ),
    (("approve_all", "all"), ("approve_selected", "selected"), ("discard", "discard"), ("request_changes", "changes")),
)
