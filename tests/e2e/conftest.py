"""Fixtures for the end-to-end tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.factories.tmux import Tmux


@pytest.fixture
def tmux(request: pytest.FixtureRequest) -> Iterator[Tmux]:
    """A tmux server of this test's own (its own socket), killed afterwards."""
    server = Tmux(f"codebox-e2e-{os.getpid()}-{abs(hash(request.node.nodeid)) % 10**8}")
    yield server
    try:
        server.run("kill-server")  # only this test's server (its own socket)
    except subprocess.CalledProcessError:
        pass
