"""CLI for batches: ``codebox batch FILE`` runs a JSON Lines file of items on Ray (docs/scale-out.md) with a
live progress table on stderr, brings every bundle back, verifies it and records the batch for the inbox."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

import typer

from codebox_tui.cliutil import JsonOption, emit_json, exit_with
from codebox_tui.errors import ExitCode
from codebox_tui.textsafe import safe_text

STATE_MARKS = {"queued": "·", "running": "▶", "retrying": "↻", "completed": "✔", "failed": "✘",
               "timed-out": "⌛", "cancelled": "■"}


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
            from rich.console import Console
            from rich.live import Live

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
        from rich.table import Table

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
        return [safe_text(state.item.id), state.item.kind, f"{mark} {state.state}", str(state.attempts),
                safe_text(state.verdict), bundle, safe_text(now)[:200]]

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
        self.line(f"{item} ({kind}) {shown} attempt {tries}" + (f" · {verdict}" if verdict else "")
                  + (f" · bundle {bundle}" if bundle else "") + (f" · {now}" if now else ""))


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""

    @app.command("batch")
    def batch_command(
        file: Path = typer.Argument(..., help="Batch file: JSON Lines, one item per line ({\"kind\": ..., ...})"),
        concurrency: int | None = typer.Option(None, "--concurrency", help="Items in flight at once (default: what "
                                                                            "the Ray cluster's CPUs hold)"),
        timeout: str | None = typer.Option(None, "--timeout", help="Per-item time limit, e.g. 10m (default: none)"),
        retries: int = typer.Option(1, "--retries", help="Retries of an item after an infrastructure failure (a "
                                                          "worker died, the sandbox did not boot); never for a "
                                                          "failing item"),
        ray_address: str | None = typer.Option(None, "--ray-address", help="A running Ray cluster (default: a "
                                                                            "private local Ray instance)"),
        artifacts_dir: Path | None = typer.Option(None, "--artifacts-dir", "--artifacts",
                                                     help="Where the bundles go (on this machine)."),
        json_out: bool = JsonOption,
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
    ) -> None:
        """Run every item of a batch file in its own sandbox on Ray and record the batch for the inbox.

        Exit 0 when every item completed with a positive verdict, 1 when any failed, timed out or was
        cancelled, 2 for a malformed batch file (nothing runs), 130 when interrupted."""
        from codebox_tui.batch import parse_batch_file, run_batch
        from codebox_tui.durations import parse_duration

        timeout_s = parse_duration(timeout, "--timeout") if timeout else None
        items = parse_batch_file(file)
        table = ProgressTable(quiet=quiet)
        try:
            outcome = run_batch(items, concurrency=concurrency, timeout_s=timeout_s, retries=retries,
                                ray_address=ray_address, artifacts_root=artifacts_dir, on_update=table.update,
                                on_start=table.start, source=str(file.resolve()))
        finally:
            table.stop()
        if json_out:
            emit_json(outcome.to_dict())
        else:
            _print_outcome(outcome)
        if outcome.interrupted:
            exit_with(ExitCode.INTERRUPTED)
        exit_with(ExitCode.OK if outcome.success else ExitCode.FAILED)


def _print_outcome(outcome: Any) -> None:
    counts = outcome.to_dict()["counts"]
    typer.echo(f"batch {outcome.batch_id}: " + ", ".join(f"{n} {state}" for state, n in counts.items())
               + f" in {outcome.seconds:.1f} s")
    for state in outcome.items:
        item, kind, shown, tries, verdict, bundle, now = ProgressTable.cells(state)
        typer.echo(f"  {shown:<12} {item:<20} {kind:<15} attempts {tries}  {verdict or '-':<14} "
                   f"{bundle or '-':<6} {now}".rstrip())
    typer.echo(f"review them with: codebox review list   (batch {outcome.batch_id})")
