"""``codebox exec``: run a command line in a sandbox's own shell (docs/exec.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.output import BACKEND_HELP, emit_json, progress, show
from codebox_tui.contracts.exec import ExecLimits, ExecRequest, ExecResult
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, ExitCode
from codebox_tui.lifecycle import RunRequest, RunService, Toolchain, env_from_pairs, mounts_from_text
from codebox_tui.progress_report import StderrProgress
from codebox_tui.runtime.backends import backend_name
from codebox_tui.runtime.exec import POLICY_REFUSALS, check_before_boot, parse_capabilities, run_exec
from codebox_tui.runtime.exec_server import exec_on_held, release_held
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION

MOUNT_HELP = (
    "HOST:SANDBOX[:readonly|readwrite|live] (repeatable; readwrite works on a private copy, "
    "live writes through to HOST)."
)


def exec_command(
    command: str = typer.Argument(..., help='The command line, e.g. "on rg -l add_action --plugins".'),
    sandbox: str | None = typer.Option(
        None,
        "--sandbox",
        help="Run in a sandbox held by `codebox boot --hold` (its runtime id) instead of a fresh one.",
    ),
    cwd: str = typer.Option("/wordpress", "--cwd", help="Working folder inside the sandbox."),
    capabilities: str = typer.Option("read", "--capabilities", help="Comma-separated: read (always), write, eval."),
    timeout: str = typer.Option("30s", "--timeout", help="Time limit for the command, e.g. 10s, 2m."),
    max_output: int = typer.Option(1024 * 1024, "--max-output", help="Output limit in bytes."),
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help="WordPress build (fresh sandbox)."),
    php: str | None = typer.Option(
        None, "--php", help=f"PHP version (fresh sandbox; default {DEFAULT_PHP_VERSION}, the host's on native)."
    ),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP + " (fresh sandbox)"),
    wp_cli_phar: str | None = typer.Option(None, "--wp-cli-phar", help="Path to wp-cli.phar for `wp` (fresh sandbox)."),
    env: list[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for PHP's getenv() (repeatable; not secret)."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    artifacts: Path | None = typer.Option(
        None, "--artifacts", "--artifacts-dir", help="Folder for the run bundle (default: $CODEBOX_HOME/artifacts)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/exec-result/v1 document on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Run COMMAND in the sandbox's shell: no host processes, only the sandbox's files; classified and
    checked against --capabilities before anything runs."""
    if not command.strip():
        raise BadInputError("COMMAND is empty", code="empty-command", field="command")
    timeout_s = parse_duration(timeout, "--timeout")
    request = ExecRequest(
        command=command,
        cwd=cwd,
        capabilities=parse_capabilities(capabilities),
        limits=ExecLimits(timeoutMs=max(1, int(timeout_s * 1000)), maxOutputBytes=max(1, max_output)),
    )
    check_before_boot(request)  # a denied command exits 3 here: no sandbox boots, no bundle is made
    if sandbox is not None:
        fresh_only = {
            "--mount": bool(mount),
            "--wp-cli-phar": wp_cli_phar is not None,
            "--env": bool(env),
            "--artifacts": artifacts is not None,
            "--backend": backend is not None,
        }
        given = [name for name, used in fresh_only.items() if used]
        if given:
            raise BadInputError(
                f"{', '.join(given)} only apply to a fresh sandbox, not with --sandbox",
                code="invalid-option",
                field=given[0],
            )
        result = exec_on_held(sandbox, request, timeout_s + 60)
    else:
        result = _exec_fresh(request, mount, wp, php, backend, wp_cli_phar, env, boot_timeout, artifacts, quiet)
    _print(result, json_out, quiet)


def _exec_fresh(
    request: ExecRequest,
    mount: list[str],
    wp: str,
    php: str | None,
    backend: str | None,
    wp_cli_phar: str | None,
    env: list[str],
    boot_timeout: str,
    artifacts: Path | None,
    quiet: bool,
) -> ExecResult:
    """A fresh sandbox through the run lifecycle (mounts, tools, capture, the review inbox); `wp` inside
    exec runs the configured WP-CLI when there is one (docs/exec.md, "wp"). The shell is the Playground
    sidecar's, or on native the same shell inside the sandbox's wall (runtime/native_shell.py)."""
    run_request = RunRequest(
        mounts=mounts_from_text(mount),
        wp=wp,
        php=php,
        env=env_from_pairs(env),
        boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"),
        artifacts_root=artifacts,
        tools=Toolchain(wp_cli_phar=Path(wp_cli_phar) if wp_cli_phar else None),
        tool_commands=["wordpress.wp-cli"],
        flow="exec",
        backend=backend_name(backend),
    )
    with RunService().open(run_request, progress=StderrProgress("exec", quiet=quiet)) as run:
        run.boot()
        result = run_exec(run.session, request)
        summary = run.capture()
        if result.exitCode != 0:
            run.status = "failed"
    if not quiet:
        progress(f"codebox: bundle {getattr(summary, 'id', None) or '(not captured)'} in {run.session.run_dir}")
    return result


def process_exit_code(result: ExecResult) -> int:
    """The exit code of ``codebox exec`` (README "Exit codes"): 3 when the policy refused the command, the
    command's own code when it is 1–255, 1 for any other failure, else 0. Printed as-is on stderr."""
    if result.error is not None and result.error.code in POLICY_REFUSALS:
        return int(ExitCode.POLICY_DENIED)
    if result.exitCode != 0:
        return result.exitCode if 0 < result.exitCode < 256 else int(ExitCode.FAILED)
    return int(ExitCode.OK)


def _print(result: ExecResult, json_out: bool, quiet: bool) -> None:
    code = process_exit_code(result)
    if json_out:
        emit_json(result)
    else:
        # what the sandbox printed, with control and bidi characters escaped (cli/output.py's show); --json is exact
        if result.stdout:
            show(result.stdout, nl=False)
        if result.stderr:
            show(result.stderr, err=True, nl=False)
        if not quiet:
            limit = f", limit {result.limitExceeded} hit" if result.limitExceeded else ""
            refused = f" (refused: {result.error.code})" if result.error is not None else ""
            progress(
                f"codebox: exit {code}{refused} · {result.classification or 'unclassified'} · "
                f"capabilities {','.join(result.capabilities)}{limit}"
            )
    if code != 0:
        raise typer.Exit(code)


def release_command(
    sandbox: str = typer.Argument(..., help="The held sandbox's runtime id (the hold prints it)."),
    json_out: bool = typer.Option(False, "--json", help="Print {success, sandbox, released} on stdout."),
) -> None:
    """End a held sandbox's hold now: its holder captures the bundle, as when the hold expires, and exits."""
    release_held(sandbox)
    if json_out:
        emit_json({"success": True, "sandbox": sandbox, "released": True})
    else:
        progress(f"codebox: released {sandbox}; its holder captures the bundle and exits")


def register(app: typer.Typer) -> None:
    app.command("exec")(exec_command)
    app.command("release")(release_command)
