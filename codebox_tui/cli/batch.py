"""CLI for batches: ``codebox batch FILE`` runs a JSON Lines file of items on Ray (docs/scale-out.md) with a
live progress table on stderr, brings every bundle back, verifies it and records the batch for the inbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from codebox_tui.batch import parse_batch_file, run_batch
from codebox_tui.batch.progress import ProgressTable
from codebox_tui.cli.output import BACKEND_HELP, JsonOption, emit_json, exit_with, show
from codebox_tui.durations import parse_duration
from codebox_tui.errors import ExitCode
from codebox_tui.runtime.backends import backend_name


def batch_command(
    file: Path = typer.Argument(..., help='Batch file: JSON Lines, one item per line ({"kind": ..., ...})'),
    concurrency: int | None = typer.Option(
        None, "--concurrency", help="Items in flight at once (default: what the Ray cluster's CPUs hold)"
    ),
    timeout: str | None = typer.Option(None, "--timeout", help="Per-item time limit, e.g. 10m (default: none)"),
    retries: int = typer.Option(
        1,
        "--retries",
        help="Retries of an item after an infrastructure failure (a "
        "worker died, the sandbox did not boot); never for a "
        "failing item",
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="A running Ray cluster (default: a private local Ray instance)"
    ),
    artifacts_dir: Path | None = typer.Option(
        None, "--artifacts-dir", "--artifacts", help="Where the bundles go (on this machine)."
    ),
    backend: str | None = typer.Option(
        None,
        "--backend",
        help=BACKEND_HELP + " The default of every item that "
        "names no backend of its own (an item's `backend`, a recipe's "
        "runtime.backend).",
    ),
    json_out: bool = JsonOption,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
) -> None:
    """Run every item of a batch file in its own sandbox on Ray and record the batch for the inbox.

    Exit 0 when every item completed with a positive verdict, 1 when any failed, timed out or was
    cancelled, 2 for a malformed batch file (nothing runs), 130 when interrupted."""
    timeout_s = parse_duration(timeout, "--timeout") if timeout else None
    items = parse_batch_file(file, default_backend=backend_name(backend) if backend is not None else None)
    table = ProgressTable(quiet=quiet)
    try:
        outcome = run_batch(
            items,
            concurrency=concurrency,
            timeout_s=timeout_s,
            retries=retries,
            ray_address=ray_address,
            artifacts_root=artifacts_dir,
            on_update=table.update,
            on_start=table.start,
            source=str(file.resolve()),
        )
    finally:
        table.stop()
    if json_out:
        emit_json(outcome.to_dict())
    else:
        _print_outcome(outcome)
    if outcome.interrupted:
        exit_with(ExitCode.INTERRUPTED)
    exit_with(ExitCode.OK if outcome.success else ExitCode.FAILED)


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("batch")(batch_command)


def _print_outcome(outcome: Any) -> None:
    counts = outcome.to_dict()["counts"]
    show(
        f"batch {outcome.batch_id}: "
        + ", ".join(f"{n} {state}" for state, n in counts.items())
        + f" in {outcome.seconds:.1f} s"
    )
    for state in outcome.items:
        item, kind, shown, tries, verdict, bundle, now = ProgressTable.cells(state)
        show(
            f"  {shown:<12} {item:<20} {kind:<15} attempts {tries}  {verdict or '-':<14} "
            f"{bundle or '-':<6} {now}".rstrip()
        )
    show(f"review them with: codebox review list   (batch {outcome.batch_id})")
