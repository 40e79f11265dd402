"""``codebox artifacts verify``: fail-closed verification of a bundle (spec §2, same violation codes).

Hashing is streaming, so memory does not grow with file sizes.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import content_digest, file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.bundle.safe_read import MAX_JSON_DEPTH, UnsafeFileError, json_depth_exceeds, read_regular
from codebox_tui.contracts.bundle import (
    BUNDLE_ID_PREFIX,
    REFERENCE_MANIFEST_SCHEMA,
    REPLAY_INDEX_SCHEMA,
    BundleVerification,
    Violation,
)
from codebox_tui.contracts.canonical import MAX_ARRAY_ITEMS, domain_digest, stable_json

_HEX64 = re.compile(r"^[a-f0-9]{64}$")
TYPED_ARTIFACTS_INDEX_SCHEMA = "wp-codebox/typed-artifacts-index/v1"
TOOL_CALL_TRANSCRIPT_SCHEMA = "wp-codebox/tool-call-transcript/v1"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def path_problem(path: Any) -> str | None:
    """Why a bundle-relative path is unsafe, or None."""
    if not isinstance(path, str) or not path:
        return "path is empty"
    if "\\" in path:
        return "path contains a backslash"
    if path.startswith("/"):
        return "path is absolute"
    if _SCHEME.match(path):
        return "path starts with a URI scheme or drive"
    normalized = posixpath.normpath(path)
    if normalized == ".." or normalized.startswith("../") or ".." in path.split("/"):
        return "path escapes the bundle"
    if "\x00" in path:
        return "path contains a NUL byte"
    return None


def dot_segment(path: str) -> bool:
    """True when a path that passed ``path_problem`` still has a ``.`` segment (``./x``, ``a/./b``). Such a path is
    not rejected as invalid, but the reference resolves every path it hashes through its artifact-path resolver,
    which refuses ``.`` segments: its per-file hash and Mode B digest fail on it, so ours must too."""
    return "." in [segment for segment in path.strip().split("/") if segment]


class _Checker:
    def __init__(self, bundle: Path) -> None:
        self.bundle = bundle
        self.violations: list[Violation] = []
        self._hashes: dict[str, str | None] = {}
        self.regular: set[str] = set()  # listed paths that passed the topology checks (regular, inside, 1 link)

    def add(self, code: str, path: str, message: str, **extra: Any) -> None:
        self.violations.append(Violation(code=code, path=path, message=message, **extra))

    def remember(self, path: str, digest: str | None) -> None:
        self._hashes[path] = digest

    def sha256_of(self, path: str) -> str | None:
        """sha256 of a listed file's bytes on disk (each file hashed once per run); None when unreadable or when
        the path is not a regular file inside the bundle (never follow a symlink to hash something outside)."""
        if path not in self.regular:
            return None
        if path not in self._hashes:
            try:
                self._hashes[path] = file_sha256(self.bundle / path, follow_symlinks=False)
            except OSError:
                self._hashes[path] = None
        return self._hashes[path]


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
        return (f"manifest.files has {len(files)} entries; at most {MAX_ARRAY_ITEMS} are covered by the "
                "manifest's digests")
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


_LOCAL_HOSTS = frozenset({"localhost", "0.0.0.0", "::1", "[::1]"})


def reviewer_url_problem(url: Any) -> tuple[str, str] | None:
    """(code, why) when a URL shown to reviewers is unusable or points at this machine (spec §2), else None."""
    if not isinstance(url, str):
        return ("malformed-reference", "URL must be a string")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return ("malformed-reference", f"{url!r} is not an absolute URL")
    if not parts.scheme or not _SCHEME.match(url):
        return ("malformed-reference", f"{url!r} is not an absolute URL")
    if parts.scheme.lower() not in ("http", "https"):
        return ("unsafe-file", f"{url!r} must use http or https")
    if not host:
        return ("malformed-reference", f"{url!r} has no host")
    if host in _LOCAL_HOSTS or host.startswith("127.") or host == "local" or host.endswith(".local"):
        return ("unsafe-file", f"{url!r} points at a local host")
    return None


def _list_bundle(bundle: Path) -> list[str]:
    found = []
    for root, dirs, names in os.walk(bundle, followlinks=False):
        for name in list(dirs):
            full = os.path.join(root, name)
            if os.path.islink(full):
                found.append(os.path.relpath(full, bundle).replace(os.sep, "/"))
                dirs.remove(name)
        for name in names:
            found.append(os.path.relpath(os.path.join(root, name), bundle).replace(os.sep, "/"))
    return sorted(found)


def _load_json(bundle: Path, rel: str) -> Any:
    """A listed JSON document, or None when it is not a regular file, unreadable, invalid or nested deeper
    than MAX_JSON_DEPTH (each caller reports None as its own violation)."""
    try:
        value = json.loads(read_regular(bundle / rel).decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None
    return None if json_depth_exceeds(value) else value


def verify_bundle(bundle_dir: Path | str) -> BundleVerification:
    bundle = Path(bundle_dir)
    check = _Checker(bundle)
    result_dir = os.path.normpath(str(bundle_dir))
    manifest_path = bundle / layout.MANIFEST
    try:
        # a regular file only: a FIFO planted as manifest.json must not block verification forever
        raw = read_regular(manifest_path).decode("utf-8")
    except FileNotFoundError:
        check.add("missing-manifest", layout.MANIFEST, f"No {layout.MANIFEST} in {bundle}")
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    except UnsafeFileError as error:
        check.add("unsafe-file", layout.MANIFEST, f"{layout.MANIFEST} cannot be read: {error}", file=layout.MANIFEST)
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    except (OSError, UnicodeDecodeError) as error:
        check.add("malformed-manifest", layout.MANIFEST, f"{layout.MANIFEST} cannot be read: {error}")
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    try:
        manifest = json.loads(raw)
        if json_depth_exceeds(manifest):
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels")
    except (ValueError, RecursionError) as error:
        check.add("malformed-manifest", layout.MANIFEST, f"{layout.MANIFEST} is not valid JSON: {error}")
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    problem = _shape_ok(manifest)
    if problem:
        check.add("invalid-manifest-shape", "manifest", problem)
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)

    try:
        real_bundle = bundle.resolve(strict=True)
    except OSError:
        real_bundle = bundle
    files: list[dict[str, Any]] = manifest["files"]
    listed: dict[str, dict[str, Any]] = {}
    valid_entries: list[tuple[int, dict[str, Any]]] = []
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
        full = bundle / path
        try:
            info = full.lstat()
        except OSError:
            check.add("missing-file", f"manifest.files[{index}]", f"{path} is listed but missing", file=path)
            continue
        if not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            check.add("missing-file", f"manifest.files[{index}]", f"{path} is {kind}", file=path)
            continue
        if info.st_nlink > 1:
            check.add(
                "hardlink",
                f"manifest.files[{index}]",
                f"{path} has {info.st_nlink} hard links",
                file=path,
                details={"links": info.st_nlink},
            )
            continue
        try:
            real = full.resolve(strict=True)
            rel = os.path.relpath(real, real_bundle)
        except OSError:
            check.add("unsafe-file", f"manifest.files[{index}]", f"{path} cannot be resolved", file=path)
            continue
        if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
            check.add("unsafe-file", f"manifest.files[{index}]", f"{path} resolves outside the bundle", file=path)
            continue
        valid_entries.append((index, entry))
        check.regular.add(path)
    if layout.MANIFEST not in listed:
        check.add("invalid-manifest-shape", "manifest.files", f"{layout.MANIFEST} must list itself")

    for rel in _list_bundle(bundle):
        if rel not in listed:
            full = bundle / rel
            reason = "a symlink" if full.is_symlink() else "not listed in the manifest"
            check.add("orphaned-file", rel, f"{rel} is {reason}", file=rel)

    for index, entry in valid_entries:
        digest = entry.get("sha256")
        if (
            not isinstance(digest, dict)
            or digest.get("algorithm") != "sha256"
            or not isinstance(digest.get("value"), str)
            or not _HEX64.match(digest["value"])
        ):
            check.add(
                "missing-file-hash",
                f"manifest.files[{index}].sha256",
                f"{entry['path']} has no valid sha256",
                file=entry["path"],
            )
            continue
        if entry["path"] != layout.MANIFEST and dot_segment(entry["path"]):
            check.add(
                "file-hash-mismatch",
                f"manifest.files[{index}].sha256",
                f"{entry['path']} cannot be hashed: a '.' path segment is not a bundle-relative artifact path",
                file=entry["path"],
            )
            continue
        try:
            actual = (
                manifest_self_hash(manifest)
                if entry["path"] == layout.MANIFEST
                else file_sha256(bundle / entry["path"], follow_symlinks=False)
            )
        except OSError as error:
            check.add(
                "file-hash-mismatch", f"manifest.files[{index}].sha256", f"{entry['path']}: {error}", file=entry["path"]
            )
            continue
        if entry["path"] != layout.MANIFEST:
            check.remember(entry["path"], actual)
        if actual != digest["value"]:
            check.add(
                "file-hash-mismatch",
                f"manifest.files[{index}].sha256",
                f"{entry['path']} does not match its recorded sha256",
                file=entry["path"],
                details={"expected": digest["value"], "actual": actual},
            )

    content = manifest["contentDigest"]
    digest_value: str | None = None
    if content["inputs"] == ["manifest.files"]:
        digest_value = file_list_digest(files)
    else:
        ok = True
        for name in content["inputs"]:
            if path_problem(name):
                check.add("invalid-path", "manifest.contentDigest.inputs", f"{name!r} is not a safe path")
                ok = False
                break
            if name not in listed:
                check.add("malformed-reference", "manifest.contentDigest.inputs", f"{name} is not listed")
                ok = False
                break
        if ok and any(dot_segment(name) for name in content["inputs"]):
            check.add(
                "digest-mismatch",
                "manifest.contentDigest.inputs",
                "cannot compute the content digest: an input has a '.' path segment",
            )
            ok = False
        if ok:
            try:
                digest_value = content_digest(bundle, content["inputs"], follow_symlinks=False)
            except OSError as error:
                check.add("digest-mismatch", "manifest.contentDigest", f"cannot read digest input: {error}")
    if not _HEX64.match(content["value"]):
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

    _check_metadata(check, listed)
    _check_review(check, listed, manifest)
    _check_cases(check, listed, manifest)
    for path, entry in listed.items():
        if entry.get("kind") == "runtime-reference-manifest":
            _check_reference(check, listed, manifest, path)
        elif entry.get("kind") == "runtime-episode-trace":
            _check_episode_trace(check, path)
        elif entry.get("kind") == "runtime-replay-index":
            _check_replay_index(check, listed, manifest, path)
        elif entry.get("kind") == "typed-artifacts-index":
            _check_typed_artifacts(check, listed, path)
        elif entry.get("kind") == "tool-call-transcript":
            _check_tool_calls(check, listed, path)
    valid = not check.violations
    return BundleVerification(bundleDirectory=result_dir, valid=valid, violations=check.violations, manifest=manifest)


def _regular_inside(bundle: Path, rel: str) -> bool:
    """``rel`` is a regular file (not a symlink) whose real path is inside the bundle: safe to read even when
    it is not listed (the reference reads metadata.json and files/review.json whether listed or not)."""
    if path_problem(rel):
        return False
    try:
        full = bundle / rel
        if not stat.S_ISREG(full.lstat().st_mode):
            return False
        inside = os.path.relpath(full.resolve(strict=True), bundle.resolve(strict=True))
    except OSError:
        return False
    return not (inside == ".." or inside.startswith("../") or os.path.isabs(inside))


def _reference_listed(check: _Checker, listed: dict[str, dict[str, Any]], ref: str, where: str) -> bool:
    """The reference's artifact-reference rule: a safe path (``invalid-path``) that the manifest lists
    (``malformed-reference``)."""
    why = path_problem(ref)
    if why:
        check.add("invalid-path", where, f"{ref!r}: {why}", file=ref)
        return False
    if ref not in listed:
        check.add("malformed-reference", where, f"{ref} is not listed in {layout.MANIFEST}", file=ref)
        return False
    return True


def _check_metadata(check: _Checker, listed: dict[str, dict[str, Any]]) -> None:
    metadata = _load_json(check.bundle, layout.METADATA) if _regular_inside(check.bundle, layout.METADATA) else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("artifacts"), dict):
        return
    for key, value in metadata["artifacts"].items():
        for ref in value if isinstance(value, list) else [value]:
            if isinstance(ref, str):
                _reference_listed(check, listed, ref, f"metadata.artifacts.{key}")


def _change_key(item: Any) -> str:
    """(path, status) of a changed-file record as a hashable key, whatever JSON the values are."""
    return json.dumps([item.get("path"), item.get("status")], sort_keys=True) if isinstance(item, dict) else ""


def _check_review(check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
    if not _regular_inside(check.bundle, layout.REVIEW):
        return
    review = _load_json(check.bundle, layout.REVIEW)
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
        is_listed = _reference_listed(check, listed, patch, f"{layout.REVIEW}:evidence.patch")
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
        is_listed = _reference_listed(check, listed, changed_ref, f"{layout.REVIEW}:evidence.changedFiles")
        changed = _load_json(check.bundle, changed_ref) if is_listed and changed_ref in check.regular else None
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
            _reference_listed(check, listed, ref, f"{layout.REVIEW}:evidence.{key}")


def _digest_ok(value: Any) -> bool:
    return isinstance(value, dict) and value.get("algorithm") == "sha256" and _is_hex64(value.get("value"))


def _is_version_1(value: Any) -> bool:
    return type(value) is int and value == 1


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and _HEX64.match(value) is not None


def _bundle_ref_ok(value: Any) -> bool:
    """``{kind: "artifact-bundle", id, digest}``; the digest is a sha256 object (the reference) or its hex value."""
    return (
        isinstance(value, dict)
        and value.get("kind") == "artifact-bundle"
        and isinstance(value.get("id"), str)
        and (_digest_ok(value.get("digest")) or _is_hex64(value.get("digest")))
    )


def _file_ref_ok(value: Any) -> bool:
    """A file ref ``{path, kind, contentType, sha256?, viewer?}`` (a bad sha256 is reported on its own)."""
    return isinstance(value, dict) and all(isinstance(value.get(k), str) for k in ("path", "kind", "contentType"))


def _trace_ref_ok(value: Any) -> bool:
    """An episode trace ref ``{kind, id, digest?, artifactId?, path?}``."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("kind"), str)
        and isinstance(value.get("id"), str)
        and ("digest" not in value or _digest_ok(value["digest"]))
        and all(k not in value or isinstance(value[k], str) for k in ("artifactId", "path"))
    )


def _string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _snapshot_ref_ok(value: Any) -> bool:
    replay = value.get("replay") if isinstance(value, dict) else None
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and isinstance(value.get("semantics"), str)
        and _digest_ok(value.get("digest"))
        and isinstance(replay, dict)
        and isinstance(replay.get("status"), str)
        and _string_list(replay.get("limitations"))
        and isinstance(value.get("artifactRefs"), list)
        and all(_trace_ref_ok(ref) and "digest" in ref for ref in value["artifactRefs"])
    )


def _ref_listed(check: _Checker, listed: dict[str, dict[str, Any]], ref_path: Any, where: str) -> bool:
    """A path named by a document inside the bundle must be safe and listed in the manifest."""
    why = path_problem(ref_path)
    if why:
        check.add("invalid-path", where, f"{ref_path!r}: {why}", file=str(ref_path))
        return False
    if ref_path not in listed:
        check.add("malformed-reference", where, f"{ref_path} is not listed in the manifest", file=ref_path)
        return False
    return True


def _ref_hash(check: _Checker, ref_path: str, digest: Any, where: str, *, plain: bool = False) -> None:
    """The digest a document records for a listed file must match the file's bytes."""
    value = digest if plain else (digest.get("value") if isinstance(digest, dict) else None)
    if not (plain or _digest_ok(digest)) or not _is_hex64(value):
        check.add("missing-file-hash", where, f"{ref_path} has no valid sha256", file=ref_path)
        return
    actual = check.sha256_of(ref_path)
    if actual != value:
        check.add(
            "file-hash-mismatch",
            where,
            f"{ref_path} does not match the sha256 recorded here",
            file=ref_path,
            details={"expected": value, "actual": actual},
        )


def _check_file_ref(check: _Checker, listed: dict[str, dict[str, Any]], ref: dict[str, Any], where: str) -> None:
    if _ref_listed(check, listed, ref["path"], f"{where}.path"):
        _ref_hash(check, ref["path"], ref.get("sha256"), f"{where}.sha256")


def _check_trace_refs(check: _Checker, listed: dict[str, dict[str, Any]], refs: list[Any], where: str) -> None:
    for index, ref in enumerate(refs):
        if isinstance(ref, dict) and isinstance(ref.get("path"), str):
            ref_where = f"{where}[{index}]"
            if _ref_listed(check, listed, ref["path"], f"{ref_where}.path"):
                _ref_hash(check, ref["path"], ref.get("digest"), f"{ref_where}.digest")


def _check_bundle_ref(check: _Checker, manifest: dict[str, Any], bundle_ref: dict[str, Any], where: str) -> None:
    digest = bundle_ref["digest"]
    value = digest.get("value") if isinstance(digest, dict) else digest
    if bundle_ref["id"] != manifest["id"] or value != manifest["contentDigest"]["value"]:
        check.add("review-evidence-mismatch", where, "the artifactBundle ref names another bundle")


def _check_sealed(check: _Checker, doc: dict[str, Any], path: str, schema: str, keys: tuple[str, ...]) -> None:
    """Recompute a domain-separated document digest (spec §1.6) and the id built from it."""
    payload = {k: doc[k] for k in keys if k in doc}
    try:
        digest = domain_digest(schema, payload)
    except (TypeError, ValueError, RecursionError) as error:
        check.add("malformed-reference", path, f"digest payload cannot be canonicalised: {error}", file=path)
        return
    prefix = schema.split("/")[1] + "-sha256-"
    if doc["digest"]["value"] != digest:
        check.add(
            "digest-mismatch",
            f"{path}:digest",
            "the recorded digest does not match the document",
            file=path,
            details={"expected": doc["digest"]["value"], "actual": digest},
        )
    elif doc.get("id") != prefix + digest:
        check.add("bundle-id-mismatch", f"{path}:id", f"id must be {prefix}<digest>", file=path)


def _check_reference(check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any], path: str) -> None:
    """Rule 12: ``wp-codebox/runtime-reference-manifest/v1``."""
    doc = _load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != REFERENCE_MANIFEST_SCHEMA
        or not _is_version_1(doc.get("version"))
        or not isinstance(doc.get("id"), str)
        or not isinstance(doc.get("createdAt"), str)
        or not _digest_ok(doc.get("digest"))
        or not isinstance(doc.get("runtime"), dict)
        or not _bundle_ref_ok(doc.get("artifactBundle"))
        or not isinstance(doc.get("files"), list)
        or not all(_file_ref_ok(ref) for ref in doc["files"])
        or any(key in doc and not _file_ref_ok(doc[key]) for key in ("trace", "events"))
        or not isinstance(doc.get("snapshots"), list)
        or not all(_snapshot_ref_ok(snapshot) for snapshot in doc["snapshots"])
    ):
        check.add("malformed-reference", path, "runtime reference manifest has the wrong shape", file=path)
        return
    keys = ("schema", "version", "runtime", "artifactBundle", "files", "trace", "events", "snapshots")
    _check_sealed(check, doc, path, REFERENCE_MANIFEST_SCHEMA, keys)
    _check_bundle_ref(check, manifest, doc["artifactBundle"], f"{path}:artifactBundle")
    for index, ref in enumerate(doc["files"]):
        _check_file_ref(check, listed, ref, f"{path}:files[{index}]")
    for key in ("trace", "events"):
        if key in doc:
            _check_file_ref(check, listed, doc[key], f"{path}:{key}")
    for index, snapshot in enumerate(doc["snapshots"]):
        _check_trace_refs(check, listed, snapshot["artifactRefs"], f"{path}:snapshots[{index}].artifactRefs")


def _replay_index_shape(doc: Any) -> str | None:
    if not isinstance(doc, dict):
        return "the replay index is not a JSON object"
    if doc.get("schema") != REPLAY_INDEX_SCHEMA or not _is_version_1(doc.get("version")):
        return f"schema must be {REPLAY_INDEX_SCHEMA!r} with version 1"
    for key in ("id", "createdAt"):
        if not isinstance(doc.get(key), str):
            return f"{key} must be a string"
    if not _digest_ok(doc.get("digest")):
        return "digest must be {algorithm: sha256, value: <64 hex>}"
    if not isinstance(doc.get("runtime"), dict):
        return "runtime must be an object"
    if not _bundle_ref_ok(doc.get("artifactBundle")):
        return "artifactBundle must be {kind: artifact-bundle, id, digest}"
    references = doc.get("references")
    if not isinstance(references, dict):
        return "references must be an object"
    for key, ref in references.items():  # JSON has no undefined: a null ref is the wrong shape (as in the reference)
        if not _file_ref_ok(ref):
            return f"references.{key} must be a file ref {{path, kind, contentType, sha256}}"
    actions = doc.get("actions")
    if not isinstance(actions, list):
        return "actions must be an array"
    for index, action in enumerate(actions):
        if (
            not isinstance(action, dict)
            or not isinstance(action.get("index"), int | float)
            or isinstance(action.get("index"), bool)
            or not isinstance(action.get("id"), str)
            or not _trace_ref_ok(action.get("actionRef"))
            or not _trace_ref_ok(action.get("executionRef"))
            or ("observationRef" in action and not _trace_ref_ok(action["observationRef"]))
        ):
            return f"actions[{index}] must be {{index, id, actionRef, executionRef, observationRef?}}"
    observations = doc.get("observations")
    if not isinstance(observations, list):
        return "observations must be an array"
    for index, item in enumerate(observations):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("id"), str)
            or not isinstance(item.get("type"), str)
            or not _trace_ref_ok(item.get("ref"))
            or not isinstance(item.get("artifactRefs"), list)
            or not all(_trace_ref_ok(ref) for ref in item["artifactRefs"])
        ):
            return f"observations[{index}] must be {{id, type, ref, artifactRefs[]}}"
    snapshots = doc.get("snapshots")
    if not isinstance(snapshots, list) or not all(_snapshot_ref_ok(s) for s in snapshots):
        return "snapshots must be an array of snapshot refs"
    replay = doc.get("replay")
    if (
        not isinstance(replay, dict)
        or not isinstance(replay.get("status"), str)
        or not _string_list(replay.get("instructions"))
        or not _string_list(replay.get("limitations"))
    ):
        return "replay must be {status, instructions[], limitations[]}"
    return None


def _check_replay_index(
    check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any], path: str
) -> None:
    """Rule 13: ``wp-codebox/runtime-replay-reference-index/v1``."""
    doc = _load_json(check.bundle, path)
    problem = _replay_index_shape(doc)
    if problem or not isinstance(doc, dict):
        check.add("malformed-reference", path, f"runtime replay index is invalid: {problem}", file=path)
        return
    keys = ("schema", "version", "runtime", "artifactBundle", "references", "actions", "observations")
    _check_sealed(check, doc, path, REPLAY_INDEX_SCHEMA, (*keys, "snapshots", "replay"))
    _check_bundle_ref(check, manifest, doc["artifactBundle"], f"{path}:artifactBundle")
    for key, ref in doc["references"].items():
        _check_file_ref(check, listed, ref, f"{path}:references.{key}")
    for index, item in enumerate(doc["observations"]):
        _check_trace_refs(check, listed, item["artifactRefs"], f"{path}:observations[{index}].artifactRefs")
    for index, snapshot in enumerate(doc["snapshots"]):
        _check_trace_refs(check, listed, snapshot["artifactRefs"], f"{path}:snapshots[{index}].artifactRefs")


# ---- typed-artifact payload schemas, checked the way the reference's validator (Ajv, JSON Schema 2020-12,
# non-strict) checks them: JavaScript regular expressions, draft-07 ``dependencies``, refs resolved up front.

SCHEMA_2020_IDS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
_JS_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}
_ATOM_ESCAPES = {
    "d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]",
    "s": f"[{_JS_SPACE}]", "S": f"[^{_JS_SPACE}]",
}
_SYNTAX = set("^$\\.*+?()[]{}|/")
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class JsPatternError(ValueError):
    """A ``pattern`` that JavaScript (``u`` flag) rejects, or that cannot be evaluated here the same way."""


def _js_escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape at ``pattern[i] == "\\"``; returns (python text, next index)."""
    if i + 1 >= len(pattern):
        raise JsPatternError("a pattern cannot end with a backslash")
    c = pattern[i + 1]
    if in_class and c in _CLASS_ESCAPES:
        return _CLASS_ESCAPES[c], i + 2
    if in_class and c in "DWS":
        raise JsPatternError(f"\\{c} inside a character class is not supported here")
    if in_class and c == "b":
        return r"\x08", i + 2
    if in_class and c == "-":
        return r"\-", i + 2
    if not in_class and c in _ATOM_ESCAPES:
        return _ATOM_ESCAPES[c], i + 2
    if c in _SYNTAX or c in "fnrtv":
        return "\\" + c, i + 2
    if c == "0" and not (i + 2 < len(pattern) and pattern[i + 2].isdigit()):
        return r"\x00", i + 2
    if c.isdigit() and not in_class:
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        return "\\" + pattern[i + 1 : j], j
    if c == "c" and i + 2 < len(pattern) and pattern[i + 2].isascii() and pattern[i + 2].isalpha():
        return f"\\x{ord(pattern[i + 2]) % 32:02x}", i + 3
    if c == "x" and _HEX.fullmatch(pattern[i + 2 : i + 4] or "-") and len(pattern[i + 2 : i + 4]) == 2:
        return pattern[i : i + 4], i + 4
    if c == "u" and pattern[i + 2 : i + 3] == "{":
        close = pattern.find("}", i + 3)
        digits = pattern[i + 3 : close] if close > 0 else ""
        if not _HEX.fullmatch(digits or "-") or int(digits, 16) > 0x10FFFF:
            raise JsPatternError("invalid \\u{...} escape")
        return f"\\U{int(digits, 16):08x}", close + 1
    if c == "u" and _HEX.fullmatch(pattern[i + 2 : i + 6] or "-") and len(pattern[i + 2 : i + 6]) == 4:
        return pattern[i : i + 6], i + 6
    if c == "k" and not in_class and pattern[i + 2 : i + 3] == "<":
        close = pattern.find(">", i + 3)
        if close < 0:
            raise JsPatternError("invalid named back-reference")
        return f"(?P={pattern[i + 3 : close]})", close + 1
    if c in "pP":
        raise JsPatternError("Unicode property escapes (\\p{...}) cannot be evaluated here")
    raise JsPatternError(f"invalid escape \\{c} (JavaScript regular expressions, u flag)")


def js_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a JSON Schema ``pattern`` with JavaScript semantics (ECMA-262 with the ``u`` flag, as Ajv uses):
    ``\\d \\w \\b`` are ASCII, ``\\s`` is JS whitespace, ``.`` stops at any line terminator, ``$`` is the end of
    the input only, ``(?<name>...)`` is a named group, and what JS rejects (escapes, lone braces, quantified
    assertions, stacked quantifiers) is an error."""
    return _js_pattern_cached(pattern)


_WORD = "[A-Za-z0-9_]"
_BOUNDARY = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
_NOT_BOUNDARY = f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"


@functools.lru_cache(maxsize=512)
def _js_pattern_cached(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    groups: list[bool] = []  # per open group: is it a lookaround assertion?
    last = "none"  # none | atom | assertion | quantifier | lazy

    def quantify(text: str) -> None:
        nonlocal last
        if last in ("none", "assertion"):
            raise JsPatternError("nothing to repeat (JavaScript regular expressions, u flag)")
        if last == "quantifier" and text == "?":
            last = "lazy"
        elif last in ("quantifier", "lazy"):
            raise JsPatternError("nothing to repeat (JavaScript regular expressions, u flag)")
        else:
            last = "quantifier"
        out.append(text)

    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if pattern[i + 1 : i + 2] in ("b", "B"):
                out.append(_BOUNDARY if pattern[i + 1] == "b" else _NOT_BOUNDARY)
                last, i = "assertion", i + 2
                continue
            text, i = _js_escape(pattern, i, in_class=False)
            out.append(text)
            last = "atom"
            continue
        if c == "[":
            i = _js_class(pattern, i, out)
            last = "atom"
            continue
        if c in "*+?":
            quantify(c)
        elif c == "{":
            match = _QUANTIFIER.match(pattern, i)
            if not match:
                raise JsPatternError("a lone '{' is not allowed (JavaScript regular expressions, u flag)")
            quantify(match.group())
            i = match.end()
            continue
        elif c in "}]":
            raise JsPatternError(f"a lone '{c}' is not allowed (JavaScript regular expressions, u flag)")
        elif c in "^$":
            out.append("^" if c == "^" else r"\Z")
            last = "assertion"
        elif c == ".":
            out.append("[^\n\r\u2028\u2029]")
            last = "atom"
        elif c == "(":
            if pattern.startswith("(?", i):
                prefix = next((p for p in ("(?<=", "(?<!", "(?=", "(?!", "(?:") if pattern.startswith(p, i)), "")
                if prefix:
                    groups.append(prefix != "(?:")
                    out.append(prefix)
                    i += len(prefix)
                    last = "none"
                    continue
                close = pattern.find(">", i + 3)
                name = pattern[i + 3 : close] if pattern.startswith("(?<", i) and close > 0 else ""
                if not name.isidentifier():
                    raise JsPatternError("invalid group (JavaScript regular expressions, u flag)")
                groups.append(False)
                out.append(f"(?P<{name}>")
                i = close + 1
                last = "none"
                continue
            else:
                groups.append(False)
                out.append("(")
            last = "none"
        elif c == ")":
            if not groups:
                raise JsPatternError("unmatched ')'")
            last = "assertion" if groups.pop() else "atom"
            out.append(")")
        elif c == "|":
            out.append("|")
            last = "none"
        else:
            out.append(c)
            last = "atom"
        i += 1
    try:
        return re.compile("".join(out))
    except re.error as error:
        raise JsPatternError(f"cannot evaluate this regular expression here: {error}") from error


def _js_class(pattern: str, i: int, out: list[str]) -> int:
    """Translate the character class starting at ``pattern[i] == "["``; returns the index after its ``]``."""
    i += 1
    negated = pattern[i : i + 1] == "^"
    if negated:
        i += 1
    body: list[str] = []
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            text, i = _js_escape(pattern, i, in_class=True)
            body.append(text)
        else:
            body.append("\\[" if pattern[i] == "[" else pattern[i])
            i += 1
    if i >= len(pattern):
        raise JsPatternError("unterminated character class")
    if not body:  # [] matches nothing, [^] any character
        out.append(r"[\s\S]" if negated else "(?!)")
    else:
        out.append("[" + ("^" if negated else "") + "".join(body) + "]")
    return i + 1


def _pattern_keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not js_pattern(pattern).search(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties_keyword(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = js_pattern(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _dependencies_keyword(validator: Any, dependencies: Any, instance: Any, schema: Any) -> Any:
    """Draft-07 ``dependencies`` (Ajv's 2020 validator still applies it): arrays require, schemas apply."""
    if not validator.is_type(instance, "object"):
        return
    for name, dependency in dependencies.items():
        if name not in instance:
            continue
        if validator.is_type(dependency, "array"):
            for required in dependency:
                if required not in instance:
                    yield jsonschema.ValidationError(f"{required!r} is a dependency of {name!r}")
        else:
            yield from validator.descend(instance, dependency, schema_path=name)


_PayloadValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {"pattern": _pattern_keyword, "patternProperties": _pattern_properties_keyword,
     "dependencies": _dependencies_keyword},
)
_META_FORMATS = jsonschema.FormatChecker()
_META_FORMATS.checkers.pop("regex", None)  # patterns are JavaScript regexes, checked by js_pattern instead
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas", "dependencies")
_SUBSCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                  "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _schema_problems_up_front(schema: Any) -> None:
    """What Ajv rejects when it compiles a schema, before any payload is seen: a ``$schema`` other than 2020-12,
    the draft-04 ``id`` keyword, a pattern JavaScript rejects, and a ``$ref`` that does not resolve (every ref
    reachable from the root, followed into what it names). Raises ``jsonschema.SchemaError``."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] not in SCHEMA_2020_IDS:
        raise jsonschema.SchemaError(f"no schema with key or ref {schema['$schema']!r} (only JSON Schema 2020-12)")
    root_id = schema.get("$id", "") if isinstance(schema, dict) and isinstance(schema.get("$id"), str) else ""
    registry: Any = Registry().with_resource(uri=root_id, resource=DRAFT202012.create_resource(schema))
    seen: set[int] = set()

    def walk(node: Any, resolver: Any) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node.get("$id"), str) and node is not schema:
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        if "id" in node:
            raise jsonschema.SchemaError('NOT SUPPORTED: keyword "id", use "$id" for schema ID')
        for key in ("pattern",):
            if isinstance(node.get(key), str):
                try:
                    js_pattern(node[key])
                except JsPatternError as error:
                    raise jsonschema.SchemaError(f"pattern {node[key]!r}: {error}") from error
        if isinstance(node.get("patternProperties"), dict):
            for pattern in node["patternProperties"]:
                try:
                    js_pattern(pattern)
                except JsPatternError as error:
                    raise jsonschema.SchemaError(f"patternProperties {pattern!r}: {error}") from error
        if isinstance(node.get("$ref"), str):
            try:
                resolved = resolver.lookup(node["$ref"])
            except Unresolvable as error:
                raise jsonschema.SchemaError(f"can't resolve reference {node['$ref']!r}") from error
            walk(resolved.contents, resolved.resolver)
        for key in _SUBSCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                for child in node[key].values():
                    walk(child, resolver)
        for key in _SUBSCHEMA_ONE:
            walk(node.get(key), resolver)
        for key in _SUBSCHEMA_LISTS:
            if isinstance(node.get(key), list):
                for child in node[key]:
                    walk(child, resolver)

    walk(schema, registry.resolver(base_uri=root_id))


def payload_schema_errors(schema: dict[str, Any], payload: Any) -> list[str]:
    """Every JSON Schema 2020-12 error of ``payload`` ("/pointer message"); raises SchemaError for a schema the
    reference's validator would refuse to compile (bad shape, other ``$schema``, ``id``, unresolvable ``$ref``,
    a pattern JavaScript rejects)."""
    _PayloadValidator.check_schema(schema, format_checker=_META_FORMATS)
    _schema_problems_up_front(schema)
    validator = _PayloadValidator(schema)
    try:
        errors = sorted(validator.iter_errors(payload), key=lambda e: [str(p) for p in e.absolute_path])
    except (JsPatternError, RecursionError) as error:
        raise jsonschema.SchemaError(f"the schema cannot be evaluated: {error}") from error
    except Exception as error:  # referencing's Unresolvable and friends: a ref that only fails when reached
        if type(error).__module__.startswith(("referencing", "jsonschema")):
            raise jsonschema.SchemaError(f"the schema cannot be evaluated: {error}") from error
        raise
    return [f"/{'/'.join(str(p) for p in error.absolute_path)} {error.message}" for error in errors]


def _check_typed_artifacts(check: _Checker, listed: dict[str, dict[str, Any]], path: str) -> None:
    """Rule 14: ``wp-codebox/typed-artifacts-index/v1``."""
    doc = _load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != TYPED_ARTIFACTS_INDEX_SCHEMA
        or not isinstance(doc.get("artifacts"), list)
    ):
        check.add(
            "malformed-reference",
            path,
            f"typed artifacts index must be a JSON object with schema {TYPED_ARTIFACTS_INDEX_SCHEMA!r} and artifacts[]",
            file=path,
        )
        return
    for index, item in enumerate(doc["artifacts"]):
        where = f"{path}:artifacts[{index}]"
        artifact = item.get("artifact") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(artifact, dict) or not isinstance(artifact.get("path"), str):
            check.add("malformed-reference", where, "typed artifact entries need artifact.path", file=path)
            continue
        if _ref_listed(check, listed, artifact["path"], f"{where}.artifact.path") and isinstance(
            artifact.get("sha256"), str
        ):
            _ref_hash(check, artifact["path"], artifact["sha256"], f"{where}.artifact.sha256", plain=True)
        schema = item["payload_schema"] if "payload_schema" in item else item.get("payloadSchema")
        if not isinstance(schema, dict) or "payload" not in item:
            continue  # a schema named by id (a string) is not resolvable offline
        try:
            errors = payload_schema_errors(schema, item["payload"])
        except jsonschema.SchemaError as error:
            check.add(
                "payload-schema-violation",
                f"{where}.payload_schema",
                f"payload_schema is not a valid JSON Schema: {error.message}",
                file=path,
            )
            continue
        except Exception as error:  # unresolvable $ref, bad regex, ...: fail closed, never raise
            check.add(
                "payload-schema-violation",
                f"{where}.payload_schema",
                f"payload_schema cannot be applied: {type(error).__name__}: {error}",
                file=path,
            )
            continue
        if errors:
            check.add(
                "payload-schema-violation",
                f"{where}.payload",
                f"payload does not match payload_schema: {'; '.join(errors)}",
                file=path,
                details={"errors": errors},
            )


_CALL_FIELDS = ("call_id", "tool_name", "tool_type", "phase", "status")


def _policy_ok(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("policy"), str)


def _check_tool_calls(check: _Checker, listed: dict[str, dict[str, Any]], path: str) -> None:
    """Rule 15: ``wp-codebox/tool-call-transcript/v1``."""
    doc = _load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != TOOL_CALL_TRANSCRIPT_SCHEMA
        or not isinstance(doc.get("tool_calls"), list)
        or not _policy_ok(doc.get("redaction"))
    ):
        check.add(
            "malformed-reference",
            path,
            f"tool-call transcript must be a JSON object with schema {TOOL_CALL_TRANSCRIPT_SCHEMA!r}, "
            "tool_calls[] and redaction.policy",
            file=path,
        )
        return
    for index, call in enumerate(doc["tool_calls"]):
        where = f"{path}:tool_calls[{index}]"
        if not isinstance(call, dict):
            check.add("malformed-reference", where, "a tool call must be an object", file=path)
            continue
        missing = [k for k in _CALL_FIELDS if not isinstance(call.get(k), str)]
        if not _policy_ok(call.get("redaction")):
            missing.append("redaction.policy")
        if missing:
            check.add(
                "malformed-reference",
                where,
                f"tool call needs string {', '.join(missing)}",
                file=path,
                details={"missing": missing},
            )
        for key in ("input_artifacts", "output_artifacts"):
            refs = call.get(key)
            if refs is None:
                continue
            if not isinstance(refs, list):
                check.add("malformed-reference", f"{where}.{key}", f"{key} must be an array", file=path)
                continue
            for r_index, ref in enumerate(refs):
                r_where = f"{where}.{key}[{r_index}]"
                if not isinstance(ref, dict) or not isinstance(ref.get("path"), str):
                    check.add("malformed-reference", r_where, "an artifact ref needs a string path", file=path)
                elif _ref_listed(check, listed, ref["path"], f"{r_where}.path") and "sha256" in ref:
                    _ref_hash(check, ref["path"], ref["sha256"], f"{r_where}.sha256")


EPISODE_TRACE_SCHEMA = "wp-codebox/runtime-episode-trace/v1"
_EVALUATION_KEYS = frozenset(
    {"reward", "success", "grader", "scenario", "task-set", "task_set", "taskSet", "benchmark"}
    | {"model-eval", "model_eval", "modelEval"}
)


def _evaluation_keys(value: Any, where: str, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _EVALUATION_KEYS:
                found.append(f"{where}.{key}")
            _evaluation_keys(item, f"{where}.{key}", found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _evaluation_keys(item, f"{where}[{index}]", found)


EPISODE_ACTION_SCHEMA = "wp-codebox/runtime-episode-action/v1"
EPISODE_OBSERVATION_SCHEMA = "wp-codebox/runtime-episode-observation/v1"
EPISODE_SNAPSHOT_SCHEMA = "wp-codebox/runtime-episode-snapshot/v1"
_ACTION_KINDS = ("command", "filesystem", "http", "browser")


def _js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value (``{}`` and ``[]`` are truthy there)."""
    return not (value is None or value is False or value == "" or (isinstance(value, int | float) and value == 0))


def _js_string(value: Any) -> str:
    """``${value}`` of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return stable_json(value)
    if isinstance(value, list):
        return ",".join("" if item is None else _js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _non_empty(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _is_js_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _episode_digest(value: Any) -> str:
    """Spec §1.7: ``sha256("wp-codebox/runtime-episode-trace/v1\n" + stableJson(value))``."""
    return domain_digest(EPISODE_TRACE_SCHEMA, value)


def _action_payload(action: dict[str, Any]) -> dict[str, Any]:
    kind = action.get("kind")
    payload: dict[str, Any] = {
        "schema": EPISODE_ACTION_SCHEMA,
        "kind": "command" if kind is None else kind,
        "command": action.get("command"),
        "args": action["args"] if isinstance(action.get("args"), list) else [],
    }
    for key in ("cwd", "method", "url", "path", "operation", "selector", "description"):
        if isinstance(action.get(key), str):
            payload[key] = action[key]
    if _is_js_number(action.get("timeoutMs")):
        payload["timeoutMs"] = action["timeoutMs"]
    if isinstance(action.get("metadata"), dict):
        payload["metadata"] = action["metadata"]
    return payload


def _refs_or_empty(value: Any) -> Any:
    return [] if value is None else value


def _trace_ref_issues(ref: Any, where: str, kind: str | None, issues: list[str]) -> None:
    if not isinstance(ref, dict):
        issues.append(f"{where} must be an object")
        return
    if kind is not None and ref.get("kind") != kind:
        issues.append(f"{where}.kind must be {kind}")
    if not _non_empty(ref.get("kind")):
        issues.append(f"{where}.kind is required")
    if not _non_empty(ref.get("id")):
        issues.append(f"{where}.id is required")
    if not _digest_ok(ref.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")


def _ref_digest_issue(ref: Any, target: Any, where: str, issues: list[str]) -> None:
    """A ref's digest must equal the digest of the envelope it points at (when both are well formed)."""
    digest: Any = ref.get("digest") if isinstance(ref, dict) else None
    if _digest_ok(digest) and _digest_ok(target) and digest["value"] != target["value"]:
        issues.append(f"{where}.digest does not match the referenced envelope's digest")


def _artifact_refs_issues(item: dict[str, Any], where: str, issues: list[str]) -> None:
    if "artifactRefs" in item:
        refs = item["artifactRefs"]
        if not isinstance(refs, list):
            issues.append(f"{where}.artifactRefs must be an array when present")
        else:
            for index, ref in enumerate(refs):
                _trace_ref_issues(ref, f"{where}.artifactRefs[{index}]", None, issues)


def _envelope_ok(item: Any, where: str, schema: str, required: tuple[str, ...], issues: list[str]) -> bool:
    """The checks every episode envelope starts with; False when it is not even an object."""
    if not isinstance(item, dict):
        issues.append(f"{where} must be an object")
        return False
    if item.get("schema") != schema:
        issues.append(f"{where}.schema must be {schema}")
    for key in required:
        if not _non_empty(item.get(key)):
            issues.append(f"{where}.{key} is required")
    return True


def _observation_issues(observation: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(observation, where, EPISODE_OBSERVATION_SCHEMA, ("id", "type", "observedAt"), issues):
        return
    if "data" not in observation:
        issues.append(f"{where}.data is required")
    _artifact_refs_issues(observation, where, issues)
    _envelope_digest_issues(observation, where, EPISODE_OBSERVATION_SCHEMA, ("type", "data", "observedAt"),
                            "observation", issues)


def _envelope_digest_issues(item: dict[str, Any], where: str, schema: str, keys: tuple[str, ...], what: str,
                            issues: list[str]) -> None:
    """The envelope's digest must be the episode digest of its canonical payload."""
    if not _digest_ok(item.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")
        return
    payload = {"schema": schema, **{key: item.get(key) for key in keys},
               "artifactRefs": _refs_or_empty(item.get("artifactRefs"))}
    if item["digest"]["value"] != _episode_digest(payload):
        issues.append(f"{where}.digest does not match the canonical {what} payload")


def _action_issues(action: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(action, where, EPISODE_ACTION_SCHEMA, (), issues):
        return
    if _js_string(action.get("kind")) not in _ACTION_KINDS:
        issues.append(f"{where}.kind must be command, filesystem, http or browser")
    if not _non_empty(action.get("command")):
        issues.append(f"{where}.command is required")
    args = action.get("args")
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        issues.append(f"{where}.args must be an array of strings")
    if "cwd" in action and not isinstance(action["cwd"], str):
        issues.append(f"{where}.cwd must be a string when present")
    for key in ("method", "url", "path", "operation", "selector", "description"):
        if key in action and not _non_empty(action[key]):
            issues.append(f"{where}.{key} must be a non-empty string when present")
    if "metadata" in action and not isinstance(action["metadata"], dict):
        issues.append(f"{where}.metadata must be an object when present")
    if "timeoutMs" in action and not (_is_js_number(action["timeoutMs"]) and action["timeoutMs"] >= 0):
        issues.append(f"{where}.timeoutMs must be a non-negative number when present")
    if not _digest_ok(action.get("digest")):
        issues.append(f"{where}.digest must be a sha256 digest")
        return
    if action["digest"]["value"] != _episode_digest(_action_payload(action)):
        issues.append(f"{where}.digest does not match the canonical action payload")


def _snapshot_issues(snapshot: Any, where: str, issues: list[str]) -> None:
    if not _envelope_ok(snapshot, where, EPISODE_SNAPSHOT_SCHEMA, ("id", "createdAt", "semantics"), issues):
        return
    if not isinstance(snapshot.get("metadata"), dict):
        issues.append(f"{where}.metadata must be an object")
    _artifact_refs_issues(snapshot, where, issues)
    _envelope_digest_issues(snapshot, where, EPISODE_SNAPSHOT_SCHEMA, ("id", "createdAt", "semantics", "metadata"),
                            "snapshot", issues)


def _ref_id(value: Any) -> Any:
    return value.get("id") if isinstance(value, dict) else None


def _step_issues(step: Any, index: int, issues: list[str]) -> None:
    where = f"steps[{index}]"
    if not isinstance(step, dict):
        issues.append(f"{where} must be an object")
        return
    if not _non_empty(step.get("id")):
        issues.append(f"{where}.id is required")
    if not (_is_js_number(step.get("index")) and step["index"] == index):
        issues.append(f"{where}.index must equal its position {index}")
    action = step.get("action")
    if not _non_empty(_ref_id(action)):
        issues.append(f"{where}.action.id is required")
    else:
        _action_issues(action, f"{where}.action", issues)
    if not _non_empty(_ref_id(step.get("actionRef"))):
        issues.append(f"{where}.actionRef.id is required")
    else:
        _trace_ref_issues(step["actionRef"], f"{where}.actionRef", "action", issues)
        _ref_digest_issue(step["actionRef"], action.get("digest") if isinstance(action, dict) else None,
                          f"{where}.actionRef", issues)
    execution = step.get("execution")
    if not _non_empty(_ref_id(execution)):
        issues.append(f"{where}.execution.id is required")
    if not _non_empty(_ref_id(step.get("executionRef"))):
        issues.append(f"{where}.executionRef.id is required")
    else:
        _trace_ref_issues(step["executionRef"], f"{where}.executionRef", "execution", issues)
        target = {"algorithm": "sha256", "value": _episode_digest(execution)} if _js_truthy(execution) else None
        _ref_digest_issue(step["executionRef"], target, f"{where}.executionRef", issues)
    observation = step.get("observation")
    if _js_truthy(observation) and not _non_empty(_ref_id(observation)):
        issues.append(f"{where}.observation.id is required")
    elif _js_truthy(observation):
        _observation_issues(observation, f"{where}.observation", issues)
    if _js_truthy(step.get("observationRef")):
        _trace_ref_issues(step["observationRef"], f"{where}.observationRef", "observation", issues)
        if _js_truthy(observation):
            _ref_digest_issue(step["observationRef"], observation.get("digest") if isinstance(observation, dict)
                              else None, f"{where}.observationRef", issues)


def episode_trace_issues(doc: Any) -> list[str]:
    """Problems of a ``wp-codebox/runtime-episode-trace/v1`` document (spec §10, §1.7); empty when valid.

    Beyond the shape, every envelope digest (action, observation, snapshot) is recomputed from its canonical payload
    and every ref digest (actionRef, executionRef, observationRef, reset observationRefs) must equal the digest of
    the envelope it names, as the reference's trace validator requires: a trace edited after it was recorded fails.
    """
    if not isinstance(doc, dict):
        return ["trace is not a JSON object"]
    issues: list[str] = []
    if doc.get("schema") != EPISODE_TRACE_SCHEMA:
        issues.append(f"schema must be {EPISODE_TRACE_SCHEMA!r}, got {doc.get('schema')!r}")
    if not (_is_js_number(doc.get("version")) and doc["version"] == 1):
        issues.append("version must be 1")
    for key in ("id", "createdAt"):
        if not _non_empty(doc.get(key)):
            issues.append(f"{key} must be a non-empty string")
    if not _non_empty(_ref_id(doc.get("runtime"))):
        issues.append("runtime.id is required")
    reset = doc.get("reset")
    if not _non_empty(_ref_id(reset)):
        issues.append("reset.id is required")
    observations = reset.get("observations") if isinstance(reset, dict) else None
    if not isinstance(observations, list):
        issues.append("reset.observations must be an array")
    else:
        for index, observation in enumerate(observations):
            _observation_issues(observation, f"reset.observations[{index}]", issues)
    refs = reset.get("observationRefs") if isinstance(reset, dict) else None
    if not isinstance(refs, list):
        issues.append("reset.observationRefs must be an array")
    else:
        for index, ref in enumerate(refs):
            where = f"reset.observationRefs[{index}]"
            _trace_ref_issues(ref, where, "observation", issues)
            target = observations[index] if isinstance(observations, list) and index < len(observations) else None
            if _js_truthy(target):
                _ref_digest_issue(ref, target.get("digest") if isinstance(target, dict) else None, where, issues)
    steps = doc.get("steps")
    if not isinstance(steps, list):
        issues.append("steps must be an array")
    else:
        for index, step in enumerate(steps):
            _step_issues(step, index, issues)
    snapshots = doc.get("snapshots")
    if not isinstance(snapshots, list):
        issues.append("snapshots must be an array")
    else:
        for index, snapshot in enumerate(snapshots):
            _snapshot_issues(snapshot, f"snapshots[{index}]", issues)
    found: list[str] = []
    _evaluation_keys(doc, "trace", found)
    issues.extend(f"{where} is evaluation vocabulary, not allowed in a trace" for where in found)
    return issues


def _check_episode_trace(check: _Checker, path: str) -> None:
    try:
        issues = episode_trace_issues(_load_json(check.bundle, path))
    except (RecursionError, TypeError, ValueError) as error:  # fail closed on anything the checks cannot walk
        issues = [f"trace cannot be checked: {type(error).__name__}"]
    if issues:
        check.add(
            "malformed-reference",
            path,
            f"runtime episode trace is invalid: {'; '.join(issues)}",
            file=path,
            details={"issues": issues},
        )


def _check_cases(check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
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
                if not isinstance(value, str) or not _HEX64.match(value):
                    check.add("missing-file-hash", f"{a_where}.sha256", f"{path} has no valid sha256", file=path)
                else:
                    actual = manifest_self_hash(manifest) if path == layout.MANIFEST else check.sha256_of(path)
                    if actual != value:
                        check.add("file-hash-mismatch", f"{a_where}.sha256", f"{path} does not match", file=path)
            if "publicUrl" in artifact:
                url_problem = reviewer_url_problem(artifact["publicUrl"])
                if url_problem:
                    check.add(url_problem[0], f"{a_where}.publicUrl", url_problem[1], file=path)
