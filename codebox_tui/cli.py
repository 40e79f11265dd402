"""The ``codebox`` command. Each area registers its sub-commands from its own module.

Exit codes (also in the README): 0 ok, 1 negative verdict (invalid bundle, failed command or
tests), 2 bad input, 3 denied by policy, 4 sandbox failure (boot, crash, timeout), 5 apply
conflict, 130 interrupted.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import typer

from codebox_tui import __version__
from codebox_tui.cliutil import fail
from codebox_tui.errors import CodeboxError, ExitCode, HostIOError

app = typer.Typer(
    name="codebox",
    help="Run untrusted WordPress changes in disposable Playground sandboxes and review the result.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
)

_AREAS = (
    "codebox_tui.cli_run",
    "codebox_tui.cli_artifacts",
    "codebox_tui.cli_review",
    "codebox_tui.cli_recipe",
    "codebox_tui.cli_exec",
)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:
        launch_tui()


@app.command("tui")
def tui_command(
    bundle: Path | None = typer.Argument(None, help="Open this bundle folder for review straight away."),
) -> None:
    """Open the review workstation (also what plain ``codebox`` does)."""
    if bundle is not None:
        from codebox_tui.bundle.reader import find_bundle_dir

        bundle = find_bundle_dir(bundle)  # a missing or non-bundle folder is a clear error before the UI starts
    launch_tui(bundle)


def launch_tui(bundle: Path | None = None) -> None:
    # Imported by name so the core never depends on Textual (checked by import-linter and a test).
    tui = importlib.import_module("codebox_tui.app")
    tui.run_app(bundle)
    raise typer.Exit(0)


for _area in _AREAS:
    importlib.import_module(_area).register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors exit 2 (printed by Click), CodeboxErrors exit with their own code."""
    args = sys.argv[1:] if argv is None else argv
    json_mode = "--json" in args
    command = " ".join(a for a in args[:2] if not a.startswith("-"))
    try:
        app(args=args, prog_name="codebox", standalone_mode=True)
    except CodeboxError as error:
        try:
            fail(error, json_mode=json_mode, command=command)
        except typer.Exit as exit_:
            sys.exit(exit_.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("codebox: interrupted\n")
        sys.exit(int(ExitCode.INTERRUPTED))
    except OSError as error:  # the host's file system, not a bug to show as a traceback
        io_error = HostIOError(str(error.strerror or error), code="host-io-error",
                               field=str(error.filename) if error.filename else None)
        try:
            fail(io_error, json_mode=json_mode, command=command)
        except typer.Exit as exit_:
            sys.exit(exit_.exit_code)
