"""What the screens read and write, in one Textual-free place: the store and bundles on disk.
The UI writes nothing itself: decisions go through ``store``."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.reader import LoadedBundle, load_bundle
from codebox_tui.bundle.results import BundleChecks
from codebox_tui.bundle.results import bundle_checks as read_checks
from codebox_tui.contracts.bundle import TestResults
from store.apply import apply_decision
from store.db import BundleRecord, Store
from store.decisions import decide_on, register_bundle
from store.inbox import import_bundles as store_import


@dataclass
class BundleRow:
    key: int
    bundle_id: str
    path: str
    status: str
    changed: int
    created_at: str
    decision: str
    run_id: str | None


def open_store() -> Store:
    return Store.open()


def bundle_rows(store: Store, status: str | None = None) -> list[BundleRow]:
    rows = []
    for record in store.list_bundles(status):
        latest = store.latest_decision(record.key)
        rows.append(BundleRow(record.key, record.bundle_id, record.path, record.status, record.changed_files,
                              record.created_at, latest.action if latest else "", record.run_id))
    return rows


def register(store: Store, bundle_dir: Path, run_id: str | None = None) -> BundleRecord:
    return register_bundle(store, Path(bundle_dir), run_id=run_id)


def import_bundles(store: Store, folder: Path) -> tuple[list[BundleRecord], list[dict[str, Any]]]:
    """Verify and record the bundle at ``folder`` (or the bundles under it): (imported, rejected)."""
    report = store_import(store, Path(folder).expanduser())
    return report.imported, report.rejected


def load(bundle_dir: Path) -> LoadedBundle:
    return load_bundle(bundle_dir)


def decide(store: Store, bundle_dir: Path, action: str, *, files: list[str] | None = None, reason: str = "") -> Any:
    """Record a decision (registering the bundle first if the store has not seen it)."""
    record = register(store, bundle_dir)  # this directory's own record: a Mode A id may be shared
    return decide_on(store, record, action, approver=current_user(), reason=reason, files=files)


def apply(store: Store, decision_id: int, adapter: str, target: str) -> Any:
    return apply_decision(store, decision_id, adapter, target)


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "reviewer"


EVALUATION_FILE = layout.EVALUATE_PATCH


def patch_evaluation(bundle_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The ``codebox evaluate-patch`` result carried by a bundle: ``(evaluation, problem)``.

    ``(None, None)`` when the bundle is not from evaluate-patch; a problem message when the file is
    there but unreadable or not the expected shape."""
    path = Path(bundle_dir) / EVALUATION_FILE
    if not path.is_file():
        return None, None
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return None, f"{EVALUATION_FILE} is not readable JSON ({error})"
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, dict) or not isinstance(tests.get("verdict"), str):
        return None, f"{EVALUATION_FILE} has no tests.verdict (expected the patch-evaluation/v1 shape)"
    return doc, None


def bundle_checks(bundle_dir: Path, test_results: TestResults | dict[str, Any]) -> BundleChecks:
    """Tests (per side), probes and a recipe run's verdict: ``codebox_tui/bundle/results.py``."""
    return read_checks(bundle_dir, test_results)


def decision_warning(bundle_dir: Path) -> str | None:
    """A warning to show before a new decision on a bundle the store has as discarded or applied."""
    from store.inbox import decision_warning as warning_for

    store = open_store()
    try:
        record = store.find_bundle_at(Path(bundle_dir))
    finally:
        store.close()
    return warning_for(record.status) if record is not None else None
