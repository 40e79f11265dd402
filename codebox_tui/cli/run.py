"""``codebox commands`` and ``codebox run`` (a one-shot run: ``boot`` is cli/boot.py, ``episode`` cli/episode.py)."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.output import BACKEND_HELP, emit_json, progress, show
from codebox_tui.cli.preview import (
    PREVIEW_HOLD_HELP,
    PREVIEW_PORT_HELP,
    PREVIEW_PUBLIC_URL_HELP,
    announce_held,
    apply_preview_options,
    sigterm_interrupts,
)
from codebox_tui.cli.run_options import MOUNT_HELP, PREVIEW_BIND_HELP, RESTORE_HELP, WP_HELP, run_request
from codebox_tui.durations import parse_duration
from codebox_tui.errors import ExitCode
from codebox_tui.lifecycle import (
    CommandStep,
    RunService,
    Toolchain,
    env_from_pairs,
    metadata_from_json,
    run_document,
)
from codebox_tui.lifecycle.episode import load_snapshot_document
from codebox_tui.progress_report import StderrProgress
from codebox_tui.runtime.catalog import command_catalog, get_command
from codebox_tui.runtime.exit_work import background_work
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION


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
        show(f"{spec.id:38} {args}")
        show(f"{'':38} {spec.description}")


def run_command(
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    command: str = typer.Option(..., "--command", "-c", help="Runtime command id (see `codebox commands`)."),
    arg: list[str] = typer.Option([], "--arg", "-a", help="key=value argument for the command (repeatable)."),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        "--artifacts-dir",
        help="Folder that receives the run bundle (default: $CODEBOX_HOME/artifacts).",
    ),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help=WP_HELP),
    php: str | None = typer.Option(
        None,
        "--php",
        help=f"PHP version (7.4, 8.0–8.5; default {DEFAULT_PHP_VERSION}); native runs the host's PHP only.",
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    policy: str | None = typer.Option(None, "--policy", help="Runtime policy: inline JSON or a JSON file."),
    wp_cli_phar: Path | None = typer.Option(None, "--wp-cli-phar", help="Path to wp-cli.phar (wordpress.wp-cli)."),
    timeout: str = typer.Option("120s", "--timeout", help="Timeout for the command, e.g. 30s, 2m."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    metadata: str | None = typer.Option(None, "--metadata", help="Opaque caller metadata (JSON object)."),
    env: list[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for PHP's getenv() (repeatable; not secret)."),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/run/v1 document on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
    preview_bind: str | None = typer.Option(None, "--preview-bind", help=PREVIEW_BIND_HELP),
    restore: Path | None = typer.Option(None, "--restore", help=RESTORE_HELP),
    preview_hold: str | None = typer.Option(None, "--preview-hold", "--preview-hold-seconds", help=PREVIEW_HOLD_HELP),
    preview_port: int | None = typer.Option(None, "--preview-port", help=PREVIEW_PORT_HELP),
    preview_public_url: str | None = typer.Option(None, "--preview-public-url", help=PREVIEW_PUBLIC_URL_HELP),
) -> None:
    """Boot a sandbox, run one command, capture the artifact bundle, dispose."""
    get_command(command)  # an unknown command fails first
    request = run_request(mount, policy, wp, php, boot_timeout, artifacts, preview_bind=preview_bind, backend=backend)
    apply_preview_options(request, preview_hold, preview_port, preview_public_url)
    if restore is not None:
        request.restore, request.restore_source = load_snapshot_document(restore), str(restore)
    request.commands = [CommandStep(command, list(arg), parse_duration(timeout, "--timeout"))]
    request.metadata = metadata_from_json(metadata)
    request.env = env_from_pairs(env)
    request.tools = Toolchain(wp_cli_phar=wp_cli_phar)
    reporter = StderrProgress("run", quiet=quiet)
    with sigterm_interrupts():  # SIGTERM releases a hold; the bundle is still captured
        outcome = RunService().run(
            request, progress=reporter, on_held=lambda run: announce_held(run, preview_hold or "")
        )
    execution, error = outcome.execution, outcome.error
    if json_out:
        # the one document on stdout passes the run's redactor as a whole (docs/security-secrets.md)
        emit_json(run_document(outcome))
    else:
        # what the sandbox printed, with control and bidi characters escaped (cli/output.py's show); --json is exact
        if execution is not None and execution.stdout:
            show(execution.stdout, nl=not execution.stdout.endswith("\n"))
        if execution is not None and execution.stderr and execution.exitCode != 0:
            show(execution.stderr, err=True, nl=not execution.stderr.endswith("\n"))
        progress(
            f"codebox: {'ok' if outcome.success else 'failed'} in {outcome.timings['totalSeconds']:.1f} s; "
            f"bundle {outcome.bundle_id or '(not captured)'} in {outcome.run_dir}"
        )
        if error is not None:
            progress(outcome.redact(f"codebox: error: {error}"))
        for risk in outcome.site_state_risks:  # the verdict is not clean (docs/site-state.md, "Verdicts")
            progress(outcome.redact(f"codebox: NOT CLEAN: site-state risk {risk.code}: {risk.message}"))
    _say_what_exit_waits_for(reporter)
    if error is not None:
        raise typer.Exit(int(error.exit_code))
    if not outcome.success:
        raise typer.Exit(int(ExitCode.FAILED))


def _say_what_exit_waits_for(reporter: StderrProgress) -> None:
    """The result is out; if this process still has background work its exit waits for, say what it is."""
    waiting = background_work()
    if waiting is not None:
        reporter.phase("waiting", f"until {waiting}, then exiting")


def register(app: typer.Typer) -> None:
    app.command("commands")(commands_command)
    app.command("run")(run_command)
