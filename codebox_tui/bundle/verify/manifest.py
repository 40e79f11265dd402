"""The manifest checks: shape, listing topology, per-file hashes, the content digest and bundle id, and the
documents every bundle may carry (metadata, review, cases) — and :func:`verify_bundle`, which runs them all."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import MODE_A_INPUTS, content_digest, file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.bundle.safe_read import MAX_JSON_DEPTH, UnsafeFileError, json_depth_exceeds, read_regular
from codebox_tui.bundle.verify.common import (
    HEX64,
    Checker,
    dot_segment,
    list_bundle,
    load_json,
    path_problem,
    reference_listed,
    regular_inside,
    reviewer_url_problem,
)
from codebox_tui.bundle.verify.episode import check_episode_trace
from codebox_tui.bundle.verify.references import check_reference, check_replay_index
from codebox_tui.bundle.verify.schema import check_tool_calls, check_typed_artifacts
from codebox_tui.contracts.bundle import (
    BUNDLE_ID_PREFIX,
    BundleVerification,
)
from codebox_tui.contracts.canonical import MAX_ARRAY_ITEMS
from codebox_tui.contracts.site_state import RuntimeSnapshot, SiteStateDiff, snapshot_hashes


def _shape_ok(manifest: Any) -> str | None:
    if not isinstance(manifest, dict):
        return "manifest is not a JSON object"
    for key in ("id", "createdAt"):
        if not isinstance(manifest.get(key), str):
            return f"manifest.{key} must be a string"
    if not isinstance(manifest.get("runtime"), dict):
        return "manifest.runtime must be an object"
    digest = manifest.get("contentDigest")
    if (
        not isinstance(digest, dict)
        or digest.get("algorithm") != "sha256"
        or not isinstance(digest.get("value"), str)
        or not isinstance(digest.get("inputs"), list)
        or not all(isinstance(i, str) for i in digest["inputs"])
    ):
        return "manifest.contentDigest must be {algorithm: sha256, inputs: [string], value: string}"
    files = manifest.get("files")
    if not isinstance(files, list):
        return "manifest.files must be an array"
    if len(files) > MAX_ARRAY_ITEMS:
        # canonical JSON keeps only the first MAX_ARRAY_ITEMS items of an array: the self-hash and the
        # Mode A id would not cover the rest, so their hashes could be changed unnoticed (Codebox is
        # stricter than the reference here on purpose)
        return (
            f"manifest.files has {len(files)} entries; at most {MAX_ARRAY_ITEMS} are covered by the manifest's digests"
        )
    for index, entry in enumerate(files):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("path", "kind", "contentType")
        ):
            return f"manifest.files[{index}] must have string path, kind and contentType"
    cases = manifest.get("cases")
    if cases is not None and not isinstance(cases, list):
        return "manifest.cases must be an array"
    for index, case in enumerate(cases or []):
        if not isinstance(case, dict) or not isinstance(case.get("id"), str) or not case["id"]:
            return f"manifest.cases[{index}] must have a non-empty string id"
        artifacts = case.get("artifacts")
        if not isinstance(artifacts, list) or not all(
            isinstance(a, dict) and isinstance(a.get("path"), str) and isinstance(a.get("kind"), str) for a in artifacts
        ):
            return f"manifest.cases[{index}].artifacts must be an array of {{path, kind}} objects"
    return None


def _read_manifest(check: Checker) -> Any:
    """The manifest parsed, or None after recording why it cannot be (missing, unsafe, unreadable, not JSON,
    nested too deep)."""
    try:
        # a regular file only: a FIFO planted as manifest.json must not block verification forever
        raw = read_regular(check.bundle / layout.MANIFEST).decode("utf-8")
    except FileNotFoundError:
        check.add("missing-manifest", layout.MANIFEST, f"No {layout.MANIFEST} in {check.bundle}")
        return None
    except UnsafeFileError as error:
        check.add("unsafe-file", layout.MANIFEST, f"{layout.MANIFEST} cannot be read: {error}", file=layout.MANIFEST)
        return None
    except (OSError, UnicodeDecodeError) as error:
        check.add("malformed-manifest", layout.MANIFEST, f"{layout.MANIFEST} cannot be read: {error}")
        return None
    try:
        manifest = json.loads(raw)
        if json_depth_exceeds(manifest):
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    except (ValueError, RecursionError) as error:
        check.add("malformed-manifest", layout.MANIFEST, f"{layout.MANIFEST} is not valid JSON: {error}")
        return None
    return manifest


def _topology_problem(check: Checker, real_bundle: Path, index: int, path: str) -> bool:
    """Record why listed ``path`` is not a regular, singly linked file inside the bundle; True if it is not."""
    where = f"manifest.files[{index}]"
    full = check.bundle / path
    try:
        info = full.lstat()
    except OSError:
        check.add("missing-file", where, f"{path} is listed but missing", file=path)
        return True
    if not stat.S_ISREG(info.st_mode):
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        check.add("missing-file", where, f"{path} is {kind}", file=path)
        return True
    if info.st_nlink > 1:
        check.add(
            "hardlink", where, f"{path} has {info.st_nlink} hard links", file=path, details={"links": info.st_nlink}
        )
        return True
    try:
        rel = os.path.relpath(full.resolve(strict=True), real_bundle)
    except OSError:
        check.add("unsafe-file", where, f"{path} cannot be resolved", file=path)
        return True
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        check.add("unsafe-file", where, f"{path} resolves outside the bundle", file=path)
        return True
    return False


def _check_listing(
    check: Checker, files: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], list[tuple[int, dict[str, Any]]]]:
    """Every listed path: safe, unique, a regular file inside the bundle, with a usable viewer URL. Returns the
    listed entries by path and the (index, entry) pairs whose file may be hashed."""
    try:
        real_bundle = check.bundle.resolve(strict=True)
    except OSError:
        real_bundle = check.bundle
    listed: dict[str, dict[str, Any]] = {}
    hashable: list[tuple[int, dict[str, Any]]] = []
    for index, entry in enumerate(files):
        path = entry["path"]
        why = path_problem(path)
        if why:
            check.add("invalid-path", f"manifest.files[{index}].path", f"{path!r}: {why}", file=str(path))
            continue
        if path in listed:
            check.add(
                "invalid-manifest-shape", f"manifest.files[{index}].path", "Manifest file path is duplicated", file=path
            )
            continue
        listed[path] = entry
        viewer = entry.get("viewer")
        if isinstance(viewer, dict) and "base" in viewer:
            url_problem = reviewer_url_problem(viewer["base"])
            if url_problem:
                check.add(url_problem[0], f"manifest.files[{index}].viewer.base", url_problem[1], file=path)
        if _topology_problem(check, real_bundle, index, path):
            continue
        hashable.append((index, entry))
        check.regular.add(path)
    if layout.MANIFEST not in listed:
        check.add("invalid-manifest-shape", "manifest.files", f"{layout.MANIFEST} must list itself")
    return listed, hashable


def _check_orphans(check: Checker, listed: dict[str, dict[str, Any]]) -> None:
    """Nothing in the bundle folder that the manifest does not list (a link to a folder counts as a file)."""
    for rel in list_bundle(check.bundle):
        if rel not in listed:
            reason = "a symlink" if (check.bundle / rel).is_symlink() else "not listed in the manifest"
            check.add("orphaned-file", rel, f"{rel} is {reason}", file=rel)


def _check_file_hash(check: Checker, manifest: dict[str, Any], index: int, entry: dict[str, Any]) -> None:
    """One listed file's recorded sha256 against its bytes (the manifest's own entry: the self-hash)."""
    where, path = f"manifest.files[{index}].sha256", entry["path"]
    digest = entry.get("sha256")
    if (
        not isinstance(digest, dict)
        or digest.get("algorithm") != "sha256"
        or not isinstance(digest.get("value"), str)
        or not HEX64.match(digest["value"])
    ):
        check.add("missing-file-hash", where, f"{path} has no valid sha256", file=path)
        return
    if path != layout.MANIFEST and dot_segment(path):
        check.add(
            "file-hash-mismatch",
            where,
            f"{path} cannot be hashed: a '.' path segment is not a bundle-relative artifact path",
            file=path,
        )
        return
    try:
        if path == layout.MANIFEST:
            actual = manifest_self_hash(manifest)
        else:
            actual = file_sha256(check.bundle / path, follow_symlinks=False)
            check.remember(path, actual)
    except OSError as error:
        check.add("file-hash-mismatch", where, f"{path}: {error}", file=path)
        return
    if actual != digest["value"]:
        check.add(
            "file-hash-mismatch",
            where,
            f"{path} does not match its recorded sha256",
            file=path,
            details={"expected": digest["value"], "actual": actual},
        )


def _mode_b_inputs_ok(check: Checker, listed: dict[str, dict[str, Any]], inputs: list[str]) -> bool:
    """The Mode B inputs are safe, listed paths the reference could hash too."""
    for name in inputs:
        if path_problem(name):
            check.add("invalid-path", "manifest.contentDigest.inputs", f"{name!r} is not a safe path")
            return False
        if name not in listed:
            check.add("malformed-reference", "manifest.contentDigest.inputs", f"{name} is not listed")
            return False
    if any(dot_segment(name) for name in inputs):
        check.add(
            "digest-mismatch",
            "manifest.contentDigest.inputs",
            "cannot compute the content digest: an input has a '.' path segment",
        )
        return False
    return True


def _check_content_digest(check: Checker, manifest: dict[str, Any], listed: dict[str, dict[str, Any]]) -> None:
    """The content digest (Mode A over the file list, or Mode B over the named files' bytes) and the bundle id
    built from it."""
    content = manifest["contentDigest"]
    digest_value: str | None = None
    if content["inputs"] == MODE_A_INPUTS:
        digest_value = file_list_digest(manifest["files"])
    elif _mode_b_inputs_ok(check, listed, content["inputs"]):
        try:
            digest_value = content_digest(check.bundle, content["inputs"], follow_symlinks=False)
        except OSError as error:
            check.add("digest-mismatch", "manifest.contentDigest", f"cannot read digest input: {error}")
    if not HEX64.match(content["value"]):
        check.add("invalid-manifest-shape", "manifest.contentDigest.value", "value must be 64 lowercase hex characters")
    elif digest_value is not None and digest_value != content["value"]:
        check.add(
            "digest-mismatch",
            "manifest.contentDigest.value",
            "content digest does not match",
            details={"expected": content["value"], "actual": digest_value},
        )
    if manifest["id"].startswith(BUNDLE_ID_PREFIX) and manifest["id"] != BUNDLE_ID_PREFIX + content["value"]:
        check.add("bundle-id-mismatch", "manifest.id", "bundle id does not match the content digest")


def _check_documents(check: Checker, manifest: dict[str, Any], listed: dict[str, dict[str, Any]]) -> None:
    """The documents a bundle may carry, each checked by its own rules (listed ones by their kind)."""
    _check_metadata(check, listed)
    _check_review(check, listed, manifest)
    _check_cases(check, listed, manifest)
    for path, entry in listed.items():
        kind = entry.get("kind")
        if kind == "runtime-reference-manifest":
            check_reference(check, listed, manifest, path)
        elif kind == "runtime-episode-trace":
            check_episode_trace(check, path)
        elif kind == "runtime-replay-index":
            check_replay_index(check, listed, manifest, path)
        elif kind == "typed-artifacts-index":
            check_typed_artifacts(check, listed, path)
        elif kind == "tool-call-transcript":
            check_tool_calls(check, listed, path)
        elif kind == "site-state-diff":
            _check_site_state_diff(check, path)
        elif kind == "runtime-snapshot":
            _check_runtime_snapshot(check, listed, path)


def _check_site_state_diff(check: Checker, path: str) -> None:
    """``codebox/site-state-diff/v1`` (docs/site-state.md): the model is the schema."""

    doc = load_json(check.bundle, path)
    try:
        SiteStateDiff.model_validate(doc)
    except ValidationError as error:
        first = error.errors()[0]
        where = "/".join(str(part) for part in first["loc"]) or "(root)"
        check.add(
            "malformed-reference",
            f"{path}:{where}",
            f"site-state diff must match codebox/site-state-diff/v1: {first['msg']}",
            file=path,
        )


def _check_runtime_snapshot(check: Checker, listed: dict[str, dict[str, Any]], path: str) -> None:
    """A ``wp-codebox/wordpress-runtime-snapshot/v1`` document (docs/site-state.md, "Snapshots in a bundle"): the
    model is the schema; its ``hashes`` must match its table and file lists; every file's bytes must be inline or
    in the listed blob named by its sha256 (whose recorded hash, checked against its bytes like every listed file,
    must be that sha256)."""

    doc = load_json(check.bundle, path)
    try:
        snapshot = RuntimeSnapshot.model_validate(doc)
    except ValidationError as error:
        first = error.errors()[0]
        where = "/".join(str(part) for part in first["loc"]) or "(root)"
        check.add(
            "malformed-reference",
            f"{path}:{where}",
            f"runtime snapshot must match wp-codebox/wordpress-runtime-snapshot/v1: {first['msg']}",
            file=path,
        )
        return
    assert isinstance(doc, dict)
    if snapshot_hashes(doc.get("database"), doc.get("files")) != snapshot.hashes.model_dump():
        check.add(
            "digest-mismatch", f"{path}:hashes", "the snapshot's tables or file list do not match its hashes", file=path
        )
    for index, entry in enumerate(snapshot.files):
        where = f"{path}:files[{index}]"
        if entry.base64 is not None:
            try:
                data = base64.b64decode(entry.base64, validate=True)
            except (binascii.Error, ValueError):
                data = None
            if data is None or hashlib.sha256(data).hexdigest() != entry.sha256:
                check.add(
                    "file-hash-mismatch", where, f"{entry.path}: the inline bytes do not match its sha256", file=path
                )
            continue
        blob = f"{layout.RUNTIME_SNAPSHOT_BLOBS_DIR}/{entry.sha256}"
        recorded = ((listed.get(blob) or {}).get("sha256") or {}).get("value")
        if entry.blob not in (None, blob) or blob not in listed:
            check.add(
                "malformed-reference", where, f"{entry.path}: its content must be the listed blob {blob}", file=path
            )
        elif recorded != entry.sha256:
            check.add(
                "file-hash-mismatch", where, f"{entry.path}: the blob {blob} does not hash to its sha256", file=blob
            )


def verify_bundle(bundle_dir: Path | str) -> BundleVerification:
    """Every rule of spec §2, failing closed: the result is valid only when no check found a violation."""
    check = Checker(Path(bundle_dir))
    result_dir = os.path.normpath(str(bundle_dir))
    manifest = _read_manifest(check)
    if manifest is not None and (problem := _shape_ok(manifest)):
        check.add("invalid-manifest-shape", "manifest", problem)
    if check.violations:
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    listed, hashable = _check_listing(check, manifest["files"])
    _check_orphans(check, listed)
    for index, entry in hashable:
        _check_file_hash(check, manifest, index, entry)
    _check_content_digest(check, manifest, listed)
    _check_documents(check, manifest, listed)
    valid = not check.violations
    return BundleVerification(bundleDirectory=result_dir, valid=valid, violations=check.violations, manifest=manifest)


def _check_metadata(check: Checker, listed: dict[str, dict[str, Any]]) -> None:
    metadata = load_json(check.bundle, layout.METADATA) if regular_inside(check.bundle, layout.METADATA) else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("artifacts"), dict):
        return
    for key, value in metadata["artifacts"].items():
        for ref in value if isinstance(value, list) else [value]:
            if isinstance(ref, str):
                reference_listed(check, listed, ref, f"metadata.artifacts.{key}")


def _change_key(item: Any) -> str:
    """(path, status) of a changed-file record as a hashable key, whatever JSON the values are."""
    return json.dumps([item.get("path"), item.get("status")], sort_keys=True) if isinstance(item, dict) else ""


def _check_review(check: Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
    if not regular_inside(check.bundle, layout.REVIEW):
        return
    review = load_json(check.bundle, layout.REVIEW)
    if review is None:
        return
    evidence = review.get("evidence") if isinstance(review, dict) else None
    if not isinstance(evidence, dict):
        check.add("malformed-reference", layout.REVIEW, "review.json has no evidence object")
        return
    digest = evidence.get("artifactContentDigest")
    if isinstance(digest, str) and digest != manifest["contentDigest"]["value"]:
        check.add(
            "review-evidence-mismatch",
            f"{layout.REVIEW}:evidence.artifactContentDigest",
            "review evidence names another content digest",
        )
    patch = evidence.get("patch")
    if isinstance(patch, str):
        is_listed = reference_listed(check, listed, patch, f"{layout.REVIEW}:evidence.patch")
        if isinstance(evidence.get("patchSha256"), str):
            actual = check.sha256_of(patch) if is_listed else None
            if actual is None:
                check.add(
                    "review-evidence-mismatch",
                    f"{layout.REVIEW}:evidence.patchSha256",
                    f"cannot hash the review's patch evidence {patch} (not a listed regular file)",
                    file=patch,
                )
            elif actual != evidence["patchSha256"]:
                check.add(
                    "review-evidence-mismatch",
                    f"{layout.REVIEW}:evidence.patchSha256",
                    "patch bytes do not match review evidence",
                )
    changed_ref = evidence.get("changedFiles")
    if isinstance(changed_ref, str):
        is_listed = reference_listed(check, listed, changed_ref, f"{layout.REVIEW}:evidence.changedFiles")
        changed = load_json(check.bundle, changed_ref) if is_listed and changed_ref in check.regular else None
        if changed is None:
            check.add(
                "review-evidence-mismatch",
                f"{layout.REVIEW}:evidence.changedFiles",
                f"cannot read the changed-file evidence {changed_ref}",
                file=changed_ref,
            )
        else:
            # Stricter than the reference on purpose: a changed-files document without a files array makes every
            # change the review claims unproven (the reference skips the comparison; our reader rejects it anyway).
            listed_changes = changed.get("files") if isinstance(changed, dict) else None
            pairs = {_change_key(f) for f in (listed_changes if isinstance(listed_changes, list) else [])}
            claimed = review.get("changedFiles")
            for index, item in enumerate(claimed if isinstance(claimed, list) else []):
                if isinstance(item, dict) and _change_key(item) not in pairs:
                    check.add(
                        "review-evidence-mismatch",
                        f"{layout.REVIEW}:changedFiles[{index}]",
                        f"{item.get('path')} ({item.get('status')}) is not in {changed_ref}",
                    )
    for key in ("runtimeEpisodeTrace", "runtimeReferenceManifest", "runtimeReplayReferenceIndex"):
        ref = evidence.get(key)
        if isinstance(ref, str):
            reference_listed(check, listed, ref, f"{layout.REVIEW}:evidence.{key}")


def _check_cases(check: Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
    """Rule 16: unique case ids, a parseable verifiedAt, listed and hash-matching artifacts, safe public URLs."""
    seen: set[str] = set()
    for index, case in enumerate(manifest.get("cases") or []):
        where = f"manifest.cases[{index}]"
        if case["id"] in seen:
            check.add("malformed-reference", f"{where}.id", f"case id {case['id']!r} is duplicated")
        seen.add(case["id"])
        verification = case.get("verification")
        if isinstance(verification, dict) and "verifiedAt" in verification:
            stamp = verification["verifiedAt"]
            try:
                datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            except ValueError:
                check.add("malformed-reference", f"{where}.verification.verifiedAt", f"{stamp!r} is not a date")
        for a_index, artifact in enumerate(case["artifacts"]):
            a_where = f"{where}.artifacts[{a_index}]"
            path = artifact["path"]
            if path_problem(path):
                check.add("invalid-path", f"{a_where}.path", f"{path!r} is not a safe path", file=path)
                continue
            if path not in listed:
                check.add("malformed-reference", f"{a_where}.path", f"{path} is not listed in the manifest", file=path)
                continue
            if "sha256" in artifact:
                digest = artifact["sha256"]
                value = digest.get("value") if isinstance(digest, dict) else None
                if not isinstance(value, str) or not HEX64.match(value):
                    check.add("missing-file-hash", f"{a_where}.sha256", f"{path} has no valid sha256", file=path)
                else:
                    actual = manifest_self_hash(manifest) if path == layout.MANIFEST else check.sha256_of(path)
                    if actual != value:
                        check.add("file-hash-mismatch", f"{a_where}.sha256", f"{path} does not match", file=path)
            if "publicUrl" in artifact:
                url_problem = reviewer_url_problem(artifact["publicUrl"])
                if url_problem:
                    check.add(url_problem[0], f"{a_where}.publicUrl", url_problem[1], file=path)
