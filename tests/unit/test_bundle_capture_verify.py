"""Bundles from real directories and real git: capture, patch round trips, fail-closed verification."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codebox_tui.bundle.digests import content_digest_b
from codebox_tui.bundle.reader import load_bundle
from codebox_tui.bundle.verify import verify_bundle
from tests.factories.bundles import make_bundle, typical_change
from tests.factories.waiting import wait_for_fs_clock_past


@pytest.mark.parametrize("git", [False, True])
def test_capture_records_every_change_and_verifies(tmp_path: Path, git: bool) -> None:
    summary, _ = make_bundle(tmp_path, typical_change, git=git)
    assert summary.id == "artifact-bundle-sha256-" + summary.content_digest
    result = verify_bundle(summary.path)
    assert result.valid, [v.model_dump() for v in result.violations]
    changed = {
        f["relativePath"]: f for f in json.loads((summary.path / "files/changed-files.json").read_text())["files"]
    }
    assert {k: v["status"] for k, v in changed.items()} == {
        "added.php": "added",
        "keep.bin": "modified",
        "lib/run.sh": "added",
        "plugin.php": "modified",
        "readme.txt": "deleted",
    }
    assert changed["keep.bin"]["binary"] is True
    assert changed["lib/run.sh"]["afterMode"] == "100755"
    review = json.loads((summary.path / "files/review.json").read_text())
    assert review["schema"] == "wp-codebox/artifact-review/v1"
    assert review["stats"] == {"added": 2, "modified": 2, "deleted": 1, "total": 5}
    assert [a["kind"] for a in review["actions"]] == ["approve", "approve-files", "discard", "iterate"]
    assert review["evidence"]["artifactContentDigest"] == summary.content_digest
    strategy = json.loads((summary.path / "metadata.json").read_text())["baselines"][0]["strategy"]
    assert strategy == "snapshot"  # a git work tree too: the baseline is what the sandbox was given
    assert content_digest_b(summary.path) == summary.content_digest_b


def test_git_apply_reproduces_the_sandbox_output_byte_for_byte(tmp_path: Path) -> None:
    summary, pristine = make_bundle(tmp_path, typical_change)
    target = tmp_path / "apply-git"
    shutil.copytree(pristine, target)
    subprocess.run(["git", "apply", "--binary", str(summary.path / "files/patch.diff")], cwd=target, check=True)
    after = tmp_path / "plugin"
    assert subprocess.run(["diff", "-r", str(after), str(target)], capture_output=True).returncode == 0
    assert os.stat(target / "lib" / "run.sh").st_mode & 0o111


def test_patch_p1_applies_text_changes(tmp_path: Path) -> None:
    def text_only(source: Path) -> None:
        typical_change(source)
        (source / "keep.bin").write_bytes(bytes(range(256)))  # leave the binary unchanged

    summary, pristine = make_bundle(tmp_path, text_only)
    target = tmp_path / "apply-patch"
    shutil.copytree(pristine, target)
    subprocess.run(
        ["patch", "-p1", "-s", "--no-backup-if-mismatch", "-i", str(summary.path / "files/patch.diff")],
        cwd=target,
        check=True,
    )
    for rel in ("plugin.php", "added.php", "lib/run.sh"):
        assert (target / rel).read_bytes() == (tmp_path / "plugin" / rel).read_bytes()
    assert not (target / "readme.txt").exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    old=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "", "x", "é\n", "\n", "d"]), max_size=12),
    new=st.lists(st.sampled_from(["a\n", "b\n", "c\n", "", "x", "é\n", "\n", "e"]), max_size=12),
)
def test_any_text_edit_round_trips_through_git_apply(
    tmp_path_factory: pytest.TempPathFactory, old: list[str], new: list[str]
) -> None:
    from codebox_tui.bundle.diff import diff_file

    old_b, new_b = "".join(old).encode(), "".join(new).encode()
    work = tmp_path_factory.mktemp("rt")
    (work / "f.txt").write_bytes(old_b)
    result = diff_file("f.txt", old_b, new_b, "100644", "100644")
    if result is None:
        assert old_b == new_b
        return
    (work / "p.diff").write_text(result.text)
    subprocess.run(["git", "apply", "p.diff"], cwd=work, check=True, capture_output=True)
    assert (work / "f.txt").read_bytes() == new_b


@pytest.fixture(scope="module")
def valid_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    summary, _ = make_bundle(tmp_path_factory.mktemp("valid"), typical_change)
    return summary.path


def _copy(bundle: Path, tmp: Path) -> Path:
    dest = tmp / "bundle"
    shutil.copytree(bundle, dest)
    return dest


def _codes(bundle: Path) -> set[str]:
    result = verify_bundle(bundle)
    assert not result.valid
    return {v.code for v in result.violations}


def _files(bundle: Path) -> list[str]:
    return sorted(str(p.relative_to(bundle)) for p in bundle.rglob("*") if p.is_file())


def _same_json(left: bytes, right: bytes) -> bool:
    try:
        return bool(json.loads(left) == json.loads(right))
    except ValueError:
        return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Choices are drawn as plain integers and applied modulo what the bundle has, so Hypothesis' draws never depend
# on the bundle's shape (FlakyStrategyDefinition when a drawn list's length differed between runs).
@given(file_choice=st.integers(0, 2**16), position=st.integers(0, 2**32), delta=st.integers(1, 255))
def test_any_single_byte_change_is_rejected(
    valid_bundle: Path, tmp_path_factory: pytest.TempPathFactory, file_choice: int, position: int, delta: int
) -> None:
    bundle = _copy(valid_bundle, tmp_path_factory.mktemp("byte"))
    files = _files(bundle)
    rel = files[file_choice % len(files)]
    raw = bytearray((bundle / rel).read_bytes())
    if not raw:
        raw = bytearray(b"x")
    else:
        pos = position % len(raw)
        raw[pos] = (raw[pos] + delta) % 256
    (bundle / rel).write_bytes(bytes(raw))
    if rel == "manifest.json" and _same_json(bytes(raw), (valid_bundle / rel).read_bytes()):
        # whitespace for whitespace: the self-hash is over the parsed manifest (spec §1.3), so it must still verify
        assert verify_bundle(bundle).valid
        return
    codes = _codes(bundle)
    if rel == "manifest.json":
        assert codes & {
            "malformed-manifest",
            "invalid-manifest-shape",
            "file-hash-mismatch",
            "digest-mismatch",
            "bundle-id-mismatch",
            "invalid-path",
            "missing-file",
            "orphaned-file",
            "missing-file-hash",
            "review-evidence-mismatch",
            "malformed-reference",
        }
    else:
        assert "file-hash-mismatch" in codes


def test_added_file_is_an_orphan(valid_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(valid_bundle, tmp_path)
    (bundle / "files" / "sneaky.php").write_text("<?php")
    assert "orphaned-file" in _codes(bundle)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file_choice=st.integers(0, 2**16), remove=st.booleans())
def test_removed_or_renamed_file_is_rejected(
    valid_bundle: Path, tmp_path_factory: pytest.TempPathFactory, file_choice: int, remove: bool
) -> None:
    bundle = _copy(valid_bundle, tmp_path_factory.mktemp("rm"))
    files = [f for f in _files(bundle) if f != "manifest.json"]
    rel = files[file_choice % len(files)]
    if remove:
        (bundle / rel).unlink()
        assert "missing-file" in _codes(bundle)
    else:
        (bundle / rel).rename(bundle / (rel + ".renamed"))
        assert {"missing-file", "orphaned-file"} <= _codes(bundle)


def test_symlink_and_hardlink_are_rejected(valid_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(valid_bundle, tmp_path)
    target = bundle / "files" / "patch.diff"
    outside = tmp_path / "outside.diff"
    shutil.copy(target, outside)
    target.unlink()
    target.symlink_to(outside)
    assert "missing-file" in _codes(bundle)
    bundle2 = _copy(valid_bundle, tmp_path / "h")
    os.link(bundle2 / "files" / "patch.diff", tmp_path / "hardlink.diff")
    assert "hardlink" in _codes(bundle2)
    bundle3 = _copy(valid_bundle, tmp_path / "s")
    (bundle3 / "extra-link").symlink_to("/etc/passwd")
    assert "orphaned-file" in _codes(bundle3)


@pytest.mark.parametrize("bad_path", ["../escape.txt", "/etc/passwd", "files/../../x", "C:/x", "a\\b"])
def test_traversal_and_absolute_paths_are_invalid(valid_bundle: Path, tmp_path: Path, bad_path: str) -> None:
    bundle = _copy(valid_bundle, tmp_path)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"].append(
        {
            "path": bad_path,
            "kind": "file",
            "contentType": "text/plain",
            "sha256": {"algorithm": "sha256", "value": "0" * 64},
        }
    )
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert "invalid-path" in _codes(bundle)


def test_duplicate_entry_is_rejected(valid_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(valid_bundle, tmp_path)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"].append(dict(manifest["files"][3]))
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert "invalid-manifest-shape" in _codes(bundle)


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (None, "missing-manifest"),
        ('{"id": "x", "files": [', "malformed-manifest"),
        ('{"id": 3}', "invalid-manifest-shape"),
        ("[]", "invalid-manifest-shape"),
    ],
)
def test_malformed_manifests_fail_closed(valid_bundle: Path, tmp_path: Path, content: str | None, code: str) -> None:
    bundle = _copy(valid_bundle, tmp_path)
    if content is None:
        (bundle / "manifest.json").unlink()
    else:
        (bundle / "manifest.json").write_text(content)
    assert _codes(bundle) == {code}


def test_reader_rejects_wrong_schema_ids_clearly(valid_bundle: Path, tmp_path: Path) -> None:
    from codebox_tui.errors import BadInputError

    bundle = _copy(valid_bundle, tmp_path)
    review = json.loads((bundle / "files/review.json").read_text())
    review["schema"] = "wp-codebox/artifact-review/v9"
    (bundle / "files/review.json").write_text(json.dumps(review))
    with pytest.raises(BadInputError) as caught:
        load_bundle(bundle)
    assert "artifact-review/v9" in str(caught.value)


def test_secrets_are_redacted_from_captured_files(tmp_path: Path) -> None:
    secret = "TOPSECRETVALUE123"

    def leak(source: Path) -> None:
        (source / "leak.txt").write_text(f"token={secret}\n")

    summary, _ = make_bundle(tmp_path, leak, secrets=[secret])
    for path in summary.path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert verify_bundle(summary.path).valid
    assert "secrets-redacted" in json.loads((summary.path / "files/review.json").read_text())["riskFlags"]


def test_cli_verify_and_show_never_trace(valid_bundle: Path, tmp_path: Path) -> None:
    import sys

    bundle = _copy(valid_bundle, tmp_path)
    (bundle / "manifest.json").write_text("{ truncated")
    for args in (
        ["artifacts", "verify", str(bundle)],
        ["artifacts", "show", str(bundle)],
        ["artifacts", "verify", str(tmp_path / "nope")],
    ):
        out = subprocess.run([sys.executable, "-m", "codebox_tui", *args], capture_output=True, text=True)
        assert out.returncode != 0
        assert "Traceback" not in out.stderr, out.stderr
    ok = subprocess.run(
        [sys.executable, "-m", "codebox_tui", "artifacts", "verify", str(valid_bundle), "--json"],
        capture_output=True,
        text=True,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True


@pytest.mark.parametrize("git", [False, True])
def test_same_size_same_mode_edit_is_still_captured(tmp_path: Path, git: bool) -> None:
    def flip_one_byte(source: Path) -> None:
        data = bytearray((source / "lib" / "util.php").read_bytes())
        data[-5] ^= 0x01  # "1" -> "0": same size, same mode, different bytes
        (source / "lib" / "util.php").write_bytes(bytes(data))

    summary, _ = make_bundle(tmp_path, flip_one_byte, git=git)
    files = json.loads((summary.path / "files/changed-files.json").read_text())["files"]
    assert [(f["relativePath"], f["status"]) for f in files] == [("lib/util.php", "modified")]
    assert "return 0;" in (summary.path / "files/patch.diff").read_text()


def test_same_size_same_mtime_edit_after_trusted_snapshot_is_captured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stat-signature skip must not hide an edit that keeps size and restores mtime: ctime moves."""
    import os as _os

    from codebox_tui.bundle import baseline as baseline_module
    from codebox_tui.bundle.baseline import take_baselines as _take
    from codebox_tui.bundle.capture import capture_bundle as _capture
    from codebox_tui.contracts.common import utc_now_iso as _now
    from codebox_tui.contracts.runtime import MountSpec as _Mount
    from codebox_tui.contracts.runtime import RuntimeInfo as _Info
    from codebox_tui.contracts.runtime import RuntimePolicy as _Policy

    source = tmp_path / "plugin"
    source.mkdir()
    target = source / "a.php"
    target.write_text("<?php echo 1;\n")
    wait_for_fs_clock_past(source, tmp_path)  # the edit below must get a later ctime than this write
    monkeypatch.setattr(baseline_module, "_RACY_MARGIN_NS", 0)
    mount = _Mount(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    baselines = _take([mount], tmp_path / "scratch")
    assert "a.php" in baselines[0].signatures  # the skip is really in play
    before = _os.stat(target)
    target.write_text("<?php echo 2;\n")
    _os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _os.stat(target).st_size == before.st_size and _os.stat(target).st_mtime_ns == before.st_mtime_ns
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = _capture(
        run_dir,
        runtime=_Info(id="runtime-t", createdAt=_now(), environment={}),
        mounts=[mount],
        baselines=baselines,
        policy=_Policy(commands=["wordpress.run-php"]),
        metadata={},
        secret_values=[],
        evidence=[],
        test_suites=[],
    )
    assert [f["relativePath"] for f in summary.changed_files] == ["a.php"]
