"""Unit-test fixtures shared by several modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories.replay_index import capture_small_bundle


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real capture (a plugin folder with an edited, an added and a deleted file), shared by a module."""
    return capture_small_bundle(tmp_path_factory.mktemp("capture"))
