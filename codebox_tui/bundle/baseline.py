"""Baselines of read-write mounts, taken before boot: the git ``HEAD`` tree when the mount is the top
of a git work tree, otherwise a snapshot copy. For a copy-on-write mount (the default; README,
"Mounts") the same step makes the private copy the sandbox will work on (``private_copy.py``), and the
baseline then describes that copy: capture reads the copy, never the user's folder."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle.diff import (
    SKIPPED_DIRS,
    Entry,
    SkippedSignature,
    list_tree,
    stat_signature,
)
from codebox_tui.bundle.hostgit import HostGit
from codebox_tui.bundle.private_copy import copy_tree
from codebox_tui.contracts.runtime import MountSpec


@dataclass(frozen=True)
class Baseline:
    mount_index: int
    source: Path
    target: str
    strategy: str  # "git-head" | "git-empty" | "snapshot" | "baseline-source"
    # The baseline's bytes, one file after another in a single pack file (``index``: path -> offset,
    # size). One file instead of a copy per file: creating thousands of files is what made baselines
    # slow (0.4 ms+ each on a busy ext4), reading them back is one pread each.
    pack: Path
    index: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    # sha256 of each file's baseline bytes, computed while packing: capture then reads only the live
    # side of a file whose size and mode are unchanged.
    hashes: dict[str, str] = field(default_factory=dict, compare=False)
    # The baseline's regular files (mode, size), and the source's stat signature for files whose
    # signature is trustworthy (snapshots: see ``_pack_tree``; git: files git reported clean, see
    # ``_git_clean_signatures``): a live file with the same signature has not been written since.
    entries: dict[str, Entry] = field(default_factory=dict, compare=False)
    signatures: dict[str, tuple[int, int, int, int]] = field(default_factory=dict, compare=False)
    # Stat signatures of everything inside folders whose contents are never captured (.git,
    # node_modules) so that changes there are still reported; None: not tracked (too many entries).
    skipped_dirs: dict[str, SkippedSignature] | None = field(default=None, compare=False)
    skipped_exclude: frozenset[str] = field(default=frozenset(), compare=False)
    # Files that could not be read when the baseline was taken (capture reports them, never guesses).
    unreadable: frozenset[str] = field(default=frozenset(), compare=False)
    # Where capture reads the sandbox's result: the private copy of a copy-on-write mount, or the
    # user's folder itself for a live mount (None: ``source``).
    live: Path | None = field(default=None, compare=False)
    write_mode: str = field(default="live", compare=False)  # "copy-on-write" | "live"
    # entries of the user's folder the private copy left out: (rel, "symlink" | "special-file")
    not_copied: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def result_dir(self) -> Path:
        """The folder holding what the sandbox left: the private copy, or the live folder."""
        return self.live if self.live is not None else self.source

    @contextmanager
    def reader(self) -> Iterator[Callable[[str], bytes]]:
        """``read(rel)``: a baseline file's bytes (KeyError if the baseline has no such file)."""
        fd = os.open(self.pack, os.O_RDONLY)
        try:
            def read(rel: str) -> bytes:
                offset, size = self.index[rel]
                data = os.pread(fd, size, offset)
                if len(data) != size:
                    raise OSError(f"baseline pack {self.pack} is truncated at {rel}")
                return data

            yield read
        finally:
            os.close(fd)


def _git(source: Path, *args: str, timeout: float = 300, stdin: bytes | None = None) -> bytes:
    # every host git goes through bundle/hostgit.py: the mount's repository may have been written by a
    # sandbox, and git must not run its hooks, fsmonitor or filter programs (docs/security-host.md)
    return HostGit(source).output(*args, input=stdin, timeout=timeout)


def _git_toplevel(path: Path) -> Path | None:
    try:
        out = _git(path, "rev-parse", "--show-toplevel", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(os.fsdecode(out.strip())).resolve()


@dataclass
class _Packed:
    index: dict[str, tuple[int, int]] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    entries: dict[str, Entry] = field(default_factory=dict)
    signatures: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)


def _git_head_pack(source: Path, pack: Path, live: dict[str, Entry] | None = None) -> tuple[str, _Packed]:
    """The work tree as ``HEAD`` checks it out, packed: ``git archive`` gives the checked-out bytes
    (end-of-line conversion applied) as one tar stream, which *is* the pack (the index points at each
    member's data). Files ``git archive`` leaves out or rewrites for export (``export-ignore``,
    ``export-subst``: common in WordPress plugins for tests/ and version strings) are taken from the
    object store instead, so they are not reported as added or modified.

    Host git never runs a filter driver (``bundle/hostgit.py``: the repository may have been written by a
    sandbox), so a file with a ``filter`` attribute (git-lfs, say) is taken from the work tree as it is
    before boot when ``live`` lists it as a regular file (``list_tree`` never follows links), else from
    the object store."""
    packed = _Packed()
    git = HostGit(source)
    if git.run("rev-parse", "--verify", "-q", "HEAD", timeout=30).returncode != 0:
        pack.write_bytes(b"")
        return "git-empty", packed
    tree: dict[str, tuple[str, str]] = {}  # rel -> (mode, blob id), regular files only
    for record in git.output("ls-tree", "-r", "-z", "--full-tree", "HEAD").split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        rel = os.fsdecode(raw_path)
        # like the live side (diff.list_tree), never-captured folders are not compared file by file: a
        # committed node_modules/ would otherwise read as deleted
        if kind == "blob" and mode in ("100644", "100755") and SKIPPED_DIRS.isdisjoint(rel.split("/")[:-1]):
            tree[rel] = (mode, oid)
    with pack.open("wb") as handle:
        archive = git.run("archive", "--format=tar", "HEAD", stdout=handle, timeout=300)
    if archive.returncode != 0:
        raise OSError(f"git archive failed in {source}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(pack) as tar:
        members = {m.name: (m.offset_data, m.size) for m in tar if m.isreg() and m.name in tree}
    rewritten: set[str] = set()
    filtered: set[str] = set()
    if tree:
        listing = "\0".join(tree).encode() + b"\0"
        attrs = git.output("check-attr", "-z", "--stdin", "export-subst", "filter", input=listing).split(b"\0")
        for i in range(0, len(attrs) - 2, 3):
            if attrs[i + 2] not in (b"unspecified", b"unset"):
                (filtered if attrs[i + 1] == b"filter" else rewritten).add(os.fsdecode(attrs[i]))
    from_worktree = {rel: data for rel in sorted(filtered) if live is not None and rel in live
                     and (data := _read_regular_nofollow(source, rel)) is not None}
    rewritten |= set(from_worktree)
    from_objects = [rel for rel in tree if (rel not in members or rel in rewritten) and rel not in from_worktree]
    with open(pack, "rb") as reader:
        for rel, (offset, size) in members.items():
            if rel in rewritten:
                continue
            reader.seek(offset)
            data = reader.read(size)
            packed.index[rel] = (offset, size)
            packed.hashes[rel] = hashlib.sha256(data).hexdigest()
    if from_objects:
        blobs = git.output("cat-file", "--batch", input="".join(tree[rel][1] + "\n" for rel in from_objects).encode())
        with pack.open("ab") as handle:
            at, end = 0, handle.tell()
            for rel in from_objects:
                header_end = blobs.index(b"\n", at)
                _oid, _kind, size_text = blobs[at:header_end].split()
                size = int(size_text)
                data = blobs[header_end + 1:header_end + 1 + size]
                at = header_end + 1 + size + 1
                handle.write(data)
                packed.index[rel] = (end, size)
                packed.hashes[rel] = hashlib.sha256(data).hexdigest()
                end += size
    if from_worktree:
        with pack.open("ab") as handle:
            end = handle.tell()
            for rel, data in from_worktree.items():
                handle.write(data)
                packed.index[rel] = (end, len(data))
                packed.hashes[rel] = hashlib.sha256(data).hexdigest()
                end += len(data)
    for rel in sorted(packed.index):
        packed.entries[rel] = Entry(rel, tree[rel][0], packed.index[rel][1])
    return "git-head", packed


def _read_regular_nofollow(source: Path, rel: str) -> bytes | None:
    """A work-tree file's bytes (a regular file, never through a link at its last component; ``rel``
    comes from a listing that did not descend links), or None."""
    try:
        fd = os.open(f"{source}/{rel}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            return handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)


# Filesystem timestamps are coarse (a clock tick, or seconds on some filesystems): a file whose ctime
# is this close to the start of the snapshot might be written again within the same tick without its
# signature changing, so its signature is not recorded and capture hashes it instead.
_RACY_MARGIN_NS = 2_000_000_000


def _pack_tree(source: Path, files: dict[str, Entry], pack: Path, threshold: int) -> _Packed:
    """Pack the bytes of ``files`` (a ``list_tree`` listing of ``source``: regular files only; symlinks
    and special files are never opened), hashing each on the way.

    Why a recorded signature is safe to trust later: any write to a file, chmod, rename over it or
    truncate sets its ctime to "now", and ctime cannot be set from user space (``touch``/``utime``
    only set atime/mtime and themselves bump ctime). A signature is recorded only when the file's
    ctime, taken after reading it, is older than the snapshot's start minus a margin, so the bytes
    packed are the bytes the file had, and any later change (by the sandbox or anyone else) yields a
    ctime at or after the start, i.e. a different signature. Inode and device catch a file replaced
    by another. The only ways around it need root (setting the system clock back, raw disk edits)."""
    packed = _Packed()
    root = str(source)
    offset = 0
    with pack.open("wb", buffering=1 << 20) as out:
        for rel in files:
            digest = hashlib.sha256()
            size = 0
            try:
                fd = os.open(f"{root}/{rel}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                with open(fd, "rb", buffering=0) as reader:
                    info = os.fstat(reader.fileno())
                    if not stat.S_ISREG(info.st_mode):
                        continue  # replaced by something else since the listing: capture sees it live
                    while chunk := reader.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
                    info = os.fstat(reader.fileno())
            except OSError:
                packed.unreadable.add(rel)
                continue
            packed.index[rel] = (offset, size)
            offset += size
            packed.hashes[rel] = digest.hexdigest()
            packed.entries[rel] = Entry(rel, "100755" if info.st_mode & 0o111 else "100644", size)
            if info.st_ctime_ns < threshold and info.st_mtime_ns < threshold and info.st_size == size:
                packed.signatures[rel] = stat_signature(info)
    return packed


def _git_clean_signatures(
    source: Path, head: dict[str, Entry], live: dict[str, Entry], threshold: int
) -> dict[str, tuple[int, int, int, int]]:
    """Stat signatures of work-tree files that git reports clean (identical to ``HEAD``), taken before
    boot while the mount's ``.git`` is still the user's own. Capture skips such a file when its signature
    is unchanged, exactly as for a snapshot (see ``_pack_tree``): any later write, chmod or replacement
    changes ctime or inode. Untracked, ignored, modified and recently written files get no signature and
    are compared byte for byte. If git cannot say, nothing is trusted."""
    try:
        out = HostGit(source).run("status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all",
                                  "--ignored=matching", "--ignore-submodules=all", timeout=300)
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


def take_baselines(mounts: list[MountSpec], scratch_dir: Path,
                   copies: dict[int, Path] | None = None) -> list[Baseline]:
    """One baseline per read-write mount that captures artifacts. ``copies``: mount index → where to
    make the private copy of a copy-on-write mount (a path that does not exist yet); every such mount
    gets one, whether it captures artifacts or not."""
    baselines = []
    scratch_dir.mkdir(parents=True, exist_ok=True)
    copies = copies or {}
    for index, mount in enumerate(mounts):
        if mount.mode != "readwrite":
            continue
        if not mount.captureArtifacts:
            if index in copies:
                source = Path(mount.source).resolve()
                copy_tree(source, copies[index], exclude=_own_git(source))
            continue
        source = Path(mount.source).resolve()
        pack = scratch_dir / f"baseline-{index}.pack"
        # the mount's own .git is covered read-only in the sandbox (runtime/playground.py): not walked
        exclude = _own_git(source)
        threshold = time.time_ns() - _RACY_MARGIN_NS  # before git (or anyone) looks at the work tree
        live = list_tree(source, track_skipped=True, exclude=exclude)
        explicit = mount.metadata.get("baselineSource")
        packed: _Packed | None = None
        if isinstance(explicit, str) and os.path.isdir(explicit):
            # the signatures describe the explicit source, not the live mount: never use them
            packed = _pack_tree(Path(explicit), list_tree(Path(explicit)).files, pack, threshold)
            packed.signatures = {}
            strategy = "baseline-source"
        elif _git_toplevel(source) == source:
            try:
                strategy, packed = _git_head_pack(source, pack, live.files)
            except (OSError, subprocess.TimeoutExpired, tarfile.TarError, ValueError):
                packed = None  # git cannot give HEAD's tree (broken repo, missing filter): snapshot instead
            if packed is not None and strategy == "git-head":
                packed.signatures = _git_clean_signatures(source, packed.entries, live.files, threshold)
        if packed is None:
            packed = _pack_tree(source, live.files, pack, threshold)
            strategy = "snapshot"
        skipped_dirs = live.inside_skipped
        result_dir: Path | None = None
        not_copied: tuple[tuple[str, str], ...] = ()
        if index in copies:
            copied = copy_tree(source, copies[index], exclude=exclude)
            # trust moves to the copy only where the copy was made from the very file the baseline trusted
            packed.signatures = {
                rel: copy_sig for rel, (source_sig, copy_sig) in copied.files.items()
                if source_sig is not None and packed.signatures.get(rel) == source_sig
            }
            skipped_dirs = copied.inside_skipped
            packed.unreadable |= copied.unreadable
            result_dir, not_copied = copies[index], tuple(copied.not_copied)
        baselines.append(
            Baseline(index, source, mount.target, strategy, pack, packed.index, packed.hashes, packed.entries,
                     packed.signatures, skipped_dirs, exclude, frozenset(packed.unreadable),
                     result_dir, "copy-on-write" if index in copies else "live", not_copied)
        )
    return baselines


def _own_git(source: Path) -> frozenset[str]:
    """``{".git"}`` when the mount has its own ``.git`` (folder or ``gitdir:`` file), else empty."""
    dot_git = source / ".git"
    return frozenset({".git"}) if dot_git.exists() and not dot_git.is_symlink() else frozenset()
