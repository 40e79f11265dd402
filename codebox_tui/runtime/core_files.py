"""WordPress core compared on the host (docs/security.md, "Core files compared on the host").

The in-sandbox site-state summary fingerprints core, but it is computed by PHP inside the sandbox. This check does
not ask the sandbox anything:

- when a golden site is built, the digest of each core entry (``wp-admin``, ``wp-includes`` and the files at the
  site root; ``wp-content`` is not core) is computed on the host and kept beside it (:data:`DIGESTS_FILE`);
- right after a sandbox boots (before any code under review runs) the host lists the sandbox's core with each
  entry's inode, size, mtime and ctime (:func:`stat_core`): ctime cannot be set back from inside the sandbox, so a
  file whose four values are unchanged after the run was not written;
- after the run the host lists it again and hashes only the entries whose values changed (:func:`changed_core`):
  one whose bytes differ from the golden site's (or from what the set-up declared) is a change.

Every read is relative to a folder descriptor opened with ``O_NOFOLLOW``: a link is never followed (it is reported
as a link), and a folder swapped for a link while the host reads cannot send it elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

DIGESTS_FILE: Final = "core-digests.json"  # beside the golden ``wordpress`` folder
CORE_FOLDERS: Final = ("wp-admin", "wp-includes")
DIRECTORY: Final = "dir"
MAX_ENTRIES: Final = 50_000  # a sandbox that plants more is reported by that marker, never walked further
TRUNCATED: Final = "(more entries than the host lists)"
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True)
class EntryStat:
    """What the cheap comparison looks at: a change of any of these means the entry may have been written."""

    kind: str  # file, dir, link, other
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


@dataclass(frozen=True)
class CoreChange:
    path: str  # relative to the site root, e.g. wp-includes/version.php
    status: str  # added, changed, deleted


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return DIRECTORY
    return "link" if stat.S_ISLNK(mode) else "other"


def _entry(info: os.stat_result) -> EntryStat:
    return EntryStat(_kind(info.st_mode), info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _walk(site_fd: int) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """(relative path, parent folder descriptor, name, lstat) of every core entry, never through a link; the
    parent descriptor is valid only during the step that yields it."""
    for name in sorted(os.listdir(site_fd)):
        info = os.stat(name, dir_fd=site_fd, follow_symlinks=False)
        if name in CORE_FOLDERS or not stat.S_ISDIR(info.st_mode):
            yield name, site_fd, name, info
    stack: list[tuple[str, int]] = []
    for top in CORE_FOLDERS:
        with contextlib.suppress(OSError):
            stack.append((top, os.open(top, _DIR_FLAGS, dir_fd=site_fd)))
    try:
        while stack:
            rel, fd = stack.pop()
            try:
                for name in sorted(os.listdir(fd)):
                    try:
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    yield f"{rel}/{name}", fd, name, info
                    if stat.S_ISDIR(info.st_mode):
                        with contextlib.suppress(OSError):
                            stack.append((f"{rel}/{name}", os.open(name, _DIR_FLAGS, dir_fd=fd)))
            finally:
                os.close(fd)
    finally:
        for _, fd in stack:
            os.close(fd)


def _digest(parent_fd: int, name: str, info: os.stat_result) -> str:
    """The digest of one entry as :data:`DIGESTS_FILE` records it: ``sha256:…`` of a regular file's bytes (read
    through a descriptor opened without following a link), ``dir``, ``link``, or ``other``."""
    kind = _kind(info.st_mode)
    if kind != "file":
        return kind
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent_fd)
    except OSError:
        return "unreadable"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "other"
        digest = hashlib.sha256()
        with os.fdopen(os.dup(fd), "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()
    finally:
        os.close(fd)


def _open_site(site: Path) -> int:
    return os.open(site, _DIR_FLAGS)


def compute_digests(site: Path) -> dict[str, str]:
    """Every core entry of ``site`` (a golden site, built by Codebox) and its digest."""
    fd = _open_site(site)
    try:
        return {rel: _digest(parent, name, info) for rel, parent, name, info in _walk(fd)}
    finally:
        os.close(fd)


def write_digests(golden_site: Path) -> None:
    """Compute the golden site's core digests and keep them beside it (atomically; building the golden site)."""
    target = golden_site.parent / DIGESTS_FILE
    staging = target.with_name(f".{DIGESTS_FILE}.{os.getpid()}")
    staging.write_text(json.dumps(compute_digests(golden_site), sort_keys=True), encoding="utf-8")
    os.replace(staging, target)


def load_digests(golden_site: Path) -> dict[str, str]:
    """The golden site's core digests; made now when a golden site built before this check has none."""
    target = golden_site.parent / DIGESTS_FILE
    if not target.is_file():
        write_digests(golden_site)
    value = json.loads(target.read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def stat_core(site: Path) -> dict[str, EntryStat]:
    """Each core entry of a sandbox's site (the host's folder behind ``/wordpress``) with its stat values."""
    fd = _open_site(site)
    out: dict[str, EntryStat] = {}
    try:
        for rel, _, _, info in _walk(fd):
            if len(out) >= MAX_ENTRIES:
                out[TRUNCATED] = EntryStat("other", 0, 0, 0, 0)
                break
            out[rel] = _entry(info)
    finally:
        os.close(fd)
    return out


def changed_core(
    site: Path, baseline: Mapping[str, EntryStat], expected: Mapping[str, str]
) -> tuple[list[CoreChange], dict[str, EntryStat]]:
    """The core entries of ``site`` whose content differs from ``expected`` (path → digest: the golden site's,
    with the set-up's declared writes), checking only entries whose stat values differ from ``baseline``; and
    the stat values now. An entry in neither ``expected`` nor ``baseline``'s unchanged set is added; one gone is
    deleted."""
    fd = _open_site(site)
    changes: list[CoreChange] = []
    now: dict[str, EntryStat] = {}
    try:
        for rel, parent, name, info in _walk(fd):
            if len(now) >= MAX_ENTRIES:
                changes.append(CoreChange(TRUNCATED, "added"))
                break
            entry = now[rel] = _entry(info)
            if baseline.get(rel) == entry:
                continue
            digest = _digest(parent, name, info)
            if expected.get(rel) == digest:
                continue
            changes.append(CoreChange(rel, "added" if rel not in expected and rel not in baseline else "changed"))
    finally:
        os.close(fd)
    for rel in sorted(set(baseline) - set(now)):
        if rel != TRUNCATED:
            changes.append(CoreChange(rel, "deleted"))
    return sorted(changes, key=lambda c: c.path), now


SITE_ROOT: Final = "/wordpress"
MAX_CHANGES_FLAGGED: Final = 50  # risk flags kept; the first flag's message counts them all


class HostCoreCheck:
    """Core of one sandbox compared on the host: :meth:`start` right after boot, :meth:`risks` after the run. A
    check that cannot read the folders fails closed (a high ``core-file-changed`` flag saying so)."""

    def __init__(self, site: Path, golden_site: Path) -> None:
        self.site = site
        self.expected = load_digests(golden_site)
        self.baseline = stat_core(site)
        self.seconds = 0.0

    @classmethod
    def start(cls, sandbox: object) -> HostCoreCheck | None:
        """The check for ``sandbox`` when its backend copies the site onto the host (Playground); None for a
        backend whose core is bound read-only (native: docs/backends.md, "The native wall")."""
        site, golden = getattr(sandbox, "site_dir", None), getattr(sandbox, "golden_site", None)
        if not isinstance(site, Path) or not isinstance(golden, Path):
            return None
        return cls(site, golden)

    def declare(self, path: str, digest: str) -> None:
        """Codebox's own set-up (or the recipe's blueprint) wrote ``digest`` at sandbox ``path``."""
        if path.startswith(SITE_ROOT + "/"):
            self.expected[path[len(SITE_ROOT) + 1 :]] = digest

    def attribute_changes(self) -> list[str]:
        """What changed in core since :meth:`start` becomes the expected state (the recipe's blueprint phase,
        before any code under review ran); returns those paths."""
        changes, now = changed_core(self.site, self.baseline, self.expected)
        changed = {c.path for c in changes if c.status != "deleted"}
        fd = _open_site(self.site)
        try:
            for rel, parent, name, info in _walk(fd):
                if rel in changed:
                    self.expected[rel] = _digest(parent, name, info)
        finally:
            os.close(fd)
        for change in changes:
            if change.status == "deleted":
                self.expected.pop(change.path, None)
        self.baseline = now
        return [f"{SITE_ROOT}/{c.path}" for c in changes]

    def changes(self) -> list[CoreChange]:
        return changed_core(self.site, self.baseline, self.expected)[0]
