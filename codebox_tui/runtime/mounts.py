"""Mount parsing and validation (before anything boots), and read-only staging.

Read-only mounts are copied into a private staging folder whose files and folders carry no write
permission. Playground's file system honours those modes, so a write inside the sandbox fails
(``file_put_contents`` returns false, ``unlink``/``mkdir`` fail), and the host source is never
touched because the sandbox only sees the copy.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from pathlib import Path

from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import BadInputError

SKIPPED_DIRS = {".git", "node_modules"}
RESERVED_TARGETS = ("/internal", "/proc", "/dev", "/tmp/codebox")


def parse_mount(text: str, index: int = 0) -> MountSpec:
    """``host:sandbox[:readonly|readwrite]`` → MountSpec (validated)."""
    parts = text.split(":")
    mode = "readwrite"
    if len(parts) >= 3 and parts[-1] in ("readonly", "readwrite", "ro", "rw"):
        mode = {"ro": "readonly", "rw": "readwrite"}.get(parts[-1], parts[-1])
        parts = parts[:-1]
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise BadInputError(
            f"Mount {text!r} must look like HOST_PATH:SANDBOX_PATH[:readonly|readwrite]",
            code="invalid-mount",
            field=f"mounts[{index}]",
        )
    spec = MountSpec(source=parts[0], target=parts[1], mode=mode, metadata={"kind": "cli-mount"})
    return validate_mount(spec, index)


def validate_mount(spec: MountSpec, index: int = 0, base_dir: Path | None = None) -> MountSpec:
    field = f"mounts[{index}]"
    target = spec.target
    if not target.startswith("/"):
        raise BadInputError(
            f"Sandbox path {target!r} must be absolute (start with /)", code="invalid-mount-target",
            field=f"{field}.target",
        )
    if any(segment in ("..", ".") for segment in target.split("/")):
        raise BadInputError(
            f"Sandbox path {target!r} must not contain '.' or '..' segments", code="invalid-mount-target",
            field=f"{field}.target",
        )
    normalized = posixpath.normpath(target)
    if normalized == "/" or any(normalized == r or normalized.startswith(r + "/") for r in RESERVED_TARGETS):
        raise BadInputError(
            f"Sandbox path {target!r} is reserved", code="invalid-mount-target", field=f"{field}.target"
        )
    source = Path(spec.source)
    if any(part == ".." for part in source.parts):
        raise BadInputError(
            f"Host path {spec.source!r} must not contain '..' segments", code="invalid-mount-source",
            field=f"{field}.source",
        )
    if not source.is_absolute():
        source = (base_dir or Path.cwd()) / source
    if not source.exists():
        raise BadInputError(
            f"Host path {spec.source!r} does not exist", code="missing-mount-source", field=f"{field}.source"
        )
    if not source.is_dir():
        raise BadInputError(
            f"Host path {spec.source!r} must be a directory", code="invalid-mount-source",
            field=f"{field}.source",
        )
    return spec.model_copy(update={"source": str(source.resolve()), "target": normalized,
                                   "type": "directory"})


def validate_mounts(mounts: list[MountSpec]) -> list[MountSpec]:
    checked = [validate_mount(m, i) for i, m in enumerate(mounts)]
    seen: dict[str, int] = {}
    for index, mount in enumerate(checked):
        if mount.target in seen:
            raise BadInputError(
                f"Sandbox path {mount.target} is mounted twice (mounts[{seen[mount.target]}] and "
                f"mounts[{index}])", code="duplicate-mount-target", field=f"mounts[{index}].target",
            )
        seen[mount.target] = index
    return checked


def stage_readonly(source: Path, staging: Path) -> Path:
    """Copy ``source`` to ``staging`` without symlinks or special files, then drop write permission."""
    def ignore(directory: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            path = os.path.join(directory, name)
            mode = os.lstat(path).st_mode
            if name in SKIPPED_DIRS or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                skipped.add(name)
        return skipped

    shutil.copytree(source, staging, symlinks=True, ignore=ignore)
    for root, dirs, files in os.walk(staging):
        for name in files:
            os.chmod(os.path.join(root, name), 0o444)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o555)
    os.chmod(staging, 0o555)
    return staging


def remove_tree(path: Path) -> None:
    """Delete a tree even if parts of it were made read-only; links in it are unlinked, never followed
    or chmodded (the tree may hold anything PHP wrote: see ``runtime/tree_removal.py``)."""
    from codebox_tui.runtime.tree_removal import remove_tree_nofollow

    remove_tree_nofollow(path)
