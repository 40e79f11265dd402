"""Snapshot fixtures: a real bundle captured from a small plugin change, registered in a real store
under a private CODEBOX_HOME, with a fixed clock so the pictures are deterministic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codebox_tui.settings import reload_settings
from tests.factories.screenshots import build_demo_bundle, register_demo


@pytest.fixture
def demo_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("CODEBOX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setenv("CODEBOX_IMAGES", "halfcell")  # inline images as coloured half-blocks: no terminal query
    reload_settings()
    bundle = build_demo_bundle(tmp_path)
    register_demo(bundle)
    yield bundle
    monkeypatch.undo()
    reload_settings()
