"""The store's schema, as forward migrations: migration *n* takes a database from ``PRAGMA user_version``
*n* to *n + 1* (``Store._migrate`` applies the missing ones in one transaction). Released migrations are
never edited; a change to the schema is a new entry at the end."""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "split_sql"]

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, bundles, decisions, applies
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        artifacts_dir TEXT NOT NULL,
        sandbox_session_id TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        started_at TEXT NOT NULL,
        finished_at TEXT,
        bundle_id TEXT
    );
    CREATE INDEX runs_status ON runs(status);
    CREATE INDEX runs_session ON runs(sandbox_session_id);
    CREATE TABLE bundles (
        bundle_id TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        content_digest TEXT NOT NULL,
        run_id TEXT,
        changed_files INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX bundles_status ON bundles(status);
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bundle_id TEXT NOT NULL REFERENCES bundles(bundle_id),
        sequence INTEGER NOT NULL,
        action TEXT NOT NULL,
        approver TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        approved_files TEXT NOT NULL DEFAULT '[]',
        content_digest TEXT NOT NULL,
        decided_at TEXT NOT NULL,
        UNIQUE (bundle_id, sequence)
    );
    CREATE TABLE applies (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        decision_id INTEGER NOT NULL REFERENCES decisions(id),
        adapter TEXT NOT NULL,
        target TEXT NOT NULL,
        status TEXT NOT NULL,
        result TEXT NOT NULL,
        applied_at TEXT NOT NULL,
        UNIQUE (decision_id, adapter, target)
    );
    """,
    # 2: bundles keyed by (directory, bundle id), decisions bound to that record; decisions keep the
    # approved sandbox paths (what the reference's apply preflight expects) and the mount-relative ones.
    # Runs with foreign keys off (see Store._migrate); ids and sequences are kept.
    """
    CREATE TABLE bundles_v2 (
        key INTEGER PRIMARY KEY AUTOINCREMENT,
        bundle_id TEXT NOT NULL,
        path TEXT NOT NULL,
        content_digest TEXT NOT NULL,
        run_id TEXT,
        changed_files INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        origin TEXT NOT NULL DEFAULT 'run',
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (path, bundle_id)
    );
    INSERT INTO bundles_v2 (bundle_id, path, content_digest, run_id, changed_files, status, created_at, updated_at)
        SELECT bundle_id, path, content_digest, run_id, changed_files, status, created_at, updated_at
        FROM bundles ORDER BY created_at, bundle_id;
    CREATE TABLE decisions_v2 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bundle_key INTEGER NOT NULL REFERENCES bundles(key),
        bundle_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        action TEXT NOT NULL,
        approver TEXT NOT NULL,
        reason TEXT NOT NULL DEFAULT '',
        approved_files TEXT NOT NULL DEFAULT '[]',
        approved_relative_paths TEXT,
        content_digest TEXT NOT NULL,
        decided_at TEXT NOT NULL,
        UNIQUE (bundle_key, sequence)
    );
    INSERT INTO decisions_v2 (id, bundle_key, bundle_id, sequence, action, approver, reason, approved_files,
                              content_digest, decided_at)
        SELECT d.id, b.key, d.bundle_id, d.sequence, d.action, d.approver, d.reason, d.approved_files,
               d.content_digest, d.decided_at
        FROM decisions d JOIN bundles_v2 b ON b.bundle_id = d.bundle_id ORDER BY d.id;
    DROP TABLE decisions;
    DROP TABLE bundles;
    ALTER TABLE bundles_v2 RENAME TO bundles;
    ALTER TABLE decisions_v2 RENAME TO decisions;
    CREATE INDEX bundles_status ON bundles(status);
    CREATE INDEX bundles_bundle_id ON bundles(bundle_id);
    CREATE INDEX bundles_content ON bundles(content_digest);
    CREATE INDEX decisions_bundle ON decisions(bundle_key);
    """,
    # 3 (review comments, store/comments.py): typed line/range/file comments on one bundle record and
    # the content digest they were written against; ``decision_id`` is set when an iterate decision
    # ("request changes") records them. Self-contained: touches no other table.
    """
    CREATE TABLE comments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bundle_key INTEGER NOT NULL REFERENCES bundles(key),
        content_digest TEXT NOT NULL,
        path TEXT NOT NULL,
        side TEXT NOT NULL DEFAULT 'new',
        line_start INTEGER,
        line_end INTEGER,
        anchor TEXT NOT NULL DEFAULT '[]',
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        author TEXT NOT NULL,
        decision_id INTEGER REFERENCES decisions(id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX comments_bundle ON comments(bundle_key);
    CREATE INDEX comments_digest ON comments(content_digest);
    """,
    # 4 (review revisions, store/revisions.py): a bundle record explicitly linked as the next revision of
    # another (``codebox review link NEW --revises OLD``). Self-contained: touches no other table.
    """
    CREATE TABLE revisions (
        bundle_key INTEGER PRIMARY KEY REFERENCES bundles(key),
        revises_key INTEGER NOT NULL REFERENCES bundles(key),
        how TEXT NOT NULL DEFAULT 'explicit',
        linked_at TEXT NOT NULL,
        CHECK (bundle_key <> revises_key)
    );
    CREATE INDEX revisions_revises ON revisions(revises_key);
    """,
    # 5 (hunk selection, docs/contracts.md "Hunk selection"): a decision's partially approved files,
    # relativePath → approved hunk hashes (JSON); NULL = every approved file whole.
    """
    ALTER TABLE decisions ADD COLUMN approved_hunks TEXT;
    """,
    # 6 (batches and fan-outs, store/batches.py): one row per batch, one per item with its attempts, state
    # and the bundle record it produced; ``promoted_key`` is the candidate promoted for review. Self-contained.
    """
    CREATE TABLE batches (
        batch_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL DEFAULT 'batch',
        source TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL,
        finished_at TEXT,
        promoted_key INTEGER REFERENCES bundles(key)
    );
    CREATE TABLE batch_items (
        batch_id TEXT NOT NULL REFERENCES batches(batch_id),
        item_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        kind TEXT NOT NULL,
        label TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        verdict TEXT NOT NULL DEFAULT '',
        run_id TEXT,
        bundle_key INTEGER REFERENCES bundles(key),
        error TEXT,
        phase TEXT NOT NULL DEFAULT '',
        updated_at TEXT NOT NULL,
        PRIMARY KEY (batch_id, item_id)
    );
    CREATE INDEX batch_items_bundle ON batch_items(bundle_key);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def split_sql(script: str) -> list[str]:
    """The statements of one migration (none of them contains a literal ``;``)."""
    return [part.strip() for part in script.split(";") if part.strip()]
