"""ExecConsole: a console on a held sandbox (docs/exec.md): an input line with history, the output of
each command with its exit code and classification, and the capabilities shown and changed explicitly.

The widget knows nothing of sandboxes: it is given ``runner(command, capabilities) -> result`` (an
ExecResult-shaped object), which it calls in a worker thread. Output comes from the sandbox and is
shown as plain text, never as markup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Checkbox, Input, RichLog, Static

from codebox_tui.settings import get_settings
from codebox_tui.textsafe import safe_text

Runner = Callable[[str, list[str]], Any]
MAX_HISTORY = 200


class ExecConsole(Vertical):
    """Run commands in a held sandbox. ``f2`` / ``f3`` toggle the write / eval capabilities."""

    DEFAULT_CSS = """
    ExecConsole { height: 16; border: round $accent; }
    ExecConsole #console-caps { height: 3; }
    ExecConsole #console-caps Checkbox { width: auto; margin-right: 2; }
    ExecConsole #console-caps Static { width: auto; padding: 1 1 0 0; }
    ExecConsole RichLog { height: 1fr; }
    ExecConsole Input { height: 3; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "toggle_capability('write')", "Toggle write", id="console.write"),
        Binding("f3", "toggle_capability('eval')", "Toggle eval", id="console.eval"),
    ]

    class Ran(Message):
        """A command finished (``result`` is what the runner returned, or None on an error)."""

        def __init__(self, command: str, result: Any, error: str | None) -> None:
            super().__init__()
            self.command, self.result, self.error = command, result, error

    def __init__(self, runner: Runner, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.runner = runner
        self.history: list[str] = []
        self._cursor = 0
        self.busy = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="console-caps"):
            yield Static("capabilities: read")
            yield Checkbox("write", False, id="cap-write")
            yield Checkbox("eval", False, id="cap-eval")
        yield RichLog(id="console-log", wrap=True, markup=False, highlight=False, max_lines=5000)
        yield Input(
            placeholder="command, e.g. on rg -l add_action --plugins   (↑/↓ history · f2 write · f3 eval)",
            id="console-input",
        )

    @property
    def capabilities(self) -> list[str]:
        caps = ["read"]
        if self.query_one("#cap-write", Checkbox).value:
            caps.append("write")
        if self.query_one("#cap-eval", Checkbox).value:
            caps.append("eval")
        return caps

    def action_toggle_capability(self, name: str) -> None:
        box = self.query_one(f"#cap-{name}", Checkbox)
        box.value = not box.value

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        name = (event.checkbox.id or "").removeprefix("cap-")
        state = "granted" if event.value else "withdrawn"
        self.query_one(RichLog).write(
            Text(f"# capability {name} {state}: now {','.join(self.capabilities)}", style="yellow")
        )

    def on_key(self, event: Any) -> None:
        field = self.query_one(Input)
        if not field.has_focus or event.key not in ("up", "down") or not self.history:
            return
        event.stop()
        self._cursor = max(0, self._cursor - 1) if event.key == "up" else min(len(self.history), self._cursor + 1)
        field.value = self.history[self._cursor] if self._cursor < len(self.history) else ""
        field.cursor_position = len(field.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        command = event.value.strip()
        if not command or self.busy:
            return
        event.input.value = ""
        if not self.history or self.history[-1] != command:
            self.history.append(command)
            del self.history[:-MAX_HISTORY]
        self._cursor = len(self.history)
        caps = self.capabilities
        self.query_one(RichLog).write(Text(f"$ {safe_text(command)}   [{','.join(caps)}]", style="bold"))
        self.busy = True
        self._run(command, caps)

    @work(thread=True, group="console")
    def _run(self, command: str, caps: list[str]) -> None:
        try:
            result, error = self.runner(command, caps), None
        except Exception as caught:  # a crashed sidecar, a closed session: shown, the console stays
            result, error = None, str(caught)
        self.app.call_from_thread(self._show, command, result, error)

    def _show(self, command: str, result: Any, error: str | None) -> None:
        log = self.query_one(RichLog)
        self.busy = False
        if error is not None:
            log.write(Text(f"error: {safe_text(error)}", style="red"))
        else:
            # as a terminal shows it: one line per line, tabs to tab stops, every other control character
            # (ESC, CR, bidi …) as a visible escape
            for text, style in ((result.stdout, ""), (result.stderr, "red")):
                if text:
                    shown = safe_text(text.rstrip("\n"), tab_size=get_settings().tab_width, keep_newlines=True)
                    for line in shown.split("\n"):
                        log.write(Text(line, style=style))
            limit = f" · limit {result.limitExceeded} hit" if result.limitExceeded else ""
            style = "green" if result.exitCode == 0 else "red"
            log.write(Text(f"→ exit {result.exitCode} · {result.classification or 'refused'}{limit}", style=style))
        self.post_message(self.Ran(command, result, error))

    def close(self, reason: str) -> None:
        """The sandbox is gone: no more commands."""
        self.query_one(RichLog).write(Text(f"# console closed: {reason}", style="yellow"))
        self.query_one(Input).disabled = True
