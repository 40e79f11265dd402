"""Capture's stat-signature skip: files untouched since the snapshot are not read, and every way of
changing a file (even with its size and mtime restored) is still captured."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codebox_tui.bundle import baseline as baseline_module
from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import capture_bundle
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy


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
    time.sleep(0.05)
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert len(base.signatures) == 20, "the skip path must be exercised"
    mutate(source / "lib" / "f7.php")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_bundle(
        run_dir,
        runtime=RuntimeInfo(id="rt", createdAt=utc_now_iso(), environment={}),
        mounts=[mount],
        baselines=[base],
        policy=RuntimePolicy(commands=["wordpress.run-php"]),
        metadata={},
        secret_values=[],
        evidence=[],
        test_suites=[],
    )
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

    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   check=True, capture_output=True)


@pytest.mark.parametrize(
    ("mutate", "status"),
    [(_same_size_edit_with_old_mtime, "modified"), (_replace_by_rename, "modified"), (_chmod_exec, "modified")],
)
def test_git_baseline_trusts_only_clean_files_and_never_hides_a_change(
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
    time.sleep(0.05)
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.strategy == "git-head"
    # only clean tracked files are trusted: not f3 (modified), notes.txt (untracked), cache/ (ignored)
    assert set(base.signatures) == {f"lib/f{i}.php" for i in range(20) if i != 3} | {".gitignore"}
    mutate(repo / "lib" / "f7.php")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_bundle(
        run_dir,
        runtime=RuntimeInfo(id="rt", createdAt=utc_now_iso(), environment={}),
        mounts=[mount], baselines=[base], policy=RuntimePolicy(commands=["wordpress.run-php"]),
        metadata={}, secret_values=[], evidence=[], test_suites=[],
    )
    changes = {(c["relativePath"], c["status"]) for c in summary.changed_files}
    # against HEAD: the pre-run edits are changes too (as before), plus the sandbox's edit of f7
    assert changes == {("lib/f7.php", status), ("lib/f3.php", "modified"), ("notes.txt", "added"),
                       ("cache/c.bin", "added")}
    assert verify_bundle(run_dir).valid
