"""The ``codebox`` command. Each area registers its sub-commands from its own module.

Exit codes (also in the README): 0 ok, 1 negative verdict (invalid bundle, failed command or
tests), 2 bad input, 3 denied by policy, 4 sandbox failure (boot, crash, timeout), 5 apply
conflict, 130 interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from codebox_tui import (
    __version__,
    cli_agent,
    cli_artifacts,
    cli_batch,
    cli_exec,
    cli_mcp,
    cli_recipe,
    cli_review,
    cli_run,
)
from codebox_tui.bundle.reader import find_bundle_dir
from codebox_tui.cliutil import fail, progress, show
from codebox_tui.errors import CodeboxError, ExitCode, HostIOError

app = typer.Typer(
    name="codebox",
    help="Run untrusted WordPress changes in disposable Playground sandboxes and review the result.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
)



@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        show(__version__)
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:
        launch_tui()


@app.command("tui")
def tui_command(
    bundle: Path | None = typer.Argument(None, help="Open this bundle folder for review straight away."),
) -> None:
    """Open the review workstation (also what plain `codebox` does)."""
    if bundle is not None:
        bundle = find_bundle_dir(bundle)  # a missing or non-bundle folder is a clear error before the UI starts
    launch_tui(bundle)


def launch_tui(bundle: Path | None = None) -> None:
    # Deferred: the commands that never open the UI start without loading Textual. Declared in
    # pyproject's [tool.importlinter] ignore_imports with that reason.
    from codebox_tui.app import run_app

    run_app(bundle)
    raise typer.Exit(0)


for _area in (cli_run, cli_artifacts, cli_review, cli_recipe, cli_exec, cli_mcp, cli_agent, cli_batch):
    _area.register(app)
cli_review.register_prune(cli_artifacts.artifacts_app)


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
        progress("codebox: interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
    except OSError as error:  # the host's file system, not a bug to show as a traceback
        io_error = HostIOError(str(error.strerror or error), code="host-io-error",
                               field=str(error.filename) if error.filename else None)
        try:
            fail(io_error, json_mode=json_mode, command=command)
        except typer.Exit as exit_:
            sys.exit(exit_.exit_code)
