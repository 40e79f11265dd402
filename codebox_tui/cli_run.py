"""``codebox commands``, ``codebox schema``, ``codebox run`` and ``codebox boot``."""

from __future__ import annotations

import typer

from codebox_tui.cliutil import emit_json
from codebox_tui.runtime.catalog import command_catalog


def commands_command(
    json_out: bool = typer.Option(False, "--json", help="Print the wp-codebox/command-catalog/v1 document."),
) -> None:
    """List the runtime command ids, their arguments and policy requirements (boots nothing)."""
    catalog = command_catalog()
    if json_out:
        emit_json(catalog)
        return
    for spec in catalog.commands:
        args = " ".join(f"{a.name}=…{'*' if a.required else ''}" for a in spec.acceptedArgs)
        typer.echo(f"{spec.id:38} {args}")
        typer.echo(f"{'':38} {spec.description}")


def register(app: typer.Typer) -> None:
    app.command("commands")(commands_command)
