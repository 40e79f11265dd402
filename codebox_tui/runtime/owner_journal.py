"""The owners of a ``:live`` folder, on disk while the sandbox has it, so that a run killed mid-run still gives
the folder back (docs/security.md, "Running as root" and "Leftovers after a kill").

As root, a ``:live`` folder is handed to the sandbox's own host uid for the sandbox's life
(runtime/sandbox_owner.py) and its recorded owners are put back when the sandbox is gone. A Codebox process
killed by SIGKILL (or a crash, or a power cut) never gets there, so the record is also written here before the
hand-over: one journal folder per run under ``$CODEBOX_HOME/live-owners/`` (outside the target, out of every
sandbox's view), recording its process as owner like a sandbox folder, with one file per handed-over folder
(written to a temporary name, ``fsync``-ed, renamed, the folder ``fsync``-ed) that names the sandbox's uid too.
A normal end deletes the file once the owners are back. A killed run's mount guard (runtime/mount_guard.py),
told of the journal folder when it is made, gives its folders back as soon as the run's process is gone; the
next run, before it hands anything over, restores every journal whose process is gone
(:func:`restore_abandoned`), the fallback when the guard died too. Both do it with :func:`restore_journal`,
exactly as a normal end would: only entries the sandbox's uid owns change, each to its recorded owner (what the
sandbox created: the folder's owner), through descriptors that never follow a link, and only if the folder is
still the recorded inode.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui.durable import write_durably
from codebox_tui.runtime.confinement import SANDBOX_UID
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.sandbox_dirs import abandoned_sandbox_dirs
from codebox_tui.runtime.sandbox_owner import FolderReplaced, HandedOver, hand_back
from codebox_tui.runtime.tree_removal import remove_tree_nofollow

JOURNALS = "live-owners"
PREFIX = "owners-"
FORMAT = "wp-codebox/live-owners/v1"


class OwnerJournal:
    """One run's journal folder (made at the first :meth:`record`). ``watch`` is told the folder once it is made
    (before anything is handed over), ``unwatch`` before it is removed: the run's mount guard
    (runtime/mount_guard.py), which gives its folders back if the run is killed."""

    def __init__(
        self,
        home: Path,
        watch: Callable[[Path], None] | None = None,
        unwatch: Callable[[Path], None] | None = None,
    ) -> None:
        self._watch, self._unwatch = watch, unwatch
        self.root = home / JOURNALS
        self.folder: Path | None = None
        self._files: dict[int, Path] = {}  # id(handed) -> its journal file

    def record(self, handed: HandedOver) -> None:
        """Write what ``handed`` must get back, durably, before anything is handed over."""
        if self.folder is None:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=self.root))
            (folder / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
            if self._watch is not None:
                self._watch(folder)
            self.folder = folder
        path = self.folder / f"folder-{len(self._files)}.json"
        write_durably(path, json.dumps(_to_json(handed), separators=(",", ":")).encode())
        self._files[id(handed)] = path

    def given_back(self, handed: HandedOver) -> None:
        """``handed`` has its owners back: its journal file goes."""
        path = self._files.pop(id(handed), None)
        if path is not None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the journal folder unless a folder could not be given back (the next run retries it)."""
        if self.folder is not None and not self._files:
            if self._unwatch is not None:
                self._unwatch(self.folder)
            remove_tree_nofollow(self.folder)
            self.folder = None


def restore_abandoned(home: Path) -> list[Path]:
    """Give back every folder recorded by a run whose process is gone; returns those given back. A folder that
    is gone, or is no longer the recorded inode, is left alone and its journal dropped."""
    restored = []
    for folder in abandoned_sandbox_dirs(home / JOURNALS, prefix=PREFIX):
        restored += restore_journal(folder)
    return restored


def recorded_uids(folder: Path) -> set[int]:
    """The sandbox uids a journal folder's records name (those whose processes must be gone before the give-back)."""
    uids = set()
    for path in folder.glob("folder-*.json"):
        try:
            uids.add(_from_json(json.loads(path.read_bytes())).sandbox_uid)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return uids


def restore_journal(folder: Path) -> list[Path]:
    """Give back every folder one journal folder records, whose run is gone; returns those given back. The journal
    goes once nothing of it is left to retry."""
    restored = []
    complete = True
    for path in sorted(folder.glob("folder-*.json")):
        try:
            handed = _from_json(json.loads(path.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # never act on a record that cannot be read whole
            continue
        try:
            hand_back(handed)
        except (FileNotFoundError, NotADirectoryError, FolderReplaced):
            pass  # not that folder any more: nothing of it to give back
        except OSError:
            complete = False  # kept for the next run
            continue
        else:
            restored.append(handed.root)
        path.unlink(missing_ok=True)
    if complete:
        remove_tree_nofollow(folder)
    return restored


def _to_json(handed: HandedOver) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "root": os.fsdecode(handed.root),
        "rootId": list(handed.root_id),
        "owner": list(handed.owner),
        "sandboxUid": handed.sandbox_uid,
        "owners": [[dev, ino, uid, gid] for (dev, ino), (uid, gid) in handed.owners.items()],
        "specialModes": [[dev, ino, mode] for (dev, ino), mode in handed.special_modes.items()],
    }


def _from_json(data: dict[str, Any]) -> HandedOver:
    if data.get("format") != FORMAT:
        raise ValueError("not a live-owners journal")
    dev, ino = (int(n) for n in data["rootId"])
    uid, gid = (int(n) for n in data["owner"])
    # a journal of a version that ran every sandbox as 65534 has no sandboxUid
    handed = HandedOver(Path(str(data["root"])), (dev, ino), (uid, gid), int(data.get("sandboxUid", SANDBOX_UID)))
    handed.owners = {(int(d), int(i)): (int(u), int(g)) for d, i, u, g in data["owners"]}
    handed.special_modes = {(int(d), int(i)): int(m) for d, i, m in data["specialModes"]}
    return handed
