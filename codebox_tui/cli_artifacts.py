"""CLI commands for this area (registered on the root app by :mod:`codebox_tui.cli`)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to app."""
