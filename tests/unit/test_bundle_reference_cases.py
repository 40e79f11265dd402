"""Interop golden cases: bundles shaped the way the reference implementation writes them.

The scenarios follow the reference's verifier rule matrix and its Mode A digest test (spec §2, §13):
each bundle here is built from scratch by this test with our own digest helpers, then tampered one way,
and our verifier must report the same violation code the reference verifier expects for that case.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from codebox_tui.bundle.digests import content_digest, file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.bundle.reader import load_bundle
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.bundle import TestResults
from tests.factories.capture import capture_plain_run

MODE_B = ["files/changed-files.json", "files/patch.diff"]
PLUGIN = "/wordpress/wp-content/plugins/demo"
PATCH = (
    "diff --git a/wordpress/wp-content/plugins/demo/hello.txt b/wordpress/wp-content/plugins/demo/hello.txt\n"
    "new file mode 100644\n--- /dev/null\n+++ b/wordpress/wp-content/plugins/demo/hello.txt\n"
    "@@ -0,0 +1 @@\n+hi there\n"
)
RUNTIME = {
    "id": "rt-golden",
    "backend": "wordpress-playground",
    "status": "destroyed",
    "environment": {"kind": "wordpress", "version": "latest"},
    "createdAt": "2026-02-02T00:00:00.000Z",
}
LISTING = [
    ("manifest.json", "manifest", "application/json"),
    ("metadata.json", "metadata", "application/json"),
    ("files/changed-files.json", "changed-files", "application/json"),
    ("files/patch.diff", "patch", "text/x-diff"),
    ("files/review.json", "review", "application/json"),
    ("files/test-results.json", "test-results", "application/json"),
    ("files/runtime-episode-trace.json", "runtime-episode-trace", "application/json"),
    ("files/runtime-episode.jsonl", "runtime-episode-events", "application/x-ndjson"),
]


def _dump(path: Path, value: Any) -> None:
    """Pretty JSON with a trailing newline, as the reference writes its files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def _entries(listing: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [
        {"path": p, "kind": k, "contentType": c, "sha256": {"algorithm": "sha256", "value": "0" * 64}}
        for p, k, c in listing
    ]


def _manifest(digest: str, inputs: list[str], listing: list[tuple[str, str, str]] = LISTING) -> dict[str, Any]:
    return {
        "id": f"artifact-bundle-sha256-{digest}",
        "contentDigest": {"algorithm": "sha256", "inputs": list(inputs), "value": digest},
        "createdAt": "2026-02-02T00:00:00.000Z",
        "runtime": dict(RUNTIME),
        "files": _entries(listing),
    }


def _seal(bundle: Path, manifest: dict[str, Any]) -> None:
    """Hash every listed file, then the manifest itself last (placeholder zeros in its own slot)."""
    for entry in manifest["files"]:
        if entry["path"] != "manifest.json" and (bundle / entry["path"]).is_file():
            entry["sha256"] = {"algorithm": "sha256", "value": file_sha256(bundle / entry["path"])}
    for entry in manifest["files"]:
        if entry["path"] == "manifest.json":
            entry["sha256"] = {"algorithm": "sha256", "value": manifest_self_hash(manifest)}
    _dump(bundle / "manifest.json", manifest)


def _review(digest: str) -> dict[str, Any]:
    return {
        "schema": "wp-codebox/artifact-review/v1",
        "artifactId": f"artifact-bundle-sha256-{digest}",
        "evidence": {
            "patch": "files/patch.diff",
            "patchSha256": hashlib.sha256(PATCH.encode()).hexdigest(),
            "artifactContentDigest": digest,
            "changedFiles": "files/changed-files.json",
            "testResults": "files/test-results.json",
            "runtimeEpisodeTrace": "files/runtime-episode-trace.json",
        },
        "changedFiles": [{"path": f"{PLUGIN}/hello.txt", "status": "added"}],
    }


def _trace(digest: str) -> dict[str, Any]:
    return {
        "schema": "wp-codebox/runtime-episode-trace/v1",
        "version": 1,
        "id": "trace-rt-golden",
        "createdAt": "2026-02-02T00:00:00.000Z",
        "runtime": dict(RUNTIME),
        "reset": {"id": "rt-golden:reset:0", "runtime": dict(RUNTIME), "observations": [], "observationRefs": []},
        "steps": [],
        "snapshots": [],
        "artifactRef": {
            "kind": "artifact-bundle",
            "id": f"artifact-bundle-sha256-{digest}",
            # the reference also names the bundle by id and absolute path inside the reference
            "artifactId": f"artifact-bundle-sha256-{digest}",
            "path": "/tmp/codebox-golden/valid",
            "digest": {"algorithm": "sha256", "value": digest},
        },
    }


def write_mode_b_bundle(bundle: Path) -> str:
    """A valid bundle in the reference's Mode B shape (content digest over changed-files + patch)."""
    changed = {
        "schema": "wp-codebox/changed-files/v1",
        "files": [
            {
                "path": f"{PLUGIN}/hello.txt",
                "status": "added",
                "mountIndex": 0,
                "mountTarget": PLUGIN,
                "relativePath": "hello.txt",
                "patchPath": "files/diffs/0-hello.txt.diff",
            }
        ],
    }
    _dump(bundle / "files" / "changed-files.json", changed)
    (bundle / "files" / "patch.diff").write_text(PATCH, encoding="utf-8")
    (bundle / "files" / "test-results.json").write_text("{}\n", encoding="utf-8")
    digest = content_digest(bundle, MODE_B)
    _dump(bundle / "files" / "runtime-episode-trace.json", _trace(digest))
    (bundle / "files" / "runtime-episode.jsonl").write_text(
        json.dumps({"type": "episode.artifacts", "id": f"artifact-bundle-sha256-{digest}"}) + "\n", encoding="utf-8"
    )
    _dump(bundle / "files" / "review.json", _review(digest))
    _dump(
        bundle / "metadata.json",
        {
            "id": f"artifact-bundle-sha256-{digest}",
            "artifacts": {
                "changedFiles": "files/changed-files.json",
                "patch": "files/patch.diff",
                "review": "files/review.json",
                "testResults": "files/test-results.json",
                "runtimeEpisodeTrace": "files/runtime-episode-trace.json",
                "runtimeEpisodeEvents": "files/runtime-episode.jsonl",
            },
        },
    )
    _seal(bundle, _manifest(digest, MODE_B))
    return digest


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = tmp_path_factory.mktemp("golden") / "valid"
    write_mode_b_bundle(bundle)
    return bundle


def _copy(golden: Path, tmp_path: Path) -> Path:
    target = tmp_path / "case"
    shutil.copytree(golden, target, symlinks=True)
    return target


def _codes(bundle: Path) -> list[str]:
    result = verify_bundle(bundle)
    assert result.valid is (not result.violations)
    return [v.code for v in result.violations]


def test_reference_shaped_mode_b_bundle_is_valid(golden: Path) -> None:
    assert _codes(golden) == []


def test_reference_shaped_bundle_loads_through_the_reader(golden: Path) -> None:
    loaded = load_bundle(golden)
    assert loaded.valid
    assert loaded.patch == PATCH
    assert [f.relativePath for f in loaded.changed_files] == ["hello.txt"]
    assert loaded.review.evidence.artifactContentDigest == content_digest(golden, MODE_B)
    # The reference's placeholder ``{}`` test results (no schema id) load as an empty document.
    assert loaded.test_results == TestResults() and loaded.test_results.status == "unknown"


def test_mode_a_rewrite_of_the_same_bundle_is_valid(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    files = _entries(LISTING)
    digest = file_list_digest(files)
    manifest = _manifest(digest, ["manifest.files"])
    # Review evidence and metadata still name the Mode B digest: re-point them at the Mode A value.
    review = json.loads((bundle / "files/review.json").read_text())
    review["evidence"]["artifactContentDigest"] = digest
    _dump(bundle / "files/review.json", review)
    _seal(bundle, manifest)
    assert _codes(bundle) == []
    assert json.loads((bundle / "manifest.json").read_text())["id"] == f"artifact-bundle-sha256-{digest}"


def test_missing_manifest(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert _codes(tmp_path / "empty") == ["missing-manifest"]


def test_malformed_manifest(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{not-json")
    assert _codes(tmp_path / "bad") == ["malformed-manifest"]


def test_missing_listed_file(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    (bundle / "files/patch.diff").unlink()
    assert "missing-file" in _codes(bundle)


def test_traversal_entry_is_an_invalid_path(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    manifest = _manifest(content_digest(bundle, MODE_B), MODE_B)
    manifest["files"].append(_entries([("../outside.txt", "file", "text/plain")])[0])
    _dump(bundle / "manifest.json", manifest)
    assert "invalid-path" in _codes(bundle)


def test_tampered_patch_breaks_the_content_digest(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    (bundle / "files/patch.diff").write_text("diff --git a/x b/x\n+tampered\n")
    assert "digest-mismatch" in _codes(bundle)


def test_tampered_test_results_breaks_its_file_hash(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    (bundle / "files/test-results.json").write_text('{"tampered":true}\n')
    assert _codes(bundle) == ["file-hash-mismatch"]


def test_entry_without_sha256(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    manifest = _manifest(content_digest(bundle, MODE_B), MODE_B)
    for entry in manifest["files"]:
        entry["sha256"] = {"algorithm": "sha256", "value": file_sha256(bundle / entry["path"])}
    del manifest["files"][2]["sha256"]
    _dump(bundle / "manifest.json", manifest)
    assert "missing-file-hash" in _codes(bundle)


def test_unlisted_digest_input(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    (bundle / "files/stray.txt").write_text("not listed\n")
    inputs = ["files/stray.txt"]
    manifest = _manifest(content_digest(bundle, inputs), inputs)
    _seal(bundle, manifest)
    assert "malformed-reference" in _codes(bundle)


def test_duplicate_manifest_path(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    listing = [*LISTING, ("files/patch.diff", "patch-again", "text/x-diff")]
    _seal(bundle, _manifest(content_digest(bundle, MODE_B), MODE_B, listing))
    assert "invalid-manifest-shape" in _codes(bundle)


def test_hard_linked_file(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    os.link(bundle / "files/patch.diff", bundle / "files/patch-twin.diff")
    assert "hardlink" in _codes(bundle)


def test_orphan_symlink(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    os.symlink("patch.diff", bundle / "files/patch-alias.diff")
    assert "orphaned-file" in _codes(bundle)


def test_review_naming_another_digest(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    _dump(bundle / "files/review.json", _review("f" * 64))
    assert "review-evidence-mismatch" in _codes(bundle)


@pytest.mark.parametrize(
    "trace",
    [
        {"schema": "not-a-trace"},
        "just a string",
        # right schema, but a step out of position and evaluation vocabulary inside
        {"steps": [{"index": 3}], "reward": 1},
    ],
)
def test_invalid_episode_trace(golden: Path, tmp_path: Path, trace: Any) -> None:
    bundle = _copy(golden, tmp_path)
    if isinstance(trace, dict) and "steps" in trace:
        trace = {**_trace(content_digest(bundle, MODE_B)), **trace}
    _dump(bundle / "files/runtime-episode-trace.json", trace)
    # Reseal so the only problem left is the trace's content, as in the reference case.
    _seal(bundle, _manifest(content_digest(bundle, MODE_B), MODE_B))
    assert _codes(bundle) == ["malformed-reference"]


# --- Mode A: the reference's minimal manifest (digest over the file list, not the bytes) -------------------

MINIMAL = [
    ("manifest.json", "manifest", "application/json"),
    ("files/changed-files.json", "changed-files", "application/json"),
    ("files/patch.diff", "patch", "text/x-diff"),
    ("files/browser-summary.json", "browser-summary", "application/json"),
]


def test_mode_a_digest_depends_on_the_listing_only() -> None:
    patch_only = _entries(MINIMAL[:3])
    assert file_list_digest(patch_only) == file_list_digest([dict(e) for e in patch_only])
    assert file_list_digest(patch_only) != file_list_digest(_entries(MINIMAL))
    # hashes are not part of the listing digest; kinds and content types are
    rehashed = [{**e, "sha256": {"algorithm": "sha256", "value": "1" * 64}} for e in patch_only]
    assert file_list_digest(rehashed) == file_list_digest(patch_only)
    rekinded = [{**e, "kind": e["kind"] + "-x"} for e in patch_only]
    assert file_list_digest(rekinded) != file_list_digest(patch_only)


def test_minimal_mode_a_bundle_verifies_and_loads(tmp_path: Path) -> None:
    bundle = tmp_path / "mode-a"
    (bundle / "files").mkdir(parents=True)
    (bundle / "files/changed-files.json").write_text("{}\n")
    (bundle / "files/patch.diff").write_text("")
    (bundle / "files/browser-summary.json").write_text("{}\n")
    files = _entries(MINIMAL)
    digest = file_list_digest(files)
    manifest = {
        "id": f"artifact-bundle-sha256-{digest}",
        "contentDigest": {"algorithm": "sha256", "inputs": ["manifest.files"], "value": digest},
        "createdAt": "2026-01-01T00:00:00.000Z",
        # the reference's Mode A test uses the playground-cli backend and a ``kind`` field
        "runtime": {**RUNTIME, "kind": "wordpress-playground", "backend": "playground-cli", "status": "ready"},
        "files": files,
    }
    _seal(bundle, manifest)
    assert _codes(bundle) == []
    loaded = load_bundle(bundle)
    assert loaded.valid and loaded.changed_files == [] and loaded.patch == ""
    # adding a file to the listing without re-deriving the id is caught
    manifest["files"].append(_entries([("files/extra.json", "extra", "application/json")])[0])
    (bundle / "files/extra.json").write_text("{}\n")
    _seal(bundle, manifest)
    assert "digest-mismatch" in _codes(bundle)


# --- Bundles as the reference's WordPress plugin smoke test writes them (tests/smoke-wordpress-plugin.php) ---


def _plugin_shaped_bundle(bundle: Path) -> tuple[str, str, str]:
    """Compact PHP-style JSON, a two-line patch, manifest entries without hashes and no manifest.json entry."""
    (bundle / "files").mkdir(parents=True)
    changed = (
        json.dumps(
            {
                "schema": "wp-codebox/changed-files/v1",
                "files": [
                    {
                        "path": f"{PLUGIN}/made.txt",
                        "status": "added",
                        "mountIndex": 0,
                        "mountTarget": PLUGIN,
                        "relativePath": "made.txt",
                        "patchPath": "files/diffs/mount-0.patch",
                    }
                ],
            },
            indent=4,
        ).replace("/", "\\/")  # PHP escapes slashes by default
        + "\n"
    )
    patch = "diff --git a/made.txt b/made.txt\n+baked\n"
    (bundle / "files/changed-files.json").write_text(changed, encoding="utf-8")
    (bundle / "files/patch.diff").write_text(patch, encoding="utf-8")
    # The plugin derives the id by hashing one concatenated string (domain, path, bytes, path, bytes).
    joined = "wp-codebox/artifact-content/v1\nfiles/changed-files.json\n" + changed + "\nfiles/patch.diff\n" + patch
    expected = hashlib.sha256(joined.encode()).hexdigest()
    manifest = {
        "id": f"artifact-bundle-sha256-{expected}",
        "contentDigest": {"algorithm": "sha256", "inputs": MODE_B, "value": expected},
        "createdAt": "2026-05-19T00:00:00Z",
        "files": [
            {"path": "files/changed-files.json", "kind": "changed-files", "contentType": "application/json"},
            {"path": "files/patch.diff", "kind": "patch", "contentType": "text/x-diff"},
            {"path": "files/review.json", "kind": "review", "contentType": "application/json"},
        ],
    }
    _dump(bundle / "manifest.json", manifest)
    _dump(bundle / "metadata.json", {"artifacts": {"patch": "files/patch.diff"}})
    _dump(
        bundle / "files/review.json",
        {"schema": "wp-codebox/artifact-review/v1", "artifactId": manifest["id"], "summary": "1 file changed."},
    )
    return expected, changed, patch


def test_plugin_content_digest_formula_matches_our_streaming_digest(tmp_path: Path) -> None:
    expected, _, _ = _plugin_shaped_bundle(tmp_path / "plugin")
    assert content_digest(tmp_path / "plugin", MODE_B) == expected


def test_plugin_shaped_bundle_without_file_hashes_fails_closed_but_still_renders(tmp_path: Path) -> None:
    bundle = tmp_path / "plugin"
    expected, changed, patch = _plugin_shaped_bundle(bundle)
    # The plugin writes no ``runtime``: the reference verifier's shape rule requires it and stops there.
    assert _codes(bundle) == ["invalid-manifest-shape"]
    # With a runtime added, the next rule fires: entries without sha256 (and no self-listing) fail closed;
    # id and content digest are right, so no digest or id violation may appear.
    manifest = json.loads((bundle / "manifest.json").read_text())
    _dump(bundle / "manifest.json", {**manifest, "runtime": dict(RUNTIME)})
    codes = _codes(bundle)
    assert "missing-file-hash" in codes
    assert "digest-mismatch" not in codes and "bundle-id-mismatch" not in codes
    loaded = load_bundle(bundle)
    assert not loaded.valid
    assert loaded.id == f"artifact-bundle-sha256-{expected}"
    assert loaded.patch == patch
    assert [f.relativePath for f in loaded.changed_files] == ["made.txt"]
    assert json.loads(changed)["files"][0]["mountTarget"] == PLUGIN


# --- Manifest ``cases[]`` (the newer verifier smoke: case artifact missing, loopback public URL) -------------


def _with_case(bundle: Path, artifact_path: str, public_url: str) -> list[str]:
    """Add a case-result file and a ``cases`` entry naming it, reseal, and return the verifier's codes."""
    case_file = bundle / "files/cases/case-1.json"
    _dump(case_file, {"schema": "example/case-result/v1", "id": "case-1", "status": "passed"})
    listing = [*LISTING, ("files/cases/case-1.json", "case-result", "application/json")]
    manifest = _manifest(content_digest(bundle, MODE_B), MODE_B, listing)
    artifact: dict[str, Any] = {
        "path": artifact_path,
        "kind": "case-result",
        "contentType": "application/json",
        "publicUrl": public_url,
        "redaction": {"policy": "none", "sensitive": False},
    }
    if (bundle / artifact_path).is_file():
        artifact["sha256"] = {"algorithm": "sha256", "value": file_sha256(bundle / artifact_path)}
    manifest["cases"] = [
        {
            "id": "case-1",
            "hash": {"algorithm": "sha256", "value": hashlib.sha256(b"case-1").hexdigest()},
            "artifacts": [artifact],
            "verification": {"status": "passed", "verifiedAt": "2026-02-02T00:00:00.000Z", "verifier": "golden"},
        }
    ]
    _seal(bundle, manifest)
    return _codes(bundle)


def test_case_with_listed_artifact_and_public_url_is_valid(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    assert _with_case(bundle, "files/cases/case-1.json", "https://artifacts.example.test/runs/x/case-1.json") == []


def test_case_artifact_that_is_not_listed(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    assert _with_case(bundle, "files/cases/missing.json", "https://artifacts.example.test/x.json") == [
        "malformed-reference"
    ]


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://127.0.0.1:8881/artifacts/case.json", "unsafe-file"),
        ("http://localhost/case.json", "unsafe-file"),
        ("https://box.local/case.json", "unsafe-file"),
        ("file:///etc/passwd", "unsafe-file"),
        ("not a url", "malformed-reference"),
    ],
)
def test_case_public_url_must_be_reachable_by_reviewers(golden: Path, tmp_path: Path, url: str, code: str) -> None:
    bundle = _copy(golden, tmp_path)
    assert _with_case(bundle, "files/cases/case-1.json", url) == [code]


def test_tampered_case_artifact_fails_both_hashes(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    assert _with_case(bundle, "files/cases/case-1.json", "https://artifacts.example.test/c.json") == []
    (bundle / "files/cases/case-1.json").write_text('{"status":"failed"}\n')
    assert _codes(bundle) == ["file-hash-mismatch", "file-hash-mismatch"]


def test_mode_a_bundle_with_appended_evidence_stays_valid(golden: Path, tmp_path: Path) -> None:
    """The reference appends runtime evidence to a Mode A bundle and re-derives the id from the new listing."""
    bundle = _copy(golden, tmp_path)
    _dump(bundle / "files/runtime-evidence/run-attestation.json", {"schema": "fixture/run-attestation/v1"})
    listing = [*LISTING, ("files/runtime-evidence/run-attestation.json", "run-attestation", "application/json")]
    digest = file_list_digest(_entries(listing))
    review = json.loads((bundle / "files/review.json").read_text())
    review["evidence"]["artifactContentDigest"] = digest
    _dump(bundle / "files/review.json", review)
    _seal(bundle, _manifest(digest, ["manifest.files"], listing))
    assert _codes(bundle) == []
    assert load_bundle(bundle).id == f"artifact-bundle-sha256-{digest}"


def test_duplicate_case_ids_and_bad_verified_at(golden: Path, tmp_path: Path) -> None:
    bundle = _copy(golden, tmp_path)
    assert _with_case(bundle, "files/cases/case-1.json", "https://artifacts.example.test/c.json") == []
    manifest = json.loads((bundle / "manifest.json").read_text())
    twin = json.loads(json.dumps(manifest["cases"][0]))
    twin["verification"]["verifiedAt"] = "yesterday-ish"
    manifest["cases"].append(twin)
    _seal(bundle, manifest)
    assert _codes(bundle) == ["malformed-reference", "malformed-reference"]


@pytest.mark.parametrize(
    ("base", "expected"),
    [("https://review.example.test/bundles/x/", []), ("http://127.0.0.1:9400/", ["unsafe-file"])],
)
def test_viewer_base_is_a_reviewer_url(golden: Path, tmp_path: Path, base: str, expected: list[str]) -> None:
    bundle = _copy(golden, tmp_path)
    manifest = _manifest(content_digest(bundle, MODE_B), MODE_B)
    manifest["files"][3]["viewer"] = {"base": base}
    _seal(bundle, manifest)
    assert _codes(bundle) == expected


def test_reference_manifest_names_the_bundle_digest_as_a_digest_object(tmp_path: Path) -> None:
    """The reference writer (and its verifier) use {algorithm, value} for artifactBundle.digest."""
    import json as _json

    from codebox_tui.bundle.baseline import take_baselines
    from codebox_tui.bundle.verify import verify_bundle
    from codebox_tui.contracts.runtime import MountSpec

    source = tmp_path / "p"
    source.mkdir()
    (source / "a.php").write_text("<?php\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/p", mode="readwrite")
    baselines = take_baselines([mount], tmp_path / "scratch")
    (source / "a.php").write_text("<?php // changed\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    summary = capture_plain_run(run_dir, [mount], baselines)
    ref = _json.loads((run_dir / "files/runtime-reference-manifest.json").read_text())
    assert ref["artifactBundle"] == {
        "kind": "artifact-bundle",
        "id": summary.id,
        "digest": {"algorithm": "sha256", "value": summary.content_digest},
    }
    assert verify_bundle(run_dir).valid
