"""A native sandbox's data file system does not outlive the Codebox process that mounted it, and a ``:live``
folder does not stay the sandbox's, however that process ends (docs/security.md, "Leftovers after a kill").

Each native sandbox's own data is a ``tmpfs`` mounted on the host (runtime/native_limits.py), and the overlays of
its copy-on-write mounts, mounted in it, are bound over their private copies' folders when the run ends.
Disposal unmounts the first and removing the run's folders the second; a Codebox process killed by SIGKILL, or
one that exits without doing so, cannot. So the first mount of a process starts one small guard process
(:func:`guard`), detached in its own session, whose standard input is a pipe only that Codebox process holds.
Codebox tells it each folder before mounting on it (``+``) and after unmounting a data folder (``-``; a
bound-back copy stays listed, and is found unmounted at the end); when the pipe reaches its end — the Codebox
process is gone, whatever the way — the guard detaches every folder still on its list, never through a link
(runtime/leftover_mounts.py), and exits. The folders themselves are removed by the next sweep
(runtime/playground.py), which also detaches what a guard killed along with Codebox left.

Codebox also tells it each ``:live`` owners journal folder (runtime/owner_journal.py) once it is made (``j``)
and once it is removed after a normal give-back (``J``). At the pipe's end the guard waits (a bounded time)
for every process of the uids those journals name to end, then gives each folder back with the same
:func:`~codebox_tui.runtime.owner_journal.restore_journal` the next run would use; nothing waits for a next run.

The guard imports only the standard library and ``leftover_mounts`` to start (a few tens of milliseconds); what
gives folders back is imported only when there is one to give back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from codebox_tui.runtime.leftover_mounts import detach_mount_at
from codebox_tui.runtime.reaper import start_detached

_lock = threading.Lock()
_guard: subprocess.Popen[bytes] | None = None
# How long the guard waits for a killed run's sandbox processes to end before giving its folders back anyway
# (they die with the run: bubblewrap's parent-death signal, the sidecar's closed stdin).
PROCESSES_END_S = 30.0


def guard(folder: Path) -> None:
    """Put ``folder`` (about to be mounted) on this process's guard's list, starting the guard at the first
    call. Best effort: without a guard, the next sweep detaches what a killed process left."""
    _tell(b"+", folder)


def release(folder: Path) -> None:
    """``folder`` is unmounted: off the guard's list."""
    _tell(b"-", folder)


def watch_journal(folder: Path) -> None:
    """A ``:live`` owners journal folder of this process (runtime/owner_journal.py): given back by the guard if
    this process ends without doing it."""
    _tell(b"j", folder)


def unwatch_journal(folder: Path) -> None:
    """The journal's folders are given back and the journal is about to be removed: off the guard's list."""
    _tell(b"J", folder)


def _tell(op: bytes, folder: Path) -> None:
    global _guard
    with _lock:
        if _guard is None:
            if op in (b"-", b"J"):
                return
            try:
                _guard = start_detached("codebox_tui.runtime.mount_guard", [], stdin=subprocess.PIPE)
            except OSError:
                return
        if _guard.stdin is None or _guard.stdin.closed:
            return
        try:
            _guard.stdin.write(op + os.fsencode(folder).hex().encode("ascii") + b"\n")
            _guard.stdin.flush()
        except OSError:  # the guard is gone (killed): the sweep is the fallback
            pass


def held_folders(lines: Iterable[bytes], add: bytes = b"+", remove: bytes = b"-") -> list[Path]:
    """The folders still mounted once the lines a Codebox process sent have ended (with ``add=b"j"``,
    ``remove=b"J"``: the owners journals not given back)."""
    held: dict[str, None] = {}
    for line in lines:
        op, encoded = line[:1], line[1:].strip()
        try:
            folder = os.fsdecode(bytes.fromhex(encoded.decode("ascii")))
        except ValueError:
            continue
        if op == add:
            held[folder] = None
        elif op == remove:
            held.pop(folder, None)
    return [Path(folder) for folder in held]


def give_back_journals(journals: list[Path]) -> None:
    """Once the killed run's sandbox processes have ended, give back the ``:live`` folders its journals record."""
    # imported here: the guard starts with the standard library alone; these only when there is a folder
    from codebox_tui.runtime.owner_journal import recorded_uids, restore_journal  # noqa: PLC0415
    from codebox_tui.runtime.sandbox_ids import ids_of_processes  # noqa: PLC0415

    uids = {uid for journal in journals for uid in recorded_uids(journal)}
    deadline = time.monotonic() + PROCESSES_END_S
    while uids & ids_of_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    for journal in journals:
        try:
            restore_journal(journal)
        except OSError:  # the next run in that home retries (owner_journal.restore_abandoned)
            continue


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ends with its Codebox process, not with a Ctrl-C
    lines = list(sys.stdin.buffer)
    for folder in held_folders(lines):
        detach_mount_at(folder)
    journals = held_folders(lines, b"j", b"J")
    if journals:
        give_back_journals(journals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
