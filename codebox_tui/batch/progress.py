"""The live progress table of a batch or fan-out (``codebox batch``, ``codebox agent-task --fan-out``): one line
per item, as a rich live table on a terminal or one plain line per change otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from codebox_tui.textsafe import safe_text

STATE_MARKS = {
    "queued": "·",
    "running": "▶",
    "retrying": "↻",
    "completed": "✔",
    "failed": "✘",
    "timed-out": "⌛",
    "cancelled": "■",
}


class ProgressTable:
    """One line per item — state, attempts, verdict, bundle, what it is doing — as a live table on a terminal
    (rich), or one plain line per change otherwise (a log, a pipe, ``--json`` runs)."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.started = time.monotonic()
        self.states: dict[str, Any] = {}
        self.live_mode = (self.stream.isatty() if live is None else live) and not quiet
        self._live: Any = None
        self._last: dict[str, tuple[str, int, str]] = {}

    def start(self, batch_id: str, address: str) -> None:
        self.line(f"batch {batch_id} on Ray at {address}")
        if self.live_mode:
            self._live = Live(self.render(), console=Console(file=self.stream), refresh_per_second=4, transient=False)
            self._live.start()

    def stop(self) -> None:
        if self._live is not None:
            self._live.update(self.render())
            self._live.stop()
            self._live = None

    def line(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(f"codebox batch [{time.monotonic() - self.started:7.1f}s] {text}\n")
            self.stream.flush()

    def render(self) -> Any:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for name in ("item", "kind", "state", "tries", "verdict", "bundle", "now"):
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=48 if name == "now" else None)
        for state in self.states.values():
            table.add_row(*self.cells(state))
        return table

    @staticmethod
    def cells(state: Any) -> list[str]:
        mark = STATE_MARKS.get(state.state, "?")
        bundle = f"@{state.bundle_key}" if state.bundle_key is not None else ""
        now = state.phase if not state.done else (str((state.error or {}).get("message") or "") if state.error else "")
        return [
            safe_text(state.item.id),
            state.item.kind,
            f"{mark} {state.state}",
            str(state.attempts),
            safe_text(state.verdict),
            bundle,
            safe_text(now)[:200],
        ]

    def update(self, state: Any) -> None:
        self.states[state.item.id] = state
        if self._live is not None:
            self._live.update(self.render())
            return
        key = (state.state, state.attempts, state.phase)
        if self._last.get(state.item.id) == key:
            return
        self._last[state.item.id] = key
        item, kind, shown, tries, verdict, bundle, now = self.cells(state)
        self.line(
            f"{item} ({kind}) {shown} attempt {tries}"
            + (f" · {verdict}" if verdict else "")
            + (f" · bundle {bundle}" if bundle else "")
            + (f" · {now}" if now else "")
        )
