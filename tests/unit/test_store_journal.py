"""The directory journal: all-or-nothing writes, conflicts and rollback (the SIGKILL test is in
tests/integration/test_store_journal_sigkill.py)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from codebox_tui.errors import ConflictError
from store import fdtree
from store.journal import STAGING_DIR, JournalWrite, target_lock, transactional_write
from tests.factories.journal_trees import make_tree, plan, snapshot


def test_transactional_write_applies_everything(tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_tree(root, 4)
    writes = plan(root, 4)
    with target_lock(root):
        transactional_write(root, writes)
    snap = snapshot(root)
    assert snap["mod-2.txt"] == b"changed 2\n" * 80
    assert snap["new/d1/add-1.txt"] == b"added 1\n"
    assert "del-0.txt" not in snap
    assert STAGING_DIR + "/" not in snap


def test_a_file_changed_during_preparation_aborts_without_writing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_tree(root, 3)
    writes = plan(root, 3)
    (root / "mod-2.txt").write_bytes(b"someone else edited this\n")
    before = snapshot(root)
    with pytest.raises(ConflictError, match="changed while the apply was being prepared"):
        transactional_write(root, writes)
    assert snapshot(root) == before


def test_error_midway_rolls_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    make_tree(root, 3)
    before = snapshot(root)
    writes = plan(root, 3)
    # a directory where a file must be replaced makes os.replace fail after earlier renames happened
    (root / "mod-2.txt").unlink()
    (root / "mod-2.txt").mkdir()
    (root / "mod-2.txt" / "keep").write_text("x")
    before = snapshot(root)
    writes = [w for w in writes if w.relative_path != "mod-2.txt"] + [
        JournalWrite("mod-2.txt", root / "mod-2.txt", b"file\n", 0o644)
    ]
    with pytest.raises(OSError):
        transactional_write(root, writes)
    assert snapshot(root) == before


def test_special_mode_bits_are_never_written(tmp_path: Path) -> None:
    """A mode with setuid, setgid or sticky bits (from a bundle, or kept from a file that had them) is
    applied without them: apply writes only the permission bits 0o777."""
    root = tmp_path / "t"
    root.mkdir()
    (root / "tool.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(root / "tool.sh", 0o6755)
    writes = [
        JournalWrite("added.sh", root / "added.sh", b"#!/bin/sh\necho new\n", 0o7755),
        JournalWrite(
            "tool.sh",
            root / "tool.sh",
            b"#!/bin/sh\necho changed\n",
            0o6755,
            hashlib.sha256(b"#!/bin/sh\n").hexdigest(),
        ),
    ]
    with target_lock(root):
        transactional_write(root, writes)
    assert stat.S_IMODE((root / "added.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "tool.sh").stat().st_mode) == 0o755
    assert (root / "tool.sh").read_bytes() == b"#!/bin/sh\necho changed\n"


def test_a_folder_removed_after_it_was_opened_is_unsafe_not_a_crash(tmp_path: Path) -> None:
    """The apply race's last window: apply made (or opened) a folder, then someone replaced it (a rename of
    the real folder over the empty one apply had made). Making a folder inside the removed one fails with
    ENOENT; that is the target changing under apply (a conflict), not an unexpected error."""
    gone = tmp_path / "gone"
    gone.mkdir()
    fd = os.open(gone, fdtree.DIR_FLAGS)
    try:
        gone.rmdir()
        with pytest.raises(fdtree.UnsafePath) as raised:
            fdtree.open_dir(fd, ["new", "deeper"], create=True)
        assert raised.value.reason == "disappeared during apply"
    finally:
        os.close(fd)
