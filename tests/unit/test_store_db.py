"""The SQLite store: real database files, real concurrent processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codebox_tui.errors import BadInputError, ConflictError
from store.db import SCHEMA_VERSION, Store

DIGEST = "a" * 64
OTHER = "b" * 64
BUNDLE = "artifact-bundle-sha256-" + "c" * 64


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "codebox.sqlite3")
    yield s
    s.close()


def test_open_creates_wal_database_with_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "codebox.sqlite3"
    with Store.open(path) as s:
        assert s.schema_version() == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_default_path_follows_codebox_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codebox_tui.settings import reload_settings

    session_home = os.environ["CODEBOX_HOME"]
    monkeypatch.setenv("CODEBOX_HOME", str(tmp_path / "home"))
    reload_settings()
    try:
        with Store.open() as s:
            assert s.path == tmp_path / "home" / "codebox.sqlite3"
        assert (tmp_path / "home" / "codebox.sqlite3").is_file()
    finally:
        # back to the test session's home (never unset: settings would fall back to the user's own)
        monkeypatch.setenv("CODEBOX_HOME", session_home)
        reload_settings()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "codebox.sqlite3"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(BadInputError, match="newer"):
        Store.open(path)


def test_reopening_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "codebox.sqlite3"
    with Store.open(path) as s:
        s.record_run("runtime-1", status="running", artifacts_dir=tmp_path, metadata={"orchestrator": {"k": 1}})
    with Store.open(path) as s:
        run = s.get_run("runtime-1")
        assert run.metadata == {"orchestrator": {"k": 1}}


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "codebox.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BadInputError, match="not a usable Codebox database"):
        Store.open(path)


def test_runs_round_trip_and_filter(store: Store, tmp_path: Path) -> None:
    store.record_run(
        "runtime-a",
        status="running",
        artifacts_dir=tmp_path / "a",
        sandbox_session_id="sess-1",
        metadata={"ticket": "T-1"},
        started_at="2026-01-01T00:00:00.000Z",
    )
    store.record_run("runtime-b", status="running", artifacts_dir=tmp_path / "b", started_at="2026-01-02T00:00:00.000Z")
    updated = store.update_run(
        "runtime-a", status="completed", finished_at="2026-01-01T00:01:00.000Z", bundle_id=BUNDLE
    )
    assert updated.status == "completed" and updated.bundle_id == BUNDLE
    assert updated.sandbox_session_id == "sess-1"
    assert [r.run_id for r in store.list_runs()] == ["runtime-b", "runtime-a"]
    assert [r.run_id for r in store.list_runs(status="completed")] == ["runtime-a"]
    assert [r.run_id for r in store.list_runs(sandbox_session_id="sess-1")] == ["runtime-a"]
    assert store.list_runs(status="running", sandbox_session_id="sess-1") == []
    with pytest.raises(BadInputError):
        store.update_run("nope", status="x")


def test_bundle_prefix_lookup(store: Store, tmp_path: Path) -> None:
    store.record_bundle(BUNDLE, path=tmp_path, content_digest=DIGEST, changed_files=2)
    other = "artifact-bundle-sha256-" + "c" * 63 + "d"
    store.record_bundle(other, path=tmp_path, content_digest=OTHER)
    assert store.get_bundle(BUNDLE).changed_files == 2
    assert store.get_bundle("artifact-bundle-sha256-" + "c" * 64).bundle_id == BUNDLE
    with pytest.raises(BadInputError, match="matches 2 bundles"):
        store.get_bundle("cccc")
    assert store.get_bundle("c" * 63 + "d").bundle_id == other
    with pytest.raises(BadInputError, match="no bundle"):
        store.get_bundle("ffff")
    assert store.get_bundle(BUNDLE).status == "pending"
    assert {b.bundle_id for b in store.list_bundles(status="pending")} == {BUNDLE, other}


def test_decisions_validate_and_move_bundle_status(store: Store, tmp_path: Path) -> None:
    store.record_bundle(BUNDLE, path=tmp_path, content_digest=DIGEST)
    with pytest.raises(BadInputError, match="at least one approved file"):
        store.record_decision(BUNDLE, "approve", approver="ana", content_digest=DIGEST)
    with pytest.raises(BadInputError, match="needs a reason"):
        store.record_decision(BUNDLE, "iterate", approver="ana", content_digest=DIGEST)
    with pytest.raises(BadInputError, match="takes no approved files"):
        store.record_decision(BUNDLE, "discard", approver="ana", approved_files=["a"], content_digest=DIGEST)
    with pytest.raises(BadInputError, match="unknown decision"):
        store.record_decision(BUNDLE, "merge", approver="ana", content_digest=DIGEST)
    with pytest.raises(ConflictError, match="does not match"):
        store.record_decision(BUNDLE, "approve", approver="ana", approved_files=["a"], content_digest=OTHER)
    first = store.record_decision(
        BUNDLE,
        "approve-files",
        approver="ana",
        reason="only a",
        approved_files=["a.php", "a.php"],
        content_digest=DIGEST,
    )
    assert first.approved_files == ["a.php"] and first.sequence == 1
    assert store.get_bundle(BUNDLE).status == "approved"
    second = store.record_decision(BUNDLE, "iterate", approver="bo", reason="rename x", content_digest=DIGEST)
    assert second.sequence == 2
    assert store.get_bundle(BUNDLE).status == "changes-requested"
    store.record_decision(BUNDLE, "discard", approver="bo", content_digest=DIGEST)
    assert store.get_bundle(BUNDLE).status == "discarded"
    assert store.get_bundle(BUNDLE).decisions == 3
    assert store.latest_decision(BUNDLE).action == "discard"  # type: ignore[union-attr]
    assert store.get_decision(f"decision-{first.id}").reason == "only a"
    assert store.get_decision(str(first.id)).decided_at == first.decided_at


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from store.db import Store
    s = Store.open(Path(sys.argv[1]))
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()
    for i in range(int(sys.argv[3])):
        s.record_decision(sys.argv[4], "iterate", approver=sys.argv[2], reason=f"{sys.argv[2]}-{i}",
                          content_digest=sys.argv[5])
    s.close()
    """
)


def test_concurrent_decisions_from_two_processes_are_serialised(store: Store, tmp_path: Path) -> None:
    store.record_bundle(BUNDLE, path=tmp_path, content_digest=DIGEST)
    per_process = 60
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(store.path), name, str(per_process), BUNDLE, DIGEST],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    for p in procs:  # both connected before either writes, so their writes interleave
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        assert p.wait(timeout=120) == 0
    decisions = store.list_decisions(BUNDLE)
    assert len(decisions) == 2 * per_process
    assert [d.sequence for d in decisions] == list(range(1, 2 * per_process + 1))
    reasons = {d.reason for d in decisions}
    assert reasons == {f"{n}-{i}" for n in ("p1", "p2") for i in range(per_process)}
    # each writer's own decisions keep their order
    for name in ("p1", "p2"):
        mine = [int(d.reason.split("-")[1]) for d in decisions if d.approver == name]
        assert mine == sorted(mine)


def test_reader_process_reads_while_writer_holds_transaction(store: Store, tmp_path: Path) -> None:
    store.record_bundle(BUNDLE, path=tmp_path, content_digest=DIGEST)
    with store.write() as conn:  # an open write transaction in this process
        conn.execute("UPDATE bundles SET status = 'busy' WHERE bundle_id = ?", (BUNDLE,))
        code = (
            "import sys; from pathlib import Path; from store.db import Store;"
            "s = Store.open(Path(sys.argv[1])); print(s.get_bundle(sys.argv[2]).status)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(store.path), BUNDLE],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert out.stdout.strip() == "pending"  # WAL: the reader sees the last committed state, unblocked
    assert store.get_bundle(BUNDLE).status == "busy"


def test_forward_migration_keeps_existing_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import store.db as db

    path = tmp_path / "codebox.sqlite3"
    with Store.open(path) as s:
        s.record_bundle(BUNDLE, path=tmp_path, content_digest=DIGEST)
    extra = "ALTER TABLE bundles ADD COLUMN label TEXT NOT NULL DEFAULT 'none';CREATE INDEX b_label ON bundles(label)"
    monkeypatch.setattr(db, "MIGRATIONS", (*db.MIGRATIONS, extra))
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(db.MIGRATIONS))
    with db.Store.open(path) as s:
        assert s.schema_version() == SCHEMA_VERSION + 1
        assert s.get_bundle(BUNDLE).content_digest == DIGEST
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT label FROM bundles").fetchone()[0] == "none"
    conn.close()
