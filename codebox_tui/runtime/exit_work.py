"""Work this process's exit still waits for: threads that are not daemons on purpose (a Playground sandbox
booted in the background to make the opcache seed for the next run, runtime/playground.py), so a one-shot
command can say what its exit waits for instead of seeming to hang (cli/run.py)."""

from __future__ import annotations

import threading

_background: set[threading.Thread] = set()  # refills this process's exit waits for (not daemons)
_background_lock = threading.Lock()


def exit_waits_for(thread: threading.Thread) -> None:
    """Record ``thread`` (not a daemon, not started yet or running) as work this process's exit waits for."""
    with _background_lock:
        _background.add(thread)


def background_work() -> str | None:
    """What this process's exit will still wait for (the opcache seed for the next run, made by a sandbox
    booted in the background on a new home; the prepared site copies are a detached process's, never waited
    for: runtime/pool_worker.py), or None: a one-shot command says so instead of hanging."""
    with _background_lock:
        _background.difference_update([thread for thread in _background if not thread.is_alive()])
        if not _background:
            return None
    return "the opcache seed for the next run is made"
