"""The native sandbox's whole-sandbox bounds (docs/backends.md, "The native wall"): a process budget and a
disk budget, both kept by the kernel.

**Processes.** Every process of one sandbox — its commands, its page-request worker and every child they
start — counts against one kernel limit, so a fork bomb stops at :data:`MAX_PROCESSES` instead of filling
the machine.

``RLIMIT_NPROC`` cannot do this when Codebox runs as root: the sandbox's uid 65534 is root outside its user
namespace, and the kernel exempts root from that limit. A ``pids`` control group can: the kernel counts
every task in it, whoever owns them. One is made per sandbox, where the machine lets Codebox make one:

* cgroup v2: a child of Codebox's own group, when that group delegates the ``pids`` controller (or Codebox
  sits in the root group and can enable it there);
* cgroup v1: a child of Codebox's group in the ``pids`` hierarchy.

Each confined process joins the group before it starts (:meth:`ProcessCap.wrap`: a shell moves itself in,
then becomes the process), so nothing it forks is ever outside. Where no group can be made, :attr:`reason`
says why and the sandbox runs without the cap (bounded then only by the command's timeout, its CPU limit
and the kernel's own limits).

**Disk.** The sandbox's own writable data (its ``wp-content`` with the database, its ``/tmp`` and its
compiled-script cache) lives in one size-limited ``tmpfs`` mounted on the host (:class:`DiskBudget`): many
files, each under the per-file cap, still stop at the budget, where writes fail with "No space left on
device". Mounting needs root on the host; where Codebox cannot mount, :attr:`DiskBudget.reason` says why
and only the per-file cap holds. The mount does not outlive the Codebox process, however it ends: a guard
process detaches it then (runtime/mount_guard.py). Read-write mounts (private copies the run moves in and out
by renaming) stay on the host's disk under the per-file cap only.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

from codebox_tui.runtime import mount_guard
from codebox_tui.runtime.leftover_mounts import MNT_DETACH, UMOUNT_NOFOLLOW, process_libc

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


# mount(2) flags: no set-uid programs, no device files on the sandbox's own data
MS_NOSUID, MS_NODEV, MS_REMOUNT = 0x2, 0x4, 0x20
# Below this much free space the budget counts as spent (the run is flagged write-budget-exceeded).
SPENT_BELOW_BYTES = 256 * 1024


class DiskBudget:
    """One sandbox's data folder: a ``tmpfs`` of ``size`` bytes mounted at ``folder`` (``mounted``), or a
    plain folder when the machine does not let Codebox mount one (``reason`` says why)."""

    def __init__(self, folder: Path, size: int, mounted: bool, reason: str = "") -> None:
        self.folder, self.size, self.mounted, self.reason = folder, size, mounted, reason

    @classmethod
    def make(cls, folder: Path, size: int) -> DiskBudget:
        """``folder`` made, with a ``tmpfs`` of ``size`` bytes on it if possible (``size`` 0: no budget)."""
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
        if libc.mount(b"tmpfs", str(folder).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, _options(size)) != 0:
            error = ctypes.get_errno()
            mount_guard.release(folder)
            return cls(folder, size, False, f"could not mount a size-limited tmpfs: {os.strerror(error)}")
        mount_guard.guard(folder)  # a folder is on the guard's list once, however often it is told
        return cls(folder, size, True)

    def settle(self, budget: int) -> None:
        """Once the sandbox's starting files are in: the size becomes what they use plus ``budget``."""
        libc = process_libc()
        if not self.mounted or libc is None:
            return
        stats = os.statvfs(self.folder)
        size = (stats.f_blocks - stats.f_bfree) * stats.f_frsize + budget
        if (
            libc.mount(b"tmpfs", str(self.folder).encode(), b"tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, _options(size))
            == 0
        ):
            self.size = size

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


def _options(size: int) -> bytes:
    """tmpfs options: ``size`` bytes, and one inode per 8 KiB of it (an empty-file flood is bounded too)."""
    return f"size={size},mode=0755,nr_inodes={max(16384, size // 8192)}".encode()
