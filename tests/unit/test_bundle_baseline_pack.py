"""Baselines are packed into one file per mount (no per-file copies), and a git baseline is the work
tree as HEAD checks it out, even where ``git archive`` would leave files out or rewrite them."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from codebox_tui.bundle import baseline
from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import BundleSummary
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.runtime import MountSpec
from tests.factories.capture import capture_plain_run

GIT = ["git", "-c", "user.email=t@example.test", "-c", "user.name=t"]


def _capture(tmp: Path, mount: MountSpec, baselines: list) -> BundleSummary:  # type: ignore[type-arg]
    run_dir = tmp / "run"
    run_dir.mkdir()
    return capture_plain_run(run_dir, [mount], baselines)


def _plugin_repo(root: Path) -> Path:
    repo = root / "plugin"
    (repo / "tests" / "unit").mkdir(parents=True)
    (repo / "plugin.php").write_text("<?php\n/* Version: $Format:%h$ */\necho 'hi';\n")
    (repo / "tests" / "unit" / "test-a.php").write_text("<?php // a test\n")
    (repo / "tests" / "bootstrap.php").write_text("<?php // bootstrap\n")
    (repo / "notes.txt").write_text("line one\nline two\n")
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    # what WordPress plugins commonly ship: tests left out of release zips, a version stamped on export,
    # and text files checked out with CRLF
    (repo / ".gitattributes").write_text(
        "tests/ export-ignore\n/.gitattributes export-ignore\nplugin.php export-subst\n*.txt text eol=crlf\n"
    )
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "base"], check=True)
    # check the CRLF file out again so the work tree has the converted bytes
    (repo / "notes.txt").unlink()
    subprocess.run(["git", "-C", str(repo), "checkout", "--", "notes.txt"], check=True)
    assert (repo / "notes.txt").read_bytes() == b"line one\r\nline two\r\n"
    return repo


def test_git_baseline_matches_the_checked_out_tree_despite_export_attributes(tmp_path: Path) -> None:
    repo = _plugin_repo(tmp_path)
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.strategy == "snapshot"
    # every tracked file is in the baseline with the work tree's bytes, export-ignored ones included
    with base.reader() as read:
        for rel in (
            "plugin.php",
            "tests/unit/test-a.php",
            "tests/bootstrap.php",
            "notes.txt",
            "run.sh",
            ".gitattributes",
        ):
            assert read(rel) == (repo / rel).read_bytes(), rel
            assert base.hashes[rel] == hashlib.sha256((repo / rel).read_bytes()).hexdigest()
    assert base.entries["run.sh"].mode == "100755"
    # a run that changes nothing reports nothing (a baseline from git archive would report tests/ as added
    # and plugin.php as modified)
    summary = _capture(tmp_path, mount, [base])
    assert summary.changed_files == []


def test_git_baseline_diffs_export_ignored_files_against_head(tmp_path: Path) -> None:
    repo = _plugin_repo(tmp_path)
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    baselines = take_baselines([mount], tmp_path / "scratch")
    (repo / "tests" / "bootstrap.php").write_text("<?php // bootstrap, edited in the sandbox\n")
    (repo / "tests" / "unit" / "test-a.php").unlink()
    summary = _capture(tmp_path, mount, baselines)
    got = {c["relativePath"]: (c["status"], c.get("beforeSha256")) for c in summary.changed_files}
    assert got == {
        "tests/bootstrap.php": ("modified", hashlib.sha256(b"<?php // bootstrap\n").hexdigest()),
        "tests/unit/test-a.php": ("deleted", hashlib.sha256(b"<?php // a test\n").hexdigest()),
    }
    assert verify_bundle(summary.path).valid
    patch = (summary.path / "files" / "patch.diff").read_text()
    assert "-<?php // bootstrap\n+<?php // bootstrap, edited in the sandbox\n" in patch


@pytest.mark.parametrize("git", [False, True])
def test_baseline_is_one_pack_file_per_mount(tmp_path: Path, git: bool) -> None:
    source = tmp_path / "plugin"
    for i in range(30):
        (source / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (source / f"d{i % 3}" / f"f{i}.php").write_text(f"<?php // {i}\n")
    if git:
        subprocess.run(["git", "init", "-q", str(source)], check=True)
        subprocess.run([*GIT, "-C", str(source), "add", "-A"], check=True)
        subprocess.run([*GIT, "-C", str(source), "commit", "-qm", "base"], check=True)
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.strategy == "snapshot"
    assert [p.name for p in (tmp_path / "scratch").iterdir()] == ["baseline-0.pack"]
    assert len(base.index) == 30
    (source / "d1" / "f4.php").write_text("<?php // four, changed\n")
    summary = _capture(tmp_path, mount, [base])
    assert [(c["relativePath"], c["status"]) for c in summary.changed_files] == [("d1/f4.php", "modified")]


def test_broken_git_repository_falls_back_to_a_snapshot(tmp_path: Path) -> None:
    repo = tmp_path / "plugin"
    repo.mkdir()
    (repo / "a.php").write_text("<?php // a\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "base"], check=True)
    # HEAD names a commit whose objects are gone: rev-parse still answers, ls-tree/archive cannot
    for obj in (repo / ".git" / "objects").glob("??/*"):
        obj.unlink()
    mount = MountSpec(source=str(repo), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert base.strategy == "snapshot"
    (repo / "a.php").write_text("<?php // a, changed\n")
    summary = _capture(tmp_path, mount, [base])
    assert [(c["relativePath"], c["status"]) for c in summary.changed_files] == [("a.php", "modified")]


@pytest.mark.parametrize("with_tar", [True, False])
def test_copies_of_awkward_names_are_written_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_tar: bool
) -> None:
    """Copies go through a ``tar -x`` child when tar is on PATH, in-process otherwise (and always for
    names tar streams cannot carry as given): both give the same bundle."""
    if not with_tar:
        monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    source = tmp_path / "plugin"
    deep = source / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    names = ["über.php", "a b.php", "x" * 90 + ".php", "plain.php"]
    for name in names:
        (deep / name).write_text("<?php // old\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    baselines = take_baselines([mount], tmp_path / "scratch")
    for index, name in enumerate(names):
        (deep / name).write_bytes(f"<?php // new {index}\n".encode() + bytes(range(256)) * index)
    summary = _capture(tmp_path, mount, baselines)
    assert len(summary.changed_files) == len(names)
    rel_dir = deep.relative_to(source).as_posix()
    for name in names:
        copy = summary.path / "files" / "mounts" / "0" / rel_dir / name
        assert copy.read_bytes() == (deep / name).read_bytes(), name
        assert copy.stat().st_mode & 0o777 == 0o644
    result = verify_bundle(summary.path)
    assert result.valid, result.violations


@pytest.mark.parametrize("with_sha256sum", [True, False])
def test_untrusted_files_hashed_in_bulk_still_show_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_sha256sum: bool
) -> None:
    """Files written just before the baseline get no stat signature; capture hashes them in bulk with
    sha256sum children (or in-process without it): same-size edits are found, rewrites with the same
    bytes are not changes, odd names survive."""
    if not with_sha256sum:
        monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    # "just before": within the racy margin however slowly a busy machine writes the 303 files below
    monkeypatch.setattr(baseline, "_RACY_MARGIN_NS", 600 * 10**9)
    source = tmp_path / "plugin"
    names = [f"lib/f{i:03d}.php" for i in range(300)] + ["odd name\nwith newline.php", "-dash.php", "ü.php"]
    for name in names:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(f"<?php // {name!r} original\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    (base,) = take_baselines([mount], tmp_path / "scratch")
    assert not base.signatures, "every file is fresh: none may be trusted by stat"
    edited = ["lib/f007.php", "odd name\nwith newline.php", "-dash.php"]
    for name in edited:  # same size, different bytes
        (source / name).write_text(f"<?php // {name!r} ORIGINAL\n")
    (source / "lib/f100.php").write_text((source / "lib/f100.php").read_text())  # rewritten, same bytes
    summary = _capture(tmp_path, mount, [base])
    assert sorted(c["relativePath"] for c in summary.changed_files) == sorted(edited)
    assert all(c["status"] == "modified" for c in summary.changed_files)
    assert verify_bundle(summary.path).valid


def test_bulk_hashes_match_hashlib_for_awkward_names(tmp_path: Path) -> None:
    from codebox_tui.bundle.copies import PREHASH_MIN_FILES, prehash

    names = [f"lib/f{i:03d}.php" for i in range(PREHASH_MIN_FILES)]
    names += ["odd name\nwith newline.php", "-dash.php", "ü.php", "back\\slash.php", "sp ace/x.php"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(name.encode() * 3)
    hashes = prehash(str(tmp_path), [*names, "missing.php"])
    assert hashes == {name: hashlib.sha256(name.encode() * 3).hexdigest() for name in names}


@pytest.mark.parametrize(
    ("name", "size", "mode", "kind"),
    [
        ("files/mounts/0/a.php", 10, 0o644, "file"),
        ("files/mounts/0/lib", 0, 0o755, "dir"),
        ("files/mounts/1/" + "x" * 85, 123456789, 0o644, "file"),
        ("files/mounts/0/sp ace-_.~+", 0, 0o644, "file"),
    ],
)
def test_fast_ustar_headers_are_byte_for_byte_what_tarfile_writes(name: str, size: int, mode: int, kind: str) -> None:
    import tarfile

    from codebox_tui.bundle.copies import ustar_header

    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 1_790_000_000
    info.type = tarfile.DIRTYPE if kind == "dir" else tarfile.REGTYPE
    assert ustar_header(name, size, mode, 1_790_000_000, info.type) == info.tobuf(format=tarfile.USTAR_FORMAT)


def test_names_ustar_cannot_carry_get_no_fast_header() -> None:
    from codebox_tui.bundle.copies import ustar_header

    assert ustar_header("files/mounts/0/" + "y" * 90, 1, 0o644, 0, b"0") is None
    assert ustar_header("files/mounts/0/ü.php", 1, 0o644, 0, b"0") is None
