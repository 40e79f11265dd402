"""A bundle manifest never lists more entries than its digests cover (canonical JSON keeps only the first
2,000 items of an array): copies past that are left out and recorded, every change is still in the patch,
and verification rejects a manifest that lists more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.capture import MAX_MANIFEST_ENTRIES
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.runtime import MountSpec
from codebox_tui.errors import SandboxError
from tests.factories.capture import capture_plain_run


def _capture(tmp: Path, source: Path):  # type: ignore[no-untyped-def]
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    baselines = take_baselines([mount], tmp / "scratch")
    return mount, baselines


def _run(tmp: Path, mount: MountSpec, baselines: list) -> Path:  # type: ignore[type-arg]
    run_dir = tmp / "run"
    run_dir.mkdir(exist_ok=True)
    capture_plain_run(run_dir, [mount], baselines)
    return run_dir


def test_copies_stop_at_the_manifest_cap_and_every_change_stays_in_the_patch(tmp_path: Path) -> None:
    source = tmp_path / "plugin"
    source.mkdir()
    mount, baselines = _capture(tmp_path, source)
    added = 2100
    for i in range(added):
        (source / f"f{i:04d}.php").write_text(f"<?php // {i}\n")
    run_dir = _run(tmp_path, mount, baselines)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(manifest["files"]) == MAX_MANIFEST_ENTRIES == 2000
    changed = json.loads((run_dir / "files/changed-files.json").read_text())["files"]
    assert len(changed) == added  # the change list is complete
    patch = (run_dir / "files/patch.diff").read_text()
    assert patch.count("diff --git ") == added
    mounted = json.loads((run_dir / "files/mounted-files.json").read_text())
    left_out = [s for s in mounted["skipped"] if s["reason"] == "max-files-exceeded"]
    assert len(mounted["files"]) + len(left_out) == added
    copies = {f["path"] for f in manifest["files"] if f["path"].startswith("files/mounts/")}
    assert len(copies) == len(mounted["files"])
    assert all(c.get("artifactPath") in copies for c in changed if c.get("artifactPath"))
    assert not (run_dir / "files/mounts/0" / f"{left_out[0]['relativePath']}").exists()
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["contentDigest"] == manifest["contentDigest"]  # the digest object, as the reference writes it
    result = verify_bundle(run_dir)
    assert result.valid, result.violations[:3]


def test_verify_rejects_a_manifest_listing_more_than_its_digests_cover(tmp_path: Path) -> None:
    source = tmp_path / "plugin"
    source.mkdir()
    (source / "a.php").write_text("<?php\n")
    mount, baselines = _capture(tmp_path, source)
    run_dir = _run(tmp_path, mount, baselines)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for i in range(MAX_MANIFEST_ENTRIES + 1 - len(manifest["files"])):
        manifest["files"].append(
            {
                "path": f"files/pad/{i}.txt",
                "kind": "command-artifact",
                "contentType": "text/plain",
                "sha256": {"algorithm": "sha256", "value": "0" * 64},
            }
        )
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    result = verify_bundle(run_dir)
    assert not result.valid
    assert [v.code for v in result.violations] == ["invalid-manifest-shape"]
    assert "2001 entries" in result.violations[0].message


def test_a_run_that_leaves_too_many_files_is_not_sealed_and_loses_nothing(tmp_path: Path) -> None:
    source = tmp_path / "plugin"
    source.mkdir()
    mount, baselines = _capture(tmp_path, source)
    run_dir = tmp_path / "run"
    (run_dir / "files" / "out").mkdir(parents=True)
    for i in range(MAX_MANIFEST_ENTRIES):
        (run_dir / "files" / "out" / f"r{i}.txt").write_text(str(i))
    with pytest.raises(SandboxError) as caught:
        _run(tmp_path, mount, baselines)
    assert caught.value.code == "bundle-too-many-files"
    assert len(list((run_dir / "files" / "out").iterdir())) == MAX_MANIFEST_ENTRIES
    assert not (run_dir / "manifest.json").exists()
