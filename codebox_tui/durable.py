"""Durable small-file writes: the one way a journal (the apply journal, store/journal.py; the sandbox-owner
journal, runtime/owner_journal.py) is replaced so that a crash at any point leaves the old copy or the new one,
whole. Outside the layers: the store and the runtime both use it."""

from __future__ import annotations

import os
from pathlib import Path


def write_durably(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: written in full to ``<name>.tmp`` beside it (mode 0600, never through a
    link there), ``fsync``-ed, renamed over ``path``, and the folder ``fsync``-ed so the rename lasts."""
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    fsync_folder(path.parent)


def fsync_folder(path: Path) -> None:
    """``fsync`` the folder ``path``: a rename, creation or removal in it survives a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
