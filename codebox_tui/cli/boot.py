"""``codebox boot``: boot a sandbox and hold it for its live preview (docs/sites.md, "Held previews")."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.held import hold_and_capture
from codebox_tui.cli.output import BACKEND_HELP, progress
from codebox_tui.cli.preview import PREVIEW_PORT_HELP, PREVIEW_PUBLIC_URL_HELP, apply_preview_options
from codebox_tui.cli.run_options import MOUNT_HELP, PREVIEW_BIND_HELP, WP_HELP, run_request
from codebox_tui.recipes.blueprint import load_blueprint_file
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION

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
    request = run_request(mount, policy, wp, php, boot_timeout, artifacts, preview_bind=preview_bind, backend=backend)
    apply_preview_options(request, hold, preview_port, preview_public_url, hold_flag="--hold")
    request.blueprint = load_blueprint_file(blueprint) if blueprint is not None else None
    request.warm = True  # a held preview: load WordPress once so the first page a human opens is fast
    request.flow = "boot"  # captured when the hold ends: what `codebox exec --sandbox` changed is reviewable
    hold_and_capture(request, hold, json_out=json_out)
    if not json_out:
        progress("codebox: sandbox disposed")


def register(app: typer.Typer) -> None:
    app.command("boot")(boot_command)
