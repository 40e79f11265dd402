"""``codebox artifacts verify``: fail-closed verification of a bundle (spec §2, same violation codes).

Hashing is streaming, so memory does not grow with file sizes.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codebox_tui.bundle.digests import content_digest, file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.contracts.bundle import BUNDLE_ID_PREFIX, REFERENCE_MANIFEST_SCHEMA, BundleVerification, Violation
from codebox_tui.contracts.canonical import domain_digest

_HEX64 = re.compile(r"^[a-f0-9]{64}$")
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


class _Checker:
    def __init__(self, bundle: Path) -> None:
        self.bundle = bundle
        self.violations: list[Violation] = []

    def add(self, code: str, path: str, message: str, **extra: Any) -> None:
        self.violations.append(Violation(code=code, path=path, message=message, **extra))


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
    try:
        path = bundle / rel
        if path.is_symlink() or not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def verify_bundle(bundle_dir: Path | str) -> BundleVerification:
    bundle = Path(bundle_dir)
    check = _Checker(bundle)
    result_dir = os.path.normpath(str(bundle_dir))
    manifest_path = bundle / "manifest.json"
    try:
        raw = manifest_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        check.add("missing-manifest", "manifest.json", f"No manifest.json in {bundle}")
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    except (OSError, UnicodeDecodeError) as error:
        check.add("malformed-manifest", "manifest.json", f"manifest.json cannot be read: {error}")
        return BundleVerification(bundleDirectory=result_dir, valid=False, violations=check.violations)
    try:
        manifest = json.loads(raw)
    except ValueError as error:
        check.add("malformed-manifest", "manifest.json", f"manifest.json is not valid JSON: {error}")
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
    if "manifest.json" not in listed:
        check.add("invalid-manifest-shape", "manifest.files", "manifest.json must list itself")

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
        try:
            actual = (
                manifest_self_hash(manifest)
                if entry["path"] == "manifest.json"
                else file_sha256(bundle / entry["path"])
            )
        except OSError as error:
            check.add(
                "file-hash-mismatch", f"manifest.files[{index}].sha256", f"{entry['path']}: {error}", file=entry["path"]
            )
            continue
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
        if ok:
            try:
                digest_value = content_digest(bundle, content["inputs"])
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
    valid = not check.violations
    return BundleVerification(bundleDirectory=result_dir, valid=valid, violations=check.violations, manifest=manifest)


def _check_metadata(check: _Checker, listed: dict[str, dict[str, Any]]) -> None:
    metadata = _load_json(check.bundle, "metadata.json") if "metadata.json" in listed else None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("artifacts"), dict):
        return
    for key, value in metadata["artifacts"].items():
        for ref in value if isinstance(value, list) else [value]:
            if not isinstance(ref, str):
                continue
            if path_problem(ref):
                check.add("invalid-path", f"metadata.json:artifacts.{key}", f"{ref!r} is not a safe path")
            elif ref not in listed:
                check.add("malformed-reference", f"metadata.json:artifacts.{key}", f"{ref} is not in the manifest")


def _check_review(check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any]) -> None:
    if "files/review.json" not in listed:
        return
    review = _load_json(check.bundle, "files/review.json")
    if review is None:
        return
    evidence = review.get("evidence") if isinstance(review, dict) else None
    if not isinstance(evidence, dict):
        check.add("malformed-reference", "files/review.json:evidence", "review.json has no evidence object")
        return
    digest = evidence.get("artifactContentDigest")
    if isinstance(digest, str) and digest != manifest["contentDigest"]["value"]:
        check.add(
            "review-evidence-mismatch",
            "files/review.json:evidence.artifactContentDigest",
            "review evidence names another content digest",
        )
    patch = evidence.get("patch")
    if isinstance(patch, str):
        if patch not in listed:
            check.add("review-evidence-mismatch", "files/review.json:evidence.patch", f"{patch} is not listed")
        elif isinstance(evidence.get("patchSha256"), str):
            try:
                actual = file_sha256(check.bundle / patch)
            except OSError:
                actual = ""
            if actual != evidence["patchSha256"]:
                check.add(
                    "review-evidence-mismatch",
                    "files/review.json:evidence.patchSha256",
                    "patch bytes do not match review evidence",
                )
    changed_ref = evidence.get("changedFiles")
    if isinstance(changed_ref, str):
        if changed_ref not in listed:
            check.add(
                "review-evidence-mismatch", "files/review.json:evidence.changedFiles", f"{changed_ref} is not listed"
            )
        else:
            changed = _load_json(check.bundle, changed_ref)
            pairs = {(f.get("path"), f.get("status")) for f in (changed or {}).get("files", []) if isinstance(f, dict)}
            for index, item in enumerate(review.get("changedFiles") or []):
                if isinstance(item, dict) and (item.get("path"), item.get("status")) not in pairs:
                    check.add(
                        "review-evidence-mismatch",
                        f"files/review.json:changedFiles[{index}]",
                        f"{item.get('path')} ({item.get('status')}) is not in {changed_ref}",
                    )
    for key in ("runtimeEpisodeTrace", "runtimeReferenceManifest", "runtimeReplayReferenceIndex"):
        ref = evidence.get(key)
        if isinstance(ref, str) and ref not in listed:
            check.add("review-evidence-mismatch", f"files/review.json:evidence.{key}", f"{ref} is not listed")


def _check_reference(check: _Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any], path: str) -> None:
    doc = _load_json(check.bundle, path)
    bundle_ref = doc.get("artifactBundle") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != REFERENCE_MANIFEST_SCHEMA
        or doc.get("version") != 1
        or not isinstance(doc.get("files"), list)
        or not isinstance(bundle_ref, dict)
        or not isinstance(doc.get("digest"), dict)
    ):
        check.add("malformed-reference", path, "runtime reference manifest has the wrong shape")
        return
    payload = {
        k: doc[k]
        for k in ("schema", "version", "runtime", "artifactBundle", "files", "trace", "events", "snapshots")
        if k in doc
    }
    digest = domain_digest(REFERENCE_MANIFEST_SCHEMA, payload)
    if doc["digest"].get("value") != digest:
        check.add("digest-mismatch", f"{path}:digest", "reference manifest digest does not match")
    elif doc.get("id") != f"runtime-reference-manifest-sha256-{digest}":
        check.add("bundle-id-mismatch", f"{path}:id", "reference manifest id does not match its digest")
    if bundle_ref.get("id") != manifest["id"] or bundle_ref.get("digest") != manifest["contentDigest"]["value"]:
        check.add("review-evidence-mismatch", f"{path}:artifactBundle", "reference manifest names another bundle")
    for index, ref in enumerate(doc["files"]):
        ref_path = ref.get("path") if isinstance(ref, dict) else None
        if not isinstance(ref_path, str) or ref_path not in listed:
            check.add("malformed-reference", f"{path}:files[{index}]", f"{ref_path} is not listed")
            continue
        value = (ref.get("sha256") or {}).get("value")
        recorded = (listed[ref_path].get("sha256") or {}).get("value")
        if not isinstance(value, str):
            check.add("missing-file-hash", f"{path}:files[{index}]", f"{ref_path} has no sha256")
        elif value != recorded:
            check.add("file-hash-mismatch", f"{path}:files[{index}]", f"{ref_path} hash differs from the manifest")


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


def episode_trace_issues(doc: Any) -> list[str]:
    """Shape problems of a ``wp-codebox/runtime-episode-trace/v1`` document (spec §10); empty when valid."""
    if not isinstance(doc, dict):
        return ["trace is not a JSON object"]
    issues: list[str] = []
    if doc.get("schema") != EPISODE_TRACE_SCHEMA:
        issues.append(f"schema must be {EPISODE_TRACE_SCHEMA!r}, got {doc.get('schema')!r}")
    if doc.get("version") != 1:
        issues.append("version must be 1")
    for key in ("id", "createdAt"):
        if not isinstance(doc.get(key), str):
            issues.append(f"{key} must be a string")
    if not isinstance(doc.get("runtime"), dict):
        issues.append("runtime must be an object")
    reset = doc.get("reset")
    if not isinstance(reset, dict) or not isinstance(reset.get("observations"), list):
        issues.append("reset must be an object with observations[]")
    steps = doc.get("steps")
    if not isinstance(steps, list):
        issues.append("steps must be an array")
    else:
        for index, step in enumerate(steps):
            if not isinstance(step, dict) or step.get("index") != index:
                issues.append(f"steps[{index}].index must equal its position {index}")
    if not isinstance(doc.get("snapshots"), list):
        issues.append("snapshots must be an array")
    found: list[str] = []
    _evaluation_keys(doc, "trace", found)
    issues.extend(f"{where} is evaluation vocabulary, not allowed in a trace" for where in found)
    return issues


def _check_episode_trace(check: _Checker, path: str) -> None:
    issues = episode_trace_issues(_load_json(check.bundle, path))
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
                    try:
                        actual = (
                            manifest_self_hash(manifest)
                            if path == "manifest.json"
                            else file_sha256(check.bundle / path)
                        )
                    except OSError:
                        actual = ""
                    if actual != value:
                        check.add("file-hash-mismatch", f"{a_where}.sha256", f"{path} does not match", file=path)
            if "publicUrl" in artifact:
                url_problem = reviewer_url_problem(artifact["publicUrl"])
                if url_problem:
                    check.add(url_problem[0], f"{a_where}.publicUrl", url_problem[1], file=path)
