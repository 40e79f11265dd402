"""The Codebox store: SQLite records of runs, bundles and review decisions, and apply-back.

``Store`` is importable from here; apply-back lives in :mod:`store.apply` (``apply_decision``)
and decisions computed from a bundle in :mod:`store.decisions` (``decide``).
"""

from store.db import SCHEMA_VERSION, BundleRecord, RunRecord, Store

__all__ = ["SCHEMA_VERSION", "BundleRecord", "RunRecord", "Store"]
