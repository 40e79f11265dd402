"""A host uid/gid of its own for every sandbox when Codebox runs as root (docs/security.md, "Running as root").

As root, a sandbox's processes drop to an unprivileged uid on the host (runtime/confinement.py). Were that uid
the same for every sandbox (``nobody``'s 65534), sandboxes would share a process count (one fork bomb would
starve the others) and each could write what another left in a ``:live`` folder. So each sandbox gets an id
of its own from :data:`FIRST_ID` on (uid and gid the same number), one that:

* no account and no group of the host has (``getpwuid`` / ``getgrgid`` find nothing);
* no other live sandbox on the machine has: each id taken is an exclusive ``flock`` on a file named after it
  in :data:`LOCKS_DIR` (one folder for the whole machine, whatever ``CODEBOX_HOME``), held while the sandbox
  lives and released by closing it, so a process that dies releases its ids by itself;
* no process runs as (checked with the lock held: a process of an id whose lock was released, still ending,
  keeps it taken).

The lock folder is root's and ``0700``; one that is not (planted by someone else) is refused.
"""

from __future__ import annotations

import errno
import fcntl
import grp
import os
import pwd
import stat
from pathlib import Path

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.confinement import drops_to_sandbox_uid

# Far above the ids accounts and subordinate ranges use (useradd's defaults stop below 2**31 - 1 too).
FIRST_ID = 2_000_000_000
ID_COUNT = 100_000
LOCKS_DIR = Path("/run/codebox-sandbox-ids")


class SandboxId:
    """One id taken for a sandbox (its uid and gid on the host) until :meth:`release`."""

    def __init__(self, number: int, lock_fd: int) -> None:
        self.uid = number
        self.gid = number
        self._fd: int | None = lock_fd

    def share(self) -> SandboxId:
        """Another hold on the same id (a sidecar that outlives the run that took it): the id stays taken until
        every hold is released."""
        if self._fd is None:
            raise ValueError(f"sandbox id {self.uid} was released")
        return SandboxId(self.uid, os.dup(self._fd))

    def release(self) -> None:
        """Give the id up (idempotent). Only once its sandbox's processes are gone."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __repr__(self) -> str:
        return f"SandboxId({self.uid})"


def host_uid(sandbox_id: SandboxId | None) -> int | None:
    return sandbox_id.uid if sandbox_id is not None else None


def _locks_dir_fd(folder: Path) -> int:
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise SandboxError(
            f"cannot open the sandbox id locks folder {folder}: {error.strerror or error}",
            code="confinement-unavailable",
            details={"hint": f"{folder} must be a folder root can create"},
        ) from error
    info = os.fstat(fd)
    if info.st_uid != 0 or stat.S_IMODE(info.st_mode) & 0o077:
        os.close(fd)
        raise SandboxError(
            f"the sandbox id locks folder {folder} is not root's alone (owner {info.st_uid}, "
            f"mode {stat.S_IMODE(info.st_mode):o}); expected root's, mode 700",
            code="confinement-unavailable",
            details={"hint": f"remove {folder}; Codebox makes it again"},
        )
    return fd


def _has_account(number: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(number)
        except KeyError:
            continue
        return True
    return False


def ids_of_processes() -> set[int]:
    """Every real, effective, saved and file-system uid and gid of a process on the host (from ``/proc``)."""
    ids: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as status:
                for line in status:
                    if line.startswith((b"Uid:", b"Gid:")):
                        ids.update(int(field) for field in line.split()[1:])
        except OSError:  # ended meanwhile
            continue
    return ids


def allocate(locks_dir: Path = LOCKS_DIR) -> SandboxId | None:
    """An id no account, process or other live sandbox on the machine has (``None`` when Codebox does not run as
    root: the user namespace maps the sandbox to the caller)."""
    if not drops_to_sandbox_uid():
        return None
    dir_fd = _locks_dir_fd(locks_dir)
    try:
        running: set[int] | None = None
        for number in range(FIRST_ID, FIRST_ID + ID_COUNT):
            if _has_account(number):
                continue
            fd = os.open(
                str(number), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600, dir_fd=dir_fd
            )
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                os.close(fd)
                if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue  # another live sandbox's
                raise
            if running is None:
                running = ids_of_processes()
            if number in running:  # released, but its last processes still end
                os.close(fd)
                continue
            return SandboxId(number, fd)
    finally:
        os.close(dir_fd)
    raise SandboxError(
        f"no free sandbox id among {ID_COUNT} (from {FIRST_ID}): too many live sandboxes",
        code="confinement-unavailable",
    )
