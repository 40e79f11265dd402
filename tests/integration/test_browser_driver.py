"""The Playwright driver started ahead of a browser command (codebox_tui/browser/driver.py): taken by exactly
one :func:`drive`, which runs its work on the driver's own thread (Playwright's synchronous API is bound to the
thread that started it) and hands it the Chromium launched early; stopped — its Node process and its Chromium
gone — when nobody takes it. Real Playwright, real Chromium."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from codebox_tui.browser import driver
from tests.factories.waiting import wait_until


def _descendants(marker: bytes) -> set[int]:
    """Pids of this process's descendants whose command line holds ``marker``."""
    parents: dict[int, int] = {}
    commands: dict[int, bytes] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid = int(stat.parent.name)
            parents[pid] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            commands[pid] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
    found: set[int] = set()
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor and ancestor != os.getpid():
            ancestor = parents.get(ancestor)
        if ancestor == os.getpid() and marker in commands.get(pid, b""):
            found.add(pid)
    return found


def _drivers() -> set[int]:
    return _descendants(b"run-driver")


def _chromiums() -> set[int]:
    """Chromium browser processes (not their renderers and helpers, which carry a ``--type=``)."""
    return {pid for pid in _descendants(b"--headless") if b"--type=" not in _cmdline(pid)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_an_early_driver_is_taken_once_and_drives_its_early_chromium_on_its_own_thread() -> None:
    seen: list[tuple[str, int, bool]] = []

    def work(open_browser: driver.OpenBrowser) -> None:
        before = _chromiums()
        browser = open_browser()
        try:
            launched_here = bool(_chromiums() - before)
            seen.append((threading.current_thread().name, len(browser.contexts), launched_here))
            assert browser.new_context().new_page().evaluate("1 + 1") == 2
        finally:
            browser.close()

    driver.start_early()
    driver.start_early()  # one is already waiting: nothing more starts
    try:
        assert wait_until(lambda: len(_drivers()) == 1 and bool(_chromiums()), timeout=120)
        driver.drive(work)  # takes the early driver and its Chromium
        driver.drive(work)  # none waiting: a driver and a Chromium of its own, on the caller's thread
    finally:
        driver.discard()
    assert seen[0][0].startswith("codebox-browser-driver") and seen[0][1:] == (0, False)
    assert seen[1] == (threading.current_thread().name, 0, True)
    assert wait_until(lambda: not _drivers() and not _chromiums(), timeout=60)  # all stopped after their work


def test_a_driver_nobody_takes_is_stopped_by_discard_with_its_chromium() -> None:
    driver.start_early()
    assert wait_until(lambda: bool(_drivers()) and bool(_chromiums()), timeout=120)
    driver.discard()
    assert wait_until(lambda: not _drivers() and not _chromiums(), timeout=60)
    driver.discard()  # nothing waiting: nothing to do


def test_an_early_chromium_that_died_is_replaced() -> None:
    """Killed after its launch has finished, while the driver's thread is idle: Playwright has not heard of the
    death yet when the probe asks for the browser."""
    driver.start_early()
    early = driver._early
    assert early is not None
    early._started.result(timeout=120)  # the driver started and the early launch returned
    assert early._browser is not None and _chromiums()
    for pid in _chromiums():
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    opened: list[Any] = []

    def work(open_browser: driver.OpenBrowser) -> None:
        browser = open_browser()
        try:
            opened.append(browser.new_context().new_page().evaluate("'alive'"))
        finally:
            browser.close()

    try:
        assert wait_until(lambda: not _chromiums(), timeout=60)
        driver.drive(work)
    finally:
        driver.discard()
    assert opened == ["alive"]
