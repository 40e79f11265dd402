"""`evaluate-patch --git` exports the plugin's files at BASE from its repository: a committed link that points
out of the plugin folder is refused before anything boots (the host file is never copied into the sandbox's
scratch), the same for an ignored link in the work tree, whose untracked and ignored files join BASE, and a range
argument that looks like a git option is refused, through the real CLI and real git (docs/evaluate-patch.md,
"A git range")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.org", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _cli(tmp_path: Path, repo: Path, rng: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "codebox_tui",
            "evaluate-patch",
            "--plugin",
            str(repo),
            "--git",
            rng,
            "--artifacts-dir",
            str(tmp_path / "art"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CODEBOX_HOME": str(tmp_path / "home")},
    )


def test_link_out_of_the_plugin_in_base_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only\n")
    repo = tmp_path / "plugin"
    repo.mkdir()
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n")
    (repo / "notes.txt").symlink_to(secret)  # an absolute link to a host file, committed
    (repo / "up.txt").symlink_to("../host-secret.txt")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n// fix\n")
    _git(repo, "commit", "-qam", "fix")
    proc = _cli(tmp_path, repo, "HEAD")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "unsafe-git-tree" and error["field"] == "--git"
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "art").exists() or not any((tmp_path / "art").iterdir())


def test_ignored_link_out_of_the_plugin_in_the_work_tree_is_refused(tmp_path: Path) -> None:
    """The work tree's ignored files are laid over BASE: a link among them that points at a host file is never
    followed nor copied; the evaluation stops before anything boots."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host only\n")
    repo = tmp_path / "plugin"
    repo.mkdir()
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n")
    (repo / ".gitignore").write_text("/vendor/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "plugin.php").write_text("<?php\n/* Plugin Name: P */\n// fix\n")
    _git(repo, "commit", "-qam", "fix")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "autoload.php").symlink_to(secret)  # ignored, so git status stays clean
    (repo / "vendor" / "up.php").symlink_to("../../host-secret.txt")
    proc = _cli(tmp_path, repo, "HEAD")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "unsafe-git-tree" and error["field"] == "--git" and "points out of" in error["message"]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "art").exists() or not any((tmp_path / "art").iterdir())


def test_range_that_looks_like_an_option_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "plugin"
    repo.mkdir()
    (repo / "plugin.php").write_text("<?php\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    proc = _cli(tmp_path, repo, f"--output={tmp_path / 'written'}")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["field"] == "--git"
    assert not (tmp_path / "written").exists()
