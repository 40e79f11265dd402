"""The records behind crash recovery (docs/security.md, "Leftovers after a kill"): the mount guard's list, the
kernel's mount table as parsed, the ``:live`` owners journal restored from real files by a later process, and the
sandbox ids taken with real locks (runtime/mount_guard.py, runtime/leftover_mounts.py, runtime/owner_journal.py,
runtime/sandbox_ids.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebox_tui.runtime.confinement import SANDBOX_UID
from codebox_tui.runtime.leftover_mounts import mount_points
from codebox_tui.runtime.mount_guard import held_folders
from codebox_tui.runtime.owner_journal import JOURNALS, OwnerJournal, restore_abandoned
from codebox_tui.runtime.reaper import OWNER_FILE
from codebox_tui.runtime.sandbox_ids import ids_of_processes
from codebox_tui.runtime.sandbox_owner import HandedOver
from tests.factories.sigkill import ended_pid
from tests.factories.waiting import wait_until

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving folders back chowns them: root only")


def _line(op: str, folder: str) -> bytes:
    return op.encode() + os.fsencode(folder).hex().encode() + b"\n"


def test_the_guard_detaches_what_was_mounted_and_not_unmounted() -> None:
    lines = [
        _line("+", "/h/a/data"),
        _line("+", "/h/b/data"),
        _line("-", "/h/a/data"),
        b"+not-hex\n",
        _line("+", "/h/with\nnewline/data"),
    ]
    assert held_folders(lines) == [Path("/h/b/data"), Path("/h/with\nnewline/data")]


def test_mount_points_decode_the_kernels_escapes() -> None:
    info = (
        "22 1 0:21 / / rw - ext4 /dev/root rw\n"
        "90 22 0:50 / /tmp/a\\040b/data rw,nosuid - tmpfs tmpfs rw\n"
        "91 22 0:51 / /tmp/back\\134slash rw - tmpfs tmpfs rw\n"
    )
    assert mount_points(info) == ["/", "/tmp/a b/data", "/tmp/back\\slash"]
    assert "/proc" in mount_points()  # the real table of this process


def _abandon(journal: OwnerJournal) -> None:
    """What a SIGKILL leaves: the journal as written, its process gone."""
    assert journal.folder is not None
    (journal.folder / OWNER_FILE).write_text(str(ended_pid()))


@as_root
def test_a_journal_of_a_dead_run_gives_the_folder_back_as_a_normal_end(tmp_path: Path) -> None:
    live = tmp_path / "live"
    (live / "sub").mkdir(parents=True)
    (live / "own.txt").write_text("x")
    os.chown(live / "own.txt", 1001, 1002)
    (live / "setuid-tool").write_text("#!/bin/sh\n")
    (live / "setuid-tool").chmod(0o4755)
    info = live.stat()
    handed = HandedOver(live, (info.st_dev, info.st_ino), (0, 0))
    own, tool = (live / "own.txt").stat(), (live / "setuid-tool").stat()
    handed.owners[(own.st_dev, own.st_ino)] = (1001, 1002)
    handed.special_modes[(tool.st_dev, tool.st_ino)] = 0o4755
    journal = OwnerJournal(tmp_path / "home")
    journal.record(handed)
    for path in (live, live / "sub", live / "own.txt", live / "setuid-tool"):
        os.chown(path, SANDBOX_UID, SANDBOX_UID)  # (chown clears the setuid bit, as at the hand-over)
    (live / "sub" / "made.txt").write_text("made by the sandbox")
    os.chown(live / "sub" / "made.txt", SANDBOX_UID, SANDBOX_UID)
    _abandon(journal)
    assert restore_abandoned(tmp_path / "home") == [live]
    assert (live / "own.txt").stat().st_uid == 1001 and (live / "own.txt").stat().st_gid == 1002
    assert {p.stat().st_uid for p in (live, live / "sub", live / "sub" / "made.txt", live / "setuid-tool")} == {0}
    assert (live / "setuid-tool").stat().st_mode & 0o7777 == 0o4755  # the user's own setuid file, as it was
    assert list((tmp_path / "home" / JOURNALS).iterdir()) == []


@as_root
def test_a_folder_replaced_since_the_journal_is_left_alone(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    info = live.stat()
    journal = OwnerJournal(tmp_path / "home")
    journal.record(HandedOver(live, (info.st_dev, info.st_ino), (0, 0)))
    live.rename(tmp_path / "moved")
    live.mkdir()  # another folder at the same path, with an entry of the sandbox uid's that is not ours to change
    (live / "nobodys.txt").write_text("x")
    os.chown(live / "nobodys.txt", SANDBOX_UID, SANDBOX_UID)
    _abandon(journal)
    assert restore_abandoned(tmp_path / "home") == []
    assert (live / "nobodys.txt").stat().st_uid == SANDBOX_UID
    assert list((tmp_path / "home" / JOURNALS).iterdir()) == []  # dropped: nothing of it to give back


def test_a_journal_whose_run_is_alive_is_not_touched(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    info = live.stat()
    journal = OwnerJournal(tmp_path / "home")
    journal.record(HandedOver(live, (info.st_dev, info.st_ino), (0, 0)))
    assert restore_abandoned(tmp_path / "home") == []  # this process owns it: its sandbox may still run
    assert journal.folder is not None and list(journal.folder.glob("folder-*.json"))


def test_the_guard_keeps_the_journals_not_given_back() -> None:
    lines = [_line("j", "/h/live-owners/owners-a"), _line("j", "/h/live-owners/owners-b"), _line("+", "/h/a/data")]
    lines.append(_line("J", "/h/live-owners/owners-a"))
    assert held_folders(lines, b"j", b"J") == [Path("/h/live-owners/owners-b")]
    assert held_folders(lines) == [Path("/h/a/data")]  # mounts and journals are separate lists


@as_root
def test_the_give_back_changes_only_the_recorded_sandbox_uids_entries(tmp_path: Path) -> None:
    """Each sandbox has its own uid: a journal gives back what its sandbox's uid owns, not another sandbox's."""
    ours, theirs = 2_000_000_101, 2_000_000_102
    live = tmp_path / "live"
    live.mkdir()
    info = live.stat()
    journal = OwnerJournal(tmp_path / "home")
    journal.record(HandedOver(live, (info.st_dev, info.st_ino), (0, 0), ours))
    for name, uid in (("ours.txt", ours), ("theirs.txt", theirs)):
        (live / name).write_text(name)
        os.chown(live / name, uid, uid)
    os.chown(live, ours, ours)
    _abandon(journal)
    assert restore_abandoned(tmp_path / "home") == [live]
    assert (live / "ours.txt").stat().st_uid == 0 and live.stat().st_uid == 0
    assert (live / "theirs.txt").stat().st_uid == theirs


@as_root
def test_sandbox_ids_are_unique_and_free_again_once_released_and_their_processes_gone(tmp_path: Path) -> None:
    import subprocess

    from codebox_tui.runtime.sandbox_ids import FIRST_ID, allocate

    locks = tmp_path / "ids"
    first, second = allocate(locks), allocate(locks)
    assert first is not None and second is not None
    assert first.uid != second.uid and min(first.uid, second.uid) >= FIRST_ID
    shared = first.share()
    first.release()
    third = allocate(locks)  # the shared hold keeps the first id taken
    assert third is not None and third.uid not in (first.uid, second.uid)
    shared.release()
    # a process still runs as the released id: not handed out again until it ends
    process = subprocess.Popen(
        ["setpriv", f"--reuid={first.uid}", f"--regid={first.uid}", "--clear-groups", "sleep", "60"]
    )
    try:
        assert wait_until(lambda: first.uid in ids_of_processes(), timeout=30)
        again = allocate(locks)
        assert again is not None and again.uid != first.uid
    finally:
        process.kill()
        process.wait()
    reused = allocate(locks)
    assert reused is not None and reused.uid == first.uid
    for held in (second, third, again, reused):
        held.release()


def test_a_sandbox_id_locks_folder_someone_else_made_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codebox_tui.errors import SandboxError
    from codebox_tui.runtime.sandbox_ids import allocate

    monkeypatch.setattr("codebox_tui.runtime.sandbox_ids.drops_to_sandbox_uid", lambda: True)
    locks = tmp_path / "ids"
    locks.mkdir(mode=0o777)
    locks.chmod(0o777)  # anyone could plant a lock file (or a link) in it
    with pytest.raises(SandboxError, match="not root's alone"):
        allocate(locks)
