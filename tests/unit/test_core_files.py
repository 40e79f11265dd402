"""The host's comparison of a site's core with its golden copy (runtime/core_files.py), on real folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from codebox_tui.runtime.core_files import changed_core, compute_digests, load_digests, stat_core, write_digests


def _site(root: Path) -> Path:
    site = root / "wordpress"
    (site / "wp-includes" / "js").mkdir(parents=True)
    (site / "wp-admin").mkdir()
    (site / "wp-content" / "plugins").mkdir(parents=True)
    (site / "wp-includes" / "version.php").write_text("<?php $wp_version = '6.5';\n")
    (site / "wp-includes" / "js" / "a.js").write_text("a();\n")
    (site / "wp-admin" / "index.php").write_text("<?php // admin\n")
    (site / "wp-load.php").write_text("<?php // load\n")
    (site / "wp-content" / "plugins" / "p.php").write_text("<?php // not core\n")
    return site


def test_digests_cover_core_and_root_files_not_wp_content(tmp_path: Path) -> None:
    site = _site(tmp_path / "golden")
    digests = compute_digests(site)
    assert set(digests) == {
        "wp-admin",
        "wp-admin/index.php",
        "wp-includes",
        "wp-includes/js",
        "wp-includes/js/a.js",
        "wp-includes/version.php",
        "wp-load.php",
    }
    write_digests(site)
    assert load_digests(site) == digests


def test_a_same_size_rewrite_with_the_mtime_set_back_a_link_a_new_and_a_gone_file_are_changes(tmp_path: Path) -> None:
    golden = _site(tmp_path / "golden")
    expected = compute_digests(golden)
    sandbox = tmp_path / "sandbox" / "wordpress"
    shutil.copytree(golden, sandbox)
    baseline = stat_core(sandbox)
    assert changed_core(sandbox, baseline, expected)[0] == []

    version = sandbox / "wp-includes" / "version.php"
    before = version.stat()
    version.write_text("<?php $wp_version = '6.6';\n")
    os.utime(version, ns=(before.st_atime_ns, before.st_mtime_ns))
    (sandbox / "wp-admin" / "planted.php").write_text("<?php // planted\n")
    (sandbox / "wp-load.php").unlink()
    (sandbox / "wp-includes" / "js" / "a.js").unlink()
    (sandbox / "wp-includes" / "js" / "a.js").symlink_to(golden / "wp-includes" / "js" / "a.js")  # same bytes
    (sandbox / "wp-content" / "plugins" / "p.php").write_text("<?php // changed, not core\n")
    changes, _ = changed_core(sandbox, baseline, expected)
    assert [(c.path, c.status) for c in changes] == [
        ("wp-admin/planted.php", "added"),
        ("wp-includes/js/a.js", "changed"),
        ("wp-includes/version.php", "changed"),
        ("wp-load.php", "deleted"),
    ]


def test_a_touched_file_with_the_same_bytes_is_no_change(tmp_path: Path) -> None:
    golden = _site(tmp_path / "golden")
    sandbox = tmp_path / "sandbox" / "wordpress"
    shutil.copytree(golden, sandbox)
    baseline = stat_core(sandbox)
    (sandbox / "wp-load.php").write_text("<?php // load\n")
    assert changed_core(sandbox, baseline, compute_digests(golden))[0] == []
