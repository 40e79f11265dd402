"""The review inbox: every captured bundle is recorded, and bundles made elsewhere can be imported.

:func:`record_run` is what every command that captures a bundle calls (``run``, ``recipe-run``,
``evaluate-patch``, runs from the TUI), so none of them drifts. :func:`import_bundles` adds bundles
produced elsewhere (another machine, the reference implementation): each is verified first and only
a valid bundle is recorded (fails closed); nothing is moved or copied (README "Review and decide").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import BadInputError, CodeboxError
from store.db import BundleRecord, Store
from store.decisions import register_bundle

MAX_DEPTH = 2  # like the reference's artifact list: manifest.json at depth 0, 1 and 2 under a root


def record_run(
    *,
    run_id: str,
    run_dir: Path,
    status: str,
    bundle_dir: Path | None,
    metadata: dict[str, Any] | None = None,
    sandbox_session_id: str | None = None,
    started_at: str | None = None,
    bundle_id: str | None = None,
    content_digest: str | None = None,
    changed_files: int = 0,
    store: Store | None = None,
) -> BundleRecord | None:
    """Record a run and the bundle it captured (if any) in the store.

    With ``bundle_id`` and ``content_digest`` from the capture itself the bundle is recorded as is;
    otherwise it is verified and read from disk first.
    """
    own = store is None
    db = Store.open() if store is None else store
    try:
        db.record_run(run_id, status="running", artifacts_dir=run_dir, sandbox_session_id=sandbox_session_id,
                      metadata=metadata or {}, started_at=started_at)
        record: BundleRecord | None = None
        if bundle_dir is not None and (bundle_dir / layout.MANIFEST).is_file():
            if bundle_id and content_digest:
                record = db.record_bundle(bundle_id, path=bundle_dir, content_digest=content_digest, run_id=run_id,
                                          changed_files=changed_files)
            else:
                record = register_bundle(db, bundle_dir, run_id=run_id)
        db.update_run(run_id, status=status, finished_at=utc_now_iso(),
                      bundle_id=record.bundle_id if record else None)
        return record
    finally:
        if own:
            db.close()


def record_run_best_effort(warn: Any = None, **kwargs: Any) -> BundleRecord | None:
    """:func:`record_run`, reporting a failure through ``warn(message)`` instead of raising: the
    bundle on disk is the evidence, and it can still be added with ``codebox review import``."""
    try:
        return record_run(**kwargs)
    except (CodeboxError, OSError) as error:
        if warn is not None:
            warn(f"warning: the run was not recorded in the review inbox: {error}")
        return None


@dataclass
class ImportReport:
    imported: list[BundleRecord] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)  # {path, code, message, violations?}


def find_bundle_dirs(root: Path) -> list[Path]:
    """``root`` itself if it is a bundle, else bundles up to :data:`MAX_DEPTH` folders below it. Folders
    reached through a symlink are skipped: only what really lies under ``root`` is imported."""
    if (root / layout.MANIFEST).is_file():
        return [root]
    real_root = root.resolve()
    found: list[Path] = []
    for depth in range(1, MAX_DEPTH + 1):
        pattern = "/".join([*["*"] * depth, layout.MANIFEST])
        for manifest in root.glob(pattern):
            folder = manifest.parent
            rel = folder.relative_to(root)
            if any((root / Path(*rel.parts[: i + 1])).is_symlink() for i in range(len(rel.parts))):
                continue
            if manifest.is_file() and folder.resolve().is_relative_to(real_root):
                found.append(folder)
    return sorted(set(found))


def import_bundles(store: Store, root: Path) -> ImportReport:
    """Verify and record every bundle at or under ``root`` (never moved). Invalid ones are reported."""
    base = root.expanduser()
    if not base.is_dir():
        raise BadInputError(f"{root} is not a folder; expected a bundle folder (holding manifest.json) or a "
                            "folder of bundles", code="import-missing", field="DIR")
    dirs = find_bundle_dirs(base)
    if not dirs:
        raise BadInputError(f"no bundle (manifest.json) at or up to {MAX_DEPTH} folders below {root}",
                            code="import-empty", field="DIR")
    report = ImportReport()
    for bundle_dir in dirs:
        try:
            report.imported.append(register_bundle(store, bundle_dir, origin="import"))
        except CodeboxError as error:
            entry: dict[str, Any] = {"path": str(bundle_dir), "code": error.code, "message": error.message}
            if error.details and error.details.get("violations"):
                entry["violations"] = error.details["violations"]
            report.rejected.append(entry)
    return report
