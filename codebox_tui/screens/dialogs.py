"""Modal dialogs: confirm a decision, give a reason, apply through an adapter, read text, help."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Markdown, Select, Static

from codebox_tui.contracts.apply import ApplyResult
from codebox_tui.screens import data
from codebox_tui.screens.base import CodeboxModal
from codebox_tui.textsafe import safe_text

DIALOG_CSS = """
ConfirmDialog, ReasonDialog, ApplyDialog, TextDialog, HelpDialog, LaunchScreen, OpenBundleDialog {
    align: center middle;
}
.dialog { width: 90; max-width: 95%; height: auto; max-height: 90%; border: thick $primary; background: $surface;
          padding: 1 2; }
.dialog .title { text-style: bold; margin-bottom: 1; }
.dialog .buttons { height: auto; margin-top: 1; align-horizontal: right; }
.dialog Button { margin-left: 1; }
.dialog VerticalScroll { height: auto; max-height: 24; }
"""

# F1 in a dialog: the app's help, with the dialog's HELP first (a modal screen does not pass F1 to the app).
HELP_KEY = Binding("f1", "app.help", "Help", show=False, id="dialog.help")


class ConfirmDialog(CodeboxModal[bool]):
    HELP = """\
# Confirm
Read what will be recorded (files, hunks, comments), then `y` (or the Record button) records it in the
store with the bundle's content digest; `n` or `escape` goes back without recording anything. While the
dialog says "Verifying…" the bundle is being hashed in the background; `y` pressed meanwhile records as
soon as it is verified (never if it fails).
"""
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Confirm", id="dialog.confirm"),
        Binding("escape,n", "cancel", "Cancel", id="dialog.cancel"),
        HELP_KEY,
    ]

    def __init__(self, title: str, body: str, *, verify: Callable[[], str] | None = None) -> None:
        """``verify``: slow work (hashing the bundle) run in a worker while the dialog shows ``body`` and
        "Verifying…"; the text it returns then replaces ``body``. An error it raises is shown, and nothing
        can be confirmed."""
        super().__init__()
        self.title_text = safe_text(title)
        self.body = safe_text(body, tab_size=4, keep_newlines=True)  # file names come from the sandbox
        self.verify = verify
        self.verifying = verify is not None
        self.problem: str | None = None
        self.confirm_when_verified = False  # `y` pressed while verifying

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="title")
            with VerticalScroll():
                yield Static(self.body + (VERIFYING if self.verifying else ""), markup=False, id="confirm-body")
            with Horizontal(classes="buttons"):
                yield Button("Cancel (n)", id="cancel")
                yield Button("Record (y)", variant="primary", id="confirm")

    def on_mount(self) -> None:
        if self.verify is not None:
            self._run_verify(self.verify)

    @work(thread=True, exclusive=True, group="confirm-verify")
    def _run_verify(self, verify: Callable[[], str]) -> None:
        try:
            body, problem = verify(), None
        except Exception as error:  # shown in the dialog, never a traceback
            body, problem = None, safe_text(error)
        self.app.call_from_thread(self._verified, body, problem)

    def _verified(self, body: str | None, problem: str | None) -> None:
        if not self.is_attached:  # cancelled while verifying
            return
        self.verifying, self.problem = False, problem
        if body is not None:
            self.body = safe_text(body, tab_size=4, keep_newlines=True)
        text = self.body if problem is None else f"{self.body}\n\n✘ Cannot record: {problem}"
        self.query_one("#confirm-body", Static).update(text)
        self.query_one("#confirm", Button).disabled = problem is not None
        if problem is None and self.confirm_when_verified:
            self.dismiss(True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "confirm":
            self.action_confirm()
        else:
            self.dismiss(False)

    def action_confirm(self) -> None:
        if self.verifying:  # recorded as soon as the verification succeeds (never if it fails)
            self.confirm_when_verified = True
            self.query_one("#confirm-body", Static).update(self.body + VERIFYING + CONFIRMED_WHILE_VERIFYING)
            return
        if self.problem is not None:
            self.notify(f"Cannot record: {self.problem}", severity="error", markup=False)
            return
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


VERIFYING = "\n\n⟳ Verifying… (hashing the bundle's changes)"
CONFIRMED_WHILE_VERIFYING = "\n✔ y pressed: recorded as soon as the bundle is verified (escape cancels)"


class ReasonDialog(CodeboxModal[str | None]):
    HELP = """\
# Request changes
Type what the author should change and press `enter`: the reason, with the open comments, is recorded
with the decision and written to feedback.md / feedback.json next to the bundle. `escape` cancels.
"""
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog.cancel"), HELP_KEY]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Request changes: what should the author change?", classes="title")
            yield Input(placeholder="reason (required)", id="reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())
        else:
            self.notify("A reason is required.", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(None)


class OpenBundleDialog(CodeboxModal[str | None]):
    """Ask for a bundle folder made elsewhere (another machine, the reference implementation)."""

    HELP = """\
# Open a bundle
Type the path of a bundle folder (it holds manifest.json) or of a folder of bundles and press `enter`.
Each bundle is verified and added to the inbox where it is (never moved or copied); one bundle opens for
review at once. Bundles that fail verification are listed and not added. `escape` cancels.
"""
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog.cancel"), HELP_KEY]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Open a bundle by path: it is verified, added to the inbox, and never moved", classes="title")
            yield Input(placeholder="bundle folder (holds manifest.json) or a folder of bundles", id="bundle-path")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.dismiss(event.value.strip())
        else:
            self.notify("A folder is required.", severity="warning")

    def action_cancel(self) -> None:
        self.dismiss(None)


class ApplyDialog(CodeboxModal[None]):
    """Optionally apply an approval through an adapter and show the apply-result."""

    HELP = """\
# Apply
Choose an adapter (`directory`: write into a folder, `git`: apply in a work tree, `patch`: write a patch
file), give the target and press `enter` or Apply. Only the approved files and hunks are written, after
the conflict checks; a refusal writes nothing and says why. `escape` skips: the decision stays recorded
and can be applied later with `codebox apply DECISION`.
"""
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="dialog.close"), HELP_KEY]

    def __init__(self, decision_id: int) -> None:
        super().__init__()
        self.decision_id = decision_id
        self.applying = False  # the apply worker runs

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Apply decision #{self.decision_id} now? (escape to skip)", classes="title")
            yield Select(
                [("directory", "directory"), ("git", "git"), ("patch", "patch")],
                value="directory",
                allow_blank=False,
                id="adapter",
            )
            yield Input(placeholder="target folder (or patch file for the patch adapter)", id="target")
            yield Static("", id="apply-result", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Skip", id="skip")
                yield Button("Apply", variant="primary", id="apply")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "skip":
            self.action_close()
        else:
            self._apply()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self._apply()

    def _apply(self) -> None:
        if self._refused_while_applying("Apply"):
            return
        target = self.query_one("#target", Input).value.strip()
        adapter = str(self.query_one("#adapter", Select).value)
        if not target:
            self.notify("Give a target.", severity="warning")
            return
        self.applying = True
        self.query_one("#apply", Button).disabled = True
        self.query_one("#apply-result", Static).update(
            f"Applying through {adapter}… (verifying the bundle, checking the target)"
        )
        self._apply_in_worker(adapter, target)

    def _refused_while_applying(self, what: str) -> bool:
        """A key pressed while the apply runs says why it waits (the apply cannot be stopped halfway)."""
        if self.applying:
            self.notify(f"Applying… — {what} waits until it is done.", severity="warning")
        return self.applying

    @work(thread=True, exclusive=True, group="apply")
    def _apply_in_worker(self, adapter: str, target: str) -> None:
        """Verify the bundle and apply the approved files, off the UI thread."""
        store = data.open_store()
        try:
            result: ApplyResult | None = data.apply(store, self.decision_id, adapter, target)
            problem = None
        except Exception as error:  # refusals (conflicts, digest mismatch) are shown, nothing is written
            hint = data.refusal_hint(error)  # e.g. the three-way merged/conflicting hunk counts
            result, problem = None, f"Refused: {error}" + (f"\n{hint}" if hint else "")
        finally:
            store.close()
        self.app.call_from_thread(self._applied, adapter, result, problem)

    def _applied(self, adapter: str, result: ApplyResult | None, problem: str | None) -> None:
        self.applying = False
        if not self.is_mounted:
            return
        self.query_one("#apply", Button).disabled = False
        if problem is not None or result is None:
            self.query_one("#apply-result", Static).update(safe_text(problem or "Nothing applied.", keep_newlines=True))
            return
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        merged = data.three_way_summary(dumped)  # merged/conflict counts of a three-way apply, if any
        shown = (merged + "\n" if merged else "") + json.dumps(dumped, indent=2)
        self.query_one("#apply-result", Static).update(safe_text(shown, keep_newlines=True))
        self.notify(f"Applied through {adapter}." + (f" {merged}" if merged else ""))

    def action_close(self) -> None:
        if not self._refused_while_applying("Closing"):
            self.dismiss(None)


class TextDialog(CodeboxModal[None]):
    HELP = """\
# Text
Sandbox-written text (events, output) shown with control characters as visible escapes. `escape`,
`enter` or `q` closes it.
"""
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter,q", "close", "Close", id="dialog.close"), HELP_KEY]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = safe_text(title)
        self.text = safe_text(text, tab_size=4, keep_newlines=True)  # events and logs come from the sandbox

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="title")
            with VerticalScroll():
                yield Static(self.text, markup=False)

    def action_close(self) -> None:
        self.dismiss(None)


class HelpDialog(CodeboxModal[None]):
    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "close", "Close", id="dialog.close")]

    def __init__(self, markdown: str) -> None:
        super().__init__()
        self.markdown = markdown

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"), VerticalScroll():
            yield Markdown(self.markdown)

    def action_close(self) -> None:
        self.dismiss(None)
