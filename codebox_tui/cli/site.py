"""``codebox site``: contained-site handles — create, status, open, list, rm (docs/sites.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from codebox_tui.cli.held import hold_and_capture
from codebox_tui.cli.output import BACKEND_HELP, emit_json, say
from codebox_tui.cli.preview import PREVIEW_PORT_HELP, PREVIEW_PUBLIC_URL_HELP, apply_preview_options
from codebox_tui.durations import parse_duration
from codebox_tui.errors import BadInputError, ExitCode
from codebox_tui.lifecycle import preview_bind_address
from codebox_tui.progress_report import StderrProgress
from codebox_tui.recipes.blueprint import load_blueprint_file
from codebox_tui.sites.prepare import create_site, open_request
from codebox_tui.sites.store import DEFAULT_CALLER, remove_site, site_dir, site_rows, site_status
from codebox_tui.versions import DEFAULT_WP_VERSION

site_app = typer.Typer(
    help="Contained-site handles: prepared sites kept as snapshots, opened again with a held preview (docs/sites.md).",
    no_args_is_help=True,
)

MOUNT_HELP = "HOST:SANDBOX[:readonly|readwrite] (repeatable): folders the site is prepared with."


@site_app.command("create")
def create_command(
    mount: list[str] = typer.Option([], "--mount", "-m", help=MOUNT_HELP),
    blueprint: Path | None = typer.Option(
        None, "--blueprint", help="A Playground blueprint (JSON) applied to the site before its snapshot is taken."
    ),
    wp: str = typer.Option(DEFAULT_WP_VERSION, "--wp", help="WordPress build."),
    php: str | None = typer.Option(None, "--php", help="PHP version (default: the backend's)."),
    backend: str | None = typer.Option(None, "--backend", help=BACKEND_HELP),
    caller: str = typer.Option(DEFAULT_CALLER, "--caller", help="Who owns the handle; part of the site id."),
    force: bool = typer.Option(False, "--force", help="Prepare it again even when it is kept and verifies."),
    boot_timeout: str = typer.Option("120s", "--boot-timeout", help="Timeout for booting the sandbox."),
    json_out: bool = typer.Option(False, "--json", help="Print the wp-codebox/browser-contained-site/v1 handle."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines on stderr."),
) -> None:
    """Prepare a site from its inputs and keep it as a snapshot; prints its stable site_id and source_digest."""
    if not caller.strip():
        raise BadInputError("--caller must not be empty", code="invalid-caller", field="caller")
    document = load_blueprint_file(blueprint) if blueprint is not None else None
    created = create_site(
        mount,
        blueprint=document,
        wp=wp,
        php=php,
        backend=backend,
        caller=caller,
        boot_timeout_s=parse_duration(boot_timeout, "--boot-timeout"),
        progress=StderrProgress("site", quiet=quiet),
        force=force,
    )
    if json_out:
        emit_json(created.site)
        return
    site = created.site
    say(f"{site.site_id}  {'prepared' if created.prepared else 'already prepared (same caller and inputs)'}")
    say(f"source_digest  sha256:{site.source_digest.value}")
    say(f"kept in        {site_dir(site.site_id)}")
    say(f"open it with:  codebox site open {site.site_id}")


@site_app.command("status")
def status_command(
    site_id: str = typer.Argument(..., help="The site id (prepared-…)."),
    source_digest: str | None = typer.Option(
        None, "--source-digest", help="Recoverable only if the site was prepared from inputs with this digest."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the wp-codebox/browser-contained-site-status/v1 document."
    ),
) -> None:
    """recoverable (the kept snapshot verifies and can be opened) or miss (create it again). Reads only.

    Exit codes: 0 recoverable, 1 miss, 2 a malformed site id."""
    status = site_status(site_id, expected_digest=source_digest.removeprefix("sha256:") if source_digest else None)
    if json_out:
        emit_json(status)
    else:
        say(f"{site_id}  {status.status}" + (f": {status.reason}" if status.reason else ""))
    raise typer.Exit(int(ExitCode.OK if status.status == "recoverable" else ExitCode.FAILED))


@site_app.command("open")
def open_command(
    site_id: str = typer.Argument(..., help="The site id (prepared-…)."),
    hold: str = typer.Option(
        "15m", "--hold", help="Keep it up this long (e.g. 90s, 15m, 2h); Ctrl-C or SIGTERM releases it sooner."
    ),
    preview_port: int | None = typer.Option(None, "--preview-port", help=PREVIEW_PORT_HELP),
    preview_bind: str | None = typer.Option(
        None, "--preview-bind", help="Address the preview listens on (default 127.0.0.1)."
    ),
    preview_public_url: str | None = typer.Option(None, "--preview-public-url", help=PREVIEW_PUBLIC_URL_HELP),
    artifacts: Path | None = typer.Option(
        None, "--artifacts", "--artifacts-dir", help="Folder for the bundle captured when the hold ends."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one wp-codebox/boot/v1 document when held."),
) -> None:
    """Boot the site again from its verified snapshot and hold it with a live preview until released."""
    request = open_request(site_id)  # a tampered snapshot is refused here (exit 5), before anything boots
    apply_preview_options(request, hold, preview_port, preview_public_url, hold_flag="--hold")
    request.preview_bind = preview_bind_address(preview_bind)
    request.artifacts_root = artifacts
    hold_and_capture(request, hold, json_out=json_out)


@site_app.command("list")
def list_command(
    json_out: bool = typer.Option(False, "--json", help="Print the sites as a JSON array."),
) -> None:
    """The prepared sites kept under $CODEBOX_HOME/sites, newest first."""
    rows = site_rows()
    if json_out:
        emit_json([row.__dict__ for row in rows])
        return
    if not rows:
        say("no prepared sites (create one with `codebox site create`)")
    for row in rows:
        say(
            f"{row.site_id}  {row.problem}"
            if row.problem
            else f"{row.site_id}  {row.created_at}  {row.runtime}  {row.mounts} mount(s)  caller {row.caller}"
        )


@site_app.command("rm")
def rm_command(
    site_id: str = typer.Argument(..., help="The site id (prepared-…)."),
) -> None:
    """Delete a prepared site and its snapshot.

    Exit codes: 0 removed, 1 there was no such site, 2 a malformed site id."""
    if not remove_site(site_id):
        say(f"{site_id}: no such site", err=True)
        raise typer.Exit(int(ExitCode.FAILED))
    say(f"{site_id}: removed")


def register(app: typer.Typer) -> None:
    app.add_typer(site_app, name="site")
