"""The private copy a copy-on-write mount's sandbox works on (README, "Mounts").

Made before boot, just before the baseline (which is packed from the copy): regular files and
folders only, each file copied into a new file of its own (never a hard link, so nothing the sandbox
writes can reach the user's bytes), with its permission bits (no set-id bits) and modification time.
Symlinks and special files are not copied (reported by capture as ``symlink`` / ``special-file``), and
no symlink is ever followed: folders are walked with ``lstat`` semantics and files are opened with
``O_NOFOLLOW``. Names in ``exclude`` (the mount's own ``.git``) are left out.

For each copied file the source's stat signature as seen while copying and the copy's own signature
are returned, so that trust in an untouched file (``baseline._pack_tree``, ``baseline._pack_private_copy``)
carries over to the copy: capture then skips copies whose
signature did not change, exactly as it used to skip untouched files of the user's folder. The copy
keeps the source's mtime, so a later write is visible in both mtime and ctime.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle.diff import (
    MAX_TRACKED_IN_SKIPPED,
    SKIPPED_DIRS,
    SkippedSignature,
    skipped_signature,
    stat_signature,
)

Signature = tuple[int, int, int, int]
_CHUNK = 1 << 30


@dataclass
class CopiedTree:
    # rel -> (the source's signature while it was copied, or None if it changed meanwhile; the copy's)
    files: dict[str, tuple[Signature | None, Signature]] = field(default_factory=dict)
    not_copied: list[tuple[str, str]] = field(default_factory=list)  # (rel, "symlink" | "special-file")
    unreadable: set[str] = field(default_factory=set)
    # the copy's entries inside never-captured folders (None: too many to track, see diff.list_tree)
    inside_skipped: dict[str, SkippedSignature] | None = field(default_factory=dict)


def _copy_bytes(fd_in: int, fd_out: int) -> None:
    try:
        while os.copy_file_range(fd_in, fd_out, _CHUNK):
            pass
        return
    except OSError as error:
        if error.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
    os.lseek(fd_in, 0, os.SEEK_SET)
    os.lseek(fd_out, 0, os.SEEK_SET)
    os.ftruncate(fd_out, 0)
    while chunk := os.read(fd_in, 1 << 20):
        os.write(fd_out, chunk)


def _copy_file(src: str, dst: str) -> tuple[Signature | None, Signature] | str:
    """Copy one regular file; returns (source signature or None if it changed meanwhile, the copy's
    signature) or why it was not copied."""
    try:
        fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        return "symlink" if error.errno == errno.ELOOP else "unreadable"
    try:
        before = os.fstat(fd_in)
        if not stat.S_ISREG(before.st_mode):
            return "special-file"
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            try:
                _copy_bytes(fd_in, fd_out)
            except OSError as error:
                if error.errno in (errno.EIO, errno.EACCES, errno.EISDIR):
                    return "unreadable"
                raise
            os.fchmod(fd_out, stat.S_IMODE(before.st_mode) & 0o777 | 0o600)
            os.utime(fd_out, ns=(before.st_atime_ns, before.st_mtime_ns))
            copied = os.fstat(fd_out)
        finally:
            os.close(fd_out)
        after = os.fstat(fd_in)
    finally:
        os.close(fd_in)
    source_sig = stat_signature(before)
    unchanged = source_sig == stat_signature(after) and before.st_size == after.st_size == copied.st_size
    return (source_sig if unchanged else None, stat_signature(copied))


def copy_tree(source: Path, dest: Path, *, exclude: frozenset[str] = frozenset()) -> CopiedTree:
    """Copy ``source`` (a folder) to ``dest`` (must not exist) as described in the module docstring."""
    result = CopiedTree()
    if not source.is_dir():  # a single-file mount: the file itself (its changes are not captured)
        outcome = _copy_file(str(source), str(dest))
        if isinstance(outcome, str):
            raise OSError(errno.EINVAL, f"cannot copy the mounted file ({outcome})", str(source))
        return result
    inside_skipped: dict[str, SkippedSignature] = {}
    tracking = True
    os.mkdir(dest, 0o700)
    os.chmod(dest, stat.S_IMODE(os.stat(source).st_mode) & 0o777 | 0o700)
    stack: list[tuple[str, str, str, bool]] = [(str(source), str(dest), "", False)]
    while stack:
        directory, target_dir, prefix, inside = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            if inside:
                continue
            raise
        for item in entries:
            rel = prefix + item.name
            if not prefix and rel in exclude:
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                result.unreadable.add(rel)
                continue
            target = os.path.join(target_dir, item.name)
            if stat.S_ISDIR(info.st_mode):
                os.mkdir(target, 0o700)
                os.chmod(target, stat.S_IMODE(info.st_mode) & 0o777 | 0o700)
                skipped_here = inside or item.name in SKIPPED_DIRS
                if skipped_here and tracking:
                    inside_skipped[rel] = skipped_signature(True, os.lstat(target))
                stack.append((item.path, target, rel + "/", skipped_here))
                continue
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
                if not inside:
                    result.not_copied.append((rel, "symlink" if stat.S_ISLNK(info.st_mode) else "special-file"))
                continue
            outcome = _copy_file(item.path, target)
            if isinstance(outcome, str):
                if not inside:
                    if outcome == "unreadable":
                        result.unreadable.add(rel)
                    else:
                        result.not_copied.append((rel, outcome))
                continue
            source_sig, copy_sig = outcome
            if inside:
                if tracking:
                    inside_skipped[rel] = skipped_signature(False, os.lstat(target))
                    if len(inside_skipped) > MAX_TRACKED_IN_SKIPPED:
                        tracking = False
            else:
                result.files[rel] = (source_sig, copy_sig)
    result.not_copied.sort()
    result.inside_skipped = inside_skipped if tracking else None
    return result
