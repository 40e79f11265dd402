"""``codebox commands``, ``codebox run`` and ``codebox boot``."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.output import BACKEND_HELP, emit_json, progress, show, to_jsonable
from codebox_tui.cli.preview import (
    PREVIEW_HOLD_HELP,
    PREVIEW_PORT_HELP,
    PREVIEW_PUBLIC_URL_HELP,
    announce_held,
    apply_preview_options,
    hold_and_capture,
    sigterm_interrupts,
)
from codebox_tui.contracts.episode import EPISODE_PLAN_SCHEMA
from codebox_tui.contracts.schemas import generate_json_schema
from codebox_tui.durations import parse_duration
from codebox_tui.errors import ExitCode
from codebox_tui.lifecycle import (
    CommandStep,
    RunRequest,
    RunService,
    Toolchain,
    env_from_pairs,
    metadata_from_json,
    mounts_from_text,
    policy_from_text,
    preview_bind_address,
    run_document,
    settle_runtime,
)
from codebox_tui.lifecycle.episode import episode_run_output, load_plan, load_snapshot_document, run_plan
from codebox_tui.progress_report import StderrProgress
from codebox_tui.recipes.blueprint import load_blueprint_file
from codebox_tui.runtime.backends import backend_name
from codebox_tui.runtime.catalog import command_catalog, get_command
from codebox_tui.runtime.playground import background_work
from codebox_tui.runtime.wordpress_builds import wp_option_help
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION

WP_HELP = wp_option_help()  # the builds shipped offline, read from the installed package

# the first lines of each episode step's output printed under it (the whole output is in the bundle's trace)
STEP_OUTPUT_LINES = 20

MOUNT_HELP = (
    "HOST:SANDBOX[:readonly|readwrite|live] (repeatable; readwrite works on a private copy, "
    "live writes through to HOST)."
)


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


RESTORE_HELP = (
    "A snapshot document (files/runtime-snapshots/<id>.json of a bundle) to restore into the fresh sandbox "
    "before the command; its WordPress and PHP versions must be the run's."
)
PREVIEW_BIND_HELP = (
    "Address the live preview listens on (default 127.0.0.1, loopback only). Another address, "
    "e.g. 0.0.0.0, exposes the sandbox's WordPress to the network."
)


def _request(
    mounts: list[str],
    policy_text: str | None,
    wp: str,
    php: str | None,
    boot_timeout: str,
    artifacts: Path | None,
    *,
    preview_bind: str | None = None,
    backend: str | None = None,
) -> RunRequest:
    """The fields ``run`` and ``boot`` share, parsed the way the Launch screen parses them. No ``--php``: the
    backend's default (the host's PHP on native), filled in by ``settle_runtime`` as for every flow."""
    return settle_runtime(
        RunRequest(
            mounts=mounts_from_text(mounts),
            policy=policy_from_text(policy_text),
            wp=wp,
            php=php,
            backend=backend_name(backend),
            boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"),
            artifacts_root=artifacts,
            preview_bind=preview_bind_address(preview_bind),
        )
    )


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
    request = _request(mount, policy, wp, php, boot_timeout, artifacts, preview_bind=preview_bind, backend=backend)
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


BLUEPRINT_HELP = (
    "A Playground blueprint (JSON) applied right after boot, as the held site's set-up: siteOptions "
    "and the steps runPHP, setSiteOptions, writeFile, mkdir, rm, activatePlugin, activateTheme."
)


def boot_command(
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    hold: str = typer.Option("15m", "--hold", help="Keep the sandbox up this long (e.g. 90s, 15m, 2h)."),
    preview_port: int | None = typer.Option(None, "--preview-port", help=PREVIEW_PORT_HELP),
    preview_bind: str | None = typer.Option(None, "--preview-bind", help=PREVIEW_BIND_HELP),
    preview_public_url: str | None = typer.Option(None, "--preview-public-url", help=PREVIEW_PUBLIC_URL_HELP),
    blueprint: Path | None = typer.Option(None, "--blueprint", help=BLUEPRINT_HELP),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        "--artifacts-dir",
        help="Folder that receives the bundle captured when the hold ends (default: $CODEBOX_HOME/artifacts).",
    ),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help=WP_HELP),
    php: str | None = typer.Option(
        None, "--php", help=f"PHP version (default {DEFAULT_PHP_VERSION}); native runs the host's PHP only."
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    policy: str | None = typer.Option(None, "--policy", help="Runtime policy: inline JSON or a JSON file."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/boot/v1 document when ready."),
) -> None:
    """Boot a sandbox and hold it for live preview until the hold expires or Ctrl-C."""
    request = _request(mount, policy, wp, php, boot_timeout, artifacts, preview_bind=preview_bind, backend=backend)
    apply_preview_options(request, hold, preview_port, preview_public_url, hold_flag="--hold")
    request.blueprint = load_blueprint_file(blueprint) if blueprint is not None else None
    request.warm = True  # a held preview: load WordPress once so the first page a human opens is fast
    request.flow = "boot"  # captured when the hold ends: what `codebox exec --sandbox` changed is reviewable
    hold_and_capture(request, hold, json_out=json_out)
    if not json_out:
        progress("codebox: sandbox disposed")


episode_app = typer.Typer(
    help="Stateful runtime episodes: steps, observations, snapshots, restores (docs/episodes.md).", no_args_is_help=True
)


@episode_app.command("run")
def episode_run_command(
    plan_file: Path = typer.Argument(..., help="An episode plan (codebox/episode-plan/v1, JSON)."),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        "--artifacts-dir",
        help="Folder that receives the run bundle (default: $CODEBOX_HOME/artifacts).",
    ),
    restore: Path | None = typer.Option(None, "--restore", help=RESTORE_HELP + " Overrides the plan's restore."),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one codebox/episode-result/v1 document on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Run an episode plan in one sandbox and capture its bundle with the episode trace.

    Exit codes: 0 every step exited 0 and the bundle verified; 1 a step failed or the bundle did not verify;
    2 the plan (every problem named by its JSON path) or the snapshot is bad or incompatible; 3 denied by policy;
    4 sandbox failure; 130 interrupted."""
    plan = load_plan(plan_file)
    reporter = StderrProgress("episode", quiet=quiet)
    episode, status = run_plan(
        plan,
        plan_file.resolve().parent,
        artifacts_root=artifacts,
        progress=reporter,
        restore=str(restore) if restore is not None else None,
        backend=backend,
    )
    output = episode_run_output(episode, status)
    outcome = episode.outcome
    assert outcome is not None
    trace = episode.last_trace
    error = outcome.error
    if json_out:
        emit_json(outcome.redact.value(to_jsonable(output)))
    else:
        executions = [s.execution for s in (trace.steps if trace else [])]
        for step, execution in zip(output.steps, executions, strict=False):
            # counted from 1 as the progress lines count them (the trace's `index` is 0-based)
            progress(
                f"  step {step.index + 1}: {step.command} exited {step.exitCode}"
                + (f", observed {step.observation}" if step.observation else "")
            )
            for stream in ("stdout", "stderr"):
                text = outcome.redact(str(execution.get(stream) or "")).rstrip("\n")
                lines = text.split("\n") if text else []
                for line in lines[:STEP_OUTPUT_LINES]:
                    progress(f"    {line}")
                if len(lines) > STEP_OUTPUT_LINES:
                    progress(f"    … {len(lines) - STEP_OUTPUT_LINES} more line(s) of {stream} in the bundle's trace")
        progress(
            f"codebox: episode {output.status}; {len(output.steps)} step(s), {len(output.snapshots)} snapshot(s); "
            f"bundle {outcome.bundle_id or '(not captured)'} in {outcome.run_dir}"
        )
        if error is not None:
            progress(outcome.redact(f"codebox: error: {error}"))
        for risk in outcome.site_state_risks:  # the verdict is not clean (docs/site-state.md, "Verdicts")
            progress(outcome.redact(f"codebox: NOT CLEAN: site-state risk {risk.code}: {risk.message}"))
    if error is not None:
        raise typer.Exit(int(error.exit_code))
    if not output.success:
        raise typer.Exit(int(ExitCode.FAILED))


@episode_app.command("schema")
def episode_schema_command() -> None:
    """Print the JSON Schema of an episode plan (codebox/episode-plan/v1), generated from its model."""
    emit_json(generate_json_schema(EPISODE_PLAN_SCHEMA))


def register(app: typer.Typer) -> None:
    app.add_typer(episode_app, name="episode")
    app.command("commands")(commands_command)
    app.command("run")(run_command)
    app.command("boot")(boot_command)
