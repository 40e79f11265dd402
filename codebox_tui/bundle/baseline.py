"""Baselines of read-write mounts, taken before boot: exactly what the sandbox is given, a snapshot of
the folder's regular files (its own ``.git`` left out, as the private copy leaves it out). A git work
tree is no exception: its untracked files, ignored folders (a Composer ``vendor/``, build output) and
uncommitted edits reach the sandbox, so a baseline of ``HEAD`` would blame them on the sandbox (README,
"Mounts"). For a copy-on-write mount (the default) the same step makes the private copy the sandbox will
work on (``private_copy.py``), and the baseline then describes that copy: capture reads the copy, never
the user's folder."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle.diff import (
    Entry,
    SkippedSignature,
    list_tree,
    stat_signature,
)
from codebox_tui.bundle.private_copy import CopiedTree, copy_tree
from codebox_tui.contracts.runtime import MountSpec


@dataclass(frozen=True)
class Baseline:
    mount_index: int
    source: Path
    target: str
    strategy: str  # "snapshot" | "baseline-source"
    # The baseline's bytes, one file after another in a single pack file (``index``: path -> offset,
    # size). One file instead of a copy per file: creating thousands of files is what made baselines
    # slow (0.4 ms+ each on a busy ext4), reading them back is one pread each.
    pack: Path
    index: dict[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    # sha256 of each file's baseline bytes, computed while packing: capture then reads only the live
    # side of a file whose size and mode are unchanged.
    hashes: dict[str, str] = field(default_factory=dict, compare=False)
    # The baseline's regular files (mode, size), and the source's stat signature for files whose
    # signature is trustworthy (see ``_pack_tree``): a live file with the same signature has not been
    # written since.
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


@dataclass
class _Packed:
    index: dict[str, tuple[int, int]] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    entries: dict[str, Entry] = field(default_factory=dict)
    signatures: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)


# Filesystem timestamps are coarse (a clock tick, or seconds on some filesystems): a file whose ctime
# is this close to the start of the snapshot might be written again within the same tick without its
# signature changing, so its signature is not recorded and capture hashes it instead.
_RACY_MARGIN_NS = 2_000_000_000


def _pack_tree(source: Path, files: Iterable[str], pack: Path, threshold: int) -> _Packed:
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


def _pack_private_copy(
    source: Path, copy: Path, exclude: frozenset[str], pack: Path, threshold: int
) -> tuple[_Packed, CopiedTree]:
    """Make the private copy, then pack the baseline from the copy itself: the baseline is then exactly
    the bytes the sandbox is given, even for a file the user saved while the copy was being made.

    Trust (see ``_pack_tree``) comes from the user's file: a copy's signature is recorded only when the
    source was unchanged while it was copied and last written before ``threshold``, and the copy still
    has the signature it was made with (nothing but this step writes the private copy before boot)."""
    copied = copy_tree(source, copy, exclude=exclude)
    packed = _pack_tree(copy, copied.files, pack, threshold)
    packed.signatures = {}
    for rel, (source_sig, copy_sig) in copied.files.items():
        if source_sig is None or rel not in packed.index or max(source_sig[2], source_sig[3]) >= threshold:
            continue
        try:
            now = stat_signature(os.lstat(f"{copy}/{rel}"))
        except OSError:
            continue
        if now == copy_sig:
            packed.signatures[rel] = copy_sig
    packed.unreadable |= copied.unreadable
    return packed, copied


def take_baselines(mounts: list[MountSpec], scratch_dir: Path, copies: dict[int, Path] | None = None) -> list[Baseline]:
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
        threshold = time.time_ns() - _RACY_MARGIN_NS  # before anyone looks at the folder
        explicit = mount.metadata.get("baselineSource")
        copied: CopiedTree | None = None
        if index in copies and not isinstance(explicit, str):
            # a git work tree too: its untracked files, ignored folders (vendor/, build output) and
            # uncommitted edits are in the copy, so they are part of the baseline, never "added"
            packed, copied = _pack_private_copy(source, copies[index], exclude, pack, threshold)
            strategy, skipped_dirs = "snapshot", copied.inside_skipped
        else:
            live = list_tree(source, track_skipped=True, exclude=exclude)
            skipped_dirs = live.inside_skipped
            if isinstance(explicit, str) and os.path.isdir(explicit):
                # the signatures describe the explicit source, not the live mount: never use them
                packed = _pack_tree(Path(explicit), list_tree(Path(explicit)).files, pack, threshold)
                packed.signatures = {}
                strategy = "baseline-source"
            else:  # a live mount: the folder as the sandbox will find it
                packed = _pack_tree(source, live.files, pack, threshold)
                strategy = "snapshot"
            if index in copies:  # an explicit baseline source: the copy is still what the sandbox gets
                copied = copy_tree(source, copies[index], exclude=exclude)
                packed.signatures = {}
                packed.unreadable |= copied.unreadable
                skipped_dirs = copied.inside_skipped
        result_dir: Path | None = copies[index] if copied is not None else None
        not_copied = tuple(copied.not_copied) if copied is not None else ()
        baselines.append(
            Baseline(
                index,
                source,
                mount.target,
                strategy,
                pack,
                packed.index,
                packed.hashes,
                packed.entries,
                packed.signatures,
                skipped_dirs,
                exclude,
                frozenset(packed.unreadable),
                result_dir,
                "copy-on-write" if index in copies else "live",
                not_copied,
            )
        )
    return baselines


def _own_git(source: Path) -> frozenset[str]:
    """``{".git"}`` when the mount has its own ``.git`` (folder or ``gitdir:`` file), else empty."""
    dot_git = source / ".git"
    return frozenset({".git"}) if dot_git.exists() and not dot_git.is_symlink() else frozenset()
