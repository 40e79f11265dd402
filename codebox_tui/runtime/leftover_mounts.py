"""Detaching the mounts a dead sandbox left inside its folder, before the folder is removed (docs/security.md,
"Leftovers after a kill").

A native sandbox's own data is a ``tmpfs`` mounted on the host at ``<its folder>/data``
(runtime/native_limits.py). A Codebox process killed before disposing the sandbox leaves that mount behind,
and a folder holding a mount point can never be removed (``EBUSY``). So whatever removes a sandbox's folder
(the sweep of abandoned folders, the reaper, a normal disposal: runtime/tree_removal.py) first detaches the
mounts whose mount point is an entry directly inside it.

The folder held what the sandbox wrote, so nothing here acts on a path that a planted link could redirect:

* the folder is opened with ``O_NOFOLLOW | O_DIRECTORY``; its real path is read back from that descriptor;
* only a mount the kernel lists in ``/proc/self/mountinfo`` at exactly ``<that real path>/<name>`` counts, and
  only if ``<name>`` is a real folder (a link named like a mount point is no mount point);
* the unmount goes through the opened descriptor (``/proc/self/fd/N/<name>``) with ``UMOUNT_NOFOLLOW``, so
  the last component is never followed either, and ``MNT_DETACH`` (a file still open in it does not block).

Standard library only: the reaper imports this and must start in a few tens of milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
from functools import cache
from pathlib import Path

# umount2(2) flags
MNT_DETACH = 0x2
UMOUNT_NOFOLLOW = 0x8
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


def mount_points(mountinfo: str | None = None) -> list[str]:
    """Every mount point of this process's mount namespace, as ``/proc/self/mountinfo`` lists them (field 5,
    with the kernel's octal escapes of space, tab, newline and backslash decoded)."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return []
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(_OCTAL_ESCAPE.sub(lambda match: chr(int(match.group(1), 8)), fields[4]))
    return points


def detach_mount_at(point: Path) -> bool:
    """Detach the mount at exactly ``point`` (a real folder, never through a link), if there is one."""
    return detach_mounts_inside(point.parent, only=point.name) == [point.name]


def detach_mounts_inside(folder: Path, *, only: str | None = None) -> list[str]:
    """Detach every mount whose mount point is a real folder directly inside ``folder`` (never through a link;
    ``only``: the one of that name); returns the names of the entries detached. Best effort: what cannot be
    detached is left."""
    try:
        fd = os.open(folder, _DIR_FLAGS)
    except OSError:
        return []
    try:
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return []
        prefix = real.rstrip("/") + "/"
        names = sorted(
            {
                point[len(prefix) :]
                for point in mount_points()
                if point.startswith(prefix) and "/" not in point[len(prefix) :]
            }
        )
        detached = []
        for name in names:
            if not name or only not in (None, name) or not _is_real_folder(fd, name):
                continue
            if _umount_nofollow(f"/proc/self/fd/{fd}/{name}"):
                detached.append(name)
        return detached
    finally:
        os.close(fd)


def _is_real_folder(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _umount_nofollow(path: str) -> bool:
    libc = process_libc()
    if libc is None:
        return False
    return bool(libc.umount2(os.fsencode(path), MNT_DETACH | UMOUNT_NOFOLLOW) == 0)


@cache
def process_libc() -> ctypes.CDLL | None:
    """The C library already loaded in this process, for the mount calls Python does not wrap (no
    ``find_library``, which starts an ``ldconfig -p`` subprocess each time)."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
