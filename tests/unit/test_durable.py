"""codebox_tui/durable.py: the one durable replace both journals use (store/journal.py, runtime/owner_journal.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codebox_tui.durable import write_durably


def test_the_new_content_replaces_the_old_whole_and_no_temporary_is_left(tmp_path: Path) -> None:
    journal = tmp_path / "journal.json"
    journal.write_bytes(b"old")
    data = b"x" * (3 << 20)  # larger than one write() may take: all of it lands
    write_durably(journal, data)
    assert journal.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.json"]
    assert journal.stat().st_mode & 0o777 == 0o600


def test_a_link_planted_at_the_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    journal = tmp_path / "journal.json"
    os.symlink(victim, tmp_path / "journal.json.tmp")
    with pytest.raises(OSError):
        write_durably(journal, b'{"state": "prepared"}')
    assert victim.read_bytes() == b"keep me"
    assert not journal.exists()
