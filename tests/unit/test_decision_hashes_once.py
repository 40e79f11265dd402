"""A decision verifies its bundle once: every file of a real bundle on disk is hashed once per decision, through
the TUI's path (screens/data.decide) and the CLI's (store.decisions.decide), against a real SQLite store.

The count wraps the real digest function the verifier calls (codebox_tui/bundle/digests.file_sha256, looked up
by name in the verifier's modules): the bytes are still read and hashed; only the calls are counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.bundle import digests
from codebox_tui.bundle.verify import common, manifest
from codebox_tui.screens import data
from store.db import Store
from store.decisions import decide
from tests.factories.bundles import make_bundle, typical_change


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts, per file name, the files the verifier hashes from now on."""
    counts: Counter[str] = Counter()
    real: Callable[..., Any] = digests.file_sha256

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        counts[Path(path).name] += 1
        return real(path, *args, **kwargs)

    for module in (common, manifest):
        if hasattr(module, "file_sha256"):
            monkeypatch.setattr(module, "file_sha256", counting)
    yield counts


def _store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "store" / "codebox.db")


def test_a_tui_decision_hashes_each_file_once(tmp_path: Path, hashed: Counter[str]) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    store = _store(tmp_path)
    try:
        decision = data.decide(store, summary.path, "approve")
    finally:
        store.close()
    assert decision.action == "approve"
    assert hashed, "the decision verified nothing"
    assert max(hashed.values()) == 1, f"files hashed more than once: {dict(hashed)}"
    assert "patch.diff" in hashed and "changed-files.json" in hashed


def test_a_cli_decision_on_a_folder_hashes_each_file_once(tmp_path: Path, hashed: Counter[str]) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    store = _store(tmp_path)
    try:
        decision = decide(store, str(summary.path), "discard", approver="maintainer")
    finally:
        store.close()
    assert decision.action == "discard"
    assert hashed and max(hashed.values()) == 1, f"files hashed more than once: {dict(hashed)}"
