"""A command's exit never waits for the prepared site copies of the next run (#27): they are made by a
detached pool worker holding the pool's lock (runtime/pool_worker.py). The test holds that lock itself, so
the worker cannot copy anything until the test lets it: the command must still exit, leaving the pool short,
and the worker then tops it up on its own. Conditions only, never the clock. The real CLI and Playground."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.runtime.golden import POOL_SIZE, has_prepared_site, pool_lock_path
from codebox_tui.runtime.wordpress_builds import resolve_build
from codebox_tui.versions import DEFAULT_PHP_VERSION, DEFAULT_WP_VERSION
from tests.factories.waiting import wait_until

pytestmark = pytest.mark.playground

REPO = Path(__file__).resolve().parents[2]


def test_the_command_exits_while_the_pool_worker_still_waits_to_copy(playground_session: Any, tmp_path: Path) -> None:
    home = playground_session.private_home(tmp_path)
    build = resolve_build(DEFAULT_WP_VERSION)
    lock = pool_lock_path(build, DEFAULT_PHP_VERSION, home / "golden")
    pool = lock.parent
    lock.parent.mkdir(parents=True, exist_ok=True)

    def ready() -> int:
        return len(list(pool.glob("ready-*")))

    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # no copy can be made until this test lets go
        env = {**os.environ, "PYTHONPATH": str(REPO), "CODEBOX_HOME": str(home), "CODEBOX_SPARE_SANDBOXES": "off"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "codebox_tui",
                "run",
                "--command",
                "wordpress.run-php",
                "--arg",
                "code=echo 'ran';",
                "--artifacts",
                str(tmp_path / "artifacts"),
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "ran" in done.stdout
        assert ready() < POOL_SIZE  # the command exited before any copy for the next run was made
    finally:
        os.close(fd)  # lets the detached worker go
    assert wait_until(lambda: ready() == POOL_SIZE, timeout=300), "the pool worker did not top the pool up"
    assert has_prepared_site(build, DEFAULT_PHP_VERSION, home / "golden")
