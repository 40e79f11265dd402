"""A small real capture, and the helpers that add a runtime replay index (or another index) to it and
re-seal it the way a writer must, so only a test's own tampering can make the verifier object."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codebox_tui.bundle.baseline import take_baselines
from codebox_tui.bundle.digests import file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.bundle.verify import verify_bundle
from codebox_tui.contracts.canonical import domain_digest
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo
from tests.factories.capture import capture_plain_run

REPLAY = "files/runtime-replay-index.json"
REPLAY_SCHEMA = "wp-codebox/runtime-replay-reference-index/v1"
REFERENCE = "files/runtime-reference-manifest.json"
REFERENCE_SCHEMA = "wp-codebox/runtime-reference-manifest/v1"
Build = Callable[[Path, str, str], None]


def capture_small_bundle(tmp: Path) -> Path:
    """One real capture: a plugin folder with an edited, an added and a deleted file."""
    source = tmp / "plugin"
    source.mkdir()
    (source / "plugin.php").write_text("<?php // one\n")
    (source / "gone.txt").write_text("bye\n")
    mount = MountSpec(source=str(source), target="/wordpress/wp-content/plugins/plugin", mode="readwrite")
    baselines = take_baselines([mount], tmp / "scratch")
    (source / "plugin.php").write_text("<?php // two\n")
    (source / "gone.txt").unlink()
    (source / "new.php").write_text("<?php echo 'new';\n")
    run_dir = tmp / "run"
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text('{"id":"event-1","type":"runtime.created"}\n')
    runtime = RuntimeInfo(id="runtime-indexes", createdAt=utc_now_iso(), environment={"wordpressVersion": "6.5.5"})
    summary = capture_plain_run(run_dir, [mount], baselines, runtime)
    assert verify_bundle(summary.path).valid
    return summary.path


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def dump_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def sha_ref(value: str) -> dict[str, str]:
    return {"algorithm": "sha256", "value": value}


def reseal(bundle: Path, added: dict[str, tuple[str, str]], build: Build) -> None:
    """List ``added`` (path → kind, contentType), let ``build`` write the files knowing the new bundle id and
    digest, and re-seal: the reference manifest, review and metadata name the new id; hashes; self-hash last."""
    manifest = read_json(bundle / "manifest.json")
    own_replay = REPLAY not in added  # Codebox's own replay index would go stale here: these tests drop it
    if own_replay:
        manifest["files"] = [f for f in manifest["files"] if f["path"] != REPLAY]
        (bundle / REPLAY).unlink(missing_ok=True)
    listed = {f["path"] for f in manifest["files"]}
    for path, (kind, content_type) in added.items():
        if path in listed:  # Codebox writes a replay index itself: the test's one replaces it
            continue
        manifest["files"].append({"path": path, "kind": kind, "contentType": content_type, "sha256": sha_ref("0" * 64)})
    digest = file_list_digest(manifest["files"])
    bundle_id = "artifact-bundle-sha256-" + digest
    manifest["id"] = bundle_id
    manifest["contentDigest"]["value"] = digest

    review = read_json(bundle / "files/review.json")
    review["artifactId"] = bundle_id
    review["evidence"]["artifactContentDigest"] = digest
    if own_replay:
        review["evidence"].pop("runtimeReplayReferenceIndex", None)
    dump_json(bundle / "files/review.json", review)
    metadata = read_json(bundle / "metadata.json")
    metadata["id"], metadata["contentDigest"] = bundle_id, digest
    if own_replay:
        metadata["artifacts"].pop("runtimeReplayReferenceIndex", None)
    dump_json(bundle / "metadata.json", metadata)
    reference = read_json(bundle / REFERENCE)
    reference["artifactBundle"] = {"kind": "artifact-bundle", "id": bundle_id, "digest": digest}
    keys = ("schema", "version", "runtime", "artifactBundle", "files", "trace", "events", "snapshots")
    ref_digest = domain_digest(REFERENCE_SCHEMA, {k: reference[k] for k in keys if k in reference})
    reference["digest"] = sha_ref(ref_digest)
    reference["id"] = "runtime-reference-manifest-sha256-" + ref_digest
    dump_json(bundle / REFERENCE, reference)

    build(bundle, bundle_id, digest)
    for entry in manifest["files"]:
        if entry["path"] != "manifest.json":
            entry["sha256"] = sha_ref(file_sha256(bundle / entry["path"]))
    for entry in manifest["files"]:
        if entry["path"] == "manifest.json":
            entry["sha256"] = sha_ref(manifest_self_hash(manifest))
    dump_json(bundle / "manifest.json", manifest)


def copy_bundle(captured: Path, tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    shutil.copytree(captured, bundle)
    return bundle


def manifest_entry(bundle: Path, path: str) -> dict[str, Any]:
    return next(e for e in read_json(bundle / "manifest.json")["files"] if e["path"] == path)


def file_ref(bundle: Path, path: str) -> dict[str, Any]:
    entry = manifest_entry(bundle, path)
    return {
        "path": path,
        "kind": entry["kind"],
        "contentType": entry["contentType"],
        "sha256": sha_ref(file_sha256(bundle / path)),
    }


def replay_index(
    bundle: Path,
    bundle_id: str,
    digest: str,
    tamper: Callable[[dict[str, Any]], None] | None = None,
    *,
    seal_after_tamper: bool = True,
) -> dict[str, Any]:
    """A replay index shaped like the reference's, referencing the bundle's current (re-sealed) files."""
    shot = bundle / "files/runtime-snapshots/snapshot-1.json"
    obs = bundle / "files/observations/observation-1-wordpress-state-summary.json"
    index: dict[str, Any] = {
        "schema": REPLAY_SCHEMA,
        "version": 1,
        "createdAt": "2026-11-23T10:00:00.000Z",
        "runtime": read_json(bundle / "manifest.json")["runtime"],
        "artifactBundle": {"kind": "artifact-bundle", "id": bundle_id, "digest": sha_ref(digest)},
        "references": {
            "runtimeReferenceManifest": file_ref(bundle, REFERENCE),
            "runtimeEvents": file_ref(bundle, "events.jsonl"),
            "changedFiles": file_ref(bundle, "files/changed-files.json"),
            "patch": file_ref(bundle, "files/patch.diff"),
        },
        "actions": [
            {
                "index": 0,
                "id": "command-1:step:0",
                "actionRef": {"kind": "action", "id": "command-1", "digest": sha_ref("a" * 64)},
                "executionRef": {"kind": "execution", "id": "command-1", "digest": sha_ref("b" * 64)},
            }
        ],
        "observations": [
            {
                "id": "observation-1",
                "type": "wordpress-state",
                "ref": {"kind": "observation", "id": "observation-1", "digest": sha_ref("c" * 64)},
                "artifactRefs": [
                    {
                        "kind": "wordpress-state-section",
                        "id": "observation-1:summary",
                        "path": str(obs.relative_to(bundle)),
                        "digest": sha_ref(file_sha256(obs)),
                    }
                ],
            }
        ],
        "snapshots": [
            {
                "id": "snapshot-1",
                "semantics": "runtime-state-artifact",
                "digest": sha_ref("d" * 64),
                "replay": {"status": "runtime-state-artifact", "limitations": []},
                "artifactRefs": [
                    {
                        "kind": "runtime-snapshot-artifact",
                        "id": "snapshot-1",
                        "path": str(shot.relative_to(bundle)),
                        "digest": sha_ref(file_sha256(shot)),
                    }
                ],
            }
        ],
        "replay": {"status": "runtime-state-artifact", "instructions": ["Use references.trace."], "limitations": []},
    }
    if tamper and not seal_after_tamper:
        tamper(index)
    keys = (
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
    value = domain_digest(REPLAY_SCHEMA, {k: index[k] for k in keys if k in index})
    index["digest"] = sha_ref(value)
    index["id"] = "runtime-replay-reference-index-sha256-" + value
    if tamper and seal_after_tamper:
        tamper(index)
    return index


REPLAY_FILES = {
    "files/observations/observation-1-wordpress-state-summary.json": ("wordpress-state-section", "application/json"),
    "files/runtime-snapshots/snapshot-1.json": ("runtime-snapshot-artifact", "application/json"),
    REPLAY: ("runtime-replay-index", "application/json"),
}


def with_replay_index(
    bundle: Path,
    tamper: Callable[[dict[str, Any]], None] | None = None,
    *,
    seal_after_tamper: bool = True,
    raw: str | None = None,
    review_ref: str | None = REPLAY,
) -> Path:
    def build(bundle: Path, bundle_id: str, digest: str) -> None:
        dump_json(
            bundle / "files/observations/observation-1-wordpress-state-summary.json",
            {"schema": "wp-codebox/wordpress-state-section/v1", "version": 1, "section": "summary", "data": {}},
        )
        dump_json(
            bundle / "files/runtime-snapshots/snapshot-1.json", {"schema": "wp-codebox/wordpress-runtime-snapshot/v1"}
        )
        if review_ref is not None:
            review = read_json(bundle / "files/review.json")
            review["evidence"]["runtimeReplayReferenceIndex"] = review_ref
            dump_json(bundle / "files/review.json", review)
        if raw is not None:
            (bundle / REPLAY).write_text(raw, encoding="utf-8")
        else:
            dump_json(
                bundle / REPLAY, replay_index(bundle, bundle_id, digest, tamper, seal_after_tamper=seal_after_tamper)
            )

    reseal(bundle, REPLAY_FILES, build)
    return bundle
