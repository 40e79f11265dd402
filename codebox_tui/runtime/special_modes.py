"""After a run: no file the sandbox wrote keeps a setuid, setgid or sticky bit (docs/security.md, "What a
sandbox may write").

``node/writeguard.mjs`` masks those bits out of every mode PHP hands Node's ``fs``; this is the check
behind it for the folders the sandbox wrote on the host: the ``:live`` folders and the private copies
that capture reads. Entries that had such a bit before the run (the user's own setgid folders) are left
alone; any other has the bits cleared, through a descriptor opened without following links, and is
reported so the run is flagged ``special-mode-bits``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SPECIAL_MODE_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
SPECIAL_MODE_FLAG = "special-mode-bits"  # review risk flag


def special_mode_entries(root: Path) -> set[str]:
    """Paths (relative to ``root``) of files and folders under it that carry a special bit; links are
    never followed."""
    found: set[str] = set()
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISLNK(info.st_mode) and info.st_mode & SPECIAL_MODE_BITS:
                found.add(os.path.relpath(path, root))
    return found


def strip_new_special_modes(root: Path, before: set[str]) -> list[str]:
    """Clear the special bits of every entry under ``root`` that gained them since ``before`` was taken;
    the relative paths cleared (or that could not be, still reported)."""
    stripped = []
    for rel in sorted(special_mode_entries(root) - before):
        stripped.append(rel)
        try:
            fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~SPECIAL_MODE_BITS)
        finally:
            os.close(fd)
    return stripped
