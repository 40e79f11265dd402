"""A sandbox's host folders, for both backends: what a sandbox mounts from the host (:func:`sandbox_mounts`),
the private folders a process claims and records itself as the owner of (:func:`claim_owned_dir`), and the
sweep of those a killed process left behind (:func:`sweep_abandoned_once`, handing them to the detached reaper:
runtime/reaper.py), Playground sidecars' temp folders and logs among them.

Kept apart from runtime/playground.py so that a native run does not load the Playground backend and its Node
sidecar machinery (docs/performance.md, "Eighteenth session")."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui.errors import SandboxError
from codebox_tui.runtime.backend import SandboxSpec
from codebox_tui.runtime.confinement import readonly_area, readonly_dir
from codebox_tui.runtime.mounts import PrivateCopy, stage_readonly
from codebox_tui.runtime.reaper import OWNER_FILE, reap_in_background

# a Playground sidecar's temp folder and log (runtime/sidecar.py), named after the pid of the process that owns it
TMP_PREFIX = "codebox-sidecar-tmp-"
LOG_PREFIX = "codebox-sidecar-"


def sandbox_mounts(
    spec: SandboxSpec,
    work_dir: Path,
    report: Callable[[str, Any], None],
    place: Callable[[PrivateCopy], Path] | None = None,
    system_view: Callable[[Path, str], bool] | None = None,
) -> list[dict[str, str]]:
    """Host → sandbox mounts in order. Read-only mounts are staged copies, except one that ``system_view`` says
    the sandbox already sees read-only at the same path (a native sandbox's system folders, such as Debian's
    PHPUnit in ``/usr/share/php``): that one is passed as it is, marked ``systemView``, and bound read-only
    over the same bytes (docs/backends.md). A copy-on-write read-write
    mount (the default) mounts its private copy, moved into this sandbox's work dir (README, "Mounts"), or
    wherever ``place`` puts it (a native sandbox's size-limited file system, runtime/native_limits.py);
    only a ``live`` mount passes the user's folder itself. A read-write mount's own ``.git`` (folder, or
    a worktree's pointer file) is covered by an empty read-only one: the sandbox can neither read the
    history nor plant hooks, config or a new ``gitdir:`` that the host's git would act on later. Nothing
    else in the mount is hidden."""
    mounts: list[dict[str, str]] = []
    for index, mount in enumerate([*spec.mounts, *spec.extra_mounts]):
        source = host = Path(mount.source)
        system = mount.mode == "readonly" and system_view is not None and system_view(source, mount.target)
        if system:
            pass  # bound as it is, read-only (the same bytes the sandbox sees there anyway)
        elif mount.mode == "readonly":
            report("staging-readonly-mount", {"index": index, "target": mount.target})
            host = stage_readonly(host, readonly_dir(work_dir) / f"readonly-{index}")
        elif index < len(spec.mounts) and not mount.live:
            copy = spec.private_copies.get(index)
            if copy is None:  # never the user's folder by accident: copy-on-write needs its copy
                raise SandboxError(
                    f"mounts[{index}] ({mount.target}) has no private copy to mount", code="private-copy-missing"
                )
            host = place(copy) if place is not None else copy.move_into(work_dir)
            own_git = source / ".git"
            if not own_git.is_symlink() and (own_git.is_dir() or own_git.is_file()) and not (host / ".git").exists():
                # the copy leaves the mount's .git out; the shield below needs its mount point
                (host / ".git").mkdir() if own_git.is_dir() else (host / ".git").write_bytes(b"")
        mounts.append({"hostPath": str(host), "vfsPath": mount.target, **({"systemView": "1"} if system else {})})
        report(
            "mounting",
            {
                "index": index,
                "target": mount.target,
                "mode": mount.mode,
                "writeMode": mount.write_mode,
                **({"systemView": True} if system else {}),
            },
        )
        dot_git = source / ".git"
        if mount.mode == "readwrite" and not dot_git.is_symlink() and (dot_git.is_dir() or dot_git.is_file()):
            # a folder (a repository) or a file (a worktree's or submodule's "gitdir:" pointer)
            shield = work_dir / f"git-shield-{index}"
            if dot_git.is_dir():
                shield.mkdir(exist_ok=True)
            else:
                shield.write_bytes(b"")
            shield.chmod(0o555 if dot_git.is_dir() else 0o444)
            target = mount.target.rstrip("/") + "/.git"
            mounts.append({"hostPath": str(shield), "vfsPath": target})
            report("shielding-git-folder", {"index": index, "target": target})
    return mounts


def sandbox_written(mounts: list[dict[str, str]], work_dir: Path) -> list[Path]:
    """The host folders of ``mounts`` that Codebox made inside ``work_dir`` for the sandbox to write (private
    copies, the opcache copy), not the read-only ``.git`` shields."""
    return [
        Path(m["hostPath"])
        for m in mounts
        if Path(m["hostPath"]).parent == Path(work_dir) and not Path(m["hostPath"]).name.startswith("git-shield-")
    ]


def _owner_pid(name: str, prefix: str) -> int | None:
    head = name[len(prefix) :].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def abandoned_sidecar_files(temp_root: Path | None = None, *, unowned_age_s: float = 600.0) -> list[Path]:
    """Sidecar temp folders and logs left in the temp folder by a process that is gone (killed before
    it could close its sidecar): the owner's pid is part of each name; a name without one (an older
    Codebox) is abandoned once older than ``unowned_age_s``."""
    root = temp_root or Path(tempfile.gettempdir())
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    now = time.time()
    for entry in entries:
        if entry.name.startswith(TMP_PREFIX) and entry.is_dir(follow_symlinks=False):
            pid = _owner_pid(entry.name, TMP_PREFIX)
        elif entry.name.startswith(LOG_PREFIX) and entry.name.endswith(".log") and entry.is_file(follow_symlinks=False):
            pid = _owner_pid(entry.name, LOG_PREFIX)
        else:
            continue
        if pid is None:
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > unowned_age_s:
                    found.append(Path(entry.path))
            except OSError:
                pass
        elif pid != os.getpid() and not process_alive(pid):
            found.append(Path(entry.path))
    return found


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_swept: set[str] = set()


def abandoned_sandbox_dirs(
    sandboxes_root: Path, *, unowned_age_s: float = 600.0, prefix: str = "sandbox-"
) -> list[Path]:
    """Sandbox folders whose owning process is gone (killed before it could dispose them): the owner's
    pid is recorded in each folder; one without a record is abandoned once older than ``unowned_age_s``.
    ``prefix`` picks the kind of folder (``baselines-`` for a run's baseline packs, runtime/session.py)."""
    found = []
    try:
        entries = list(os.scandir(sandboxes_root))
    except OSError:
        return []
    now = time.time()
    for entry in entries:
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            pid = int((Path(entry.path) / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            try:
                if now - entry.stat(follow_symlinks=False).st_ctime > unowned_age_s:  # ctime: a rename counts
                    found.append(Path(entry.path))
            except OSError:
                pass
            continue
        if pid != os.getpid() and not process_alive(pid):
            found.append(Path(entry.path))
    return found


def sweep_abandoned_once(sandboxes_root: Path, prefix: str = "sandbox-") -> None:
    """Once per process, root and kind: hand abandoned folders to the detached reaper (runtime/reaper.py),
    which finishes removing them even if this process ends first (sandbox folders also take their read-only
    staging folders, and sidecar temp folders and logs, with them; a killed native sandbox's data file system
    is detached first: runtime/leftover_mounts.py)."""
    key = str(sandboxes_root)
    if key in _swept:
        return
    _swept.add(key)
    stale = abandoned_sandbox_dirs(sandboxes_root, prefix=prefix)
    if prefix == "sandbox-":
        stale += [*abandoned_sandbox_dirs(readonly_area(sandboxes_root)), *abandoned_sidecar_files()]
    if stale:
        reap_in_background(stale)


def claim_owned_dir(root: Path, prefix: str) -> Path:
    """A new private folder ``root/<prefix><random>`` that records this process as its owner, after
    sweeping (once per process) the folders of that kind whose owner was killed before removing them."""
    root.mkdir(parents=True, exist_ok=True)
    sweep_abandoned_once(root, prefix)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (path / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
    return path
