"""The ``codebox`` command: this package root lists every sub-command and loads an area (one module of this
package each: run, boot, episode, artifacts, review, recipe, exec, agent, mcp, batch, site) only when one of its
commands runs. Each area defines its commands as module-level functions (sub-groups as module-level Typer apps)
and adds them in its ``register(app)``; ``output.py`` holds the writers every area prints through, and the
shared modules ``run_options.py``, ``preview.py`` and ``held.py`` what several areas' commands have in common.

Exit codes (also in the README): 0 ok, 1 negative verdict (invalid bundle, failed command or
tests), 2 bad input, 3 denied by policy, 4 sandbox failure (boot, crash, timeout), 5 apply
conflict, 130 interrupted.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from codebox_tui import __version__
from codebox_tui.cli.output import fail, progress, show
from codebox_tui.errors import CodeboxError, ExitCode, HostIOError

# -- lazy sub-commands ---------------------------------------------------------------------------------
# Each area's module (and all it imports: the run lifecycle, agents, Ray, the MCP SDK) is imported only when
# one of its commands runs or shows its own help: `codebox --help` lists the commands from SUBCOMMANDS
# without importing any area, and `codebox run` imports the run area alone. These function-local imports of
# the project's own modules are the deliberate exception to docs/architecture.md's top-of-module rule.


def _area_run(app: typer.Typer) -> None:
    from codebox_tui.cli import run as cli_run

    cli_run.register(app)


def _area_boot(app: typer.Typer) -> None:
    from codebox_tui.cli import boot as cli_boot

    cli_boot.register(app)


def _area_episode(app: typer.Typer) -> None:
    from codebox_tui.cli import episode as cli_episode

    cli_episode.register(app)


def _area_artifacts(app: typer.Typer) -> None:
    from codebox_tui.cli import artifacts as cli_artifacts
    from codebox_tui.cli import review as cli_review

    cli_artifacts.register(app)
    cli_review.register_prune(cli_artifacts.artifacts_app)


def _area_review(app: typer.Typer) -> None:
    from codebox_tui.cli import review as cli_review

    cli_review.register(app)


def _area_recipe(app: typer.Typer) -> None:
    from codebox_tui.cli import recipe as cli_recipe

    cli_recipe.register(app)


def _area_exec(app: typer.Typer) -> None:
    from codebox_tui.cli import exec as cli_exec

    cli_exec.register(app)


def _area_mcp(app: typer.Typer) -> None:
    from codebox_tui.cli import mcp as cli_mcp

    cli_mcp.register(app)


def _area_agent(app: typer.Typer) -> None:
    from codebox_tui.cli import agent as cli_agent

    cli_agent.register(app)


def _area_batch(app: typer.Typer) -> None:
    from codebox_tui.cli import batch as cli_batch

    cli_batch.register(app)


def _area_site(app: typer.Typer) -> None:
    from codebox_tui.cli import site as cli_site

    cli_site.register(app)


Area = Callable[[typer.Typer], None]
# name → (the area that registers it, the one-line help `codebox --help` shows), in the order of the listing.
# tests/unit/test_cli_lazy.py checks this table against the commands the areas really register.
SUBCOMMANDS: dict[str, tuple[Area, str]] = {
    "commands": (_area_run, "List the runtime command ids, their arguments and policy requirements (boots nothing)."),
    "run": (_area_run, "Boot a sandbox, run one command, capture the artifact bundle, dispose."),
    "boot": (_area_boot, "Boot a sandbox and hold it for live preview until the hold expires or Ctrl-C."),
    "apply": (_area_review, "Apply an approval decision after re-verifying the bundle and its content digest."),
    "apply-recover": (
        _area_review,
        "Finish or undo a directory apply that was interrupted (also done by the next apply).",
    ),
    "schema": (_area_recipe, "Print a generated JSON Schema (Draft 2020-12)."),
    "recipe-run": (
        _area_recipe,
        "Run a recipe in a fresh sandbox and produce one bundle (or print the plan with --dry-run).",
    ),
    "validate-blueprint": (
        _area_recipe,
        "Check a raw Playground blueprint's shape; --boot also applies it in a sandbox.",
    ),
    "evaluate-patch": (
        _area_recipe,
        "Apply a patch (or a git range) to a copy of a plugin in a sandbox, run its "
        "tests before and after, probe the site. When the patch brings tests, they run "
        "on the old code too: fail before, pass after is the proof.",
    ),
    "exec": (
        _area_exec,
        "Run COMMAND in the sandbox's shell: no host processes, only the sandbox's files; "
        "classified and checked against --capabilities before anything runs.",
    ),
    "release": (
        _area_exec,
        "End a held sandbox's hold now: its holder captures the bundle, as when the hold expires, and exits.",
    ),
    "mcp": (
        _area_mcp,
        "Serve the MCP tools (run, artifacts_show, artifacts_verify, review_decide, apply, "
        "list_runs, agent_task, execute, evaluate_patch, recipe_run, episode_run, batch) over "
        "stdin/stdout until the client disconnects; logs go to stderr.",
    ),
    "agent-task": (
        _area_agent,
        "Run an agent on a task in a disposable sandbox; it edits only the sandbox's "
        "/workspace copy, through tools, and leaves a bundle for review.",
    ),
    "batch": (
        _area_batch,
        "Run every item of a batch file in its own sandbox on Ray and record the batch for the inbox.",
    ),
    "episode": (
        _area_episode,
        "Stateful runtime episodes: steps, observations, snapshots, restores (docs/episodes.md).",
    ),
    "site": (
        _area_site,
        "Contained-site handles: prepared sites kept as snapshots, opened again with a held preview (docs/sites.md).",
    ),
    "artifacts": (_area_artifacts, "Inspect and verify artifact bundles."),
    "review": (_area_review, "Review captured bundles: list, inspect and decide."),
    "recipe": (_area_recipe, "Workspace recipes (wp-codebox/workspace-recipe/v1)."),
}


def load_area(area: Area) -> dict[str, Any]:
    """The click commands one area registers, by name (its module imported now)."""
    holder = typer.Typer()

    @holder.callback()
    def _group() -> None:  # a callback keeps a one-command Typer a group
        """Holder."""

    area(holder)
    group = typer.main.get_command(holder)
    assert isinstance(group, TyperGroup)
    return dict(group.commands)


class LazyGroup(TyperGroup):
    """The root group: lists every sub-command from :data:`SUBCOMMANDS`, imports an area only to run it."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.commands, *(name for name in SUBCOMMANDS if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in SUBCOMMANDS:
            return super().get_command(ctx, cmd_name)
        # listing (help): a stand-in that carries the one-line help, nothing imported
        return TyperCommand(name=cmd_name, help=SUBCOMMANDS[cmd_name][1], callback=None)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else None
        if name in SUBCOMMANDS and name not in self.commands:
            for loaded_name, command in load_area(SUBCOMMANDS[name][0]).items():
                self.commands.setdefault(loaded_name, command)
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=LazyGroup,
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
        from codebox_tui.bundle.reader import find_bundle_dir  # the bundle reader only when a bundle is named

        bundle = find_bundle_dir(bundle)  # a missing or non-bundle folder is a clear error before the UI starts
    launch_tui(bundle)


def launch_tui(bundle: Path | None = None) -> None:
    # Deferred: the commands that never open the UI start without loading Textual. Declared in
    # pyproject's [tool.importlinter] ignore_imports with that reason.
    from codebox_tui.app import run_app

    run_app(bundle)
    raise typer.Exit(0)


def main(argv: list[str] | None = None) -> None:
    """Entry point: usage errors exit 2 (printed by Click), CodeboxErrors exit with their own code. Without
    ``argv`` (the ``codebox`` command itself, not a caller in this process) the process ends through
    :func:`leave` once the command is done."""
    try:
        _main(argv)
    except SystemExit as ended:
        if argv is None:
            leave(ended.code)
        raise
    if argv is None:
        leave(0)


def _main(argv: list[str] | None) -> None:
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
        io_error = HostIOError(
            str(error.strerror or error), code="host-io-error", field=str(error.filename) if error.filename else None
        )
        try:
            fail(io_error, json_mode=json_mode, command=command)
        except typer.Exit as exit_:
            sys.exit(exit_.exit_code)


def leave(code: int | str | None) -> NoReturn:
    """End the process now that its command is done and its output written. When no other thread still works
    (a Playground background boot is one; the threads a run leaves waiting on its clean-up processes are daemons
    a normal exit does not wait for either), run the exit handlers a normal exit runs (a Playground sidecar's
    close, finalizers, logging), flush the standard streams and leave without the interpreter tearing down every
    module and object: about a fifth of a second, or more, after the result is printed (issue #27, item 1;
    docs/performance.md). Otherwise, or for an exit status that is not a number, the normal exit."""
    status = 0 if code is None else code
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive()]
    if not isinstance(status, int) or any(not thread.daemon for thread in others):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach the reader
            pass
    os._exit(status)
