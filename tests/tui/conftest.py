"""TUI fixtures: real bundles captured from real directories, registered in the real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.settings import get_settings, reload_settings
from store.db import Store
from tests.factories.bundles import make_bundle, typical_change


@pytest.fixture
def bundle_dir(tmp_path: Path) -> Path:
    summary, _ = make_bundle(tmp_path, typical_change)
    return summary.path


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test gets its own CODEBOX_HOME, so its store starts empty."""
    home = tmp_path / "home"
    monkeypatch.setenv("CODEBOX_HOME", str(home))
    reload_settings()
    yield home
    monkeypatch.undo()
    reload_settings()


@pytest.fixture
def store(private_home: Path) -> Iterator[Store]:
    db = Store.open(get_settings().db_path)
    yield db
    db.close()
