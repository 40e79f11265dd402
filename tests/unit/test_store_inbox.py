"""The store keys bundles by directory plus id: no run hides another (real SQLite files)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError, ConflictError
from store.db import MIGRATIONS, SCHEMA_VERSION, Store

BUNDLE = "artifact-bundle-sha256-" + "c" * 64
FIRST, SECOND = "a" * 64, "b" * 64


def test_same_mode_a_id_in_two_directories_is_two_records(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite3") as store:
        one = store.record_bundle(BUNDLE, path=tmp_path / "run-1", content_digest=FIRST, run_id="runtime-1")
        two = store.record_bundle(BUNDLE, path=tmp_path / "run-2", content_digest=SECOND, run_id="runtime-2")
        assert one.key != two.key
        listed = store.list_bundles()
        assert {(b.path, b.content_digest) for b in listed} == {
            (str((tmp_path / "run-1").resolve()), FIRST),
            (str((tmp_path / "run-2").resolve()), SECOND),
        }
        # identical content in a third run is still its own record (nothing is re-pointed)
        three = store.record_bundle(BUNDLE, path=tmp_path / "run-3", content_digest=SECOND)
        assert len(store.list_bundles()) == 3 and store.get_bundle_by_key(two.key).path.endswith("run-2")
        assert three.key not in (one.key, two.key)
        # the shared id is ambiguous; @key, the run id and a content-digest prefix are not
        with pytest.raises(BadInputError, match="matches 3 bundles") as caught:
            store.get_bundle(BUNDLE)
        assert "@" + str(one.key) in str(caught.value)
        assert store.get_bundle(f"@{one.key}").content_digest == FIRST
        assert store.get_bundle("runtime-2").key == two.key
        assert store.get_bundle("aaaa").key == one.key
        # a decision binds to its record: the other records stay pending
        d1 = store.record_decision(
            f"@{one.key}",
            "approve",
            approver="ana",
            approved_files=["/w/a.php"],
            approved_relative_paths=["a.php"],
            content_digest=FIRST,
        )
        assert d1.bundle_key == one.key and d1.bundle_directory == one.path and d1.artifact_id == BUNDLE
        assert d1.approved_files == ["/w/a.php"] and d1.approved_relative_paths == ["a.php"]
        with pytest.raises(ConflictError, match="content digest"):
            store.record_decision(two.key, "approve", approver="ana", approved_files=["a"], content_digest=FIRST)
        assert store.get_bundle_by_key(two.key).status == "pending"
        assert store.decision_bundle(d1.id).key == one.key
        assert [d.id for d in store.list_decisions(one.key)] == [d1.id] and store.list_decisions(two.key) == []


def test_same_directory_and_id_with_other_content_is_refused(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite3") as store:
        first = store.record_bundle(BUNDLE, path=tmp_path / "run", content_digest=FIRST)
        again = store.record_bundle(BUNDLE, path=tmp_path / "run", content_digest=FIRST, changed_files=3)
        assert again.key == first.key and again.changed_files == 3
        with pytest.raises(ConflictError, match="different content digest"):
            store.record_bundle(BUNDLE, path=tmp_path / "run", content_digest=SECOND)


def test_relative_and_absolute_spellings_are_one_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open(tmp_path / "db.sqlite3") as store:
        a = store.record_bundle(BUNDLE, path=Path("artifacts/run"), content_digest=FIRST)
        b = store.record_bundle(BUNDLE, path=tmp_path / "artifacts" / "run", content_digest=FIRST)
        assert a.key == b.key


def test_a_schema_1_store_is_migrated_keeping_bundles_decisions_and_applies(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO bundles VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            BUNDLE,
            str(tmp_path / "run"),
            FIRST,
            "runtime-1",
            1,
            "applied",
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z",
        ),
    )
    conn.execute(
        "INSERT INTO decisions (id, bundle_id, sequence, action, approver, reason, approved_files,"
        " content_digest, decided_at) VALUES (7, ?, 1, 'approve', 'ana', '', ?, ?, '2026-01-01T00:00:01Z')",
        (BUNDLE, json.dumps(["plugin.php"]), FIRST),
    )
    result = {
        "schema": "wp-codebox/apply-result/v1",
        "adapter": "directory",
        "status": "applied",
        "target": {"path": "/t"},
        "applied_files": ["plugin.php"],
        "audit_reference": "x",
    }
    conn.execute(
        "INSERT INTO applies (decision_id, adapter, target, status, result, applied_at)"
        " VALUES (7, 'directory', '/t', 'applied', ?, '2026-01-01T00:00:02Z')",
        (json.dumps(result),),
    )
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.schema_version() == SCHEMA_VERSION >= 2  # migrated through schema 2 to the current one
        (bundle,) = store.list_bundles()
        assert bundle.bundle_id == BUNDLE and bundle.status == "applied" and bundle.decisions == 1
        decision = store.get_decision(7)
        # an old decision: mount-relative approved_files, no relative list; still bound to its bundle
        assert decision.approved_files == ["plugin.php"] and decision.approved_relative_paths is None
        assert decision.bundle_key == bundle.key and decision.applies[0].result.status == "applied"
        assert store.decision_bundle(7).path == str(tmp_path / "run")
        # new decisions continue the numbering and the bundle's sequence
        nxt = store.record_decision(bundle.key, "discard", approver="bo", content_digest=FIRST)
        assert nxt.id == 8 and nxt.sequence == 2
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


def test_import_finds_bundles_two_levels_down_and_skips_symlinked_folders(tmp_path: Path) -> None:
    from store.inbox import find_bundle_dirs

    root = tmp_path / "root"
    for rel in ("a", "b/c", "b/d/e"):  # depth 1, 2 and 3 (too deep)
        (root / rel).mkdir(parents=True)
        (root / rel / "manifest.json").write_text("{}")
    outside = tmp_path / "outside" / "x"
    outside.mkdir(parents=True)
    (outside / "manifest.json").write_text("{}")
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert find_bundle_dirs(root) == [root / "a", root / "b/c"]
    assert find_bundle_dirs(root / "a") == [root / "a"]
