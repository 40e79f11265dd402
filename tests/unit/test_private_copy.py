"""The private copy of a copy-on-write mount (bundle/private_copy.py) and the baseline that adopts it:
real files on a real file system, real capture."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.changes import CaptureLimits, mount_changes, skipped_dir_report
from codebox_tui.bundle.diff import list_tree
from codebox_tui.bundle.private_copy import copy_tree
from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.runtime import MountSpec


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "plugin"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside\n")
    (src / "lib").mkdir(parents=True)
    (src / "plugin.php").write_text("<?php // main\n")
    (src / "lib" / "run.sh").write_text("#!/bin/sh\n")
    (src / "lib" / "run.sh").chmod(0o755)
    (src / "node_modules" / "pkg").mkdir(parents=True)
    (src / "node_modules" / "pkg" / "index.js").write_text("1;\n")
    (src / ".git").mkdir()
    (src / ".git" / "config").write_text("[core]\n")
    (src / "link-out").symlink_to(outside)
    (src / "lib" / "file-link").symlink_to(outside / "secret.txt")
    os.mkfifo(src / "pipe")
    os.link(src / "plugin.php", src / "hardlinked.php")  # two names, one inode, in the user's folder
    old = time.time() - 3600
    for path in (src / "plugin.php", src / "lib" / "run.sh"):
        os.utime(path, (old, old))
    return src, outside


def test_copy_has_real_files_modes_and_times_and_never_links_or_follows(tmp_path: Path) -> None:
    src, outside = _tree(tmp_path)
    dest = tmp_path / "copy"
    copied = copy_tree(src, dest, exclude=frozenset({".git"}))
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "hardlinked.php",
        "lib",
        "lib/run.sh",
        "node_modules",
        "node_modules/pkg",
        "node_modules/pkg/index.js",
        "plugin.php",
    ]
    assert dict(copied.not_copied) == {"link-out": "symlink", "lib/file-link": "symlink", "pipe": "special-file"}
    for rel in ("plugin.php", "lib/run.sh", "hardlinked.php"):
        mine, theirs = (dest / rel).stat(), (src / rel).stat()
        assert mine.st_ino != theirs.st_ino and mine.st_nlink == 1  # a file of its own, never a hard link
        assert stat.S_IMODE(mine.st_mode) == stat.S_IMODE(theirs.st_mode)
        assert mine.st_mtime_ns == theirs.st_mtime_ns
        assert (dest / rel).read_bytes() == (src / rel).read_bytes()
    (dest / "plugin.php").write_text("changed in the copy\n")
    assert (src / "plugin.php").read_text() == "<?php // main\n"
    assert (outside / "secret.txt").read_text() == "outside\n"
    assert set(copied.files) == {"plugin.php", "lib/run.sh", "hardlinked.php"}
    assert copied.inside_skipped is not None and "node_modules/pkg/index.js" in copied.inside_skipped


def test_capture_reads_the_copy_and_trusts_only_untouched_copies(tmp_path: Path) -> None:
    src, _ = _tree(tmp_path)
    mount = MountSpec(source=str(src), target="/wordpress/wp-content/plugins/plugin")
    copy = tmp_path / "copy"
    (base,) = take_baselines([mount], tmp_path / "scratch", {0: copy})
    assert base.result_dir == copy and base.write_mode == "copy-on-write"
    assert set(base.signatures) <= {"plugin.php", "lib/run.sh"}  # old files only, as for the user's folder
    (copy / "lib" / "run.sh").write_text("#!/bin/sh\necho changed\n")
    (copy / "new.php").write_text("<?php // new\n")
    (copy / "hardlinked.php").unlink()
    (copy / "node_modules" / "pkg" / "index.js").write_text("2;\n")
    (src / "plugin.php").write_text("the user edits their own folder meanwhile\n")
    changes, skipped = mount_changes(base, CaptureLimits(), [0], Redactor([]))
    assert {c.diff.rel: c.diff.status for c in changes} == {
        "lib/run.sh": "modified",
        "new.php": "added",
        "hardlinked.php": "deleted",
    }
    reasons = {(s.relativePath, s.reason) for s in skipped}
    assert {("link-out", "symlink"), ("lib/file-link", "symlink"), ("pipe", "special-file")} <= reasons
    uncaptured = skipped_dir_report(base, list_tree(copy, track_skipped=True, exclude=base.skipped_exclude))
    assert [(s.relativePath, s.change) for s in uncaptured] == [("node_modules/pkg/index.js", "modified")]
