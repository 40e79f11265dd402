"""``codebox commands``, ``codebox run`` and ``codebox boot``."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import typer

from codebox_tui.cliutil import emit_json, ensure_artifacts_dir, progress, to_jsonable
from codebox_tui.contracts.runtime import (
    BootOutput,
    CommandError,
    MountSpec,
    RunOutput,
    RuntimeEvent,
    RuntimePolicy,
)
from codebox_tui.errors import BadInputError, CodeboxError, ExitCode
from codebox_tui.progress_report import StderrProgress
from codebox_tui.runtime.backend import SandboxSpec, validate_runtime_env
from codebox_tui.runtime.catalog import command_catalog, get_command, parse_args
from codebox_tui.runtime.commands import WP_CLI_DIR
from codebox_tui.runtime.mounts import parse_mount
from codebox_tui.runtime.policy import check_command, default_policy, load_policy, resolve_secrets
from codebox_tui.runtime.session import RunSession
from codebox_tui.settings import get_settings, reload_settings

MOUNT_HELP = ("HOST:SANDBOX[:readonly|readwrite|live] (repeatable; readwrite works on a private copy, "
              "live writes through to HOST).")


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


def parse_duration(text: str, field: str) -> float:
    """``90``, ``90s``, ``15m``, ``2h``, ``500ms`` → seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if not match:
        raise BadInputError(f"{field} {text!r} must look like 30s, 15m, 2h or 500ms", code="invalid-duration",
                            field=field)
    value = float(match.group(1))
    return value * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]


def _human_event(event: RuntimeEvent) -> None:
    data = event.data or {}
    if event.type == "runtime.boot-progress":
        progress(f"  boot: {data.get('phase')}" + (f" ({data['ms']} ms)" if "ms" in data else ""))
    elif event.type == "runtime.ready":
        progress(f"  ready in {data.get('bootMs')} ms — WordPress {data.get('wordpressVersion')}, "
                 f"PHP {data.get('phpVersion')} at {data.get('previewUrl')}")
    elif event.type == "command.started":
        progress(f"  running {data.get('command')} {' '.join(data.get('args', []))}")
    elif event.type in ("command.finished", "command.failed"):
        progress(f"  {data.get('command')} exited {data.get('exitCode')} in {data.get('durationMs')} ms")
    elif event.type == "command.denied":
        progress(f"  denied: {data.get('message')}")
    elif event.type == "artifacts.capturing":
        progress("  capturing the artifact bundle")


PREVIEW_BIND_HELP = ("Address the live preview listens on (default 127.0.0.1, loopback only). Another address, "
                     "e.g. 0.0.0.0, exposes the sandbox's WordPress to the network.")


def _preview_bind(address: str | None) -> str | None:
    """``--preview-bind``: an IP address; None keeps the ``preview_bind`` setting (loopback)."""
    if address is None:
        return None
    import ipaddress

    try:
        return str(ipaddress.ip_address(address.strip("[]")))
    except ValueError:
        raise BadInputError(f"--preview-bind {address!r} must be an IP address, e.g. 127.0.0.1 or 0.0.0.0",
                            code="invalid-preview-bind", field="preview-bind") from None


def _build_spec(mounts: list[str], policy_text: str | None, command: str | None, wp: str, php: str,
                wp_cli_phar: str | None, boot_timeout: str, metadata_json: str | None,
                preview_port: int | None = None, env: list[str] | None = None,
                preview_bind: str | None = None) -> tuple[SandboxSpec, Path | None]:
    if wp_cli_phar:
        os.environ["CODEBOX_WP_CLI_PHAR"] = wp_cli_phar
        reload_settings()
    parsed_mounts = [parse_mount(text, index) for index, text in enumerate(mounts)]
    targets = [m.target for m in parsed_mounts]
    for index, target in enumerate(targets):
        if target in targets[:index]:
            raise BadInputError(f"Sandbox path {target} is mounted twice", code="duplicate-mount-target",
                                field=f"mounts[{index}]")
    policy: RuntimePolicy = load_policy(policy_text) if policy_text else default_policy(command)
    metadata: dict[str, Any] = {}
    if metadata_json:
        try:
            metadata = json.loads(metadata_json)
        except ValueError as error:
            raise BadInputError(f"--metadata must be a JSON object: {error}", code="invalid-metadata",
                                field="metadata") from error
        if not isinstance(metadata, dict):
            raise BadInputError("--metadata must be a JSON object", code="invalid-metadata", field="metadata")
    runtime_env: dict[str, str] = {}
    for item in env or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise BadInputError(f"--env {item!r} must look like NAME=VALUE", code="invalid-runtime-env", field="env")
        runtime_env[name] = value
    validate_runtime_env(runtime_env, "env")
    settings = get_settings()
    tools_dir: Path | None = None
    extra: list[MountSpec] = []
    if "wordpress.wp-cli" in policy.commands and settings.wp_cli_phar:
        from codebox_tui.runtime.commands import wp_cli_phar as find_phar

        phar = find_phar()
        if phar is not None:
            tools_dir = Path(tempfile.mkdtemp(prefix="codebox-tools-"))
            shutil.copy2(phar, tools_dir / "wp-cli.phar")
            extra.append(MountSpec(source=str(tools_dir), target=WP_CLI_DIR, mode="readonly"))
    if "wordpress.phpunit" in policy.commands:
        from codebox_tui.runtime.phpunit import phpunit_tool_mounts

        if tools_dir is None:
            tools_dir = Path(tempfile.mkdtemp(prefix="codebox-tools-"))
        extra.extend(phpunit_tool_mounts(tools_dir / "phpunit-bin"))
    spec = SandboxSpec(
        mounts=parsed_mounts, policy=policy, wp=wp, php=php, preview_port=preview_port,
        preview_bind=_preview_bind(preview_bind), metadata=metadata,
        boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"), secret_env=resolve_secrets(policy),
        extra_mounts=extra, env=runtime_env,
    )
    from codebox_tui.runtime.wordpress_builds import resolve_build

    resolve_build(wp)  # unknown versions fail before anything boots
    return spec, tools_dir


def _check_before_boot(args: dict[str, str], php: str) -> None:
    """What can be known wrong before anything boots (or a golden site is built): the PHP version and a
    ``code-file`` that is missing or not a regular file."""
    from codebox_tui.runtime.playground import SUPPORTED_PHP

    if php not in SUPPORTED_PHP:
        raise BadInputError(f"--php {php} is not available; choose one of {', '.join(SUPPORTED_PHP)}",
                            code="unknown-php-version", field="--php")
    if "code" in args and "code-file" in args:
        raise BadInputError("Give code= or code-file=, not both", code="invalid-arg", field="code-file")
    if "code-file" in args:
        path = Path(args["code-file"]).expanduser()
        if not path.is_file():
            raise BadInputError(f"code-file {args['code-file']!r} does not exist or is not a regular file",
                                code="missing-code-file", field="code-file")


def _register(session: RunSession, summary: Any, status: str) -> None:
    """Record the run and its bundle in the review inbox (best effort: the bundle on disk is the evidence)."""
    try:
        from store.inbox import record_run_best_effort
    except ImportError:
        return
    bundle_dir = getattr(summary, "path", None)
    record_run_best_effort(
        progress, run_id=session.runtime_id, run_dir=session.run_dir, status=status,
        bundle_dir=Path(bundle_dir) if bundle_dir else None, metadata=session.redact.value(session.spec.metadata),
        sandbox_session_id=session.spec.metadata.get("sandbox_session_id"), started_at=session.created_at,
        bundle_id=getattr(summary, "id", None), content_digest=getattr(summary, "content_digest_b", None),
        changed_files=len(getattr(summary, "changed_files", []) or []),
    )


def artifacts_root(option: Path | None) -> Path:
    """``--artifacts`` or the one default root (``CODEBOX_HOME/artifacts``) every command shares."""
    return option if option is not None else get_settings().artifacts_dir


def _artifacts_dict(session: RunSession, summary: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"directory": str(session.run_dir), "events": str(session.run_dir / "events.jsonl"),
                           "commands": str(session.run_dir / "commands.jsonl")}
    if summary is not None:
        for key in ("id", "content_digest", "content_digest_b"):
            value = getattr(summary, key, None)
            if value is not None:
                out[{"content_digest": "contentDigest", "content_digest_b": "contentDigestB"}.get(key, key)] = value
    return out


def run_command(
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    command: str = typer.Option(..., "--command", "-c", help="Runtime command id (see `codebox commands`)."),
    arg: list[str] = typer.Option([], "--arg", "-a", help="key=value argument for the command (repeatable)."),
    artifacts: Path | None = typer.Option(None, "--artifacts", "--artifacts-dir",
                                           help="Folder that receives the run bundle (default: "
                                                "$CODEBOX_HOME/artifacts)."),
    wp: str = typer.Option("6.5", "--wp", help="WordPress build: 6.2–6.5, beta, nightly."),
    php: str = typer.Option("8.3", "--php", help="PHP version (7.4, 8.0–8.5)."),
    policy: str | None = typer.Option(None, "--policy", help="Runtime policy: inline JSON or a JSON file."),
    wp_cli_phar: str | None = typer.Option(None, "--wp-cli-phar", help="Path to wp-cli.phar (wordpress.wp-cli)."),
    timeout: str = typer.Option("120s", "--timeout", help="Timeout for the command, e.g. 30s, 2m."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    metadata: str | None = typer.Option(None, "--metadata", help="Opaque caller metadata (JSON object)."),
    env: list[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for PHP's getenv() (repeatable; not secret)."),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/run/v1 document on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
    preview_bind: str | None = typer.Option(None, "--preview-bind", help=PREVIEW_BIND_HELP),
) -> None:
    """Boot a sandbox, run one command, capture the artifact bundle, dispose."""
    started = time.monotonic()
    spec_cmd = get_command(command)
    _check_before_boot(parse_args(spec_cmd, arg), php)  # bad arguments fail before anything boots
    command_timeout = parse_duration(timeout, "--timeout")
    spec, tools_dir = _build_spec(mount, policy, command, wp, php, wp_cli_phar, boot_timeout, metadata, env=env,
                                  preview_bind=preview_bind)
    root = ensure_artifacts_dir(artifacts_root(artifacts))
    reporter = StderrProgress("run", quiet=quiet)
    session = RunSession(spec, root, on_event=reporter.on_event)
    reporter.phase("start", f"{session.runtime_id} → {session.run_dir}")
    error: CodeboxError | None = None
    execution = None
    summary: Any = None
    timings: dict[str, float] = {}
    try:
        try:
            check_command(spec.policy, command)
            boot_started = time.monotonic()
            session.boot_sandbox()
            timings["bootSeconds"] = round(time.monotonic() - boot_started, 3)
            command_started = time.monotonic()
            execution = session.execute(command, arg, command_timeout)
            timings["commandSeconds"] = round(time.monotonic() - command_started, 3)
        except CodeboxError as caught:
            error = caught
            if session.executions:
                execution = session.executions[-1]
        capture_started = time.monotonic()
        summary = session.capture()
        timings["captureSeconds"] = round(time.monotonic() - capture_started, 3)
    finally:
        session.close()
        if tools_dir is not None:
            shutil.rmtree(tools_dir, ignore_errors=True)
    timings["totalSeconds"] = round(time.monotonic() - started, 3)
    success = error is None and execution is not None and execution.exitCode == 0
    status = "completed" if success else "failed"
    _register(session, summary, status)
    output = RunOutput(
        success=success, runtime=session.runtime_info(), executions=session.executions, execution=execution,
        artifacts=_artifacts_dict(session, summary), timings=timings,
        error=CommandError(code=error.code, message=error.message, data=error.details or None) if error else None,
    )
    if json_out:
        # the one document on stdout passes the run's redactor as a whole (docs/security-secrets.md)
        emit_json(session.redact.value(to_jsonable(output)))
    else:
        if execution is not None and execution.stdout:
            sys.stdout.write(execution.stdout + ("" if execution.stdout.endswith("\n") else "\n"))
        if execution is not None and execution.stderr and execution.exitCode != 0:
            sys.stderr.write(execution.stderr + ("" if execution.stderr.endswith("\n") else "\n"))
        bundle_id = getattr(summary, "id", None)
        progress(f"codebox: {'ok' if success else 'failed'} in {timings['totalSeconds']:.1f} s; bundle "
                 f"{bundle_id or '(not captured)'} in {session.run_dir}")
        if error is not None:
            progress(session.redact(f"codebox: error: {error}"))
    if error is not None:
        raise typer.Exit(int(error.exit_code))
    if not success:
        raise typer.Exit(int(ExitCode.FAILED))


def boot_command(
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    hold: str = typer.Option("15m", "--hold", help="Keep the sandbox up this long (e.g. 90s, 15m, 2h)."),
    preview_port: int | None = typer.Option(None, "--preview-port", help="Fixed port for the live preview."),
    preview_bind: str | None = typer.Option(None, "--preview-bind", help=PREVIEW_BIND_HELP),
    artifacts: Path | None = typer.Option(None, "--artifacts", "--artifacts-dir",
                                           help="Folder for the run's event streams (default: "
                                                "$CODEBOX_HOME/artifacts)."),
    wp: str = typer.Option("6.5", "--wp", help="WordPress build: 6.2–6.5, beta, nightly."),
    php: str = typer.Option("8.3", "--php", help="PHP version."),
    policy: str | None = typer.Option(None, "--policy", help="Runtime policy: inline JSON or a JSON file."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/boot/v1 document when ready."),
) -> None:
    """Boot a sandbox and hold it for live preview until the hold expires or Ctrl-C."""
    hold_s = parse_duration(hold, "--hold")
    if preview_port is not None and not (1 <= preview_port <= 65535):
        raise BadInputError("--preview-port must be between 1 and 65535", code="invalid-port", field="preview-port")
    _check_before_boot({}, php)
    spec, tools_dir = _build_spec(mount, policy, None, wp, php, None, boot_timeout, None, preview_port,
                                  preview_bind=preview_bind)
    spec.warm = True  # a held preview: load WordPress once so the first page a human opens is fast
    root = ensure_artifacts_dir(artifacts_root(artifacts))
    session = RunSession(spec, root, on_event=None if json_out else _human_event)
    interrupted = False

    def stop(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    held = None
    try:
        sandbox = session.boot_sandbox()
        from codebox_tui.runtime.exec_server import serve_held

        held = serve_held(session)  # `codebox exec --sandbox ID` (docs/exec.md, "Held sandboxes")
        output = BootOutput(success=True, runtime=session.runtime_info(), previewUrl=sandbox.preview_url,
                            holdSeconds=hold_s, artifacts={"directory": str(session.run_dir)})
        session.emit("runtime.held", {"previewUrl": sandbox.preview_url, "holdSeconds": hold_s})
        if json_out:
            emit_json(output)
        else:
            progress(f"codebox: preview at {sandbox.preview_url} — held for {hold}; Ctrl-C to stop")
            progress(f"codebox: run commands in it with: codebox exec --sandbox {session.runtime_id} COMMAND")
        deadline = time.monotonic() + hold_s
        while time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        if held is not None:
            held.close()
        session.emit("runtime.hold-ended", {"reason": "interrupted" if interrupted else "expired"})
        session.close()
        if tools_dir is not None:
            shutil.rmtree(tools_dir, ignore_errors=True)
    if not json_out:
        progress("codebox: sandbox disposed")


def register(app: typer.Typer) -> None:
    app.command("commands")(commands_command)
    app.command("run")(run_command)
    app.command("boot")(boot_command)
