"""A native sandbox's ``:live`` mounts inside its disk budget (docs/backends.md, "The native wall").

The sandbox sees a ``:live`` folder through an ``overlay`` (runtime/native_limits.py,
``DiskBudget.take_in_live``): the user's folder is the lower layer, and everything the sandbox writes — a new
file, a changed one (copied up whole), the marker of a deleted one — lands in the upper layer, inside the
sandbox's size-limited ``tmpfs``. So those writes stop at the one write budget like every other, and the
user's folder can only ever receive what the upper layer holds.

:class:`LiveMirror` copies the upper layer into the user's folder: repeatedly while the sandbox runs (a
thread of the sandbox, :class:`MirrorThread`), so the folder still follows the sandbox's writes a moment
later, and once more after the sandbox's last process is gone. The upper layer is written by the sandbox
and is read as untrusted: every entry is opened relative to its folder's descriptor with ``O_NOFOLLOW`` and
its type checked on the descriptor; the user's folder is written the same way (``openat``, ``mkdirat``, a new
file under a fresh name renamed over the old one), never by a path that could be raced. What a run adds to
the user's folder is bounded by the budget plus, for a moment, one file being replaced (old and new side by
side until the rename).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.native_limits import DiskBudget
from codebox_tui.runtime.tree_removal import remove_entry_nofollow

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
OPAQUE = "trusted.overlay.opaque"  # set by the kernel on a folder of the upper layer that hides the lower one
STAGING_PREFIX = ".codebox-live-"
# Between two passes of the thread: at least this long, and four times what the last pass took.
PAUSE_S = 0.2
CHUNK = 1 << 20
MAX_ERRORS = 20

# What an entry of the upper layer was when it was last copied: its type and mode, inode, size, times, owner.
Seen = tuple[int, int, int, int, int, int, int]
RETRY: Seen = (-1, -1, -1, -1, -1, -1, -1)  # an entry that could not be copied: never equal to what it is


@dataclass
class LiveMirror:
    """The upper layer ``upper`` of mount ``index``'s overlay, copied into the user's folder ``target``."""

    index: int
    upper: Path
    target_fd: int  # the user's folder, opened once (its real path, never through a link) and held
    seen: dict[str, Seen] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # this pass: a file of the upper layer with several names -> where its first name is in the user's folder
    linked: dict[int, str] = field(default_factory=dict)

    @classmethod
    def open(cls, index: int, upper: Path, target: Path) -> LiveMirror:
        return cls(index, upper, os.open(os.path.realpath(target), DIR_FLAGS))

    def close(self) -> None:
        if self.target_fd >= 0:
            os.close(self.target_fd)
            self.target_fd = -1

    def note(self, error: str) -> None:
        """An entry that could not be copied (kept once, at most :data:`MAX_ERRORS`)."""
        if error not in self.errors and len(self.errors) < MAX_ERRORS:
            self.errors.append(error)

    def sync(self) -> None:
        """One pass: every entry of the upper layer that changed since the last pass is made so in the user's
        folder (a deletion marker deletes); an entry copied before and gone from the upper layer since (a file
        the sandbox made, then removed) is removed again. An entry that cannot be copied is noted in
        :attr:`errors` and the pass goes on."""
        now: dict[str, Seen] = {}
        self.linked = {}
        upper_fd = os.open(self.upper, DIR_FLAGS)
        try:
            self._mirror(upper_fd, self.target_fd, "", now)
            for rel in sorted(self.seen.keys() - now.keys(), key=len, reverse=True):
                self._remove(rel)
        finally:
            os.close(upper_fd)
        self.seen = now

    def _mirror(self, upper_fd: int, target_fd: int, rel: str, now: dict[str, Seen]) -> None:
        for name in sorted(os.listdir(upper_fd)):
            path = f"{rel}/{name}" if rel else name
            try:
                info = os.stat(name, dir_fd=upper_fd, follow_symlinks=False)
            except FileNotFoundError:  # removed since the listing: the next pass sees it
                continue
            seen = (
                info.st_mode,
                info.st_ino,
                info.st_size,
                info.st_mtime_ns,
                info.st_ctime_ns,
                info.st_uid,
                info.st_gid,
            )
            now[path] = seen
            changed = self.seen.get(path) != seen
            try:
                if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:  # the overlay's marker of a deleted entry
                    if changed:
                        remove_entry_nofollow(target_fd, name)
                elif stat.S_ISDIR(info.st_mode):
                    self._mirror_folder(upper_fd, target_fd, name, path, info, now)
                elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and info.st_ino in self.linked:
                    if changed:  # a hard link: one more name for the file copied once, never a second copy
                        self._link(self.linked[info.st_ino], target_fd, name)
                elif stat.S_ISREG(info.st_mode):
                    if changed:
                        _copy_file(upper_fd, target_fd, name, info)
                    if info.st_nlink > 1:
                        self.linked[info.st_ino] = path
                elif stat.S_ISLNK(info.st_mode):
                    if changed:
                        _copy_link(upper_fd, target_fd, name, info)
                else:  # a fifo or socket: nothing to copy
                    now.pop(path)
            except OSError as error:
                # tried again at the next pass; what was copied of it (and under it) before is not removed
                for copied in [path, *(k for k in self.seen if k.startswith(path + "/"))]:
                    now[copied] = RETRY
                self.note(f"mounts[{self.index}] {path}: {error.strerror or error}")

    def _mirror_folder(
        self, upper_fd: int, target_fd: int, name: str, path: str, info: os.stat_result, now: dict[str, Seen]
    ) -> None:
        child = os.open(name, DIR_FLAGS, dir_fd=upper_fd)
        try:
            if not stat.S_ISDIR(os.fstat(child).st_mode):  # swapped since the stat
                raise OSError(errno.ENOTDIR, "not a folder any more")
            folder = _target_folder(target_fd, name, info)
            try:
                if _opaque(child):  # the sandbox replaced the folder: nothing of the user's old one shows
                    for stale in set(os.listdir(folder)) - set(os.listdir(child)):
                        remove_entry_nofollow(folder, stale)
                self._mirror(child, folder, path, now)
            finally:
                os.close(folder)
        finally:
            os.close(child)

    def _link(self, first: str, target_fd: int, name: str) -> None:
        """``name`` in the folder open as ``target_fd`` made a hard link to the file copied as ``first`` (reached
        from the user's folder without following a link; a link is made to the entry itself, never its target)."""
        *parents, first_name = first.split("/")
        parent = self._open_parents(parents)
        if parent is None:
            raise OSError(errno.ENOENT, f"{first} is gone")
        try:
            staged = STAGING_PREFIX + secrets.token_hex(6)
            os.link(first_name, staged, src_dir_fd=parent, dst_dir_fd=target_fd, follow_symlinks=False)
        finally:
            os.close(parent)
        try:
            _replace(target_fd, staged, name)
        except BaseException:
            _discard(target_fd, staged)
            raise

    def _open_parents(self, parts: list[str]) -> int | None:
        """A descriptor of the folder ``parts`` below the user's folder, each step opened without following a
        link; None if one is missing or not a folder."""
        parent = os.dup(self.target_fd)
        for part in parts:
            try:
                step = os.open(part, DIR_FLAGS, dir_fd=parent)
            except OSError:
                os.close(parent)
                return None
            os.close(parent)
            parent = step
        return parent

    def _remove(self, rel: str) -> None:
        *parents, name = rel.split("/")
        parent = self._open_parents(parents)
        if parent is None:
            return  # gone already (with its folder) or not a folder: nothing of it to remove
        try:
            remove_entry_nofollow(parent, name)
        except OSError as error:
            self.note(f"mounts[{self.index}] {rel}: {error.strerror or error}")
        finally:
            os.close(parent)


def _opaque(fd: int) -> bool:
    try:
        return os.getxattr(fd, OPAQUE) == b"y"
    except OSError:
        return False


def _owner(fd: int, info: os.stat_result) -> None:
    """As root: the entry open as ``fd`` gets the owner it has in the upper layer (the sandbox's uid while the
    folder is handed over; runtime/sandbox_owner.py gives every entry back after the run)."""
    if os.geteuid() == 0:
        os.fchown(fd, info.st_uid, info.st_gid)


def _target_folder(target_fd: int, name: str, info: os.stat_result) -> int:
    """A descriptor of the folder ``name`` in the user's folder, made (or put in place of a file or link of that
    name) when missing; its mode and owner as in the upper layer."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=target_fd)
    except FileNotFoundError:
        fd = -1
    except (NotADirectoryError, OSError) as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        remove_entry_nofollow(target_fd, name)
        fd = -1
    if fd < 0:
        os.mkdir(name, 0o700, dir_fd=target_fd)
        fd = os.open(name, DIR_FLAGS, dir_fd=target_fd)
    try:
        _owner(fd, info)
        os.fchmod(fd, stat.S_IMODE(info.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy_file(upper_fd: int, target_fd: int, name: str, info: os.stat_result) -> None:
    """The file ``name`` of the upper layer copied under a fresh name in the user's folder, then renamed over
    whatever has that name there (a folder is removed first)."""
    source = os.open(name, READ_FLAGS, dir_fd=upper_fd)
    try:
        if not stat.S_ISREG(os.fstat(source).st_mode):
            raise OSError(errno.EINVAL, "not a regular file any more")
        staged = STAGING_PREFIX + secrets.token_hex(6)
        dest = os.open(staged, CREATE_FLAGS, 0o600, dir_fd=target_fd)
        try:
            try:
                _copy_data(source, dest)
                _owner(dest, info)
                os.fchmod(dest, stat.S_IMODE(info.st_mode))
            finally:
                os.close(dest)
            _replace(target_fd, staged, name)
        except BaseException:
            _discard(target_fd, staged)
            raise
    finally:
        os.close(source)


def _copy_data(source: int, dest: int) -> None:
    """The bytes of ``source`` into ``dest``, holes kept as holes: only the ranges the file really holds are
    written (``SEEK_DATA``/``SEEK_HOLE``), then the size is set. A sparse file takes next to nothing in the budget
    (``truncate -s``), so copying its zeros would put far more on the user's disk than the budget let through."""
    offset = 0
    while True:
        try:
            start = os.lseek(source, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno != errno.ENXIO:  # ENXIO: no data after offset
                raise
            break
        end = os.lseek(source, start, os.SEEK_HOLE)
        os.lseek(dest, start, os.SEEK_SET)
        while start < end:
            sent = os.sendfile(dest, source, start, min(CHUNK, end - start))
            if sent == 0:  # the file shrank meanwhile
                break
            start += sent
        offset = end
    os.ftruncate(dest, os.fstat(source).st_size)


def _copy_link(upper_fd: int, target_fd: int, name: str, info: os.stat_result) -> None:
    """A symbolic link the sandbox made, made again (never followed) in the user's folder."""
    staged = STAGING_PREFIX + secrets.token_hex(6)
    os.symlink(os.readlink(name, dir_fd=upper_fd), staged, dir_fd=target_fd)
    try:
        if os.geteuid() == 0:
            os.chown(staged, info.st_uid, info.st_gid, dir_fd=target_fd, follow_symlinks=False)
        _replace(target_fd, staged, name)
    except BaseException:
        _discard(target_fd, staged)
        raise


def _replace(target_fd: int, staged: str, name: str) -> None:
    try:
        if stat.S_ISDIR(os.stat(name, dir_fd=target_fd, follow_symlinks=False).st_mode):
            remove_entry_nofollow(target_fd, name)
    except FileNotFoundError:
        pass
    os.rename(staged, name, src_dir_fd=target_fd, dst_dir_fd=target_fd)


def _discard(target_fd: int, staged: str) -> None:
    try:
        os.unlink(staged, dir_fd=target_fd)
    except OSError:
        pass


def take_in_live_mounts(
    spec: SandboxSpec, disk: DiskBudget, mounts: list[dict[str, str]]
) -> list[tuple[Path, LiveMirror]]:
    """Each ``:live`` mount shown through an overlay whose changes count against ``disk`` (``mounts``' entry
    for it now names the overlay), with the mirror that copies them into the user's folder; a mount the kernel
    cannot stack an overlay on stays bound as it is (``disk.reason`` says so)."""
    live: list[tuple[Path, LiveMirror]] = []
    try:
        for index, mount in enumerate(spec.mounts):
            if mount.mode != "readwrite" or not mount.live:
                continue
            layers = disk.take_in_live(index, Path(mount.source))
            if layers is None:
                continue
            point, upper = layers
            entry = next(m for m in mounts if m["vfsPath"] == mount.target and m["hostPath"] == str(Path(mount.source)))
            entry["hostPath"] = str(point)
            live.append((point, LiveMirror.open(index, upper, Path(mount.source))))
    except BaseException:
        for _, mirror in live:
            mirror.close()
        raise
    return live


class MirrorThread:
    """Passes of every mirror of one sandbox, in a thread, until :meth:`finish` — which then makes one last pass
    (the caller's sandbox processes are gone by then) and returns every mirror's errors."""

    def __init__(self, mirrors: list[LiveMirror]) -> None:
        self.mirrors = mirrors
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="codebox-live-mirror", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self._pass()
            self._stop.wait(max(PAUSE_S, 4 * (time.monotonic() - started)))

    def _pass(self) -> None:
        with self._lock:
            for mirror in self.mirrors:
                if mirror.target_fd < 0:  # closed: the sandbox is gone
                    continue
                try:
                    mirror.sync()
                except OSError as error:
                    mirror.note(f"mounts[{mirror.index}]: {error.strerror or error}")

    def sync_now(self) -> None:
        """One pass now, in the caller's thread (after a command or page, so its writes are in the folder when it
        returns)."""
        if not self._stop.is_set():
            self._pass()

    def finish(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        self._pass()
        with self._lock:  # no pass (a late command's) can hold a descriptor number about to be reused
            for mirror in self.mirrors:
                mirror.close()
        return [error for mirror in self.mirrors for error in mirror.errors]
