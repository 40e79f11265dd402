"""The native sandbox's whole-sandbox bounds (docs/backends.md, "The native wall"): a process budget and a
disk budget, both kept by the kernel.

**Processes.** Every process of one sandbox — its commands, its page-request worker and every child they
start — counts against one kernel limit, so a fork bomb stops at :data:`MAX_PROCESSES` instead of filling
the machine.

``RLIMIT_NPROC`` alone cannot do this everywhere: it counts a uid's processes (as root each sandbox has a host
uid of its own, runtime/sandbox_ids.py, and runtime/native.py caps it too; as a normal user it would count the
caller's own processes). A ``pids`` control group can: the kernel counts
every task in it, whoever owns them. One is made per sandbox, where the machine lets Codebox make one:

* cgroup v2: a child of Codebox's own group, when that group delegates the ``pids`` controller (or Codebox
  sits in the root group and can enable it there);
* cgroup v1: a child of Codebox's group in the ``pids`` hierarchy.

Each confined process joins the group before it starts (:meth:`ProcessCap.wrap`: a shell moves itself in,
then becomes the process), so nothing it forks is ever outside. Where no group can be made, :attr:`reason`
says why and the sandbox runs without the cap (bounded then only by the command's timeout, its CPU limit
and the kernel's own limits).

**Disk.** Everything the sandbox can write — its ``wp-content`` with the database,
its ``/tmp``, its compiled-script cache and what it changes in its copy-on-write and ``:live`` mounts — lives in one
size-limited ``tmpfs`` mounted on the host (:class:`DiskBudget`): many files, each under the per-file cap,
written anywhere among them still stop at the one budget, where writes fail with "No space left on device".
A copy-on-write mount is an ``overlay`` (:meth:`DiskBudget.take_in`): its private copy on the host's disk is
the lower layer, read as it is, and every change (a changed file whole, a new file, the marker of a deleted
one) goes to an upper layer inside the ``tmpfs``; unchanged files are held once, on the disk. At the end of
the run the overlay is bound over the private copy's own folder, where capture reads what the sandbox made of
it. A ``:live`` mount is such an overlay over the user's own folder (:meth:`DiskBudget.take_in_live`), whose
changes runtime/live_mirror.py copies into that folder. Mounting needs root on the host; where Codebox cannot
mount, :attr:`DiskBudget.reason` says why, the private copies are moved in and out by renaming as they are,
``:live`` folders are bound as they are, and only the per-file cap holds. The mounts do
not outlive the Codebox process, however it ends: a guard process detaches them then
(runtime/mount_guard.py).
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
import time
from pathlib import Path

from codebox_tui.runtime import mount_guard
from codebox_tui.runtime.leftover_mounts import MNT_DETACH, UMOUNT_NOFOLLOW, process_libc
from codebox_tui.runtime.mounts import PrivateCopy, remove_tree
from codebox_tui.runtime.sandbox_owner import hand_over

# The most tasks (processes and threads) one native sandbox may have at once: PHP, WP-CLI and PHPUnit with
# its child processes need a handful; bubblewrap adds two per confined process.
MAX_PROCESSES = 128
CGROUP_ROOT = Path("/sys/fs/cgroup")
JOIN = 'echo 0 > "$0/cgroup.procs" && exec "$@"'


class ProcessCap:
    """One sandbox's ``pids`` group (``folder``), or none (``reason`` says why)."""

    def __init__(self, folder: Path | None, limit: int, reason: str = "") -> None:
        self.folder, self.limit, self.reason = folder, limit, reason

    @classmethod
    def make(cls, name: str, limit: int = MAX_PROCESSES) -> ProcessCap:
        """A new group ``name`` with ``pids.max`` = ``limit`` under Codebox's own group, if the machine allows
        it."""
        try:
            parent = _pids_parent()
        except OSError as error:
            return cls(None, limit, f"no pids control group available: {error}")
        if parent is None:
            return cls(None, limit, "no pids control group available (neither a delegated cgroup v2 nor v1 pids)")
        folder = parent / name
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(f"{limit}\n", encoding="ascii")
        except OSError as error:
            try:
                folder.rmdir()
            except OSError:
                pass
            return cls(None, limit, f"could not make the pids control group {folder}: {error}")
        return cls(folder, limit)

    @classmethod
    def existing(cls, name: str) -> ProcessCap:
        """The group ``name`` made earlier (by a process that died before removing it), if it is there."""
        try:
            parent = _pids_parent()
        except OSError:
            parent = None
        folder = parent / name if parent is not None else None
        return cls(folder if folder is not None and folder.is_dir() else None, 0)

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the group (unchanged when there is none)."""
        if self.folder is None:
            return argv
        return ["/bin/sh", "-c", JOIN, str(self.folder), *argv]

    def current(self) -> int | None:
        """How many tasks the group holds now (tests and diagnostics)."""
        if self.folder is None:
            return None
        try:
            return int((self.folder / "pids.current").read_text(encoding="ascii"))
        except (OSError, ValueError):
            return None

    def remove(self, wait_s: float = 5.0) -> None:
        """Remove the group once its (killed) processes are gone; it is left behind, empty of anything but
        exiting processes, if they take longer than ``wait_s``."""
        if self.folder is None:
            return
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.05)  # the killed processes are still being torn down by the kernel


def _pids_parent() -> Path | None:
    """The folder under which this process may make a ``pids`` group, or None."""
    lines = Path("/proc/self/cgroup").read_text(encoding="ascii").splitlines()
    unified = next((line.split(":", 2)[2] for line in lines if line.startswith("0::")), None)
    if unified is not None and (CGROUP_ROOT / "cgroup.controllers").is_file():
        own = CGROUP_ROOT / unified.lstrip("/")
        if "pids" in (own / "cgroup.subtree_control").read_text(encoding="ascii").split():
            return own
        if unified == "/":
            try:
                (own / "cgroup.subtree_control").write_text("+pids\n", encoding="ascii")
                return own
            except OSError:
                return None
    v1 = CGROUP_ROOT / "pids"
    for line in lines:
        number, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(",") and number != "0" and (v1 / "cgroup.procs").is_file():
            parent = v1 / path.lstrip("/")
            return parent if os.access(parent, os.W_OK) else None
    return None


# mount(2) flags: no set-uid programs, no device files on the sandbox's own data; a bind mount
MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 0x2, 0x4, 0x20, 0x1000
# New files, folders and links the budget allows: one per 8 KiB of it, at least this many.
MIN_NEW_ENTRIES = 16384
# Below this much free space the budget counts as spent (the run is flagged write-budget-exceeded).
SPENT_BELOW_BYTES = 256 * 1024


class DiskBudget:
    """One sandbox's data folder: a ``tmpfs`` of ``size`` bytes mounted at ``folder`` (``mounted``), or a
    plain folder when the machine does not let Codebox mount one (``reason`` says why)."""

    def __init__(self, folder: Path, size: int, mounted: bool, reason: str = "") -> None:
        self.folder, self.size, self.mounted, self.reason = folder, size, mounted, reason

    @classmethod
    def make(cls, folder: Path, size: int, entries: int = 0) -> DiskBudget:
        """``folder`` made, with a ``tmpfs`` of ``size`` bytes on it if possible (``size`` 0: no budget), room
        for ``entries`` files, folders and links besides what the size allows."""
        folder.mkdir(mode=0o755)
        if size <= 0:
            return cls(folder, 0, False, "no write budget (CODEBOX_SANDBOX_WRITE_BUDGET=0)")
        libc = process_libc()
        if libc is None:
            return cls(folder, size, False, "the C library's mount(2) is not available")
        # as root the mount is expected to work: the guard learns of the folder first, so a kill right after the
        # mount leaves nothing; elsewhere it learns of a mount that worked (no guard process started for nothing)
        if os.geteuid() == 0:
            mount_guard.guard(folder)
        options = _options(size, entries + _new_entries(size))
        if libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
            error = ctypes.get_errno()
            mount_guard.release(folder)
            return cls(folder, size, False, f"could not mount a size-limited tmpfs: {os.strerror(error)}")
        mount_guard.guard(folder)  # a folder is on the guard's list once, however often it is told
        return cls(folder, size, True)

    def settle(self, budget: int) -> None:
        """Once the sandbox's starting files are in: the size becomes what they use plus ``budget``, the entries
        theirs plus one per 8 KiB of ``budget``."""
        libc = process_libc()
        if not self.mounted or libc is None:
            return
        stats = os.statvfs(self.folder)
        size = (stats.f_blocks - stats.f_bfree) * stats.f_frsize + budget
        options = _options(size, stats.f_files - stats.f_ffree + _new_entries(budget))
        if libc.mount(b"tmpfs", str(self.folder).encode(), b"tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, options) == 0:
            self.size = size

    def take_in(self, copy: PrivateCopy, uid: int | None) -> Path:
        """A copy-on-write mount's private copy shown through an ``overlay`` whose upper layer is in this file
        system: what the sandbox changes there counts against the same budget, unchanged files stay on the
        host's disk (held once). The copy is the sandbox uid's (``uid``) before the overlay is made (through it, a
        ``chown`` would copy every file up). ``copy.hand_back`` binds the overlay over the copy's own folder at
        the end of the run, where capture reads it. Returns the folder to mount. Where the kernel refuses the
        overlay (a lower file system it cannot stack on), the copy is moved into the sandbox's folder as without
        a budget and :attr:`reason` says that this mount has only the per-file cap."""
        hand_over(copy.staged, uid)
        index = copy.index
        point, upper, work = (self.folder / f"{name}-{index}" for name in ("mount", "upper", "work"))
        try:
            _make_layers(copy.staged, point, upper, work)
            _mount_overlay(copy.staged, upper, work, point)
        except OSError as error:
            for folder in (point, upper, work):
                remove_tree(folder)
            self.reason = f"mounts[{index}] is outside the disk budget (per-file cap only): {error.strerror}"
            return copy.move_into(self.folder.parent)
        copy.path = point
        copy.hand_back = functools.partial(_bind_back, point, copy.staged)
        return point

    def take_in_live(self, index: int, folder: Path) -> tuple[Path, Path] | None:
        """A ``:live`` mount's folder (the user's own, already the sandbox uid's) shown through an ``overlay``
        whose upper layer is in this file system, so what the sandbox writes there counts against the same budget;
        runtime/live_mirror.py copies the upper layer into the folder. Returns the folder to mount and the upper
        layer, or None (and :attr:`reason` says so) where the kernel refuses the overlay: the folder is then
        bound as it is, with the per-file cap only. Folders of the lower layer cannot be renamed
        (``redirect_dir=off``: ``EXDEV``), so the upper layer alone says what changed."""
        point, upper, work = (self.folder / f"live-{name}-{index}" for name in ("mount", "upper", "work"))
        try:
            _make_layers(folder, point, upper, work)
            _mount_overlay(folder, upper, work, point, redirect_dir="off")
        except OSError as error:
            for made in (point, upper, work):
                remove_tree(made)
            self.reason = f"mounts[{index}] (live) is outside the disk budget (per-file cap only): {error.strerror}"
            return None
        return point, upper

    def spent(self) -> bool:
        """Whether the budget is (all but) used up."""
        if not self.mounted:
            return False
        try:
            stats = os.statvfs(self.folder)
        except OSError:
            return False
        return stats.f_bavail * stats.f_frsize < SPENT_BELOW_BYTES

    def remove(self) -> None:
        """Unmount (lazily: the memory is freed once no process holds a file in it); the folder is left
        empty for the sandbox's removal."""
        if not self.mounted:
            return
        libc = process_libc()
        if libc is not None and libc.umount2(str(self.folder).encode(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0:
            self.mounted = False
            mount_guard.release(self.folder)


def footprint(folder: Path) -> tuple[int, int]:
    """What ``folder``'s tree takes in a tmpfs before the sandbox writes anything: its bytes (each file in whole
    4 KiB pages, plus a tenth and 1 MiB of margin) and its entries (files, folders and links). Links are
    counted, never followed."""
    total, entries = 0, 1
    for root, folders, files in os.walk(folder):
        entries += len(folders) + len(files)
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += -(-info.st_size // 4096) * 4096
    return total + total // 10 + (1 << 20), entries


def _make_layers(lower: Path, point: Path, upper: Path, work: Path) -> None:
    """The mount point, scratch folder and upper layer of an overlay of ``lower``; the upper layer's top folder
    gets ``lower``'s owner and mode (the overlay's own top folder)."""
    point.mkdir()
    work.mkdir(mode=0o700)
    top = os.lstat(lower)
    upper.mkdir()
    os.chown(upper, top.st_uid, top.st_gid)
    os.chmod(upper, stat.S_IMODE(top.st_mode))


def _mount_overlay(lower: Path, upper: Path, work: Path, point: Path, redirect_dir: str = "on") -> None:
    """An ``overlay`` of ``lower`` under ``upper`` (``work``: its scratch folder, beside ``upper``) at ``point``.
    Each layer is named through a descriptor of the real folder (no link followed, no character of the path
    read as an option); ``redirect_dir=on`` lets a folder of the lower layer be renamed (else ``EXDEV``)."""
    libc = process_libc()
    if libc is None:
        raise OSError(0, "the C library's mount(2) is not available")
    fds = [
        os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC) for folder in (lower, upper, work)
    ]
    try:
        lower_fd, upper_fd, work_fd = (f"/proc/self/fd/{fd}" for fd in fds)
        options = f"lowerdir={lower_fd},upperdir={upper_fd},workdir={work_fd},redirect_dir={redirect_dir}"
        if libc.mount(b"overlay", os.fsencode(point), b"overlay", MS_NOSUID | MS_NODEV, options.encode()) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"could not mount the copy-on-write overlay at {point}: {os.strerror(error)}")
    finally:
        for fd in fds:
            os.close(fd)


def _bind_back(source: Path, mount_point: Path) -> None:
    """``source`` (a copy-on-write mount's overlay) shown at ``mount_point`` as well, through a descriptor of the
    real folder (never a link); the guard detaches it if Codebox dies before the folder is removed
    (runtime/tree_removal.py detaches it then)."""
    libc = process_libc()
    if libc is None:
        raise OSError(0, "the C library's mount(2) is not available")
    fd = os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        mount_guard.guard(mount_point)
        if libc.mount(f"/proc/self/fd/{fd}".encode(), os.fsencode(mount_point), None, MS_BIND, None) != 0:
            error = ctypes.get_errno()
            mount_guard.release(mount_point)
            raise OSError(error, f"could not bind the private copy back at {mount_point}: {os.strerror(error)}")
    finally:
        os.close(fd)


def _new_entries(budget: int) -> int:
    """How many new files, folders and links ``budget`` bytes allow: one per 8 KiB (an empty-file flood is
    bounded too), at least :data:`MIN_NEW_ENTRIES`."""
    return max(MIN_NEW_ENTRIES, budget // 8192)


def _options(size: int, inodes: int) -> bytes:
    """tmpfs options: ``size`` bytes and ``inodes`` entries."""
    return f"size={size},mode=0755,nr_inodes={inodes}".encode()
