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
remove the journal. Each journal write is tmp + fsync + rename + fsync of the journal folder
(``codebox_tui/durable.py``).

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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.durable import fsync_folder, write_durably
from codebox_tui.errors import ConflictError
from codebox_tui.settings import CodeboxSettings
from store import fdtree

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
    write_durably(path, json.dumps(doc, sort_keys=True).encode("utf-8"))


def _drop_journal(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        return
    fsync_folder(path.parent)


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


def _checked_rel(root: Path, rel: Any) -> str:
    """A journal path that is relative, has no ``.``/``..``/empty segments and is not in the staging
    folder; ConflictError otherwise. (Links on the way are refused when the path is opened: every folder
    is opened with ``O_NOFOLLOW`` from the target's descriptor, store/fdtree.py.)"""
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel:
        raise _refuse(root, f"the journal names an unsafe path {rel!r}")
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts) or parts[0] == STAGING_DIR:
        raise _refuse(root, f"the journal names an unsafe path {rel!r}")
    return rel


def _checked_staged(root: Path, name: Any) -> tuple[str, str]:
    """``("new"|"old", index)`` of a staged file named by the journal."""
    if not isinstance(name, str) or not _STAGED_NAME.match(name):
        raise _refuse(root, f"the journal names an unsafe staged file {name!r}")
    kind, index = name.split("/")
    return kind, index


def _validate(root: Path, root_fd: int, doc: Any) -> dict[str, Any]:
    """The journal document, with every path checked before anything is touched."""
    if not isinstance(doc, dict) or doc.get("version") != JOURNAL_VERSION:
        raise _refuse(root, "the journal has an unknown format")
    if doc.get("target") != str(root):
        raise _refuse(root, "the journal belongs to another folder")
    entries, created = doc.get("entries", []), doc.get("created_dirs", [])
    if not isinstance(entries, list) or not isinstance(created, list):
        raise _refuse(root, "the journal has an unknown format")
    paths: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise _refuse(root, "the journal has an unknown format")
        paths.append(_checked_rel(root, entry.get("path")))
        for key in ("staged", "backup"):
            if key in entry:
                _checked_staged(root, entry[key])
    paths.extend(_checked_rel(root, rel) for rel in created)
    for rel in paths:  # a link on the way now is refused before anything is touched (and again at each use)
        try:
            parent = fdtree.open_dir(root_fd, fdtree.split(rel)[0])
        except fdtree.UnsafePath as error:
            raise _refuse(root, f"{error.rel} {error.reason}") from error
        if parent is not None:
            os.close(parent)
    return doc


def _staging_ident(root_fd: int) -> list[int] | None:
    try:
        info = os.stat(STAGING_DIR, dir_fd=root_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return [info.st_dev, info.st_ino]


def recover(root: Path, *, journals: Path | None = None) -> str | None:
    """Finish or undo an interrupted write. Returns what was done, or None if nothing was pending.

    Raises :class:`ConflictError` when the target holds a staging folder no journal describes (it is
    never read: a sandbox may have planted it) or when the journal does not match the target."""
    root = Path(os.path.realpath(root))
    with fdtree.opened_target(root, "; nothing was written") as root_fd:
        return _recover(root, root_fd, journals)


def _recover(root: Path, root_fd: int, journals: Path | None) -> str | None:
    staging = root / STAGING_DIR
    path = journal_path(root, journals)
    ident = _staging_ident(root_fd)
    if not path.exists():
        if ident is not None:
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
        if ident is not None and ident != doc.get("staging_ident"):
            raise _refuse(root, f"{staging} is not the staging folder the journal recorded")
    elif state == "prepared":
        _validate(root, root_fd, doc)
        try:
            staging_fd = os.open(STAGING_DIR, fdtree.DIR_FLAGS, dir_fd=root_fd)
        except OSError as error:
            raise _refuse(root, f"{staging} is missing or is not the staging folder the journal recorded") from error
        try:
            if fdtree.ident_of(staging_fd) != doc.get("staging_ident"):
                raise _refuse(root, f"{staging} is missing or is not the staging folder the journal recorded")
            _roll_back(root, root_fd, staging_fd, doc)
        finally:
            os.close(staging_fd)
        outcome = "rolled-back"
    else:
        raise _refuse(root, "the journal has an unknown state")
    fdtree.remove_tree_in(root_fd, STAGING_DIR)
    os.fsync(root_fd)
    _drop_journal(path)
    return outcome


def _roll_back(root: Path, root_fd: int, staging_fd: int, doc: dict[str, Any]) -> None:
    """Put every original back and remove added files and created folders, all through descriptors."""
    try:
        for entry in reversed(doc["entries"]):
            folders, name = fdtree.split(_checked_rel(root, entry["path"]))
            if entry.get("backup"):
                kind, index = _checked_staged(root, entry["backup"])
                with _staged_dir(staging_fd, kind) as old_fd:
                    if old_fd is None or not fdtree.exists_in(old_fd, index):
                        continue  # a missing backup means an earlier recovery restored it
                    parent = fdtree.open_dir(root_fd, folders, create=True)
                    assert parent is not None
                    try:
                        os.replace(index, name, src_dir_fd=old_fd, dst_dir_fd=parent)
                        os.fsync(parent)
                    except FileNotFoundError as gone:  # the folder was removed meanwhile: the backup stays
                        raise _refuse(root, f"{'/'.join(folders)} disappeared during recovery") from gone
                    finally:
                        os.close(parent)
            elif entry.get("staged"):
                kind, index = _checked_staged(root, entry["staged"])
                with _staged_dir(staging_fd, kind) as new_fd:
                    if new_fd is not None and fdtree.exists_in(new_fd, index):
                        continue  # never moved into place
                parent = fdtree.open_dir(root_fd, folders)
                if parent is None:
                    continue
                try:
                    if fdtree.exists_in(parent, name):
                        os.unlink(name, dir_fd=parent)  # an added file that was already moved into place
                        os.fsync(parent)
                finally:
                    os.close(parent)
        for rel in reversed(doc.get("created_dirs", [])):
            folders, name = fdtree.split(_checked_rel(root, rel))
            parent = fdtree.open_dir(root_fd, folders)
            if parent is None:
                continue
            try:
                os.rmdir(name, dir_fd=parent)
                os.fsync(parent)
            except OSError as error:  # already gone, not empty, or no longer a folder: left as it is
                if error.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise
            finally:
                os.close(parent)
    except fdtree.UnsafePath as error:
        raise _refuse(root, f"{error.rel} {error.reason}") from error
    os.fsync(root_fd)


@contextmanager
def _staged_dir(staging_fd: int, kind: str) -> Iterator[int | None]:
    try:
        fd = os.open(kind, fdtree.DIR_FLAGS, dir_fd=staging_fd)
    except FileNotFoundError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _conflict(write: JournalWrite, reason: str) -> ConflictError:
    return ConflictError(
        f"{write.relative_path} changed while the apply was being prepared; nothing was written",
        code="target-conflict",
        field="target",
        details={"conflicts": [{"file": write.relative_path, "reason": reason}]},
    )


def transactional_write(root: Path, writes: Sequence[JournalWrite], *, journals: Path | None = None) -> None:
    """Apply ``writes`` under ``root`` all-or-nothing (see the module docstring).

    The caller holds :func:`target_lock` and has run :func:`recover` first. Every file and folder is
    reached from one descriptor of the target's real path without following links (store/fdtree.py);
    a link or non-folder met on the way is a ConflictError naming it, and nothing is written outside."""
    root = Path(os.path.realpath(root))
    with fdtree.opened_target(root, "; nothing was written") as root_fd:
        _transactional_write(root, root_fd, writes, journals)


def _transactional_write(root: Path, root_fd: int, writes: Sequence[JournalWrite], journals: Path | None) -> None:
    staging = root / STAGING_DIR
    if _staging_ident(root_fd) is not None:
        raise ConflictError(
            f"{staging} exists: an earlier apply was interrupted (run `codebox apply-recover`), or the folder "
            "holds a .codebox-apply that Codebox did not make (inspect it and remove it by hand)",
            code="apply-in-progress",
            field="--target",
        )
    path = journal_path(root, journals)
    doc: dict[str, Any] = {"version": JOURNAL_VERSION, "state": "staging", "target": str(root)}
    _write_journal(path, doc)  # before the staging folder exists: recovery may remove it
    fds: list[int] = []
    try:
        os.mkdir(STAGING_DIR, 0o700, dir_fd=root_fd)
        staging_fd = os.open(STAGING_DIR, fdtree.DIR_FLAGS, dir_fd=root_fd)
        fds.append(staging_fd)
        for kind in ("new", "old"):
            os.mkdir(kind, 0o700, dir_fd=staging_fd)
            fds.append(os.open(kind, fdtree.DIR_FLAGS, dir_fd=staging_fd))
    except BaseException:
        for fd in fds:
            os.close(fd)
        _drop_journal(path)
        raise
    new_fd, old_fd = fds[1], fds[2]
    try:
        _stage_and_commit(root, root_fd, staging_fd, new_fd, old_fd, writes, doc, path)
    finally:
        for fd in fds:
            os.close(fd)
    fdtree.remove_tree_in(root_fd, STAGING_DIR)
    os.fsync(root_fd)
    _drop_journal(path)


def _stage_and_commit(
    root: Path,
    root_fd: int,
    staging_fd: int,
    new_fd: int,
    old_fd: int,
    writes: Sequence[JournalWrite],
    doc: dict[str, Any],
    path: Path,
) -> None:
    entries: list[dict[str, Any]] = []
    created_dirs: list[str] = []
    try:
        for index, write in enumerate(writes):
            entry = _stage(root_fd, new_fd, old_fd, index, write)
            entries.append(entry)
            for rel in fdtree.missing_dirs(root_fd, fdtree.split(write.relative_path)[0]):
                if rel not in created_dirs:
                    created_dirs.append(rel)
        os.fsync(new_fd)
        os.fsync(old_fd)
    except BaseException as error:
        fdtree.remove_tree_in(root_fd, STAGING_DIR)
        _drop_journal(path)
        if isinstance(error, fdtree.UnsafePath):
            raise _unsafe_conflict(root, error) from error
        raise
    doc.update(state="prepared", entries=entries, created_dirs=created_dirs, staging_ident=fdtree.ident_of(staging_fd))
    _write_journal(path, doc)  # from here on, recovery rolls back
    try:
        os.fsync(root_fd)
        for entry, write in zip(entries, writes, strict=True):
            folders, name = fdtree.split(write.relative_path)
            parent = fdtree.open_dir(root_fd, folders, create="staged" in entry)
            if parent is None:
                raise fdtree.UnsafePath("/".join(folders), "disappeared during apply")
            try:
                if "staged" in entry:
                    try:
                        os.replace(entry["staged"].split("/")[1], name, src_dir_fd=new_fd, dst_dir_fd=parent)
                    except FileNotFoundError as gone:  # the opened folder was removed meanwhile
                        raise fdtree.UnsafePath("/".join(folders), "disappeared during apply") from gone
                else:
                    try:
                        os.unlink(name, dir_fd=parent)
                    except FileNotFoundError as gone:
                        raise fdtree.UnsafePath(write.relative_path, "disappeared during apply") from gone
                os.fsync(parent)
            finally:
                os.close(parent)
        doc["state"] = "committed"
        _write_journal(path, doc)  # the commit point: recovery now rolls forward
    except BaseException as error:
        _roll_back(root, root_fd, staging_fd, doc)
        doc["state"] = "rolled-back"
        _write_journal(path, doc)
        fdtree.remove_tree_in(root_fd, STAGING_DIR)
        _drop_journal(path)
        if isinstance(error, fdtree.UnsafePath):
            raise _unsafe_conflict(root, error) from error
        raise


def _unsafe_conflict(root: Path, error: fdtree.UnsafePath) -> ConflictError:
    return ConflictError(
        f"{error.rel} in {root} {error.reason} (changed while applying?); nothing was written",
        code="target-conflict",
        field="target",
        details={"conflicts": [{"file": error.rel, "reason": error.reason}]},
    )


def _stage(root_fd: int, new_fd: int, old_fd: int, index: int, write: JournalWrite) -> dict[str, Any]:
    """Stage one write: its new bytes in ``new/<index>``, a hard link to (or copy of) the original in
    ``old/<index>``, the original re-checked against the planned hash."""
    entry: dict[str, Any] = {"path": write.relative_path}
    if write.content is not None:
        fdtree.write_new(new_fd, str(index), write.content, write.mode or 0o644)  # special bits never written
        entry["staged"] = f"new/{index}"
    folders, name = fdtree.split(write.relative_path)
    parent = fdtree.open_dir(root_fd, folders)
    if parent is None or not fdtree.exists_in(parent, name):
        if parent is not None:
            os.close(parent)
        if write.expected_sha256 is not None:  # planned against an existing file that is gone now
            raise _conflict(write, "disappeared during apply")
        return entry
    try:
        try:
            os.link(name, str(index), src_dir_fd=parent, dst_dir_fd=old_fd, follow_symlinks=False)
        except OSError:
            original = fdtree.read_in(parent, name)
            if not isinstance(original, tuple):
                raise  # not a regular file (a folder, a device): the link's own error
            fdtree.write_new(old_fd, str(index), original[0], original[1])
    finally:
        os.close(parent)
    entry["backup"] = f"old/{index}"
    if write.expected_sha256 is not None:
        backup = fdtree.read_in(old_fd, str(index))
        actual = hashlib.sha256(backup[0]).hexdigest() if isinstance(backup, tuple) else None
        if actual != write.expected_sha256:
            raise _conflict(write, "changed during apply")
    return entry
