"""Waiting on a real condition with a deadline, instead of sleeping a fixed time and hoping."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def wait_until(condition: Callable[[], bool], *, timeout: float = 30.0, interval: float = 0.05) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; returns its last value (the caller
    asserts on the real state afterwards, so a timeout fails with the caller's own message)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


def wait_for_fs_clock_past(root: Path, probe_dir: Path) -> None:
    """Return once the file system's timestamp clock has moved past the newest ctime under ``root``.

    File timestamps come from a coarse clock (one tick is milliseconds), so a file rewritten within the
    same tick as its last write can keep its ctime. Tests of the stat-signature skip need the next write to
    get a later ctime; this waits for exactly that, measured on a probe file in ``probe_dir``."""
    newest = max(p.lstat().st_ctime_ns for p in [root, *root.rglob("*")])
    probe = probe_dir / ".fs-clock-probe"

    def moved() -> bool:
        probe.write_bytes(b"")
        return probe.lstat().st_ctime_ns > newest

    assert wait_until(moved, timeout=5.0, interval=0.001), "the file system clock did not advance in 5 s"
    probe.unlink()


def process_finished(pid: int) -> bool:
    """Whether process ``pid`` has ended: gone, or a zombie nobody has collected yet (a detached process whose
    parent exited is collected by whichever ancestor adopts it, if any)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def process_group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a process (a sandbox's sidecar leads its own group)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_reaper(pid: int | None, *, timeout: float = 120.0) -> bool:
    """Wait until the detached reaper ``pid`` (runtime/reaper.py; ``RunSession.reaper_pid``) has finished
    removing a run's folders. None (nothing was handed to a reaper) is finished already."""
    return pid is None or wait_until(lambda: process_finished(pid), timeout=timeout)
