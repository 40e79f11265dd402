"""The Playwright driver a browser command drives its page through, optionally started ahead of it.

Importing Playwright, starting its driver (a Node process) and launching Chromium are most of a short browser
probe's time (docs/performance.md, "Eighteenth session"). A flow that knows a probe will come — evaluate-patch
probes the front end after the tests — calls :func:`start_early` when it starts: the import, the driver's start
and Chromium's launch then run on a thread of their own while the sandbox boots and the tests run. The next
:func:`drive` in the process takes that driver (one taker only) and runs its work on that same thread, as
Playwright's synchronous API requires; the work's first ``open_browser()`` gets the Chromium launched early (a
fresh one if it failed or died), later ones launch their own. Without an early driver, :func:`drive` starts one
as before. :func:`discard` stops a driver nobody took, and its Chromium.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from codebox_tui.browser.launch import launch

# what a drive's work gets: a function that opens a Chromium (Playwright's Browser), which the work closes
OpenBrowser = Callable[[], Any]


class _EarlyDriver:
    """A driver started on its own one-thread executor; every call on it runs there."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codebox-browser-driver")
        self._manager: Any = None
        self._browser: Any = None  # launched early, until the work opens it
        self._started: Future[Any] = self._thread.submit(self._start)

    def _start(self) -> Any:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 - Playwright only when a page is driven

        self._manager = sync_playwright()
        playwright = self._manager.__enter__()
        try:
            self._browser = launch(playwright)
        except Exception:  # the work's own launch reports why (browser-unavailable)
            self._browser = None
        return playwright

    def _open_browser(self, playwright: Any) -> Any:
        browser, self._browser = self._browser, None
        if browser is not None:
            try:
                # a round trip to it: a Chromium that died while nobody drove this thread is only found out here
                # (Playwright's is_connected() learns of it from events this idle thread never read)
                browser.new_context().close()
                return browser
            except Exception:
                try:
                    browser.close()
                except Exception:  # already gone
                    pass
        return launch(playwright)

    def run(self, work: Callable[[OpenBrowser], None]) -> None:
        """``work(open_browser)`` on the driver's thread (a driver that failed to start raises here)."""

        def on_thread() -> None:
            playwright = self._started.result()
            work(lambda: self._open_browser(playwright))

        self._thread.submit(on_thread).result()

    def stop(self) -> None:
        """Stop the driver (on its thread) and the thread; a driver that never started is left as it is."""

        def close() -> None:
            browser, self._browser = self._browser, None
            try:
                if browser is not None:
                    browser.close()
            finally:
                if self._manager is not None:
                    self._manager.__exit__(None, None, None)

        try:
            self._thread.submit(close).result()
        except Exception:  # stopping a driver that failed is not the caller's error
            pass
        finally:
            self._thread.shutdown(wait=False)


_lock = threading.Lock()
_early: _EarlyDriver | None = None


def start_early() -> None:
    """Start importing Playwright, its driver and a Chromium now, for the next :func:`drive` of this process
    (nothing if one is already waiting)."""
    global _early
    with _lock:
        if _early is None:
            _early = _EarlyDriver()


def _take() -> _EarlyDriver | None:
    global _early
    with _lock:
        taken, _early = _early, None
    return taken


def discard() -> None:
    """Stop a driver :func:`start_early` started that no :func:`drive` took, and its Chromium."""
    early = _take()
    if early is not None:
        early.stop()


def drive(work: Callable[[OpenBrowser], None]) -> None:
    """``work(open_browser)`` with a running Playwright: the driver started early if there is one (then stopped),
    else one started here for it."""
    early = _take()
    if early is None:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415 - Playwright only when a page is driven

        with sync_playwright() as playwright:
            work(lambda: launch(playwright))
        return
    try:
        early.run(work)
    finally:
        early.stop()


atexit.register(discard)
