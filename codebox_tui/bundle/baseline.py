"""Baselines of read-write mounts, taken before boot: the git ``HEAD`` tree when the mount is the top
of a git work tree, otherwise a snapshot copy."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle.diff import (
    SKIPPED_DIRS,
    Entry,
    SkippedSignature,
    list_tree,
    stat_signature,
)
from codebox_tui.contracts.runtime import MountSpec


@dataclass(frozen=True)
class Baseline:
    mount_index: int
    source: Path
    target: str
    strategy: str  # "git-head" | "git-empty" | "snapshot"
    directory: Path
    # sha256 of each regular file's baseline bytes, recorded while copying (snapshot strategies
    # only): capture then reads only the live side of a file whose size and mode are unchanged.
    hashes: dict[str, str] = field(default_factory=dict, compare=False)
    # The baseline's regular files (mode, size) so capture need not re-walk the private copy, and the
    # source's stat signature for files whose signature is trustworthy (snapshots: see ``_snapshot``;
    # git: files git reported clean, see ``_git_clean_signatures``): a live file with the same signature
    # has not been written since.
    entries: dict[str, Entry] | None = field(default=None, compare=False)
    signatures: dict[str, tuple[int, int, int, int]] = field(default_factory=dict, compare=False)
    # Stat signatures of everything inside folders whose contents are never captured (.git,
    # node_modules) so that changes there are still reported; None: not tracked (too many entries).
    skipped_dirs: dict[str, SkippedSignature] | None = field(default=None, compare=False)
    skipped_exclude: frozenset[str] = field(default=frozenset(), compare=False)


def _git_toplevel(path: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return Path(out.stdout.strip()).resolve()


def _git_head_tree(source: Path, dest: Path) -> str:
    dest.mkdir(parents=True)
    has_head = (
        subprocess.run(
            ["git", "-C", str(source), "rev-parse", "--verify", "-q", "HEAD"], capture_output=True, timeout=30
        ).returncode
        == 0
    )
    if not has_head:
        return "git-empty"
    archive = subprocess.run(
        ["git", "-C", str(source), "archive", "--format=tar", "HEAD"], capture_output=True, timeout=300, check=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="tar")
    return "git-head"


# Filesystem timestamps are coarse (a clock tick, or seconds on some filesystems): a file whose ctime
# is this close to the start of the snapshot might be written again within the same tick without its
# signature changing, so its signature is not recorded and capture hashes it instead.
_RACY_MARGIN_NS = 2_000_000_000


@dataclass
class _Snapshot:
    hashes: dict[str, str] = field(default_factory=dict)
    entries: dict[str, Entry] = field(default_factory=dict)
    signatures: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)


def _snapshot(source: Path, dest: Path) -> _Snapshot:
    """Copy content and permission bits (not timestamps/xattrs: never compared, ~10x the cost per
    file), hashing each regular file on the way; symlinks are copied as links, never followed.

    Why a recorded signature is safe to trust later: any write to a file, chmod, rename over it or
    truncate sets its ctime to "now", and ctime cannot be set from user space (``touch``/``utime``
    only set atime/mtime and themselves bump ctime). A signature is recorded only when the file's
    ctime, taken after the copy, is older than the snapshot's start minus a margin, so the bytes
    copied are the bytes the file had, and any later change (by the sandbox or anyone else) yields a
    ctime at or after the start, i.e. a different signature. Inode and device catch a file replaced
    by another. The only ways around it need root (setting the system clock back, raw disk edits)."""
    snap = _Snapshot()
    threshold = time.time_ns() - _RACY_MARGIN_NS

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIPPED_DIRS}

    def copy(src: str, dst: str) -> str:
        if not stat.S_ISREG(os.lstat(src).st_mode):
            return dst  # FIFOs, sockets, devices: never opened (capture reports them from the live side)
        digest = hashlib.sha256()
        size = 0
        with open(src, "rb") as reader, open(dst, "wb") as writer:
            while chunk := reader.read(1 << 20):
                digest.update(chunk)
                writer.write(chunk)
                size += len(chunk)
            info = os.fstat(reader.fileno())
        os.chmod(dst, stat.S_IMODE(info.st_mode))
        rel = os.path.relpath(dst, dest).replace(os.sep, "/")
        snap.hashes[rel] = digest.hexdigest()
        if stat.S_ISREG(info.st_mode):
            snap.entries[rel] = Entry(rel, "100755" if info.st_mode & 0o111 else "100644", size)
            if info.st_ctime_ns < threshold and info.st_mtime_ns < threshold and info.st_size == size:
                snap.signatures[rel] = stat_signature(info)
        return dst

    shutil.copytree(source, dest, symlinks=True, ignore=ignore, copy_function=copy)
    return snap


def _git_clean_signatures(
    source: Path, head: dict[str, Entry], live: dict[str, Entry], threshold: int
) -> dict[str, tuple[int, int, int, int]]:
    """Stat signatures of work-tree files that git reports clean (identical to ``HEAD``), taken before
    boot while the mount's ``.git`` is still the user's own. Capture skips such a file when its signature
    is unchanged, exactly as for a snapshot (see ``_snapshot``): any later write, chmod or replacement
    changes ctime or inode. Untracked, ignored, modified and recently written files get no signature and
    are compared byte for byte. If git cannot say, nothing is trusted."""
    try:
        out = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain=v1", "-z", "--no-renames",
             "--untracked-files=all", "--ignored=matching"],
            capture_output=True, timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}
    dirty: set[str] = set()
    dirty_dirs: list[str] = []
    for item in out.stdout.split(b"\0"):
        if len(item) < 4:
            continue
        path = os.fsdecode(item[3:])
        if path.endswith("/"):
            dirty_dirs.append(path)
        else:
            dirty.add(path)
    signatures: dict[str, tuple[int, int, int, int]] = {}
    for rel, entry in live.items():
        base = head.get(rel)
        if base is None or entry.sig is None or rel in dirty or base.size != entry.size or base.mode != entry.mode:
            continue
        if dirty_dirs and any(rel.startswith(prefix) for prefix in dirty_dirs):
            continue
        _ino, _dev, mtime_ns, ctime_ns = entry.sig
        if ctime_ns < threshold and mtime_ns < threshold:
            signatures[rel] = entry.sig
    return signatures


def take_baselines(mounts: list[MountSpec], scratch_dir: Path) -> list[Baseline]:
    """One baseline per read-write mount that captures artifacts."""
    baselines = []
    for index, mount in enumerate(mounts):
        if mount.mode != "readwrite" or not mount.captureArtifacts:
            continue
        source = Path(mount.source).resolve()
        dest = scratch_dir / f"baseline-{index}"
        # the mount's own .git is covered read-only in the sandbox (runtime/playground.py): not walked
        exclude = frozenset({".git"}) if (source / ".git").exists() and not (source / ".git").is_symlink() \
            else frozenset()
        threshold = time.time_ns() - _RACY_MARGIN_NS  # before git (or anyone) looks at the work tree
        live = list_tree(source, track_skipped=True, exclude=exclude)
        tracked = live.inside_skipped
        explicit = mount.metadata.get("baselineSource")
        if isinstance(explicit, str) and os.path.isdir(explicit):
            # the signatures describe the explicit source, not the live mount: never use them
            snap = _snapshot(Path(explicit), dest)
            snap.signatures = {}
            strategy = "baseline-source"
        elif _git_toplevel(source) == source:
            strategy = _git_head_tree(source, dest)
            head = list_tree(dest).files
            signatures = _git_clean_signatures(source, head, live.files, threshold) if strategy == "git-head" else {}
            baselines.append(Baseline(index, source, mount.target, strategy, dest, {}, head, signatures,
                                      tracked, exclude))
            continue
        else:
            snap = _snapshot(source, dest)
            strategy = "snapshot"
        baselines.append(
            Baseline(index, source, mount.target, strategy, dest, snap.hashes, snap.entries, snap.signatures,
                     tracked, exclude)
        )
    return baselines
