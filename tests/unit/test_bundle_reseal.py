"""append_and_reseal: files added to a sealed bundle get listed and the bundle sealed again, rewriting
only the documents that depend on the file list; a bundle changed in between still fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codebox_tui.bundle.seal import append_and_reseal
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.errors import BadInputError
from tests.factories.bundles import AddedFile, make_bundle, typical_change


def _signature(path: Path) -> tuple[int, int, bytes]:
    info = path.stat()
    return info.st_ino, info.st_mtime_ns, path.read_bytes()


def test_reseal_lists_the_new_file_and_rewrites_only_id_bearing_documents(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    run_dir = summary.path
    untouched = [
        "files/patch.diff",
        "files/changed-files.json",
        "files/mounts/0/added.php",
        "events.jsonl",
        "files/workspace-patch.json",
        "files/test-results.json",
    ]
    before = {rel: _signature(run_dir / rel) for rel in untouched}
    evidence = run_dir / "files" / "runtime-evidence" / "verification.json"
    evidence.parent.mkdir(parents=True)
    evidence.write_text('{"valid": true}\n')

    resealed = append_and_reseal(run_dir, [AddedFile("files/runtime-evidence/verification.json")])

    result = verify_bundle(run_dir)
    assert result.valid, result.violations
    assert resealed.id != summary.id and resealed.content_digest_b == summary.content_digest_b
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["id"] == resealed.id
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["id"] == resealed.id and metadata["contentDigest"] == manifest["contentDigest"]
    review = json.loads((run_dir / "files/review.json").read_text())
    assert review["artifactId"] == resealed.id
    assert review["evidence"]["artifactContentDigest"] == resealed.content_digest
    reference = json.loads((run_dir / "files/runtime-reference-manifest.json").read_text())
    assert reference["artifactBundle"]["id"] == resealed.id
    assert "files/runtime-evidence/verification.json" in {f["path"] for f in reference["files"]}
    listed = {f["path"]: f["kind"] for f in manifest["files"]}
    assert listed["files/runtime-evidence/verification.json"] == "artifact-bundle-verification"
    assert {rel: _signature(run_dir / rel) for rel in untouched} == before  # not rewritten
    assert resealed.stats == summary.stats and resealed.changed_files == summary.changed_files


def test_reseal_does_not_launder_a_file_changed_after_the_seal(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    run_dir = summary.path
    patch = run_dir / "files" / "patch.diff"
    patch.write_text(patch.read_text() + "+sneaked in\n")
    (run_dir / "files" / "extra.json").write_text("{}\n")
    append_and_reseal(run_dir, [AddedFile("files/extra.json")])
    result = verify_bundle(run_dir)
    assert not result.valid
    assert {v.code for v in result.violations if "files/patch.diff" in v.message} == {"file-hash-mismatch"}


def test_reseal_rejects_a_missing_or_escaping_file(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    manifest_before = (summary.path / "manifest.json").read_bytes()
    for bad in ("files/not-there.json", "../outside.json", "/etc/passwd"):
        with pytest.raises(BadInputError) as caught:
            append_and_reseal(summary.path, [AddedFile(bad)])
        assert caught.value.field == bad
    assert (summary.path / "manifest.json").read_bytes() == manifest_before
    assert verify_bundle(summary.path).valid
