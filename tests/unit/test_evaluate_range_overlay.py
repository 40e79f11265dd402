"""The rule of what a git work tree adds to the BASE export of `evaluate-patch --git` (docs/evaluate-patch.md,
"A git range"): the pure path rule, then the copy from a real git work tree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebox_tui.bundle.hostgit import HostGit
from codebox_tui.errors import BadInputError
from codebox_tui.recipes.evaluate_range import export_range, overlay_paths


def test_untracked_and_ignored_paths_are_kept() -> None:
    assert overlay_paths(["vendor/autoload.php", "NOTES.md", "vendor/composer/installed.json"], {"plugin.php"}) == [
        "NOTES.md",
        "vendor/autoload.php",
        "vendor/composer/installed.json",
    ]


def test_git_metadata_and_nested_repositories_are_left_out() -> None:
    assert overlay_paths([".git/config", "vendor/lib/.git/HEAD", "vendor/other/", "x.php"], set()) == ["x.php"]


def test_a_path_base_or_the_range_tracks_is_never_overlaid() -> None:
    # a file BASE tracks (e.g. deleted later and regenerated, ignored, in the work tree) keeps BASE's content
    assert overlay_paths(["plugin.php", "new.php"], {"plugin.php"}) == ["new.php"]


def test_a_path_that_conflicts_with_a_tracked_file_or_folder_is_left_out() -> None:
    tracked = {"lib", "src/a.php"}
    # "lib" is a tracked file (or link) at BASE: nothing goes below it; "src" is a tracked folder: not a file
    assert overlay_paths(["lib/x.php", "src", "src/b.php"], tracked) == ["src/b.php"]


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.php", "a/../../b", "a//b"])
def test_a_path_out_of_the_folder_is_refused(path: str) -> None:
    with pytest.raises(BadInputError) as caught:
        overlay_paths([path], set())
    assert caught.value.code == "unsafe-git-tree" and caught.value.field == "--git"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _work_tree(root: Path) -> Path:
    repo = root / "plugin"
    (repo / "tests").mkdir(parents=True)
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n")
    (repo / "old.php").write_text("<?php // at BASE\n")
    (repo / ".gitignore").write_text("/vendor/\n/old.php\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "add", "-f", "old.php")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "rm", "-q", "--cached", "old.php")
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n// fix\n")
    _git(repo, "commit", "-qam", "fix")
    (repo / "old.php").write_text("<?php // regenerated, ignored\n")
    (repo / "vendor" / "bin").mkdir(parents=True)
    (repo / "vendor" / "autoload.php").write_text("<?php // composer\n")
    (repo / "vendor" / "tool.php").write_text("<?php\n")
    (repo / "vendor" / "tool.php").chmod(0o755)
    (repo / "vendor" / "bin" / "tool").symlink_to("../tool.php")
    (repo / "NOTES.md").write_text("notes\n")
    return repo


def test_export_carries_the_work_tree_untracked_files(tmp_path: Path) -> None:
    repo = _work_tree(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target, _patch, _source = export_range(repo, "HEAD", scratch, "plugin")
    assert (target / "vendor" / "autoload.php").read_text() == "<?php // composer\n"
    assert (target / "NOTES.md").read_text() == "notes\n"
    assert os.readlink(target / "vendor" / "bin" / "tool") == "../tool.php"  # copied as a link
    assert os.stat(target / "vendor" / "tool.php").st_mode & 0o111
    assert (target / "old.php").read_text() == "<?php // at BASE\n"  # BASE tracks it: BASE's content wins
    assert "// fix" not in (target / "plugin.php").read_text()  # the before side is BASE
    assert not (target / ".git").exists()


def test_untracked_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    repo = _work_tree(tmp_path)
    (repo / "vendor" / "secret").symlink_to(tmp_path / "host-secret.txt")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(BadInputError) as caught:
        export_range(repo, "HEAD", scratch, "plugin")
    assert caught.value.code == "unsafe-git-tree" and "vendor/secret" in caught.value.message


def test_git_lists_paths_relative_to_a_plugin_subfolder(tmp_path: Path) -> None:
    """A plugin that is a subfolder of a larger repository: only its own untracked files, by its own paths."""
    root = tmp_path / "site"
    plugin = root / "wp-content" / "plugins" / "p"
    plugin.mkdir(parents=True)
    (plugin / "p.php").write_text("<?php\n")
    (root / "README").write_text("site\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (plugin / "p.php").write_text("<?php // fix\n")
    _git(root, "commit", "-qam", "fix")
    (plugin / "local.txt").write_text("mine\n")
    (root / "elsewhere.txt").write_text("not the plugin's\n")
    assert HostGit(plugin).run("status", "--porcelain", timeout=60).returncode == 0
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target, _patch, _source = export_range(plugin, "HEAD", scratch, "p")
    assert sorted(p.name for p in target.iterdir()) == ["local.txt", "p.php"]
