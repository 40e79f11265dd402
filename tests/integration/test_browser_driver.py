"""The Playwright driver started ahead of a browser command (codebox_tui/browser/driver.py): taken by exactly
one :func:`drive`, which runs its work on the driver's own thread (Playwright's synchronous API is bound to the
thread that started it), and stopped — its Node process gone — when nobody takes it. Real Playwright."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from codebox_tui.browser import driver
from tests.factories.waiting import wait_until


def _child_drivers() -> set[int]:
    """Pids of this process's children that run Playwright's driver (a Node process)."""
    me = os.getpid()
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if parent == me and b"playwright" in command:
            found.add(int(stat.parent.name))
    return found


def test_an_early_driver_is_taken_once_and_drives_on_its_own_thread() -> None:
    seen: list[tuple[str, str]] = []

    def work(playwright: Any) -> None:
        seen.append((threading.current_thread().name, playwright.chromium.name))

    driver.start_early()
    driver.start_early()  # one is already waiting: nothing more starts
    try:
        assert wait_until(lambda: len(_child_drivers()) == 1, timeout=120)
        driver.drive(work)  # takes the early driver
        driver.drive(work)  # none waiting: a driver of its own, on the caller's thread
    finally:
        driver.discard()
    assert seen[0][0].startswith("codebox-browser-driver") and seen[0][1] == "chromium"
    assert seen[1] == (threading.current_thread().name, "chromium")
    assert wait_until(lambda: not _child_drivers(), timeout=60)  # both drivers stopped after their work


def test_a_driver_nobody_takes_is_stopped_by_discard() -> None:
    driver.start_early()
    assert wait_until(lambda: bool(_child_drivers()), timeout=120)
    driver.discard()
    assert wait_until(lambda: not _child_drivers(), timeout=60)
    driver.discard()  # nothing waiting: nothing to do
