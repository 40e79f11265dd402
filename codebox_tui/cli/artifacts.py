"""``codebox artifacts verify|show|list`` (``prune`` is added by the store's CLI module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from codebox_tui.bundle.reader import find_bundle_dir, find_bundles, load_bundle
from codebox_tui.bundle.results import BundleChecks
from codebox_tui.bundle.site_state_view import site_state_lines
from codebox_tui.bundle.summary import artifact_summary, checks_of
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.cli.output import emit_json, say
from codebox_tui.contracts.bundle_read import ManifestView
from codebox_tui.errors import BadInputError, ExitCode
from codebox_tui.settings import get_settings
from store.db import Store

artifacts_app = typer.Typer(help="Inspect and verify artifact bundles.", no_args_is_help=True)


@artifacts_app.command("verify")
def verify_command(
    bundle: Path = typer.Argument(..., help="Bundle folder (holds manifest.json)."),
    json_out: bool = typer.Option(False, "--json", help="Print wp-codebox/artifact-bundle-verification/v1."),
) -> None:
    """Verify every hash, digest and reference; exit 0 only when the bundle is valid (fails closed)."""
    result = verify_bundle(bundle)
    if json_out:
        emit_json(result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"manifest"}))
    elif result.valid:
        say(f"valid: {ManifestView.read(result.manifest).id if result.manifest else bundle}")
    else:
        say(f"INVALID: {bundle} ({len(result.violations)} violation(s))", err=True)
        for violation in result.violations:
            say(f"  {violation.code:26} {violation.path}: {violation.message}", err=True)
    if not result.valid:
        raise typer.Exit(int(ExitCode.FAILED))


def _bundle_folder(ref: str) -> Path:
    """A bundle folder named by its path or by ``@KEY`` (the same keys as ``codebox review``)."""
    if not ref.startswith("@"):
        return Path(ref)
    with Store.open() as store:
        return Path(store.get_bundle(ref).path)


@artifacts_app.command("show")
def show_command(
    bundle: str = typer.Argument(
        ..., help="Bundle folder, or @KEY of a bundle in the review inbox (codebox review list)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """A human summary: identity, verification, changed files, tests, evidence."""
    loaded = load_bundle(find_bundle_dir(_bundle_folder(bundle)))
    summary = artifact_summary(loaded).model_dump(mode="json")
    if json_out:
        emit_json(summary)
        return
    say(f"bundle   {summary['id']}")
    say(f"path     {summary['path']}")
    say(f"created  {summary['createdAt']}")
    say(f"content  {summary['contentDigestB'] or '?'} (Mode B digest: what decisions bind to)")
    runtime = summary["runtime"]
    if runtime:
        say(
            f"runtime  {runtime.get('backend') or '?'}: WordPress {runtime.get('wordpressVersion') or '?'}, "
            f"PHP {runtime.get('phpVersion') or '?'}"
        )
    for base in loaded.metadata.baselines:
        say(f"baseline mount {base.mountIndex}: {base.strategy}")
    if loaded.valid:
        say("verified yes")
    else:
        say(f"verified NO — {len(summary['violations'])} violation(s)")
        _echo_first(
            [f"{v.get('code', '?'):26} {v.get('path', '')}" for v in summary["violations"]],
            f" (codebox artifacts verify {loaded.path})",
        )
    say(f"summary  {summary['summary']}")
    for item in summary["changedFiles"]:
        counts = "binary" if item["binary"] else f"+{item['additions']} -{item['deletions']}"
        say(f"  {item['status']:9} {item['path']}  ({counts})")
    if loaded.skipped:
        say(f"skipped  {len(loaded.skipped)} not captured (changed-files.json skipped[]):")
        _echo_first([f"{e.reason or '?':28} {e.relativePath}" for e in loaded.skipped])
    _echo_checks(checks_of(loaded), loaded.test_results.status)
    for flag in summary["riskFlags"]:
        say(f"risk     {flag}")
    if loaded.site_state is not None:
        for line in site_state_lines(loaded.site_state):
            say(f"site     {line}")
    elif loaded.site_state_problem:
        say(f"site     unreadable: {loaded.site_state_problem}")
    for path in summary["evidence"]:
        say(f"evidence {path}")
    if loaded.read_problems:
        say(f"unread   {len(loaded.read_problems)} field(s) of the wrong type, shown as their default:")
        _echo_first(loaded.read_problems)


def _echo_first(lines: list[str], hint: str = "", limit: int = 10) -> None:
    for line in lines[:limit]:
        say(f"  {line}")
    if len(lines) > limit:
        say(f"  … {len(lines) - limit} more{hint}")


def _echo_checks(checks: BundleChecks, tests_status: str) -> None:
    for label, text in checks.lines(str(tests_status or "unknown")):
        say(f"{label:8} {text}")


@artifacts_app.command("list")
def list_command(
    root: Path | None = typer.Argument(None, help="Folder to search for bundles (default: $CODEBOX_HOME/artifacts)."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON list."),
) -> None:
    """Bundles under ROOT, newest first."""
    if root is None:
        root = get_settings().artifacts_dir
        root.mkdir(parents=True, exist_ok=True)
    if not root.is_dir():
        raise BadInputError(
            f"{root} is not a folder; expected the folder run bundles were written to",
            code="artifacts-root-missing",
            field="root",
        )
    rows: list[dict[str, Any]] = []
    for path in find_bundles(root):
        try:
            loaded = load_bundle(path)
        except Exception as error:  # a broken bundle is listed, not fatal
            rows.append({"path": str(path), "id": None, "valid": False, "error": str(error)})
            continue
        rows.append(
            {
                "path": str(path),
                "id": loaded.id,
                "createdAt": loaded.manifest.createdAt,
                "valid": loaded.valid,
                "changed": loaded.review.stats.total,
                "tests": loaded.test_results.status,
            }
        )
    if json_out:
        emit_json({"schema": "wp-codebox/artifact-list/v1", "root": str(root), "artifacts": rows})
        return
    if not rows:
        say(f"no bundles under {root}")
    for row in rows:
        mark = "ok " if row["valid"] else "BAD"
        say(
            f"{mark} {row.get('createdAt') or '-':24} {row.get('changed', '-')!s:>3} files  "
            f"{(row['id'] or '')[:40]}  {row['path']}"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(artifacts_app, name="artifacts")
