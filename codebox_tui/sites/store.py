"""Prepared sites kept under ``$CODEBOX_HOME/sites/<site_id>/`` (docs/sites.md): the record (``site.json``), the
snapshot document (``snapshot.json``) and its file blobs (``files/runtime-snapshots/blobs/<sha256>``).

The snapshot is host data made from what a sandbox wrote. The record holds the sha256 of the snapshot document
as the host wrote it; every read of the snapshot (``site status``, ``site open``) hashes the bytes it then parses
(one read, never the path twice), every blob is checked against the sha256 its entry names, and the restore
checks the document's own table and file hashes. Anything that does not verify is a ``miss`` for ``status`` and a
refusal for ``open``: a tampered site is never booted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codebox_tui.bundle.safe_read import UnsafeFileError, read_regular
from codebox_tui.contracts.canonical import sha256_hex, stable_json
from codebox_tui.contracts.common import Digest, utc_now_iso
from codebox_tui.contracts.site import (
    SITE_ID_PATTERN,
    BlueprintRef,
    ContainedSite,
    ContainedSiteStatus,
    Recovery,
    RecoveryInput,
    SiteMount,
    SiteRecord,
    SiteRuntime,
    SiteSnapshotRef,
)
from codebox_tui.contracts.site_state import RuntimeSnapshot
from codebox_tui.errors import BadInputError, CodeboxError, ConflictError
from codebox_tui.runtime.site_state import externalize_files, inline_blobs, parse_snapshot
from codebox_tui.settings import get_settings

RECORD_FILE = "site.json"
SNAPSHOT_FILE = "snapshot.json"
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_SNAPSHOT_DOCUMENT_BYTES = 512 * 1024 * 1024
DEFAULT_CALLER = "codebox-cli"


def sites_dir() -> Path:
    return get_settings().home / "sites"


def site_dir(site_id: str) -> Path:
    """The folder of ``site_id``; an id that is not ``prepared-<16 hex>`` is refused (it names a folder)."""
    if not re.fullmatch(SITE_ID_PATTERN, site_id):
        raise BadInputError(
            f"site id {site_id!r} is not a Codebox site id (prepared-<16 hex>, from `codebox site "
            "create` or `codebox site list`)",
            code="invalid-site-id",
            field="site_id",
        )
    return sites_dir() / site_id


# -- inputs → source digest and site id -------------------------------------------------------------------
def folder_digest(folder: Path) -> str:
    """The content of a mounted folder as a sandbox sees it: every regular file's path, permission bits and
    sha256, sorted; symlinks and the folder's own ``.git`` left out, as the private copy leaves them out."""
    entries: list[dict[str, Any]] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(
            d for d in dirs if not (d == ".git" and Path(root) == folder) and not os.path.islink(os.path.join(root, d))
        )
        for name in sorted(files):
            path = Path(root, name)
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                continue
            entries.append(
                {
                    "path": path.relative_to(folder).as_posix(),
                    "mode": stat.S_IMODE(info.st_mode),
                    "sha256": sha256_hex(read_regular(path)),
                }
            )
    return sha256_hex(stable_json(entries))


def source_digest(runtime: SiteRuntime, mounts: list[SiteMount], blueprint: dict[str, Any] | None) -> str:
    """The hash of the normalised inputs: backend, WordPress build, PHP, each mount's target, mode and content,
    and the blueprint (host paths are not part of it: the same folder moved is the same site)."""
    return sha256_hex(
        stable_json(
            {
                "runtime": {
                    "backend": runtime.backend,
                    "wordpressVersion": runtime.wordpressVersion,
                    "php": runtime.php,
                },
                "mounts": [{"target": m.target, "mode": m.mode, "digest": m.digest} for m in mounts],
                "blueprint": blueprint,
            }
        )
    )


def site_id_for(caller: str, digest: str) -> str:
    """Stable for the caller and the inputs' digest."""
    return "prepared-" + sha256_hex(stable_json({"caller": caller, "source": digest}))[:16]


def handle(site_id: str, caller: str, digest: str) -> ContainedSite:
    return ContainedSite(
        site_id=site_id,
        caller_id=caller,
        source_digest=Digest(value=digest),
        recovery=Recovery(input=RecoveryInput(cache_key=site_id, source_digest=digest)),
    )


# -- writing -----------------------------------------------------------------------------------------------
def save_site(
    site: ContainedSite,
    runtime: SiteRuntime,
    mounts: list[SiteMount],
    blueprint: dict[str, Any] | None,
    snapshot: RuntimeSnapshot,
) -> SiteRecord:
    """Write the site's snapshot (document + blobs) and its record into a fresh folder, then put the folder in
    place in one rename (a half-written site is never seen; an older copy of the same site is replaced)."""
    root = sites_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = site_dir(site.site_id)
    staging = root / f".staging-{site.site_id}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(mode=0o700)
    try:

        def write_blob(rel: str, data: bytes) -> None:
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

        document = externalize_files(snapshot, write_blob)
        data = (
            json.dumps(document.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True) + "\n"
        ).encode("utf-8")
        (staging / SNAPSHOT_FILE).write_bytes(data)
        record = SiteRecord(
            site=site,
            createdAt=utc_now_iso(),
            runtime=runtime,
            mounts=mounts,
            blueprint=blueprint,
            snapshot=SiteSnapshotRef(id=snapshot.id, sha256=sha256_hex(data), bytes=len(data)),
        )
        (staging / RECORD_FILE).write_text(
            record.model_dump_json(by_alias=True, exclude_none=True, indent=2) + "\n", encoding="utf-8"
        )
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return record


def remove_site(site_id: str) -> bool:
    """Delete the site's folder; False when there was none. Never follows a link out of the sites folder."""
    path = site_dir(site_id)
    if path.is_symlink():
        path.unlink()
        return True
    if not path.exists():
        return False
    shutil.rmtree(path)
    return True


# -- reading -----------------------------------------------------------------------------------------------
class SiteMiss(CodeboxError):
    """The site cannot be booted again from what is on disk (missing, unreadable or tampered)."""


def read_record(site_id: str) -> SiteRecord:
    path = site_dir(site_id) / RECORD_FILE
    try:
        data = read_regular(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise SiteMiss(
            f"no prepared site {site_id} (create it with `codebox site create`)", code="site-not-found", field="site_id"
        ) from None
    except (OSError, UnsafeFileError) as error:
        raise SiteMiss(f"{path}: cannot be read: {error}", code="site-record-unreadable", field=RECORD_FILE) from None
    try:
        record = SiteRecord.model_validate_json(data)
    except ValidationError as error:
        first = error.errors()[0]
        raise SiteMiss(
            f"{path}: {'.'.join(map(str, first['loc']))}: {first['msg']}", code="site-record-invalid", field=RECORD_FILE
        ) from None
    if record.site.site_id != site_id:
        raise SiteMiss(
            f"{path} names another site ({record.site.site_id})", code="site-record-invalid", field="site.site_id"
        )
    return record


def load_verified_snapshot(record: SiteRecord) -> RuntimeSnapshot:
    """The site's snapshot with its bytes inline, after every check in this module's docstring; a tampered or
    incomplete snapshot raises :class:`ConflictError` ``site-snapshot-tampered`` (exit 5)."""
    folder = site_dir(record.site.site_id)
    try:
        data = read_regular(folder / SNAPSHOT_FILE, MAX_SNAPSHOT_DOCUMENT_BYTES)
    except (OSError, UnsafeFileError) as error:
        raise SiteMiss(
            f"the snapshot of {record.site.site_id} cannot be read: {error}",
            code="site-snapshot-missing",
            field=SNAPSHOT_FILE,
        ) from None
    if len(data) != record.snapshot.bytes or sha256_hex(data) != record.snapshot.sha256:
        raise ConflictError(
            f"the snapshot of {record.site.site_id} was changed after Codebox wrote it (its sha256 "
            "is not the one in site.json); remove it with `codebox site rm` and create it again",
            code="site-snapshot-tampered",
            field=SNAPSHOT_FILE,
        )
    try:
        snapshot = parse_snapshot(data, SNAPSHOT_FILE)
        if snapshot.id != record.snapshot.id:
            raise BadInputError(
                f"{SNAPSHOT_FILE} is snapshot {snapshot.id}, site.json names {record.snapshot.id}",
                code="snapshot-digest-mismatch",
                field="id",
            )
        return inline_blobs(snapshot, folder, SNAPSHOT_FILE)
    except BadInputError as error:  # a blob missing or not hashing to its entry's sha256
        raise ConflictError(
            f"the snapshot of {record.site.site_id} does not verify: {error.message}",
            code="site-snapshot-tampered",
            field=error.field,
        ) from None


def site_status(site_id: str, *, expected_digest: str | None = None) -> ContainedSiteStatus:
    """``recoverable`` when the site's record and snapshot verify (and its source digest is ``expected_digest``,
    when given), else ``miss`` with the reason. Reads only; the same answer every time for the same files. A
    malformed id is bad input, not a miss."""
    site_dir(site_id)
    try:
        record = read_record(site_id)
        if expected_digest is not None and record.site.source_digest.value != expected_digest:
            raise SiteMiss(
                f"{site_id} was prepared from other inputs (source digest {record.site.source_digest.value[:12]}…)",
                code="site-source-changed",
            )
        load_verified_snapshot(record)
    except CodeboxError as error:
        return ContainedSiteStatus(site_id=site_id, status="miss", reason=error.message)
    digest = record.site.source_digest.value
    return ContainedSiteStatus(
        site_id=site_id, status="recoverable", blueprint_ref=BlueprintRef(ref=f"prepared:{site_id}:{digest}")
    )


@dataclass
class SiteRow:
    """One prepared site as Home and ``codebox site list`` show it."""

    site_id: str
    caller: str
    created_at: str
    runtime: str  # "playground · WordPress 6.5.5 · PHP 8.3"
    mounts: int
    problem: str | None = None  # set when the record cannot be read


def site_rows() -> list[SiteRow]:
    """Every folder under the sites folder, newest first; an unreadable record is listed with its problem."""
    root = sites_dir()
    if not root.is_dir():
        return []
    rows = []
    for path in root.iterdir():
        if path.name.startswith("."):
            continue
        try:
            record = read_record(path.name)
        except CodeboxError as error:
            rows.append(SiteRow(path.name, "", "", "", 0, problem=error.message))
            continue
        rt = record.runtime
        rows.append(
            SiteRow(
                path.name,
                record.site.caller_id,
                record.createdAt,
                f"{rt.backend} · WordPress {rt.wordpressVersion} · PHP {rt.php}",
                len(record.mounts),
            )
        )
    return sorted(rows, key=lambda row: row.created_at, reverse=True)
