"""Reading and writing inside a target folder relative to directory descriptors, never by path.

A target folder can be written by someone else while Codebox applies into it (another local process, or
the sandbox itself through a ``:live`` mount). A check of a path followed by a write to the same path can
be raced: a folder swapped for a symlink in between sends the write wherever the link points. So apply
and journal recovery open the target's real path once (refusing a symlink at that instant) and reach
everything below it component by component from that descriptor with ``O_NOFOLLOW | O_DIRECTORY``;
files are then read, created, renamed, linked and unlinked by plain name relative to the descriptor of
the folder that was actually opened (docs/security-host.md, "Apply-back").
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from codebox_tui.errors import ConflictError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
# staged files and backups: always a new name, never through a link
FILE_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_STAGING_DEPTH = 8


class UnsafePath(Exception):
    """A folder on the way to a target file is a symlink or not a folder (``rel`` names it)."""

    def __init__(self, rel: str, reason: str) -> None:
        super().__init__(f"{rel} {reason}")
        self.rel = rel
        self.reason = reason


def open_root(root: Path) -> int:
    """A descriptor of the target folder's real path; OSError (ELOOP/ENOTDIR) if it is not a folder now."""
    return os.open(os.path.realpath(root), DIR_FLAGS)


def open_dir(root_fd: int, parts: Sequence[str], *, create: bool = False, mode: int = 0o755) -> int | None:
    """A new descriptor of the folder ``parts`` below ``root_fd``, reached without following any link.

    A missing folder is created (``create``) or makes the result None. A symlink or a non-folder on the way
    raises :class:`UnsafePath` naming it. The caller closes the descriptor."""
    current = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            try:
                fd = os.open(part, DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                if not create:
                    os.close(current)
                    current = -1
                    return None
                try:
                    os.mkdir(part, mode, dir_fd=current)
                except FileExistsError:
                    pass  # made meanwhile: opened (and checked) below like any other folder
                except FileNotFoundError as gone:  # the folder opened last was removed (or replaced) meanwhile
                    raise UnsafePath("/".join(parts[:index]) or ".", "disappeared during apply") from gone
                fd = _open_checked(current, parts, index)
            except OSError as error:
                raise _unsafe(current, parts, index, error) from error
            os.close(current)
            current = fd
        result, current = current, -1
        return result
    finally:
        if current >= 0:
            os.close(current)


def _open_checked(parent: int, parts: Sequence[str], index: int) -> int:
    try:
        return os.open(parts[index], DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError as gone:  # made, then removed before it could be opened
        raise UnsafePath("/".join(parts[: index + 1]), "disappeared during apply") from gone
    except OSError as error:
        raise _unsafe(parent, parts, index, error) from error


def _unsafe(parent: int, parts: Sequence[str], index: int, error: OSError) -> UnsafePath | OSError:
    """What ``O_DIRECTORY | O_NOFOLLOW`` refused (Linux says ENOTDIR for a link too, so look without following)."""
    if error.errno not in (errno.ELOOP, errno.ENOTDIR):
        return error
    rel = "/".join(parts[: index + 1])
    try:
        is_link = stat.S_ISLNK(os.stat(parts[index], dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        is_link = error.errno == errno.ELOOP
    return UnsafePath(rel, "is a symlink" if is_link else "is not a directory")


def missing_dirs(root_fd: int, parts: Sequence[str]) -> list[str]:
    """The folders of ``parts`` (relative, ``/``-joined, outermost first) that do not exist yet."""
    current = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            try:
                fd = os.open(part, DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                return ["/".join(parts[: i + 1]) for i in range(index, len(parts))]
            except OSError as error:
                raise _unsafe(current, parts, index, error) from error
            os.close(current)
            current = fd
        return []
    finally:
        os.close(current)


def split(rel: str) -> tuple[list[str], str]:
    """``(folders, name)`` of a relative ``/``-separated path; UnsafePath if it could leave the folder."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") or "\x00" in part for part in parts):
        raise UnsafePath(rel, "is not a plain relative path (outside the target)")
    return parts[:-1], parts[-1]


def read_regular(root_fd: int, rel: str) -> tuple[bytes, int] | str | None:
    """``(bytes, permission bits)`` of the regular file ``rel``, None if absent, or a reason it cannot be
    read as one (a link or a folder on the way or at the end)."""
    try:
        folders, name = split(rel)
        parent = open_dir(root_fd, folders)
    except UnsafePath as error:
        return f"{error.rel} {error.reason}"
    if parent is None:
        return None
    try:
        return read_in(parent, name)
    finally:
        os.close(parent)


def read_in(parent: int, name: str) -> tuple[bytes, int] | str | None:
    """Like :func:`read_regular` for ``name`` directly inside the folder ``parent``."""
    try:
        fd = os.open(name, FILE_READ_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            return "is not a regular file (symlink or directory)"
        return f"cannot read: {error}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file (symlink or directory)"
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(info.st_mode)
    except OSError as error:
        return f"cannot read: {error}"
    finally:
        os.close(fd)


def write_new(parent: int, name: str, data: bytes, mode: int) -> None:
    """Create ``name`` in ``parent`` (never an existing name, never through a link), fsynced, with exactly
    the permission bits ``mode & 0o777``."""
    fd = os.open(name, FILE_CREATE_FLAGS, mode & 0o777, dir_fd=parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, mode & 0o777)
        os.fsync(fd)
    finally:
        os.close(fd)


def exists_in(parent: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def ident_of(fd: int) -> list[int]:
    info = os.fstat(fd)
    return [info.st_dev, info.st_ino]


def remove_tree_in(parent: int, name: str, _depth: int = 0) -> None:
    """Remove ``name`` inside ``parent``: a link or file is unlinked, a folder is emptied through its own
    descriptor (opened without following links) and removed. Absent is fine."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    if _depth > _MAX_STAGING_DEPTH:
        raise OSError(errno.ELOOP, f"{name} is nested deeper than Codebox's staging folder ever is")
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        for entry in os.listdir(fd):
            remove_tree_in(fd, entry, _depth + 1)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


@contextmanager
def opened_target(root: Path, consequence: str = "") -> Iterator[int]:
    """A descriptor of the target folder ``root`` (its real path; see :func:`open_root`), closed afterwards;
    ConflictError (exit 5) naming it when it cannot be opened as a folder without following a link.
    ``consequence`` ends the message (e.g. "; nothing was written")."""
    try:
        fd = open_root(root)
    except OSError as error:
        raise ConflictError(
            f"the target {root} cannot be opened as a folder without following a link ({error.strerror}){consequence}",
            code="target-conflict",
            field="--target",
        ) from error
    try:
        yield fd
    finally:
        os.close(fd)
