"""Removing a finished run's folders off the critical path (docs/performance.md, "Disposal").

A stopped sandbox leaves its private site copy (~3,600 files), its opcache copy, staged read-only mounts,
the run's baseline packs and its private copies. Deleting them took 1–9 s on a busy machine, the bulk of
what used to be "disposing". :func:`reap_in_background` hands them to one detached process (a new
session, so a Ctrl-C in the terminal does not reach it, and nobody waits for it): ``codebox run`` prints
its result and exits while the reaper deletes. The reaper first records itself as the owner of each
folder (:data:`OWNER_FILE`), so another Codebox process sweeping abandoned folders leaves them to it; if
the reaper is killed, the next sweep removes what it left, as for any abandoned folder (a sweep hands what it
finds to a reaper too: runtime/playground.py). Deleting never
follows a link (``runtime/tree_removal.py``): the trees hold whatever PHP wrote.

This module imports only the standard library and ``tree_removal``, so the reaper starts in a few tens
of milliseconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from codebox_tui.runtime.tree_removal import remove_tree_nofollow

# A folder Codebox made for a sandbox or a run records the pid of the process that removes it (its
# maker, then the reaper); a folder whose owner is gone is swept by the next boot (runtime/playground.py).
OWNER_FILE = ".codebox-owner-pid"
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent
_DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def claim(folder: Path, pid: int) -> None:
    """Record ``pid`` as the owner of ``folder`` (a real folder, never through a link; best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY | _DIR_FLAGS)
    except OSError:
        return
    try:
        record = os.open(
            OWNER_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd
        )
        try:
            os.write(record, str(pid).encode("ascii"))
        finally:
            os.close(record)
    except OSError:
        pass
    finally:
        os.close(fd)


def reap(paths: Sequence[Path]) -> None:
    """Remove ``paths`` here and now, each claimed first (what the detached reaper runs)."""
    for path in paths:
        claim(path, os.getpid())
    for path in paths:
        remove_tree_nofollow(path)


def reap_in_background(paths: Sequence[Path]) -> int | None:
    """Start a detached process that removes ``paths`` and return its pid, without waiting for it (None
    when there was nothing to remove). If no process can be started, the folders are removed here."""
    existing = [Path(p) for p in paths if os.path.lexists(p)]
    if not existing:
        return None
    try:
        process = start_detached("codebox_tui.runtime.reaper", [str(p) for p in existing])
    except OSError:
        reap(existing)
        return None
    return process.pid


def start_detached(module: str, args: list[str], stdin: int = subprocess.DEVNULL) -> subprocess.Popen[bytes]:
    """Start ``python -m module args`` detached from this process: a new session (a Ctrl-C in the terminal does
    not reach it), a minimal environment (nothing of the caller's, which may hold policy secrets), ``/`` as its
    folder. It is collected by a daemon thread while this process lives (no zombie); after it exits, by init."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")])),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        cwd="/",
        env=env,
    )
    threading.Thread(target=process.wait, name=f"{module}-wait", daemon=True).start()
    return process


def main(argv: Sequence[str] | None = None) -> int:
    reap([Path(arg) for arg in (sys.argv[1:] if argv is None else argv)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
