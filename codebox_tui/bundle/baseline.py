"""Baselines of read-write mounts, taken before boot: the git ``HEAD`` tree when the mount is the top
of a git work tree, otherwise a snapshot copy."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from codebox_tui.bundle.diff import SKIPPED_DIRS
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


def _snapshot(source: Path, dest: Path) -> dict[str, str]:
    """Copy content and permission bits (not timestamps/xattrs: never compared, ~10x the cost per
    file), hashing each regular file on the way; symlinks are copied as links, never followed."""
    hashes: dict[str, str] = {}

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIPPED_DIRS}

    def copy(src: str, dst: str) -> str:
        digest = hashlib.sha256()
        with open(src, "rb") as reader, open(dst, "wb") as writer:
            while chunk := reader.read(1 << 20):
                digest.update(chunk)
                writer.write(chunk)
        shutil.copymode(src, dst)
        hashes[os.path.relpath(dst, dest).replace(os.sep, "/")] = digest.hexdigest()
        return dst

    shutil.copytree(source, dest, symlinks=True, ignore=ignore, copy_function=copy)
    return hashes


def take_baselines(mounts: list[MountSpec], scratch_dir: Path) -> list[Baseline]:
    """One baseline per read-write mount that captures artifacts."""
    baselines = []
    for index, mount in enumerate(mounts):
        if mount.mode != "readwrite" or not mount.captureArtifacts:
            continue
        source = Path(mount.source).resolve()
        dest = scratch_dir / f"baseline-{index}"
        explicit = mount.metadata.get("baselineSource")
        if isinstance(explicit, str) and os.path.isdir(explicit):
            hashes = _snapshot(Path(explicit), dest)
            strategy = "baseline-source"
        elif _git_toplevel(source) == source:
            strategy = _git_head_tree(source, dest)
            hashes = {}
        else:
            hashes = _snapshot(source, dest)
            strategy = "snapshot"
        baselines.append(Baseline(index, source, mount.target, strategy, dest, hashes))
    return baselines
