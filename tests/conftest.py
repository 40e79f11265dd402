"""Shared fixtures. Tests run against a private CODEBOX_HOME so they never touch the user's store,
and every sandbox is a real WordPress Playground booted by the real Node sidecar."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
_HOME = Path(tempfile.mkdtemp(prefix="codebox-test-home-"))
os.environ["CODEBOX_HOME"] = str(_HOME)

from codebox_tui.settings import reload_settings  # noqa: E402

reload_settings()

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_PLUGIN = REPO / "examples" / "simple-plugin"


@pytest.fixture(scope="session")
def codebox_home() -> Iterator[Path]:
    yield _HOME


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    try:
        from codebox_tui.runtime.playground import shutdown_sidecars

        shutdown_sidecars()
    finally:
        shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture
def plugin_copy(tmp_path: Path) -> Path:
    """A private copy of the example plugin (safe to mount read-write)."""
    dest = tmp_path / "simple-plugin"
    shutil.copytree(EXAMPLE_PLUGIN, dest)
    return dest
