"""The SQLite store: runs, bundles, decisions and apply results.

One file (default ``settings.db_path`` = ``CODEBOX_HOME/codebox.sqlite3``) in WAL mode, so one
process can read while another writes. Every write runs in ``BEGIN IMMEDIATE``: concurrent writers
(two ``codebox review`` processes on one bundle) are serialised by SQLite's write lock and each
decision gets the next gap-free ``sequence`` for its bundle, so no write is lost.

The schema version lives in ``PRAGMA user_version``; the migrations (``store/migrations.py``) are applied forward, in
order, inside one transaction. A database written by a newer Codebox is refused, never rewritten.

A bundle record is keyed by its **directory plus bundle id** (schema 2). Bundle ids in the reference's
current mode (Mode A) hash the manifest's file list, not the bytes, so two different runs that touch
the same files share an id; each run's directory is its own record, so neither hides the other, and
every decision is bound to one record (``bundle_key``) and the Mode B content digest it reviewed
(README "Review and decide").
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.contracts.apply import (
    APPROVING_ACTIONS,
    DECISION_ACTIONS,
    AppliedRecord,
    ApplyResult,
    Decision,
)
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import BadInputError, CodeboxError, ConflictError
from codebox_tui.settings import get_settings
from store.migrations import MIGRATIONS, SCHEMA_VERSION, split_sql

BUNDLE_ID_PREFIX = "artifact-bundle-sha256-"
BUSY_TIMEOUT_S = 30.0
_DIGEST_RE = re.compile(r"^[0-9a-f]{64}$")

BUNDLE_STATUS_FOR_ACTION = {
    "approve": "approved",
    "approve-files": "approved",
    "discard": "discarded",
    "iterate": "changes-requested",
}

# A bundle that asks for no decision: a run that only printed output (docs/exec.md, "Nothing to decide";
# lifecycle/informational.nothing_to_decide decides it once, when the run is recorded). It is listed with
# OUTPUT_ONLY_LABEL, never counted as awaiting a decision, and every decision on it is refused.
OUTPUT_ONLY_STATUS = "informational"
OUTPUT_ONLY_LABEL = "output only"


def shown_status(status: str) -> str:
    """A bundle status as lists show it (``output only`` for an output-only bundle)."""
    return OUTPUT_ONLY_LABEL if status == OUTPUT_ONLY_STATUS else status


def output_only_reason(ref: str, status: str) -> str | None:
    """Why no decision can be recorded on a bundle of this status (None: it can be decided)."""
    if status != OUTPUT_ONLY_STATUS:
        return None
    return (
        f"{ref} is output only: the command changed no file and left the site as it was, so there is "
        "nothing to approve, discard or iterate on (its output stays in the bundle)"
    )


def refuse_output_only(ref: str, status: str) -> None:
    """Refuse a decision on a bundle recorded as output only, saying why (``nothing-to-decide``, exit 2)."""
    reason = output_only_reason(ref, status)
    if reason is not None:
        raise BadInputError(reason, code="nothing-to-decide", field="bundle")


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    status: str
    artifacts_dir: str
    sandbox_session_id: str | None
    metadata: dict[str, Any]
    started_at: str
    finished_at: str | None
    bundle_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class BundleRecord:
    """One bundle directory in the store. ``key`` is the record's own number (``@key`` on the CLI);
    ``bundle_id`` alone may be shared by several records (Mode A ids hash the file list)."""

    key: int
    bundle_id: str
    path: str
    content_digest: str
    run_id: str | None
    changed_files: int
    status: str
    created_at: str
    updated_at: str
    origin: str = "run"
    decisions: int = field(default=0)

    @property
    def ref(self) -> str:
        return f"@{self.key}"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Store:
    """A connection to the Codebox database. Safe to share between threads of one process."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self.path = path

    # -- opening and migrations -------------------------------------------------------------
    @classmethod
    def open(cls, path: Path | None = None) -> Store:
        """Open (creating and migrating as needed) the store at ``path`` or the default location."""
        db_path = Path(path) if path is not None else get_settings().db_path
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as error:
            raise BadInputError(
                f"cannot open the Codebox database: {error}", code="store-open-failed", field=str(db_path)
            ) from error
        conn.row_factory = sqlite3.Row
        store = cls(conn, db_path)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise BadInputError(
                    f"the Codebox database could not switch to WAL mode (got {mode})",
                    code="store-open-failed",
                    field=str(db_path),
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            store._migrate()
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as error:
            conn.close()
            raise BadInputError(
                f"{db_path} is not a usable Codebox database: {error}",
                code="store-corrupt",
                field=str(db_path),
            ) from error
        except BaseException:
            conn.close()
            raise
        return store

    def _migrate(self) -> None:
        """Apply missing migrations in one transaction. Foreign keys are off meanwhile (SQLite's way to
        rebuild a referenced table: a pragma that cannot change inside a transaction) and checked before
        the commit, so a migration that would leave a dangling reference is rolled back."""
        version = self.schema_version()
        if version == SCHEMA_VERSION:
            return
        self._conn.execute("PRAGMA foreign_keys = OFF")
        with self.write() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise BadInputError(
                    f"the database schema version {version} is newer than this Codebox understands "
                    f"({SCHEMA_VERSION}); upgrade Codebox",
                    code="store-too-new",
                    field=str(self.path),
                )
            for number in range(version, SCHEMA_VERSION):
                for statement in split_sql(MIGRATIONS[number]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number + 1}")
            problems = conn.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise BadInputError(
                    f"migrating {self.path} would leave {len(problems)} dangling reference(s); nothing was changed",
                    code="store-corrupt",
                    field=str(self.path),
                )

    def schema_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A serialised write transaction (``BEGIN IMMEDIATE``): commits on success, rolls back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

    # -- runs --------------------------------------------------------------------------------
    def record_run(
        self,
        run_id: str,
        *,
        status: str,
        artifacts_dir: Path | str,
        sandbox_session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        started_at: str | None = None,
    ) -> RunRecord:
        """Insert or replace a run (a sandbox session). ``metadata`` is opaque orchestrator data."""
        _require_text(run_id, "run_id")
        meta_json = _dump_json(metadata or {}, "metadata")
        with self.write() as conn:
            conn.execute(
                """INSERT INTO runs (run_id, status, artifacts_dir, sandbox_session_id, metadata, started_at)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT(run_id) DO UPDATE SET status=excluded.status,
                     artifacts_dir=excluded.artifacts_dir, sandbox_session_id=excluded.sandbox_session_id,
                     metadata=excluded.metadata, started_at=excluded.started_at""",
                (
                    run_id,
                    status,
                    str(artifacts_dir),
                    sandbox_session_id,
                    meta_json,
                    started_at or utc_now_iso(),
                ),
            )
        return self.get_run(run_id)

    def update_run(
        self,
        run_id: str,
        *,
        status: str | None = None,
        finished_at: str | None = None,
        bundle_id: str | None = None,
    ) -> RunRecord:
        with self.write() as conn:
            row = conn.execute("SELECT run_id FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise BadInputError(f"no run {run_id!r} in the store", code="run-not-found", field="run_id")
            for column, value in (("status", status), ("finished_at", finished_at), ("bundle_id", bundle_id)):
                if value is not None:
                    conn.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))
        return self.get_run(run_id)

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._query("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise BadInputError(f"no run {run_id!r} in the store", code="run-not-found", field="run_id")
        return _run(rows[0])

    def list_runs(self, status: str | None = None, *, sandbox_session_id: str | None = None) -> list[RunRecord]:
        """Runs, newest first; optionally only one status and/or one caller-owned sandbox session."""
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if sandbox_session_id is not None:
            where.append("sandbox_session_id = ?")
            params.append(sandbox_session_id)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._query(f"SELECT * FROM runs{clause} ORDER BY started_at DESC, run_id", tuple(params))
        return [_run(row) for row in rows]

    # -- bundles -----------------------------------------------------------------------------
    def record_bundle(
        self,
        bundle_id: str,
        *,
        path: Path | str,
        content_digest: str,
        run_id: str | None = None,
        changed_files: int = 0,
        status: str = "pending",
        origin: str = "run",
    ) -> BundleRecord:
        """Insert the bundle at ``path``, or refresh its run/count if that directory is known with
        this id (status kept). The record is keyed by directory plus id, so another run with the same
        Mode A id is a record of its own and never replaces this one.

        A known directory+id whose content digest differs is refused: decisions stay bound to what
        was reviewed.
        """
        _require_text(bundle_id, "bundle_id")
        _require_digest(content_digest, "content_digest")
        where = _absolute(path)
        now = utc_now_iso()
        with self.write() as conn:
            known = conn.execute(
                "SELECT key, content_digest FROM bundles WHERE path = ? AND bundle_id = ?", (where, bundle_id)
            ).fetchone()
            if known is not None and known["content_digest"] != content_digest:
                raise ConflictError(
                    f"bundle {bundle_id} at {where} was recorded with a different content digest; its content changed",
                    code="digest-mismatch",
                    field="content_digest",
                    details={"recorded": known["content_digest"], "now": content_digest},
                )
            if known is None:
                cur = conn.execute(
                    """INSERT INTO bundles (bundle_id, path, content_digest, run_id, changed_files, status, origin,
                                            created_at, updated_at)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (bundle_id, where, content_digest, run_id, int(changed_files), status, origin, now, now),
                )
                key = int(cur.lastrowid or 0)
            else:
                key = int(known["key"])
                conn.execute(
                    """UPDATE bundles SET run_id = COALESCE(?, run_id), changed_files = ?, updated_at = ?
                       WHERE key = ?""",
                    (run_id, int(changed_files), now, key),
                )
        return self.get_bundle_by_key(key)

    def get_bundle_by_key(self, key: int) -> BundleRecord:
        rows = self._query(_BUNDLE_SELECT + " WHERE b.key = ? GROUP BY b.key", (int(key),))
        if not rows:
            raise BadInputError(f"no bundle @{key} in the store", code="bundle-not-found", field="bundle")
        return _bundle(rows[0])

    def find_bundle_at(self, path: Path | str, bundle_id: str | None = None) -> BundleRecord | None:
        """The record of the bundle directory ``path`` (the newest, if it held several ids), or None."""
        sql = _BUNDLE_SELECT + " WHERE b.path = ?"
        params: tuple[Any, ...] = (_absolute(path),)
        if bundle_id is not None:
            sql += " AND b.bundle_id = ?"
            params += (bundle_id,)
        rows = self._query(sql + " GROUP BY b.key ORDER BY b.key DESC LIMIT 1", params)
        return _bundle(rows[0]) if rows else None

    def get_bundle(self, ref: str | int) -> BundleRecord:
        """One bundle record by ``@key`` (or an int key), run id, full bundle id, or a unique prefix of
        the bundle id (with or without ``artifact-bundle-sha256-``) or of the Mode B content digest.

        Several records can share a Mode A bundle id; such a reference is ambiguous and the error
        lists each record's ``@key`` and directory."""
        if isinstance(ref, int):
            return self.get_bundle_by_key(ref)
        key = ref.strip()
        if not key:
            raise BadInputError("a bundle id is required", code="bundle-not-found", field="bundle")
        if re.fullmatch(r"@\d+", key):
            return self.get_bundle_by_key(int(key[1:]))
        rows = self._query(
            _BUNDLE_SELECT + " WHERE b.bundle_id = ? OR b.run_id = ? GROUP BY b.key ORDER BY b.key", (key, key)
        )
        if not rows:
            like = _escape_like(key.lower())
            rows = self._query(
                _BUNDLE_SELECT + " WHERE b.bundle_id LIKE ? ESCAPE '\\' OR b.bundle_id LIKE ? ESCAPE '\\'"
                " OR b.content_digest LIKE ? ESCAPE '\\' GROUP BY b.key ORDER BY b.key",
                (like + "%", _escape_like(BUNDLE_ID_PREFIX) + like + "%", like + "%"),
            )
        if not rows:
            raise BadInputError(f"no bundle matches {key!r}", code="bundle-not-found", field="bundle")
        if len(rows) > 1:
            matches = [_bundle(r) for r in rows]
            listed = "; ".join(f"@{b.key} {b.path} (content {b.content_digest[:12]})" for b in matches[:10])
            raise BadInputError(
                f"{key!r} matches {len(rows)} bundles; name one by @key or directory: {listed}",
                code="bundle-ambiguous",
                field="bundle",
                details={
                    "matches": [
                        {"key": b.key, "bundleId": b.bundle_id, "path": b.path, "contentDigest": b.content_digest}
                        for b in matches[:10]
                    ]
                },
            )
        return _bundle(rows[0])

    def list_bundles(self, status: str | None = None) -> list[BundleRecord]:
        """Every bundle record, newest first (records sharing a bundle id are all listed)."""
        order = " GROUP BY b.key ORDER BY b.created_at DESC, b.key DESC"
        if status is None:
            rows = self._query(_BUNDLE_SELECT + order)
        else:
            rows = self._query(_BUNDLE_SELECT + " WHERE b.status = ?" + order, (status,))
        return [_bundle(row) for row in rows]

    def set_bundle_status(self, bundle: str | int, status: str) -> BundleRecord:
        record = self.get_bundle(bundle)
        with self.write() as conn:
            conn.execute(
                "UPDATE bundles SET status = ?, updated_at = ? WHERE key = ?", (status, utc_now_iso(), record.key)
            )
        return self.get_bundle_by_key(record.key)

    # -- decisions ---------------------------------------------------------------------------
    def record_decision(
        self,
        bundle: str | int,
        action: str,
        *,
        approver: str,
        reason: str = "",
        approved_files: list[str] | None = None,
        approved_relative_paths: list[str] | None = None,
        approved_hunks: dict[str, list[str]] | None = None,
        content_digest: str,
    ) -> Decision:
        """Record a decision on one bundle record (``@key``/int key, or any unique reference) and move
        it to its status, serialised against other writers.

        ``approve``/``approve-files`` need a non-empty ``approved_files`` (sandbox paths, as the
        reference's apply preflight expects; ``approved_relative_paths`` are the same files
        mount-relative); ``discard``/``iterate`` take none, and ``iterate`` needs a reason.
        ``approved_hunks`` (relativePath, or sandbox path where that is ambiguous → hunk hashes) approves those
        files only in part; each must be an approved file (:func:`store.decisions.decide` computes and
        checks the hashes).
        ``content_digest`` is the Mode B digest the reviewer saw; it must equal the record's digest.
        Use :func:`store.decisions.decide` to have the lists and digest computed from the bundle.
        """
        if action not in DECISION_ACTIONS:
            raise BadInputError(
                f"unknown decision {action!r}; expected one of {', '.join(DECISION_ACTIONS)}",
                code="decision-invalid",
                field="action",
            )
        _require_text(approver, "approver")
        _require_digest(content_digest, "content_digest")
        files = _unique(approved_files)
        relative = _unique(approved_relative_paths) if approved_relative_paths is not None else None
        if action in APPROVING_ACTIONS and not files:
            raise BadInputError(
                f"{action} needs at least one approved file", code="decision-invalid", field="approved_files"
            )
        if action not in APPROVING_ACTIONS and (files or relative):
            raise BadInputError(f"{action} takes no approved files", code="decision-invalid", field="approved_files")
        hunks = _hunk_selection(approved_hunks, [*files, *(relative or [])])
        if hunks and action not in APPROVING_ACTIONS:
            raise BadInputError(f"{action} takes no hunks", code="decision-invalid", field="approved_hunks")
        if action == "iterate" and not reason.strip():
            raise BadInputError("iterate (request changes) needs a reason", code="decision-invalid", field="reason")
        record = self.get_bundle(bundle)
        decided_at = utc_now_iso()
        with self.write() as conn:
            row = conn.execute(
                "SELECT key, bundle_id, content_digest, status FROM bundles WHERE key = ?", (record.key,)
            ).fetchone()
            if row is None:
                raise BadInputError(f"no bundle {bundle!r}", code="bundle-not-found", field="bundle")
            refuse_output_only(record.ref, row["status"])
            if row["content_digest"] != content_digest:
                raise ConflictError(
                    "the content digest you reviewed does not match the bundle's recorded digest",
                    code="digest-mismatch",
                    field="content_digest",
                    details={"recorded": row["content_digest"], "reviewed": content_digest},
                )
            sequence = int(
                conn.execute(
                    "SELECT COALESCE(MAX(sequence), 0) + 1 FROM decisions WHERE bundle_key = ?", (record.key,)
                ).fetchone()[0]
            )
            cur = conn.execute(
                """INSERT INTO decisions (bundle_key, bundle_id, sequence, action, approver, reason, approved_files,
                                          approved_relative_paths, approved_hunks, content_digest, decided_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    record.key,
                    row["bundle_id"],
                    sequence,
                    action,
                    approver.strip(),
                    reason.strip(),
                    json.dumps(files),
                    None if relative is None else json.dumps(relative),
                    json.dumps(hunks) if hunks else None,
                    content_digest,
                    decided_at,
                ),
            )
            conn.execute(
                "UPDATE bundles SET status = ?, updated_at = ? WHERE key = ?",
                (BUNDLE_STATUS_FOR_ACTION[action], decided_at, record.key),
            )
            decision_id = int(cur.lastrowid or 0)
        return self.get_decision(decision_id)

    def get_decision(self, decision_id: int | str) -> Decision:
        number = _decision_number(decision_id)
        rows = self._query(_DECISION_SELECT + " WHERE d.id = ?", (number,))
        if not rows:
            raise BadInputError(f"no decision {decision_id!r}", code="decision-not-found", field="decision")
        return self._decision(rows[0])

    def decision_bundle(self, decision_id: int) -> BundleRecord:
        """The bundle record a decision was made on (its directory, not just its id)."""
        rows = self._query("SELECT bundle_key FROM decisions WHERE id = ?", (int(decision_id),))
        if not rows:
            raise BadInputError(f"no decision {decision_id}", code="decision-not-found", field="decision")
        return self.get_bundle_by_key(int(rows[0]["bundle_key"]))

    def list_decisions(self, bundle: int | str | None = None) -> list[Decision]:
        """All decisions; or one record's (int key or ``@key``); or every record's with a bundle id."""
        if bundle is None:
            rows = self._query(_DECISION_SELECT + " ORDER BY d.id")
        elif isinstance(bundle, int) or re.fullmatch(r"@\d+", bundle.strip()):
            key = bundle if isinstance(bundle, int) else int(bundle.strip()[1:])
            rows = self._query(_DECISION_SELECT + " WHERE d.bundle_key = ? ORDER BY d.sequence", (key,))
        else:
            rows = self._query(_DECISION_SELECT + " WHERE d.bundle_id = ? ORDER BY d.id", (bundle,))
        return [self._decision(row) for row in rows]

    def latest_decision(self, bundle: int | str) -> Decision | None:
        decisions = self.list_decisions(bundle)
        return max(decisions, key=lambda d: d.id) if decisions else None

    def _decision(self, row: sqlite3.Row) -> Decision:
        applies = [
            AppliedRecord(
                adapter=a["adapter"],
                target=a["target"],
                applied_at=a["applied_at"],
                result=ApplyResult.model_validate(json.loads(a["result"])),
            )
            for a in self._query("SELECT * FROM applies WHERE decision_id = ? ORDER BY id", (row["id"],))
        ]
        relative = row["approved_relative_paths"]
        hunks = row["approved_hunks"]
        return Decision(
            id=row["id"],
            sequence=row["sequence"],
            action=row["action"],
            artifact_id=row["bundle_id"],
            approved_files=json.loads(row["approved_files"]),
            approved_relative_paths=None if relative is None else json.loads(relative),
            approved_hunks=None if hunks is None else json.loads(hunks),
            approver=row["approver"],
            reason=row["reason"],
            decided_at=row["decided_at"],
            content_digest=row["content_digest"],
            bundle_key=row["bundle_key"],
            bundle_directory=row["bundle_path"],
            applies=applies,
        )

    # -- apply results -----------------------------------------------------------------------
    def find_apply(self, decision_id: int, adapter: str, target: str) -> AppliedRecord | None:
        rows = self._query(
            "SELECT * FROM applies WHERE decision_id = ? AND adapter = ? AND target = ?",
            (decision_id, adapter, target),
        )
        if not rows:
            return None
        row = rows[0]
        return AppliedRecord(
            adapter=row["adapter"],
            target=row["target"],
            applied_at=row["applied_at"],
            result=ApplyResult.model_validate(json.loads(row["result"])),
        )

    def record_apply(self, decision_id: int, adapter: str, target: str, result: ApplyResult) -> AppliedRecord:
        """Store a successful apply with its decision and mark the bundle ``applied``."""
        applied_at = utc_now_iso()
        with self.write() as conn:
            row = conn.execute("SELECT bundle_key FROM decisions WHERE id = ?", (decision_id,)).fetchone()
            if row is None:
                raise BadInputError(f"no decision {decision_id}", code="decision-not-found", field="decision")
            try:
                conn.execute(
                    """INSERT INTO applies (decision_id, adapter, target, status, result, applied_at)
                       VALUES (?, ?, ?, ?, ?, ?)""",
                    (decision_id, adapter, target, result.status, json.dumps(result.to_wire()), applied_at),
                )
            except sqlite3.IntegrityError as error:
                existing = conn.execute(
                    "SELECT status FROM applies WHERE decision_id = ? AND adapter = ? AND target = ?",
                    (decision_id, adapter, target),
                ).fetchone()
                if existing is not None and existing["status"] == "already-applied" != result.status:
                    # a concurrent applier saw our writes first and recorded a no-op; the real write wins
                    conn.execute(
                        "UPDATE applies SET status = ?, result = ?, applied_at = ?"
                        " WHERE decision_id = ? AND adapter = ? AND target = ?",
                        (result.status, json.dumps(result.to_wire()), applied_at, decision_id, adapter, target),
                    )
                    return AppliedRecord(adapter=adapter, target=target, applied_at=applied_at, result=result)
                raise ConflictError(
                    f"decision {decision_id} was already applied with {adapter} to {target}",
                    code="already-applied",
                    field="decision",
                ) from error
            conn.execute(
                "UPDATE bundles SET status = 'applied', updated_at = ? WHERE key = ?",
                (applied_at, row["bundle_key"]),
            )
        return AppliedRecord(adapter=adapter, target=target, applied_at=applied_at, result=result)


_BUNDLE_SELECT = "SELECT b.*, COUNT(d.id) AS decisions FROM bundles b LEFT JOIN decisions d ON d.bundle_key = b.key"
_DECISION_SELECT = "SELECT d.*, b.path AS bundle_path FROM decisions d JOIN bundles b ON b.key = d.bundle_key"


def _hunk_selection(hunks: dict[str, list[str]] | None, approved: list[str]) -> dict[str, list[str]]:
    """Check a decision's hunk selection: approved files only, each a non-empty list of distinct sha256s."""
    out: dict[str, list[str]] = {}
    for rel, hashes in (hunks or {}).items():
        if rel not in approved:
            raise BadInputError(
                f"hunks selected in {rel}, which is not an approved file",
                code="decision-invalid",
                field="approved_hunks",
            )
        if not hashes or any(not isinstance(h, str) or not re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes):
            raise BadInputError(
                f"approved_hunks[{rel!r}] must be a non-empty list of sha256 hex digests",
                code="decision-invalid",
                field="approved_hunks",
            )
        out[rel] = list(dict.fromkeys(hashes))
    return out


def _absolute(path: Path | str) -> str:
    """The directory as the store keys it: absolute, symlinks resolved (one bundle, one spelling)."""
    return str(Path(path).expanduser().resolve())


def _unique(names: list[str] | None) -> list[str]:
    return list(dict.fromkeys(n.strip() for n in (names or []) if isinstance(n, str) and n.strip()))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _require_text(value: str, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BadInputError(f"{name} must be a non-empty string", code="store-invalid", field=name)


def _require_digest(value: str, name: str) -> None:
    if not isinstance(value, str) or not _DIGEST_RE.match(value):
        raise BadInputError(f"{name} must be 64 lowercase hex characters (a sha256)", code="store-invalid", field=name)


def _dump_json(value: Any, name: str) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise BadInputError(f"{name} must be JSON-serialisable: {error}", code="store-invalid", field=name) from error


def record_number(value: int | str, *, prefixes: tuple[str, ...], what: str, example: int) -> int:
    """The number of a record named ``12``, or with one of its ``prefixes`` (``decision-12``, ``d12``, ``#3``);
    anything else is bad input naming ``what`` (error code ``<what>-not-found``, field ``what``)."""
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    for prefix in prefixes:
        text = text.removeprefix(prefix)
    if not text.isdigit():
        raise BadInputError(
            f"{value!r} is not a {what} id (expected a number such as {example})", code=f"{what}-not-found", field=what
        )
    return int(text)


def _decision_number(decision_id: int | str) -> int:
    return record_number(decision_id, prefixes=("decision-", "d"), what="decision", example=12)


def _run(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        run_id=row["run_id"],
        status=row["status"],
        artifacts_dir=row["artifacts_dir"],
        sandbox_session_id=row["sandbox_session_id"],
        metadata=json.loads(row["metadata"]),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        bundle_id=row["bundle_id"],
    )


def _bundle(row: sqlite3.Row) -> BundleRecord:
    return BundleRecord(
        key=int(row["key"]),
        bundle_id=row["bundle_id"],
        path=row["path"],
        content_digest=row["content_digest"],
        run_id=row["run_id"],
        changed_files=int(row["changed_files"]),
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        origin=row["origin"],
        decisions=int(row["decisions"]),
    )


__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "BundleRecord",
    "CodeboxError",
    "RunRecord",
    "Store",
]
