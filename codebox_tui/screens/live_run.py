"""Live run: the sandbox runs in a worker thread while its events.jsonl is tailed as it grows."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from codebox_tui.runtime.backend import SandboxSpec
from widgets.event_tail import EventTail


class LiveRunScreen(Screen[None]):
    CSS_PATH = "live_run.tcss"
    HELP = """\
# Live run
Events appear as the sandbox boots and runs. Scroll up to pause following; `End` follows again.
- `x`: cancel the run (asks first) · `enter` on the log: show an event in full · `r`: review the bundle when done
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "cancel_run", "Cancel run", id="live.cancel"),
        Binding("r", "review", "Review bundle", id="live.review"),
        Binding("escape", "back", "Back", id="live.back"),
    ]

    def __init__(self, spec: SandboxSpec | None, command: str, args: list[str], artifacts_root: Path,
                 *, run_dir: Path | None = None) -> None:
        super().__init__()
        self.spec, self.command, self.args, self.artifacts_root = spec, command, args, artifacts_root
        self.run_dir = run_dir
        self.session: Any = None
        self.bundle_dir: Path | None = None
        self.state = "starting"
        self._ready = threading.Event()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("starting…", id="progress")
        yield Static("", id="tail-status")
        if self.run_dir is not None:
            yield EventTail(self.run_dir / "events.jsonl", id="tail")
        yield Footer()

    def on_mount(self) -> None:
        if self.spec is not None and self.run_dir is None:
            self.start_run()

    @work(thread=True, exclusive=True, group="run")
    def start_run(self) -> None:
        from codebox_tui.errors import CodeboxError
        from codebox_tui.runtime.session import RunSession

        assert self.spec is not None
        self.artifacts_root.mkdir(parents=True, exist_ok=True)
        session = RunSession(self.spec, self.artifacts_root,
                             on_event=lambda e: self.app.call_from_thread(self._on_event, e.type, e.data or {}))
        self.session = session
        self.app.call_from_thread(self._attach_tail, session.run_dir)
        error: str | None = None
        summary = None
        try:
            session.execute(self.command, self.args)
        except CodeboxError as caught:
            error = str(caught)
        try:
            summary = session.capture()
        except CodeboxError as caught:
            error = error or str(caught)
        finally:
            session.close()
        if summary is not None:
            try:
                from codebox_tui.screens import data

                store = data.open_store()
                try:
                    store.record_run(session.runtime_id, status="failed" if error else "completed",
                                     artifacts_dir=session.run_dir, metadata=session.spec.metadata,
                                     sandbox_session_id=session.spec.metadata.get("sandbox_session_id"),
                                     started_at=session.created_at)
                    record = data.register(store, summary.path, run_id=session.runtime_id)
                    store.update_run(session.runtime_id, bundle_id=record.bundle_id)
                finally:
                    store.close()
            except Exception as caught:  # the bundle on disk is still there
                error = error or f"could not record the bundle: {caught}"
        self.app.call_from_thread(self._finished, summary.path if summary else None, error)

    def _attach_tail(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        tail = EventTail(run_dir / "events.jsonl", id="tail")
        self.mount(tail, before=self.query_one(Footer))
        tail.focus()

    def _on_event(self, kind: str, info: dict[str, Any]) -> None:
        label = {"runtime.boot-progress": f"booting: {info.get('phase')}",
                 "runtime.ready": f"ready — preview {info.get('previewUrl')}",
                 "command.started": f"running {info.get('command')}",
                 "command.finished": f"{info.get('command')} exited {info.get('exitCode')}",
                 "command.failed": f"{info.get('command')} failed",
                 "artifacts.capturing": "capturing the bundle…"}.get(kind)
        if label:
            self.query_one("#progress", Static).update(label)

    def _finished(self, bundle_dir: Path | None, error: str | None) -> None:
        self.bundle_dir = bundle_dir
        self.state = "failed" if error else "done"
        text = f"[red]failed:[/] {error}" if error else "[green]done[/]"
        if bundle_dir:
            text += f" — bundle ready, press [b]r[/b] to review ({bundle_dir.name})"
        self.query_one("#progress", Static).update(text)

    def on_event_tail_updated(self, message: EventTail.Updated) -> None:
        state = "following" if message.following else f"paused — {message.pending} new"
        self.query_one("#tail-status", Static).update(f" {message.total} events · {state}")

    def on_event_tail_inspect(self, message: EventTail.Inspect) -> None:
        from codebox_tui.screens.dialogs import TextDialog

        text = json.dumps(message.event, indent=2) if isinstance(message.event, dict) else str(message.event)
        self.app.push_screen(TextDialog("Event", text))

    def action_review(self) -> None:
        if self.bundle_dir is None:
            self.notify("The bundle is not ready yet.", severity="warning")
            return
        self.app.open_bundle(self.bundle_dir)  # type: ignore[attr-defined]

    def action_cancel_run(self) -> None:
        from codebox_tui.screens.dialogs import ConfirmDialog

        if self.state != "starting" or self.session is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes and self.session is not None:
                sandbox = getattr(self.session, "_sandbox", None)
                sidecar = getattr(sandbox, "sidecar", None)
                if sidecar is not None:
                    sidecar.kill("was cancelled by the reviewer")
                self.notify("Run cancelled; the sandbox was stopped.")

        self.app.push_screen(ConfirmDialog("Cancel this run?", "The sandbox is stopped; evidence so far is kept."),
                             confirmed)

    def action_back(self) -> None:
        self.app.pop_screen()
