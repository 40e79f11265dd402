"""Prepared site copies made by a detached process (docs/performance.md, "Prepared site copies").

After a boot, the pool of prepared sandbox directories is topped up for the next run. That copy used to
run in a thread the command's exit waited for (seconds on a first run); it now runs in a process of its
own, started in a new session, holding the pool's lock (``golden.fill_pool``) while it copies, so the
command exits at once and the next boot that finds no copy ready waits on the lock, not on this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from codebox_tui.runtime.golden import fill_pool
from codebox_tui.runtime.wordpress_builds import WordPressBuild

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def start_pool_worker(build: WordPressBuild, php: str, golden_root: Path, golden_site: Path) -> int | None:
    """Start the detached filler and return its pid (None: it could not start; the next boot copies)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
    }
    args = [
        build.key,
        build.version,
        str(build.zip_path),
        str(build.assets_dir),
        php,
        str(golden_root),
        str(golden_site),
    ]
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "codebox_tui.runtime.pool_worker", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            cwd="/",
            env=env,
        )
    except OSError:
        return None
    # collected by a daemon thread while this process lives (no zombie); after it exits, by init
    threading.Thread(target=process.wait, name="codebox-pool-worker-wait", daemon=True).start()
    return process.pid


def main(argv: Sequence[str] | None = None) -> int:
    key, version, zip_path, assets_dir, php, golden_root, golden_site = sys.argv[1:] if argv is None else argv
    build = WordPressBuild(key=key, version=version, zip_path=Path(zip_path), assets_dir=Path(assets_dir))
    try:
        fill_pool(build, php, Path(golden_root), Path(golden_site))
    except OSError:
        return 1  # the pool is only an optimisation: a boot that finds no copy makes its own
    return 0


if __name__ == "__main__":
    sys.exit(main())
