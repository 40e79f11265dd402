"""Snapshot documents in a bundle: blobs out and back in, and every tampering refused before anything
reaches a sandbox (the sandbox round trips are in tests/e2e/test_site_state.py)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.contracts.canonical import pretty_json
from codebox_tui.contracts.site_state import RuntimeSnapshot
from codebox_tui.errors import BadInputError
from codebox_tui.runtime import site_state

REL = "files/runtime-snapshots/snap.json"


class UnusedSandbox:
    """Only the versions are read; any call into the sandbox fails the test."""

    wordpress_version = "6.5.5"
    php_version = "8.3.0"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the sandbox must not be used ({name})")


def _snapshot() -> RuntimeSnapshot:
    contents = {"plugins/a.php": b"<?php // a", "uploads/b.txt": b"bee", "uploads/same.txt": b"bee"}
    files = [
        {
            "path": path,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "base64": base64.b64encode(data).decode(),
        }
        for path, data in contents.items()
    ]
    database = {
        "tables": [
            {"name": "wp_options", "createSql": "CREATE TABLE wp_options (x)", "rows": [{"x": 1}], "rowCount": 1}
        ]
    }
    return site_state.with_hashes(
        RuntimeSnapshot.model_validate(
            {
                "id": "runtime-snapshot-test",
                "createdAt": "2026-01-01T00:00:00.000Z",
                "compatibility": {"wordpressVersion": "6.5.5", "phpVersion": "8.3.0"},
                "metadata": {},
                "database": database,
                "files": files,
                "hashes": {"database": "", "files": ""},
            }
        )
    )


def _write_bundle(tmp_path: Path, snapshot: RuntimeSnapshot) -> list[str]:
    written: list[str] = []

    def write_blob(rel: str, data: bytes) -> None:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
        written.append(rel)

    out = site_state.externalize_files(snapshot, write_blob)
    (tmp_path / REL).write_text(pretty_json(out.model_dump(mode="json", by_alias=True, exclude_none=True)))
    return written


def test_blobs_are_written_once_per_content_and_load_back_inline(tmp_path: Path) -> None:
    snapshot = _snapshot()
    written = _write_bundle(tmp_path, snapshot)
    assert len(written) == 2  # b.txt and same.txt share one blob
    assert "base64" not in (tmp_path / REL).read_text()
    assert site_state.load_snapshot(tmp_path, REL) == snapshot


def test_a_tampered_blob_is_refused(tmp_path: Path) -> None:
    _write_bundle(tmp_path, _snapshot())
    blob = tmp_path / "files/runtime-snapshots/blobs" / hashlib.sha256(b"bee").hexdigest()
    blob.write_bytes(b"BEE")
    with pytest.raises(BadInputError, match="does not hash to its sha256") as error:
        site_state.load_snapshot(tmp_path, REL)
    assert error.value.code == "snapshot-digest-mismatch"


def test_a_missing_or_linked_blob_is_refused(tmp_path: Path) -> None:
    _write_bundle(tmp_path, _snapshot())
    blob = tmp_path / "files/runtime-snapshots/blobs" / hashlib.sha256(b"<?php // a").hexdigest()
    outside = tmp_path / "outside"
    outside.write_bytes(b"<?php // a")
    blob.unlink()
    with pytest.raises(BadInputError, match="cannot be read"):
        site_state.load_snapshot(tmp_path, REL)
    os.symlink(outside, blob)
    with pytest.raises(BadInputError, match="cannot be read"):
        site_state.load_snapshot(tmp_path, REL)


def test_restore_refuses_inconsistent_documents_before_using_the_sandbox() -> None:
    snapshot = _snapshot()
    bad_bytes = snapshot.model_copy(
        update={
            "files": [
                snapshot.files[0].model_copy(update={"base64": base64.b64encode(b"other").decode()}),
                *snapshot.files[1:],
            ]
        }
    )
    with pytest.raises(BadInputError, match="do not match its sha256"):
        site_state.restore_snapshot(UnusedSandbox(), bad_bytes)  # type: ignore[arg-type]
    table = snapshot.database.tables[0].model_copy(update={"rows": [{"x": 2}]})
    bad_rows = snapshot.model_copy(update={"database": snapshot.database.model_copy(update={"tables": [table]})})
    with pytest.raises(BadInputError, match="do not match its hashes"):
        site_state.restore_snapshot(UnusedSandbox(), bad_rows)  # type: ignore[arg-type]
    other_php = snapshot.model_copy(
        update={"compatibility": snapshot.compatibility.model_copy(update={"phpVersion": "7.4.0"})}
    )
    with pytest.raises(BadInputError, match=r"taken on phpVersion 7\.4\.0") as error:
        site_state.restore_snapshot(UnusedSandbox(), other_php)  # type: ignore[arg-type]
    assert error.value.code == "snapshot-incompatible"
    for prefix in ("wp", "x'; DROP TABLE y; --_", 7):
        no_prefix = snapshot.model_copy(update={"metadata": {"tablePrefix": prefix}})
        with pytest.raises(BadInputError, match=r"metadata\.tablePrefix must be") as error:
            site_state.restore_snapshot(UnusedSandbox(), no_prefix)  # type: ignore[arg-type]
        assert error.value.code == "snapshot-incompatible" and error.value.field == "metadata.tablePrefix"


@pytest.mark.parametrize("name", ["", "../x", "a/b", "-lead", "x" * 65, "sp ace"])
def test_bad_checkpoint_names_are_refused(name: str) -> None:
    with pytest.raises(BadInputError, match="checkpoint name"):
        site_state.check_checkpoint_name(name)


def test_snapshot_scope_excludes_the_database_and_read_only_mounts() -> None:
    from codebox_tui.contracts.runtime import MountSpec

    mounts = [
        MountSpec(source="/x", target="/wordpress/wp-content/plugins/ro", mode="readonly"),
        MountSpec(source="/y", target="/wordpress/wp-content/plugins/rw", mode="readwrite"),
        MountSpec(source="/z", target="/opt/tools", mode="readonly"),
    ]
    scope = site_state.snapshot_scope(
        {"snapshot-database-tables": "wp_options, wp_posts"}, site_state.readonly_content_paths(mounts)
    )
    assert scope == {"excludeContent": ["database", "plugins/ro"], "tables": ["wp_options", "wp_posts"]}
