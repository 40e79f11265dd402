"""The detached reaper (runtime/reaper.py): it removes a run's folders after the caller has moved on,
never following a link, and owns them while it works so another process's sweep leaves them alone."""

from __future__ import annotations

import os
from pathlib import Path

from codebox_tui.runtime.reaper import OWNER_FILE, claim, reap_in_background
from codebox_tui.runtime.sandbox_dirs import abandoned_sandbox_dirs
from tests.factories.waiting import wait_for_reaper


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    return outside


def test_the_reaper_removes_the_folders_in_another_process_without_following_links(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    folders = []
    for name in ("sandbox-a", "sandbox-b"):
        folder = tmp_path / "sandboxes" / name
        (folder / "wordpress" / "deep").mkdir(parents=True)
        (folder / "wordpress" / "deep" / "file.php").write_text("<?php\n")
        (folder / "wordpress" / "link").symlink_to(outside)
        os.chmod(folder / "wordpress" / "deep", 0o500)  # read-only, as PHP's chmod() can leave it
        (folder / OWNER_FILE).write_text(str(os.getpid()))
        folders.append(folder)
    pid = reap_in_background([*folders, tmp_path / "never-existed"])
    assert pid is not None and pid != os.getpid()
    assert wait_for_reaper(pid), "the reaper did not finish"
    assert not any(folder.exists() for folder in folders)
    assert sorted(os.listdir(outside)) == ["keep.txt"] and (outside / "keep.txt").read_text() == "keep\n"


def test_nothing_to_remove_starts_no_reaper(tmp_path: Path) -> None:
    assert reap_in_background([tmp_path / "gone", tmp_path / "also-gone"]) is None


def test_a_claimed_folder_is_not_abandoned_while_its_reaper_lives(tmp_path: Path) -> None:
    folder = tmp_path / "sandbox-x"
    folder.mkdir()
    (folder / OWNER_FILE).write_text("999999999")  # a process that is gone: abandoned
    assert abandoned_sandbox_dirs(tmp_path) == [folder]
    claim(folder, os.getppid())  # now owned by a live process (here: the one that started pytest)
    assert (folder / OWNER_FILE).read_text() == str(os.getppid())
    assert abandoned_sandbox_dirs(tmp_path) == []


def test_claiming_never_writes_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched\n")
    folder = tmp_path / "sandbox-y"
    folder.mkdir()
    (folder / OWNER_FILE).symlink_to(target)
    claim(folder, 12345)
    assert target.read_text() == "untouched\n"
    link = tmp_path / "sandbox-link"
    link.symlink_to(folder)
    claim(link, 12345)  # the folder itself named through a link: not claimed
    assert os.path.islink(folder / OWNER_FILE)
