"""A native sandbox's data file system does not outlive the Codebox process that mounted it, however that
process ends (docs/security.md, "Leftovers after a kill").

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

The guard imports only the standard library and ``leftover_mounts``: it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from codebox_tui.runtime.leftover_mounts import detach_mount_at
from codebox_tui.runtime.reaper import start_detached

_lock = threading.Lock()
_guard: subprocess.Popen[bytes] | None = None


def guard(folder: Path) -> None:
    """Put ``folder`` (about to be mounted) on this process's guard's list, starting the guard at the first
    call. Best effort: without a guard, the next sweep detaches what a killed process left."""
    _tell(b"+", folder)


def release(folder: Path) -> None:
    """``folder`` is unmounted: off the guard's list."""
    _tell(b"-", folder)


def _tell(op: bytes, folder: Path) -> None:
    global _guard
    with _lock:
        if _guard is None:
            if op == b"-":
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


def held_folders(lines: Iterable[bytes]) -> list[Path]:
    """The folders still mounted once the lines a Codebox process sent have ended."""
    held: dict[str, None] = {}
    for line in lines:
        op, encoded = line[:1], line[1:].strip()
        try:
            folder = os.fsdecode(bytes.fromhex(encoded.decode("ascii")))
        except ValueError:
            continue
        if op == b"+":
            held[folder] = None
        elif op == b"-":
            held.pop(folder, None)
    return [Path(folder) for folder in held]


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # ends with its Codebox process, not with a Ctrl-C
    for folder in held_folders(sys.stdin.buffer):
        detach_mount_at(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
