"""Interop with the reference verifier: cases where Codebox disagreed with it on the same bytes.

Found by running a locally rebuilt reference verifier and Codebox's verifier over the same bundles
(scripts/reference_interop.py); these tests pin each fix with Codebox's own code and spec facts only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from codebox_tui.bundle.digests import file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.bundle import MANIFEST_FILE_LIST_DOMAIN
from tests.factories.replay_index import REPLAY, copy_bundle, with_replay_index

CHANGED = '{\n  "schema": "wp-codebox/changed-files/v1",\n  "files": []\n}\n'


def _entry(path: str, kind: str, content_type: str = "application/json", **extra: Any) -> dict[str, Any]:
    return {"path": path, "kind": kind, "contentType": content_type, **extra}


def _bundle(
    root: Path,
    files: dict[str, bytes],
    *,
    extra_entries: list[dict[str, Any]] | None = None,
    entry_extra: dict[str, dict[str, Any]] | None = None,
    runtime_extra: str = "",
    inputs: list[str] | None = None,
    self_hash_of: dict[str, Any] | None = None,
) -> Path:
    """A small Mode A bundle sealed with Codebox's own digests. ``runtime_extra`` is raw JSON text spliced into
    the manifest's runtime object, so a test controls the exact bytes the verifier parses."""
    root.mkdir(parents=True, exist_ok=True)
    entries = [_entry("manifest.json", "manifest")]
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        entries.append(_entry(rel, "file", "text/plain", **(entry_extra or {}).get(rel, {})))
    entries += extra_entries or []
    for e in entries:
        if e["path"] != "manifest.json":
            e["sha256"] = {"algorithm": "sha256", "value": file_sha256(root / e["path"].lstrip("./"))}
    inputs = inputs or ["manifest.files"]
    from codebox_tui.bundle.digests import content_digest

    value = file_list_digest(entries) if inputs == ["manifest.files"] else content_digest(root, inputs)
    manifest: dict[str, Any] = {
        "id": f"artifact-bundle-sha256-{value}",
        "createdAt": "2026-11-23T00:00:00.000Z",
        "runtime": {"id": "rt", "backend": "wordpress-playground"},
        "contentDigest": {"algorithm": "sha256", "inputs": inputs, "value": value},
        "files": [*entries],
    }
    entries[0]["sha256"] = {"algorithm": "sha256", "value": manifest_self_hash(self_hash_of or manifest)}
    text = json.dumps(manifest, indent=2)
    if runtime_extra:
        text = text.replace('"backend": "wordpress-playground"', '"backend": "wordpress-playground"' + runtime_extra, 1)
    (root / "manifest.json").write_text(text + "\n", encoding="utf-8")
    return root


def _codes(bundle: Path) -> list[tuple[str, str]]:
    return [(v.code, v.path) for v in verify_bundle(bundle).violations]


def test_mode_a_listing_keeps_a_key_whose_value_is_null() -> None:
    """Spec §1.4: only absent optional keys are omitted from the listing; the reference strips ``undefined``,
    so a ``"viewer": null`` stays in the hashed listing as ``null``."""
    listing_text = '[{"contentType":"t","kind":"k","path":"a","viewer":null}]'
    expected = hashlib.sha256((MANIFEST_FILE_LIST_DOMAIN + "\n" + listing_text).encode()).hexdigest()
    assert file_list_digest([{"path": "a", "kind": "k", "contentType": "t", "viewer": None}]) == expected
    # absent stays absent
    assert (
        file_list_digest([{"path": "a", "kind": "k", "contentType": "t"}])
        == hashlib.sha256(
            (MANIFEST_FILE_LIST_DOMAIN + '\n[{"contentType":"t","kind":"k","path":"a"}]').encode()
        ).hexdigest()
    )


def test_a_bundle_with_a_null_viewer_verifies(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", {"files/patch.diff": b""}, entry_extra={"files/patch.diff": {"viewer": None}})
    assert _codes(bundle) == []


def test_a_manifest_integer_past_2_53_is_hashed_as_the_js_double_it_parses_to(tmp_path: Path) -> None:
    """JSON numbers are doubles in the reference: 12345678901234567890 parses to 12345678901234567000, and the
    self-hash is over that value. A manifest written with the long literal must verify."""
    rounded = {"id": "rt", "backend": "wordpress-playground", "n": 12345678901234567000}
    bundle = tmp_path / "b"
    _bundle(bundle, {"files/patch.diff": b""})
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["runtime"] = rounded
    manifest["files"][0]["sha256"]["value"] = manifest_self_hash(manifest)
    text = json.dumps(manifest, indent=2).replace("12345678901234567000", "12345678901234567890")
    (bundle / "manifest.json").write_text(text)
    assert _codes(bundle) == []


def test_a_lone_surrogate_in_the_manifest_does_not_crash_the_verifier(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", {"files/patch.diff": b""}, runtime_extra=', "s": "\\ud800x"')
    result = verify_bundle(bundle)  # used to raise UnicodeEncodeError
    assert [v.code for v in result.violations] == ["file-hash-mismatch"]  # sealed without "s": self-hash differs
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"][0]["sha256"]["value"] = manifest_self_hash(manifest)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert _codes(bundle) == []


def test_a_dot_segment_entry_fails_its_hash_as_in_the_reference(tmp_path: Path) -> None:
    """``./files/x.txt`` is not an invalid path (spec §2 rule 3) but the reference hashes through an artifact-path
    resolver that refuses ``.`` segments, so the entry cannot be hashed: ``file-hash-mismatch``."""
    bundle = _bundle(
        tmp_path / "b",
        {"files/patch.diff": b"", "files/x.txt": b"x"},
        extra_entries=[_entry("./files/x.txt", "file", "text/plain")],
    )
    assert _codes(bundle) == [("file-hash-mismatch", "manifest.files[3].sha256")]


def test_a_dot_segment_mode_b_input_cannot_be_digested(tmp_path: Path) -> None:
    bundle = _bundle(
        tmp_path / "b",
        {"files/patch.diff": b"p"},
        extra_entries=[_entry("./files/patch.diff", "patch", "text/x-diff")],
        inputs=["./files/patch.diff"],
    )
    codes = _codes(bundle)
    assert ("digest-mismatch", "manifest.contentDigest.inputs") in codes


def _with_review(tmp_path: Path, evidence: dict[str, Any], **review: Any) -> Path:
    doc = json.dumps({"evidence": evidence, **review}).encode()
    return _bundle(
        tmp_path / "b",
        {"files/changed-files.json": CHANGED.encode(), "files/patch.diff": b"", "files/review.json": doc},
    )


def test_review_evidence_refs_use_the_reference_codes(tmp_path: Path) -> None:
    """An unlisted evidence reference is ``malformed-reference`` and an unsafe one ``invalid-path`` (the
    reference's artifact-reference rule), not ``review-evidence-mismatch``."""
    bundle = _with_review(
        tmp_path,
        {
            "patch": "files/other.diff",
            "runtimeEpisodeTrace": "/abs.json",
            "runtimeReferenceManifest": "../up.json",
            "changedFiles": "files/changed-files.json",
        },
    )
    assert sorted(_codes(bundle)) == [
        ("invalid-path", "files/review.json:evidence.runtimeEpisodeTrace"),
        ("invalid-path", "files/review.json:evidence.runtimeReferenceManifest"),
        ("malformed-reference", "files/review.json:evidence.patch"),
    ]


def test_an_unlisted_patch_with_a_claimed_sha_is_also_an_evidence_mismatch(tmp_path: Path) -> None:
    bundle = _with_review(tmp_path, {"patch": "files/other.diff", "patchSha256": "0" * 64})
    assert sorted(_codes(bundle)) == [
        ("malformed-reference", "files/review.json:evidence.patch"),
        ("review-evidence-mismatch", "files/review.json:evidence.patchSha256"),
    ]


def test_an_unlisted_changed_files_ref_is_malformed_and_unreadable(tmp_path: Path) -> None:
    bundle = _with_review(tmp_path, {"changedFiles": "files/nope.json"})
    assert sorted(_codes(bundle)) == [
        ("malformed-reference", "files/review.json:evidence.changedFiles"),
        ("review-evidence-mismatch", "files/review.json:evidence.changedFiles"),
    ]


def test_review_without_an_evidence_object_is_reported_at_the_file(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", {"files/patch.diff": b"", "files/review.json": b'{"evidence": "x"}'})
    assert _codes(bundle) == [("malformed-reference", "files/review.json")]


def test_an_unlisted_metadata_json_is_still_checked(tmp_path: Path) -> None:
    """The reference reads metadata.json whether or not it is listed: an orphan metadata.json with a dangling
    ref gives both ``orphaned-file`` and ``malformed-reference`` (at ``metadata.artifacts.<key>``)."""
    bundle = _bundle(tmp_path / "b", {"files/patch.diff": b""})
    (bundle / "metadata.json").write_text('{"artifacts": {"a": "files/nope.json", "b": ["files/patch.diff"]}}')
    assert sorted(_codes(bundle)) == [
        ("malformed-reference", "metadata.artifacts.a"),
        ("orphaned-file", "metadata.json"),
    ]


def test_a_symlinked_review_outside_the_bundle_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"evidence": {"patch": "files/nowhere.diff"}}')
    bundle = _bundle(tmp_path / "b", {"files/patch.diff": b""})
    (bundle / "files" / "review.json").symlink_to(outside)
    assert _codes(bundle) == [("orphaned-file", "files/review.json")]


def test_a_null_replay_index_reference_is_the_wrong_shape(captured: Path, tmp_path: Path) -> None:
    """JSON has no ``undefined``: the reference only skips absent references, so ``references.x: null`` fails its
    shape check (``malformed-reference``); it used to pass here."""
    bundle = with_replay_index(copy_bundle(captured, tmp_path), lambda index: index["references"].update(extra=None))
    assert _codes(bundle) == [("malformed-reference", REPLAY)]
