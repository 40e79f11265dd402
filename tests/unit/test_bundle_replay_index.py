"""Codebox writes the runtime replay index (spec §1.6) into every bundle: listed, sealed with the bundle id,
each reference hash-matching, and kept current when evidence is appended."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from codebox_tui.bundle.seal import append_and_reseal
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.canonical import domain_digest
from tests.factories.bundles import AddedFile, make_bundle, typical_change

REPLAY = "files/runtime-replay-index.json"
PAYLOAD_KEYS = (
    "schema",
    "version",
    "runtime",
    "artifactBundle",
    "references",
    "actions",
    "observations",
    "snapshots",
    "replay",
)


def _index(bundle: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((bundle / REPLAY).read_text())


def _check_sealed_to(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    index = _index(bundle)
    assert {"path": REPLAY, "kind": "runtime-replay-index"}.items() <= next(
        f for f in manifest["files"] if f["path"] == REPLAY
    ).items()
    assert index["artifactBundle"]["id"] == manifest["id"]
    assert index["artifactBundle"]["digest"]["value"] == manifest["contentDigest"]["value"]
    digest = domain_digest(index["schema"], {k: index[k] for k in PAYLOAD_KEYS})
    assert index["digest"]["value"] == digest and index["id"] == f"runtime-replay-reference-index-sha256-{digest}"
    for key, ref in index["references"].items():
        actual = hashlib.sha256((bundle / ref["path"]).read_bytes()).hexdigest()
        assert ref["sha256"]["value"] == actual, key


def test_every_bundle_carries_a_sealed_replay_index(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    bundle = summary.path
    index = _index(bundle)
    assert set(index["references"]) == {
        "runtimeReferenceManifest",
        "commands",
        "runtimeEvents",
        "mountedFiles",
        "mountDiffs",
        "changedFiles",
        "patch",
        "testResults",
    }
    assert index["replay"]["status"] == "partial" and index["actions"] == [] and index["snapshots"] == []
    _check_sealed_to(bundle)
    review = json.loads((bundle / "files/review.json").read_text())
    assert review["evidence"]["runtimeReplayReferenceIndex"] == REPLAY
    reference = json.loads((bundle / "files/runtime-reference-manifest.json").read_text())
    assert REPLAY not in {f["path"] for f in reference["files"]}  # it records the reference manifest's hash
    assert verify_bundle(bundle).valid


def test_the_replay_index_follows_a_reseal_and_catches_an_edited_reference(tmp_path: Path) -> None:
    summary, _ = make_bundle(tmp_path, typical_change)
    bundle = summary.path
    (bundle / "files/extra.json").write_text("{}\n")
    append_and_reseal(bundle, [AddedFile("files/extra.json")])
    _check_sealed_to(bundle)
    assert verify_bundle(bundle).valid
    index = _index(bundle)
    index["references"]["patch"]["sha256"]["value"] = "0" * 64  # a stale hash, digest left as it was
    (bundle / REPLAY).write_text(json.dumps(index))
    codes = {v.code for v in verify_bundle(bundle).violations}
    assert "digest-mismatch" in codes or "file-hash-mismatch" in codes
