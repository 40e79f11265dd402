"""Deleting a tree that a sandbox could write to, without ever following a link.

A sandbox's folder holds what PHP wrote (the site copy mounted at ``/wordpress``, the opcache copy at
``/internal/shared/opcache``, staged files): PHP's ``symlink()`` there creates a real host symlink, so
a removal that chmods or descends "directories" by path would act on any host folder the link names.
Here every folder is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor,
only descriptors of real folders are ever chmodded (to let their entries be removed) and everything
else, links included, is unlinked by name (docs/security-host.md, "Host-side trust"). A mount left directly
inside the folder (a killed native sandbox's data file system) is detached first, never through a link
(runtime/leftover_mounts.py), or the folder could never be removed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.runtime.leftover_mounts import detach_mounts_inside

_DIR_FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Deeper folders have their ancestors' descriptors closed; on the way back up a closed ancestor is
# reopened through ".." and must be the same inode, so nesting depth is bounded by neither Python's
# recursion limit nor the descriptor limit.
MAX_OPEN_DIRS = 64


@dataclass
class _Frame:
    fd: int | None
    ident: tuple[int, int]
    name: str  # this folder's name in its parent ("" for the top)
    names: list[str] = field(default_factory=list)


def remove_tree_nofollow(path: Path) -> None:
    """Delete ``path`` and everything under it; a link (at the top or anywhere below) is unlinked,
    never followed. Best effort: an entry that cannot be removed is left and the walk goes on."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode):
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    detach_mounts_inside(path)
    try:
        top = os.open(path, os.O_RDONLY | _DIR_FLAGS)
    except OSError:
        return
    try:
        _make_owner_writable(top)
        _empty(top)
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass


def remove_entry_nofollow(parent_fd: int, name: str) -> None:
    """Delete the entry ``name`` of the folder open as ``parent_fd``: a folder with everything under it, reached
    through descriptors only; anything else (a link too) unlinked. Absent is fine; what cannot be removed raises
    OSError."""
    try:
        info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent_fd)
        return
    fd = _open_subdir(parent_fd, name)
    if fd is not None:
        try:
            _empty(fd)
        finally:
            os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


def _make_owner_writable(fd: int) -> None:
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
            os.fchmod(fd, 0o700)
    except OSError:
        pass


def _open_subdir(parent_fd: int, name: str) -> int | None:
    """A descriptor of the real folder ``name`` inside ``parent_fd`` (never through a link), made
    readable, writable and searchable for its owner; None if it is not a folder or cannot be opened."""
    try:
        fd = os.open(name, os.O_RDONLY | _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        # no read permission (PHP's chmod(0) on a folder, when not running as root): open the inode as a
        # path only, change the mode of exactly that inode through /proc, then reopen it from there
        try:
            handle = os.open(name, os.O_PATH | _DIR_FLAGS, dir_fd=parent_fd)
        except OSError:
            return None
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
            fd = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        finally:
            os.close(handle)
    except OSError:
        return None
    _make_owner_writable(fd)
    return fd


def _ident(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _names(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []


def _close_all(stack: list[_Frame], keep: int) -> None:
    for frame in stack:
        if frame.fd is not None and frame.fd != keep:
            os.close(frame.fd)
            frame.fd = None


def _empty(top: int) -> None:
    """Remove everything inside the folder open as ``top`` (iteratively, depth first)."""
    stack = [_Frame(top, _ident(top), "", _names(top))]
    while stack:
        frame = stack[-1]
        fd = frame.fd
        assert fd is not None
        if frame.names:
            name = frame.names.pop()
            try:
                is_dir = stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            except OSError:
                continue
            if not is_dir:
                try:
                    os.unlink(name, dir_fd=fd)
                except OSError:
                    pass
                continue
            child = _open_subdir(fd, name)
            if child is None:
                continue
            stack.append(_Frame(child, _ident(child), name, _names(child)))
            if len(stack) > MAX_OPEN_DIRS:
                ancestor = stack[-MAX_OPEN_DIRS - 1]
                if ancestor.fd is not None and ancestor.fd != top:
                    os.close(ancestor.fd)
                    ancestor.fd = None
            continue
        stack.pop()
        if not stack:
            return
        parent = stack[-1]
        if parent.fd is None:
            try:
                reopened = os.open("..", os.O_RDONLY | _DIR_FLAGS, dir_fd=fd)
            except OSError:
                reopened = None
            if reopened is None or _ident(reopened) != parent.ident:
                if reopened is not None:
                    os.close(reopened)
                os.close(fd)
                _close_all(stack, keep=top)  # the tree was moved while being removed: stop, never guess
                return
            parent.fd = reopened
        os.close(fd)
        try:
            os.rmdir(frame.name, dir_fd=parent.fd)
        except OSError:
            pass
