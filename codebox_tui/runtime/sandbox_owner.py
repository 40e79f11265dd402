"""The folders a sandbox writes, handed to its unprivileged host uid when Codebox runs as root
(docs/security.md, "Running as root").

When Codebox runs as root the sandbox's processes run as a uid/gid of their own on the host
(:func:`~codebox_tui.runtime.confinement.drops_to_sandbox_uid`, runtime/sandbox_ids.py), so the folders they
must write are made that uid's before the first sandboxed process starts, and nothing else is: the site copy
and the sandbox's own folder (private copies, temp, opcache), the sidecar's temp folder and Playground home,
and each ``:live`` folder for the life of the sandbox. Everything the sandbox may only read stays root's, so a
read-write bind does not make a root-owned file in it writable.

A ``:live`` folder is the user's: its owners are recorded (by device and inode) before the hand-over and
put back after the sandbox is gone; what the sandbox created gets the folder's own owner. Every change
goes through a folder descriptor and never follows a link (``os.fwalk``, ``follow_symlinks=False``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.runtime.confinement import SANDBOX_UID, drops_to_sandbox_uid

Owner = tuple[int, int]
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID  # chown clears them on files, even as root


@dataclass
class HandedOver:
    """What :func:`hand_over` changed under one folder: the previous owner of each entry, by (dev, ino)."""

    root: Path
    root_id: tuple[int, int]  # the folder's (dev, ino): given back only if it is still that folder
    owner: Owner  # the folder's own owner before: what new entries get back
    sandbox_uid: int = SANDBOX_UID  # the id it was handed to (uid and gid): only its entries are given back
    owners: dict[tuple[int, int], Owner] = field(default_factory=dict)
    special_modes: dict[tuple[int, int], int] = field(default_factory=dict)  # files whose setuid/setgid chown cleared


def _chown(name: str | int, uid: int, gid: int, dir_fd: int | None) -> None:
    try:
        if isinstance(name, int):
            os.fchown(name, uid, gid)
        else:
            os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:  # gone meanwhile (a sandbox still running can remove what it wrote)
        pass


def _walk(root_fd: int) -> Iterator[tuple[str, os.stat_result, int]]:
    """(name, stat, dir_fd) of every entry under the folder open as ``root_fd`` (not the folder itself), links
    never followed."""
    for _path, dirs, files, dir_fd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
        for name in [*dirs, *files]:
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            yield name, info, dir_fd


def _open_root(root: Path) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISDIR(os.fstat(fd).st_mode):  # O_DIRECTORY already refuses; belt and braces
        os.close(fd)
        raise NotADirectoryError(str(root))
    return fd


def hand_over(
    root: Path, uid: int | None, *, record: bool = False, journal: Callable[[HandedOver], None] | None = None
) -> HandedOver | None:
    """Make ``root`` and everything under it the sandbox's (``uid``, as uid and gid; nothing when Codebox
    does not run as root).
    ``record`` (a user's ``:live`` folder): remember every previous owner, for :func:`hand_back`, and leave
    what its owner made read-only (no owner write bit) to its owner: the sandbox could write it only as
    that owner, and it now runs as someone else. ``journal`` is given what was recorded before anything is
    handed over (runtime/owner_journal.py keeps it on disk, for a run killed before it gives the folder back)."""
    if not drops_to_sandbox_uid() or uid is None:  # (None as root: an unconfined sidecar, root itself)
        return None
    fd = _open_root(root)
    try:
        info = os.fstat(fd)
        handed = HandedOver(root, (info.st_dev, info.st_ino), (info.st_uid, info.st_gid), uid)
        if not record:  # Codebox's own fresh copy: every entry, no stat needed (a site copy: ~3,000 entries)
            for _path, dirs, files, dir_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
                for name in [*dirs, *files]:
                    _chown(name, uid, uid, dir_fd)
            _chown(fd, uid, uid, None)
            return handed
        handed.owners[handed.root_id] = handed.owner
        for _name, entry, _dir_fd in _walk(fd):
            handed.owners[(entry.st_dev, entry.st_ino)] = (entry.st_uid, entry.st_gid)
            if stat.S_ISREG(entry.st_mode) and entry.st_mode & SPECIAL_BITS:
                handed.special_modes[(entry.st_dev, entry.st_ino)] = stat.S_IMODE(entry.st_mode)
        if journal is not None:
            journal(handed)
        for name, entry, dir_fd in _walk(fd):
            if not entry.st_mode & stat.S_IWUSR:
                continue
            if (entry.st_uid, entry.st_gid) != (uid, uid):
                _chown(name, uid, uid, dir_fd)
        _chown(fd, uid, uid, None)
    finally:
        os.close(fd)
    return handed


class FolderReplaced(OSError):
    """The folder at a handed-over path is no longer the one handed over (another inode): nothing is changed."""


def hand_back(handed: HandedOver | None) -> None:
    """After the sandbox is gone: every entry under the folder its uid (``handed.sandbox_uid``) owns gets its
    recorded owner back (an entry the sandbox created: the folder's own owner). The folder is opened without following a
    link and must be the very folder handed over (:class:`FolderReplaced` otherwise)."""
    if handed is None:
        return
    fd = _open_root(handed.root)
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != handed.root_id:
            raise FolderReplaced(f"{handed.root} is no longer the folder that was handed to the sandbox")
        for name, entry, dir_fd in _walk(fd):
            if handed.sandbox_uid in (entry.st_uid, entry.st_gid):
                uid, gid = handed.owners.get((entry.st_dev, entry.st_ino), handed.owner)
                _chown(name, uid, gid, dir_fd)
                mode = handed.special_modes.get((entry.st_dev, entry.st_ino))
                if mode is not None:  # the user's own setuid/setgid file: its bits back, after the chown
                    _restore_mode(name, mode, dir_fd)
        _chown(fd, *handed.owners.get(handed.root_id, handed.owner), None)
    finally:
        os.close(fd)


def _restore_mode(name: str, mode: int, dir_fd: int) -> None:
    """``chmod`` of a file or folder through a descriptor opened without following links (Linux has no
    lchmod)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError:
        return
    try:
        kind = os.fstat(fd).st_mode
        if stat.S_ISREG(kind) or stat.S_ISDIR(kind):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def hand_over_folders(folders: list[Path], uid: int | None) -> None:
    """:func:`hand_over` each folder Codebox made for the sandbox (no owners to remember)."""
    for folder in folders:
        hand_over(folder, uid)


def reclaim(folder: Path) -> None:
    """Make everything under ``folder`` Codebox's own again and readable by all (a folder the sandbox wrote
    that outlives it and is bound read-only into later sandboxes: the opcache seed, whose folders PHP makes
    ``0700``). Links are left as they are."""
    if not drops_to_sandbox_uid():
        return
    uid, gid = os.geteuid(), os.getegid()
    fd = _open_root(folder)
    try:
        for name, entry, dir_fd in _walk(fd):
            if stat.S_ISLNK(entry.st_mode):
                continue
            _chown(name, uid, gid, dir_fd)
            readable = 0o755 if stat.S_ISDIR(entry.st_mode) else 0o644
            _restore_mode(name, readable, dir_fd)
        os.fchown(fd, uid, gid)
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)
