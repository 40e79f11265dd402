"""Mount parsing and validation (before anything boots), read-only staging, and the hand-off of
read-write mounts' private copies.

Read-only mounts are copied into a private staging folder whose files and folders carry no write
permission. Playground's file system honours those modes, so a write inside the sandbox fails
(``file_put_contents`` returns false, ``unlink``/``mkdir`` fail), and the host source is never
touched because the sandbox only sees the copy.

Read-write mounts are copy-on-write by default (README, "Mounts"): the sandbox works on a private copy
made before boot (``bundle/private_copy.py``, in the same step as the baseline) and the user's folder
changes only through apply-back. ``HOST:SANDBOX:live`` opts into writing through to the folder.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codebox_tui.contracts.runtime import LIVE_MOUNT_KEY, MountSpec
from codebox_tui.errors import BadInputError
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.tree_removal import remove_tree_nofollow

SKIPPED_DIRS = {".git", "node_modules", ".codebox-apply"}
MU_PLUGINS_DIR = "/wordpress/wp-content/mu-plugins"


def plugin_target(load_as: str, slug: str) -> str:
    """Where a plugin's folder is mounted: ``wp-content/plugins/<slug>``, or for a single-file must-use plugin
    a folder of its own that WordPress does not load by itself, ``mu-plugins/codebox-runtime/<slug>``, which
    :func:`mu_plugin_loader` requires (README, "Recipes"; docs/evaluate-patch.md)."""
    if load_as == "mu-plugin":
        return f"{MU_PLUGINS_DIR}/codebox-runtime/{slug}"
    return f"/wordpress/wp-content/plugins/{slug}"


def mu_plugin_loader(slug: str, file_name: str) -> tuple[str, str]:
    """(sandbox path, PHP source) of the loader that makes WordPress load ``<slug>/<file_name>`` as a must-use
    plugin: WordPress loads only the files directly in ``mu-plugins/``."""
    rel = f"codebox-runtime/{slug}/{file_name}"
    return f"{MU_PLUGINS_DIR}/codebox-load-{slug}.php", f"<?php require_once __DIR__ . '/{rel}';\n"


RESERVED_TARGETS = ("/internal", "/proc", "/dev", "/tmp/codebox")
# Mounting over these would replace the site root or a WordPress core folder (and its database):
# Playground cannot boot over them (a mount at /wordpress printed "[object Object]").
SITE_TARGETS = (
    "/wordpress",
    "/wordpress/wp-admin",
    "/wordpress/wp-includes",
    "/wordpress/wp-content",
    "/wordpress/wp-content/database",
)
MOUNT_MODES = {"readonly": "readonly", "ro": "readonly", "readwrite": "readwrite", "rw": "readwrite", "live": "live"}


def parse_mount(text: str, index: int = 0) -> MountSpec:
    """``host:sandbox[:readonly|readwrite|live]`` → MountSpec (validated). ``live`` is a read-write
    mount that writes through to the host folder; plain ``readwrite`` works on a private copy."""
    parts = text.split(":")
    mode = "readwrite"
    if len(parts) >= 3 and parts[-1] in MOUNT_MODES:
        mode = MOUNT_MODES[parts[-1]]
        parts = parts[:-1]
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise BadInputError(
            f"Mount {text!r} must look like HOST_PATH:SANDBOX_PATH[:readonly|readwrite|live]",
            code="invalid-mount",
            field=f"mounts[{index}]",
        )
    metadata: dict[str, object] = {"kind": "cli-mount"}
    if mode == "live":
        mode = "readwrite"
        metadata[LIVE_MOUNT_KEY] = True
    spec = MountSpec(source=parts[0], target=parts[1], mode=mode, metadata=metadata)
    return validate_mount(spec, index)


def validate_mount(spec: MountSpec, index: int = 0, base_dir: Path | None = None) -> MountSpec:
    field = f"mounts[{index}]"
    target = spec.target
    if not target.startswith("/"):
        raise BadInputError(
            f"Sandbox path {target!r} must be absolute (start with /)",
            code="invalid-mount-target",
            field=f"{field}.target",
        )
    if any(segment in ("..", ".") for segment in target.split("/")):
        raise BadInputError(
            f"Sandbox path {target!r} must not contain '.' or '..' segments",
            code="invalid-mount-target",
            field=f"{field}.target",
        )
    normalized = posixpath.normpath(target)
    if normalized == "/" or any(normalized == r or normalized.startswith(r + "/") for r in RESERVED_TARGETS):
        raise BadInputError(
            f"Sandbox path {target!r} is reserved", code="invalid-mount-target", field=f"{field}.target"
        )
    if normalized in SITE_TARGETS:
        raise BadInputError(
            f"Sandbox path {target!r} would replace the WordPress site (or one of its core folders); mount "
            "below it instead, e.g. /wordpress/wp-content/plugins/<slug>",
            code="invalid-mount-target",
            field=f"{field}.target",
        )
    live = spec.metadata.get(LIVE_MOUNT_KEY, False)
    if not isinstance(live, bool) or (live and spec.mode != "readwrite"):
        raise BadInputError(
            f"metadata.{LIVE_MOUNT_KEY} must be true or false, and true only on a readwrite mount",
            code="invalid-mount",
            field=f"{field}.metadata.{LIVE_MOUNT_KEY}",
        )
    source = Path(spec.source)
    if any(part == ".." for part in source.parts):
        raise BadInputError(
            f"Host path {spec.source!r} must not contain '..' segments",
            code="invalid-mount-source",
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
            f"Host path {spec.source!r} must be a directory",
            code="invalid-mount-source",
            field=f"{field}.source",
        )
    return spec.model_copy(update={"source": str(source.resolve()), "target": normalized, "type": "directory"})


def validate_mounts(mounts: list[MountSpec]) -> list[MountSpec]:
    checked = [validate_mount(m, i) for i, m in enumerate(mounts)]
    seen: dict[str, int] = {}
    for index, mount in enumerate(checked):
        if mount.target in seen:
            raise BadInputError(
                f"Sandbox path {mount.target} is mounted twice (mounts[{seen[mount.target]}] and mounts[{index}])",
                code="duplicate-mount-target",
                field=f"mounts[{index}].target",
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


# the record runtime/playground.py keeps in each sandbox folder: a folder whose owner is gone is swept


def new_copies_dir(sandboxes_root: Path) -> Path:
    """A session's folder in the sandboxes root for its private copies before boot and after dispose;
    named and owned like a sandbox folder, so one left behind by a killed process is swept."""
    sandboxes_root.mkdir(parents=True, exist_ok=True)
    path = sandboxes_root / f"sandbox-copies-{secrets.token_hex(6)}"
    path.mkdir(mode=0o700)
    (path / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
    return path


@dataclass
class PrivateCopy:
    """Where a copy-on-write mount's private copy is (README, "Mounts").

    The session makes it before boot under ``staged`` (a folder of its own in the sandboxes root,
    with the baseline); the backend moves it into the sandbox's work dir (:meth:`move_into`) and
    mounts it; before the sandbox is disposed the session moves it back (:meth:`move_out`), so
    disposing the sandbox does not delete it and capture reads it once nothing can write to it.

    A native sandbox with a disk budget leaves it where it is and mounts an overlay of it instead, whose
    changes go to the sandbox's size-limited file system (runtime/native_limits.py, ``DiskBudget.take_in``);
    ``hand_back`` then binds that overlay over ``staged`` for :meth:`move_out`."""

    index: int
    staged: Path
    path: Path
    hand_back: Callable[[], None] | None = None

    def move_into(self, work_dir: Path) -> Path:
        dest = work_dir / f"mount-{self.index}"
        if self.path != dest:
            os.rename(self.path, dest)
            self.path = dest
        return dest

    def move_out(self) -> None:
        hand_back, self.hand_back = self.hand_back, None
        if hand_back is not None:
            hand_back()
        elif self.path != self.staged and os.path.isdir(self.path):
            os.rename(self.path, self.staged)
        self.path = self.staged


def remove_tree(path: Path) -> None:
    """Delete a tree even if parts of it were made read-only; links in it are unlinked, never followed
    or chmodded (the tree may hold anything PHP wrote: see ``runtime/tree_removal.py``)."""
    remove_tree_nofollow(path)
