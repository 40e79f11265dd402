"""All-or-nothing writes into a directory tree, safe against SIGKILL at any instant.

Layout while a write is in progress (inside the target, so every rename stays on one filesystem)::

    <root>/.codebox-apply/new/<i>      staged new contents (fsynced)
    <root>/.codebox-apply/old/<i>      hard links to the originals that will be replaced or deleted
    <root>/.codebox-apply/journal.json the intent log: entries + state "prepared" | "committed"

Protocol: stage and back up everything → write ``journal.json`` (tmp, fsync, rename, fsync dir)
→ rename each staged file into place / unlink deleted files → fsync the touched directories →
rewrite the journal with state ``committed`` → remove the staging directory.

:func:`recover` (run before every directory apply, and by ``codebox apply --recover``):
no journal → nothing in the target was touched, drop the staging dir; ``committed`` → every rename
happened, drop the staging dir (roll forward); ``prepared`` → put every original back and remove
added files and created directories (roll back). Recovery is idempotent, so a kill during recovery
is recovered by the next run.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.errors import ConflictError

STAGING_DIR = ".codebox-apply"
JOURNAL = "journal.json"
JOURNAL_VERSION = 1


@dataclass(frozen=True)
class JournalWrite:
    """One file to write (``content`` set) or delete (``content`` None), ``path`` absolute under the root."""

    relative_path: str
    path: Path
    content: bytes | None
    mode: int | None = None
    expected_sha256: str | None = None  # the original's hash, re-checked on the backup link


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(staging: Path, doc: dict[str, Any]) -> None:
    tmp = staging / (JOURNAL + ".tmp")
    _write_file(tmp, json.dumps(doc, sort_keys=True).encode("utf-8"))
    os.replace(tmp, staging / JOURNAL)
    _fsync_dir(staging)


@contextmanager
def target_lock(root: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the target directory itself (no lock file left behind)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def recover(root: Path) -> str | None:
    """Finish or undo an interrupted write. Returns what was done, or None if nothing was pending."""
    staging = root / STAGING_DIR
    if not staging.is_dir() or staging.is_symlink():
        return None
    journal_path = staging / JOURNAL
    if not journal_path.exists():
        outcome = "discarded"  # killed while staging: the target itself was never touched
    else:
        doc = _trusted_journal(root, journal_path)
        if doc.get("state") == "committed":
            outcome = "completed"
        else:
            _roll_back(root, staging, doc)
            outcome = "rolled-back"
    shutil.rmtree(staging)
    _fsync_dir(root)
    return outcome


# never part of a journal Codebox writes (store/apply.py withholds these folders)
_NEVER_JOURNALED = frozenset({".git", "node_modules", STAGING_DIR})
_STAGED_NAME = re.compile(r"new/[0-9]+")
_BACKUP_NAME = re.compile(r"old/[0-9]+")


def _trusted_journal(root: Path, journal_path: Path) -> dict[str, Any]:
    """The journal, if it has exactly the shape :func:`transactional_write` writes and every path stays
    inside ``root`` without passing through a symlink; else :class:`ConflictError` and nothing is
    touched. A journal may have been planted by whatever could write the folder (a ``:live`` sandbox
    mount): recovery must never become a way to move, overwrite or delete files elsewhere."""
    def invalid(reason: str) -> ConflictError:
        return ConflictError(
            f"{journal_path} was not written by Codebox ({reason}); nothing was changed: inspect the folder "
            f"and remove {root / STAGING_DIR} by hand",
            code="journal-invalid", field=str(journal_path),
        )

    try:
        if journal_path.is_symlink():
            raise invalid("it is a symlink")
        doc = json.loads(journal_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise invalid(f"unreadable: {error}") from error
    if not isinstance(doc, dict) or doc.get("version") != JOURNAL_VERSION \
            or doc.get("state") not in ("prepared", "committed"):
        raise invalid("unexpected version or state")
    entries, created = doc.get("entries"), doc.get("created_dirs", [])
    if not isinstance(entries, list) or not isinstance(created, list):
        raise invalid("entries and created_dirs must be lists")
    if not all(isinstance(d, str) for d in created):
        raise invalid("created_dirs must be paths")
    paths: list[str] = list(created)
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise invalid("every entry needs a path")
        for key, pattern in (("staged", _STAGED_NAME), ("backup", _BACKUP_NAME)):
            value = entry.get(key)
            if value is None:
                continue
            if not isinstance(value, str) or not pattern.fullmatch(value):
                raise invalid(f"{key} {value!r} is not a staging file")
            if (root / STAGING_DIR / value).is_symlink():
                raise invalid(f"{key} {value} is a symlink")
        paths.append(entry["path"])
    for rel in paths:
        parts = rel.split("/")
        if (not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel
                or any(p in ("", ".", "..") for p in parts)
                or any(p.casefold() in _NEVER_JOURNALED for p in parts)):
            raise invalid(f"path {rel!r} is not a plain relative path inside the folder")
        current = root
        for part in parts[:-1]:
            current = current / part
            if current.is_symlink() or (current.exists() and not current.is_dir()):
                raise invalid(f"path {rel!r} passes through {current.relative_to(root)}, not a folder")
    return doc


def _roll_back(root: Path, staging: Path, doc: dict[str, Any]) -> None:
    touched: set[Path] = set()
    for entry in reversed(doc["entries"]):
        path = root / entry["path"]
        if entry.get("backup"):
            backup = staging / entry["backup"]
            if backup.exists():  # not yet restored (a missing backup means an earlier recovery did it)
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(backup, path)
                touched.add(path.parent)
        elif entry.get("staged"):
            staged = staging / entry["staged"]
            if not staged.exists() and (path.exists() or path.is_symlink()):
                path.unlink()  # an added file that was already moved into place
                touched.add(path.parent)
    for rel in reversed(doc.get("created_dirs", [])):
        directory = root / rel
        try:
            directory.rmdir()
            touched.add(directory.parent)
        except FileNotFoundError:
            pass
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:
                raise
    for directory in touched:
        if directory.exists():
            _fsync_dir(directory)


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def transactional_write(root: Path, writes: Sequence[JournalWrite]) -> None:
    """Apply ``writes`` under ``root`` all-or-nothing (see the module docstring).

    The caller holds :func:`target_lock` and has run :func:`recover` first.
    """
    staging = root / STAGING_DIR
    if staging.exists() or staging.is_symlink():
        raise ConflictError(
            f"{staging} exists: an earlier apply was interrupted; run recovery first",
            code="apply-in-progress",
            field="--target",
        )
    staging.mkdir(mode=0o700)
    (staging / "new").mkdir()
    (staging / "old").mkdir()
    entries: list[dict[str, Any]] = []
    created_dirs: list[str] = []
    try:
        for index, write in enumerate(writes):
            entry: dict[str, Any] = {"path": _relative(root, write.path)}
            if write.content is not None:
                staged = staging / "new" / str(index)
                _write_file(staged, write.content, write.mode or 0o644)
                os.chmod(staged, write.mode or 0o644)
                entry["staged"] = f"new/{index}"
            if write.path.exists():
                backup = staging / "old" / str(index)
                try:
                    os.link(write.path, backup, follow_symlinks=False)
                except OSError:
                    shutil.copy2(write.path, backup, follow_symlinks=False)
                    with open(backup, "rb") as handle:
                        os.fsync(handle.fileno())
                if write.expected_sha256 is not None:
                    actual = hashlib.sha256(backup.read_bytes()).hexdigest()
                    if actual != write.expected_sha256:
                        raise ConflictError(
                            f"{write.relative_path} changed while the apply was being prepared; nothing was written",
                            code="target-conflict",
                            field="target",
                            details={"conflicts": [{"file": write.relative_path, "reason": "changed during apply"}]},
                        )
                entry["backup"] = f"old/{index}"
            entries.append(entry)
            parent = write.path.parent
            missing: list[str] = []
            while parent != root and not parent.exists():
                missing.append(_relative(root, parent))
                parent = parent.parent
            for rel in reversed(missing):
                if rel not in created_dirs:
                    created_dirs.append(rel)
        _fsync_dir(staging / "new")
        _fsync_dir(staging / "old")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    doc: dict[str, Any] = {
        "version": JOURNAL_VERSION,
        "state": "prepared",
        "entries": entries,
        "created_dirs": created_dirs,
    }
    _write_journal(staging, doc)  # from here on, recovery rolls back
    try:
        touched: set[Path] = {root}
        for rel in created_dirs:
            (root / rel).mkdir(exist_ok=True)
            touched.add((root / rel).parent)
        for entry, write in zip(entries, writes, strict=True):
            if "staged" in entry:
                os.replace(staging / entry["staged"], write.path)
            else:
                write.path.unlink()
            touched.add(write.path.parent)
        for directory in touched:
            _fsync_dir(directory)
        doc["state"] = "committed"
        _write_journal(staging, doc)  # the commit point: recovery now rolls forward
    except BaseException:
        _roll_back(root, staging, doc)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging)
    _fsync_dir(root)
