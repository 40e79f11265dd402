"""All-or-nothing writes into a directory tree, safe against SIGKILL at any instant.

The intent log (journal) lives in Codebox's own folder, never in the target:
``$CODEBOX_HOME/apply-journals/<sha256 of the target's real path>.json``. A target folder can be a
read-write mount a sandbox wrote to, so anything found in it is untrusted: a ``journal.json`` planted
there would otherwise tell recovery to write or delete files anywhere (docs/security-host.md).
Only the staged bytes stay inside the target, so every rename stays on one filesystem::

    <root>/.codebox-apply/new/<i>      staged new contents (fsynced)
    <root>/.codebox-apply/old/<i>      hard links to the originals that will be replaced or deleted

Protocol: journal ``staging`` → create and fill the staging folder → journal ``prepared`` (entries,
created folders and the staging folder's device/inode) → rename each staged file into place / unlink
deleted files → fsync the touched directories → journal ``committed`` → remove the staging folder →
remove the journal. Each journal write is tmp + fsync + rename + fsync of the journal folder.

:func:`recover` (run before every directory apply, and by ``codebox apply-recover``): no journal and
no staging folder → nothing to do; no journal but a ``.codebox-apply`` folder → refused (Codebox did
not make it; it is never read); ``staging`` → the target was never touched, drop the staging folder;
``committed`` → roll forward (drop the staging folder); ``prepared`` → put every original back and
remove added files and created folders (roll back), after checking that the staging folder is the one
the journal recorded and that every path is relative, inside the target and free of symlinks.
Recovery is idempotent, so a kill during recovery is recovered by the next run.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.errors import ConflictError
from codebox_tui.settings import CodeboxSettings

STAGING_DIR = ".codebox-apply"
JOURNAL_VERSION = 2
_STAGED_NAME = re.compile(r"^(new|old)/[0-9]+$")


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


def journal_dir() -> Path:
    """Where directory-apply journals live: ``$CODEBOX_HOME/apply-journals`` (never in a target). Read from
    the environment at each call, not from a cached settings object: whichever process recovers (another
    ``codebox`` run, ``apply-recover``) must look where the interrupted one wrote."""
    return CodeboxSettings().home / "apply-journals"


def journal_path(root: Path, directory: Path | None = None) -> Path:
    """The journal of applies into ``root`` (keyed by the target's real path)."""
    key = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
    return (directory or journal_dir()) / f"{key}.json"


def _write_journal(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    _write_file(tmp, json.dumps(doc, sort_keys=True).encode("utf-8"))
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _drop_journal(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    _fsync_dir(path.parent)


def _ident(path: Path) -> list[int]:
    info = path.lstat()
    return [info.st_dev, info.st_ino]


def _remove_staging(staging: Path) -> None:
    """Remove the staging folder (a link there is unlinked, never followed)."""
    try:
        info = staging.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(staging)
    else:
        staging.unlink()


@contextmanager
def target_lock(root: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the target directory itself (no lock file left behind)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _refuse(root: Path, why: str) -> ConflictError:
    return ConflictError(
        f"cannot recover the interrupted apply into {root}: {why}; nothing was changed",
        code="apply-journal-invalid",
        field="--target",
    )


def _checked_rel(root: Path, rel: Any) -> Path:
    """``root / rel`` for a journal path that is relative, has no ``.``/``..``/empty segments, is not in the
    staging folder and passes through no symlink inside the target; ConflictError otherwise."""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel:
        raise _refuse(root, f"the journal names an unsafe path {rel!r}")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts) or parts[0] == STAGING_DIR:
        raise _refuse(root, f"the journal names an unsafe path {rel!r}")
    current = root
    for part in parts[:-1]:
        current = current / part
        try:
            info = current.lstat()
        except FileNotFoundError:
            break
        if not stat.S_ISDIR(info.st_mode):
            raise _refuse(root, f"{current.relative_to(root).as_posix()} is a symlink or not a folder")
    return root.joinpath(*parts)


def _checked_staged(root: Path, staging: Path, name: Any) -> Path:
    if not isinstance(name, str) or not _STAGED_NAME.match(name):
        raise _refuse(root, f"the journal names an unsafe staged file {name!r}")
    return staging / name


def _validate(root: Path, staging: Path, doc: Any) -> dict[str, Any]:
    """The journal document, with every path checked before anything is touched."""
    if not isinstance(doc, dict) or doc.get("version") != JOURNAL_VERSION:
        raise _refuse(root, "the journal has an unknown format")
    if doc.get("target") != str(root):
        raise _refuse(root, "the journal belongs to another folder")
    entries, created = doc.get("entries", []), doc.get("created_dirs", [])
    if not isinstance(entries, list) or not isinstance(created, list):
        raise _refuse(root, "the journal has an unknown format")
    for entry in entries:
        if not isinstance(entry, dict):
            raise _refuse(root, "the journal has an unknown format")
        _checked_rel(root, entry.get("path"))
        for key in ("staged", "backup"):
            if key in entry:
                _checked_staged(root, staging, entry[key])
    for rel in created:
        _checked_rel(root, rel)
    return doc


def recover(root: Path, *, journals: Path | None = None) -> str | None:
    """Finish or undo an interrupted write. Returns what was done, or None if nothing was pending.

    Raises :class:`ConflictError` when the target holds a staging folder no journal describes (it is
    never read: a sandbox may have planted it) or when the journal does not match the target."""
    root = Path(os.path.realpath(root))
    staging = root / STAGING_DIR
    path = journal_path(root, journals)
    if not path.exists():
        if os.path.lexists(staging):
            raise ConflictError(
                f"{staging} exists but Codebox has no record of an apply into {root}: it was not made by "
                "Codebox on this machine (a sandbox writing to this folder could have planted it) and was "
                "not read; inspect it and remove it by hand",
                code="foreign-apply-staging",
                field="--target",
                details={"path": str(staging)},
            )
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _refuse(root, f"its journal {path} is unreadable ({error})") from error
    if not isinstance(doc, dict):
        raise _refuse(root, "the journal has an unknown format")
    state = doc.get("state")
    if state == "staging":
        outcome = "discarded"  # killed while staging: the target itself was never touched
    elif state in ("committed", "rolled-back"):
        outcome = "completed" if state == "committed" else "rolled-back"
        if os.path.lexists(staging) and _ident(staging) != doc.get("staging_ident"):
            raise _refuse(root, f"{staging} is not the staging folder the journal recorded")
    elif state == "prepared":
        _validate(root, staging, doc)
        if not staging.is_dir() or staging.is_symlink() or _ident(staging) != doc.get("staging_ident"):
            raise _refuse(root, f"{staging} is missing or is not the staging folder the journal recorded")
        _roll_back(root, staging, doc)
        outcome = "rolled-back"
    else:
        raise _refuse(root, "the journal has an unknown state")
    _remove_staging(staging)
    _fsync_dir(root)
    _drop_journal(path)
    return outcome


def _roll_back(root: Path, staging: Path, doc: dict[str, Any]) -> None:
    touched: set[Path] = set()
    for entry in reversed(doc["entries"]):
        path = _checked_rel(root, entry["path"])
        if entry.get("backup"):
            backup = _checked_staged(root, staging, entry["backup"])
            if backup.exists():  # not yet restored (a missing backup means an earlier recovery did it)
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(backup, path)
                touched.add(path.parent)
        elif entry.get("staged"):
            staged = _checked_staged(root, staging, entry["staged"])
            if not staged.exists() and (path.exists() or path.is_symlink()):
                path.unlink()  # an added file that was already moved into place
                touched.add(path.parent)
    for rel in reversed(doc.get("created_dirs", [])):
        directory = _checked_rel(root, rel)
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


def transactional_write(root: Path, writes: Sequence[JournalWrite], *, journals: Path | None = None) -> None:
    """Apply ``writes`` under ``root`` all-or-nothing (see the module docstring).

    The caller holds :func:`target_lock` and has run :func:`recover` first.
    """
    staging = root / STAGING_DIR
    if os.path.lexists(staging):
        raise ConflictError(
            f"{staging} exists: an earlier apply was interrupted (run `codebox apply-recover`), or the folder "
            "holds a .codebox-apply that Codebox did not make (inspect it and remove it by hand)",
            code="apply-in-progress",
            field="--target",
        )
    path = journal_path(root, journals)
    doc: dict[str, Any] = {"version": JOURNAL_VERSION, "state": "staging", "target": os.path.realpath(root)}
    _write_journal(path, doc)  # before the staging folder exists: recovery may remove it
    try:
        staging.mkdir(mode=0o700)
        (staging / "new").mkdir()
        (staging / "old").mkdir()
    except BaseException:
        _drop_journal(path)
        raise
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
        _drop_journal(path)
        raise
    doc.update(state="prepared", entries=entries, created_dirs=created_dirs, staging_ident=_ident(staging))
    _write_journal(path, doc)  # from here on, recovery rolls back
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
        _write_journal(path, doc)  # the commit point: recovery now rolls forward
    except BaseException:
        _roll_back(Path(os.path.realpath(root)), staging, doc)
        doc["state"] = "rolled-back"
        _write_journal(path, doc)
        shutil.rmtree(staging, ignore_errors=True)
        _drop_journal(path)
        raise
    shutil.rmtree(staging)
    _fsync_dir(root)
    _drop_journal(path)
