"""Batches and fan-outs in the store: the batch, its items (state, attempts, verdict) and the bundle record
each item produced, so the inbox can group them and one candidate can be promoted for review
(docs/scale-out.md, "In the inbox"). Written by the batch runner (``codebox_tui/batch/runner.py``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.errors import BadInputError
from store.db import Store

BATCH_KINDS = ("batch", "fan-out")


@dataclass(frozen=True)
class BatchItemRecord:
    batch_id: str
    item_id: str
    position: int
    kind: str
    label: str
    state: str
    attempts: int
    verdict: str
    run_id: str | None
    bundle_key: int | None
    error: str | None
    phase: str = ""  # what the item is doing now (booting, step 2: …, capturing), as the runner last heard

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item_id,
            "position": self.position,
            "kind": self.kind,
            "label": self.label,
            "state": self.state,
            "attempts": self.attempts,
            "verdict": self.verdict,
            "runId": self.run_id,
            "bundleKey": self.bundle_key,
            "error": self.error,
        }


@dataclass(frozen=True)
class BatchRecord:
    batch_id: str
    kind: str
    source: str
    status: str
    metadata: dict[str, Any]
    created_at: str
    finished_at: str | None
    promoted_key: int | None


def create_batch(
    store: Store,
    batch_id: str,
    *,
    kind: str = "batch",
    source: str = "",
    items: list[tuple[str, str, str]],
    metadata: dict[str, Any] | None = None,
) -> None:
    """Record a new batch and its items ``(item id, kind, label)``, all queued, in order."""
    if kind not in BATCH_KINDS:
        raise BadInputError(f"unknown batch kind {kind!r}", code="invalid-batch", field="kind")
    now = utc_now_iso()
    with store.write() as conn:
        conn.execute(
            "INSERT INTO batches (batch_id, kind, source, status, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (batch_id, kind, source, "running", json.dumps(metadata or {}, sort_keys=True), now),
        )
        conn.executemany(
            "INSERT INTO batch_items (batch_id, item_id, position, kind, label, state, updated_at) "
            "VALUES (?, ?, ?, ?, ?, 'queued', ?)",
            [(batch_id, item_id, i, item_kind, label, now) for i, (item_id, item_kind, label) in enumerate(items)],
        )


def update_item(
    store: Store,
    batch_id: str,
    item_id: str,
    *,
    state: str,
    attempts: int,
    verdict: str = "",
    run_id: str | None = None,
    bundle_key: int | None = None,
    error: str | None = None,
    phase: str = "",
) -> None:
    with store.write() as conn:
        conn.execute(
            "UPDATE batch_items SET state = ?, attempts = ?, verdict = ?, run_id = ?, bundle_key = ?, "
            "error = ?, phase = ?, updated_at = ? WHERE batch_id = ? AND item_id = ?",
            (state, attempts, verdict, run_id, bundle_key, error, phase[:200], utc_now_iso(), batch_id, item_id),
        )


def finish_batch(store: Store, batch_id: str, status: str) -> None:
    with store.write() as conn:
        conn.execute(
            "UPDATE batches SET status = ?, finished_at = ? WHERE batch_id = ?", (status, utc_now_iso(), batch_id)
        )


def _batch(row: Any) -> BatchRecord:
    return BatchRecord(
        str(row["batch_id"]),
        str(row["kind"]),
        str(row["source"]),
        str(row["status"]),
        json.loads(row["metadata"] or "{}"),
        str(row["created_at"]),
        row["finished_at"],
        row["promoted_key"],
    )


def _item(row: Any) -> BatchItemRecord:
    return BatchItemRecord(
        str(row["batch_id"]),
        str(row["item_id"]),
        int(row["position"]),
        str(row["kind"]),
        str(row["label"]),
        str(row["state"]),
        int(row["attempts"]),
        str(row["verdict"]),
        row["run_id"],
        row["bundle_key"],
        row["error"],
        str(row["phase"] or ""),
    )


def get_batch(store: Store, batch_id: str) -> BatchRecord:
    rows = store._query("SELECT * FROM batches WHERE batch_id = ?", (batch_id,))
    if not rows:
        raise BadInputError(f"no batch {batch_id!r} in the store", code="unknown-batch", field="BATCH")
    return _batch(rows[0])


def list_batches(store: Store) -> list[BatchRecord]:
    return [_batch(r) for r in store._query("SELECT * FROM batches ORDER BY created_at DESC, batch_id")]


def batch_items(store: Store, batch_id: str) -> list[BatchItemRecord]:
    return [
        _item(r) for r in store._query("SELECT * FROM batch_items WHERE batch_id = ? ORDER BY position", (batch_id,))
    ]


def batch_of_bundles(store: Store) -> dict[int, tuple[str, str]]:
    """Bundle record key → (batch id, item id), for every bundle a batch produced."""
    return {
        int(r["bundle_key"]): (str(r["batch_id"]), str(r["item_id"]))
        for r in store._query("SELECT batch_id, item_id, bundle_key FROM batch_items WHERE bundle_key IS NOT NULL")
    }


def promote(store: Store, batch_id: str, bundle_key: int) -> None:
    """Mark one candidate of a batch as the one to review (it must be a bundle that batch produced)."""
    keys = {i.bundle_key for i in batch_items(store, batch_id)}
    if bundle_key not in keys:
        raise BadInputError(
            f"bundle @{bundle_key} is not a candidate of batch {batch_id}", code="invalid-promotion", field="BUNDLE"
        )
    with store.write() as conn:
        conn.execute("UPDATE batches SET promoted_key = ? WHERE batch_id = ?", (bundle_key, batch_id))


def promoted_keys(store: Store) -> set[int]:
    """The bundle records promoted for review, one per batch at most."""
    rows = store._query("SELECT promoted_key FROM batches WHERE promoted_key IS NOT NULL")
    return {int(r["promoted_key"]) for r in rows}
