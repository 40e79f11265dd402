"""Preparing a contained site and opening it again (docs/sites.md).

``create_site`` boots a sandbox from the inputs (mounts, blueprint, WordPress, PHP, backend), applies the
blueprint, takes a runtime snapshot of the prepared site and keeps it under ``$CODEBOX_HOME/sites/<site_id>``; the
same caller and inputs give the same ``site_id``, and a site already kept and verified is not prepared twice.
``open_request`` is the run that boots the site again: the snapshot, verified first, is restored right after boot
(``RunRequest.restore``, as ``codebox run --restore`` does), before the held preview is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.contracts.site import ContainedSite, SiteMount, SiteRecord, SiteRuntime
from codebox_tui.errors import BadInputError
from codebox_tui.lifecycle import ProgressListener, RunRequest, RunService, mounts_from_text, settle_runtime
from codebox_tui.lifecycle.request import check_request
from codebox_tui.recipes.run import apply_blueprint
from codebox_tui.runtime.site_state import readonly_content_paths, snapshot_scope, take_snapshot
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.sites.store import (
    folder_digest,
    handle,
    load_verified_snapshot,
    read_record,
    save_site,
    site_id_for,
    site_status,
    source_digest,
)


@dataclass
class CreatedSite:
    site: ContainedSite
    record: SiteRecord
    prepared: bool  # False: the same caller and inputs were already kept, nothing was booted


def _site_mounts(request: RunRequest) -> list[SiteMount]:
    out = []
    for mount in request.mounts:
        if mount.live:
            raise BadInputError(
                f"--mount {mount.source}: a site's mounts are copied into its snapshot; :live "
                "(write-through) has no meaning here",
                code="site-live-mount",
                field="mount",
            )
        source = Path(mount.source).resolve()
        if not source.is_dir():
            raise BadInputError(
                f"--mount {mount.source}: a site mounts folders only", code="site-mount-not-folder", field="mount"
            )
        out.append(SiteMount(source=str(source), target=mount.target, mode=mount.mode, digest=folder_digest(source)))
    return out


def create_site(
    mounts: list[str],
    *,
    blueprint: dict[str, Any] | None,
    wp: str,
    php: str | None,
    backend: str | None,
    caller: str,
    boot_timeout_s: float | None = None,
    progress: ProgressListener | None = None,
    force: bool = False,
) -> CreatedSite:
    request = settle_runtime(
        RunRequest(
            mounts=mounts_from_text(mounts),
            wp=wp,
            php=php,
            backend=backend,
            blueprint=blueprint,
            boot_timeout_s=boot_timeout_s,
            capture=False,
            flow="site-create",
        )
    )
    check_request(request)
    assert request.php is not None and request.backend in ("playground", "native")
    runtime = SiteRuntime(backend=request.backend, wp=wp, wordpressVersion=resolve_build(wp).version, php=request.php)
    site_mounts = _site_mounts(request)
    digest = source_digest(runtime, site_mounts, blueprint)
    site_id = site_id_for(caller, digest)
    if not force and site_status(site_id, expected_digest=digest).status == "recoverable":
        record = read_record(site_id)
        return CreatedSite(record.site, record, prepared=False)
    # the blueprint is applied by Codebox after boot (recipes/run.apply_blueprint), never handed to Playground
    request.blueprint = None
    with RunService().open(request, progress=progress) as run:
        sandbox = run.boot()
        if blueprint:
            apply_blueprint(run, blueprint)
        scope = snapshot_scope({}, readonly_content_paths(request.mounts))
        snapshot = take_snapshot(sandbox, scope, metadata={"site": site_id})
    site = handle(site_id, caller, digest)
    record = save_site(site, runtime, site_mounts, blueprint, snapshot)
    return CreatedSite(site, record, prepared=True)


def open_request(site_id: str) -> RunRequest:
    """The run that boots ``site_id`` again: its record's runtime and mounts, its snapshot (verified: a tampered
    one raises ``site-snapshot-tampered`` here, before anything boots) restored right after boot."""
    record = read_record(site_id)
    snapshot = load_verified_snapshot(record)
    mounts = mounts_from_text([f"{m.source}:{m.target}:{m.mode}" for m in record.mounts])
    rt = record.runtime
    return RunRequest(
        mounts=mounts,
        wp=rt.wp,
        php=rt.php,
        backend=rt.backend,
        restore=snapshot,
        restore_source=f"site {site_id}",
        flow="site-open",
        warm=True,
        metadata={"site": site_id},
    )
