"""The reference manifest and the replay index (spec §1.6): shape, sealed digests and ids, and the files they cite."""

from __future__ import annotations

from typing import Any

from codebox_tui.bundle.verify.common import HEX64, Checker, load_json, path_problem
from codebox_tui.contracts.bundle import (
    REFERENCE_MANIFEST_SCHEMA,
    REPLAY_INDEX_SCHEMA,
)
from codebox_tui.contracts.canonical import domain_digest


def digest_ok(value: Any) -> bool:
    return isinstance(value, dict) and value.get("algorithm") == "sha256" and _is_hex64(value.get("value"))


def _is_version_1(value: Any) -> bool:
    return type(value) is int and value == 1


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and HEX64.match(value) is not None


def _bundle_ref_ok(value: Any) -> bool:
    """``{kind: "artifact-bundle", id, digest}``; the digest is a sha256 object (the reference) or its hex value."""
    return (
        isinstance(value, dict)
        and value.get("kind") == "artifact-bundle"
        and isinstance(value.get("id"), str)
        and (digest_ok(value.get("digest")) or _is_hex64(value.get("digest")))
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
        and ("digest" not in value or digest_ok(value["digest"]))
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
        and digest_ok(value.get("digest"))
        and isinstance(replay, dict)
        and isinstance(replay.get("status"), str)
        and _string_list(replay.get("limitations"))
        and isinstance(value.get("artifactRefs"), list)
        and all(_trace_ref_ok(ref) and "digest" in ref for ref in value["artifactRefs"])
    )


def ref_listed(check: Checker, listed: dict[str, dict[str, Any]], ref_path: Any, where: str) -> bool:
    """A path named by a document inside the bundle must be safe and listed in the manifest."""
    why = path_problem(ref_path)
    if why:
        check.add("invalid-path", where, f"{ref_path!r}: {why}", file=str(ref_path))
        return False
    if ref_path not in listed:
        check.add("malformed-reference", where, f"{ref_path} is not listed in the manifest", file=ref_path)
        return False
    return True


def ref_hash(check: Checker, ref_path: str, digest: Any, where: str, *, plain: bool = False) -> None:
    """The digest a document records for a listed file must match the file's bytes."""
    value = digest if plain else (digest.get("value") if isinstance(digest, dict) else None)
    if not (plain or digest_ok(digest)) or not _is_hex64(value):
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


def _check_file_ref(check: Checker, listed: dict[str, dict[str, Any]], ref: dict[str, Any], where: str) -> None:
    if ref_listed(check, listed, ref["path"], f"{where}.path"):
        ref_hash(check, ref["path"], ref.get("sha256"), f"{where}.sha256")


def _check_trace_refs(check: Checker, listed: dict[str, dict[str, Any]], refs: list[Any], where: str) -> None:
    for index, ref in enumerate(refs):
        if isinstance(ref, dict) and isinstance(ref.get("path"), str):
            ref_where = f"{where}[{index}]"
            if ref_listed(check, listed, ref["path"], f"{ref_where}.path"):
                ref_hash(check, ref["path"], ref.get("digest"), f"{ref_where}.digest")


def _check_bundle_ref(check: Checker, manifest: dict[str, Any], bundle_ref: dict[str, Any], where: str) -> None:
    digest = bundle_ref["digest"]
    value = digest.get("value") if isinstance(digest, dict) else digest
    if bundle_ref["id"] != manifest["id"] or value != manifest["contentDigest"]["value"]:
        check.add("review-evidence-mismatch", where, "the artifactBundle ref names another bundle")


def _check_sealed(check: Checker, doc: dict[str, Any], path: str, schema: str, keys: tuple[str, ...]) -> None:
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


def check_reference(check: Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any], path: str) -> None:
    """Rule 12: ``wp-codebox/runtime-reference-manifest/v1``."""
    doc = load_json(check.bundle, path)
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != REFERENCE_MANIFEST_SCHEMA
        or not _is_version_1(doc.get("version"))
        or not isinstance(doc.get("id"), str)
        or not isinstance(doc.get("createdAt"), str)
        or not digest_ok(doc.get("digest"))
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
    if not digest_ok(doc.get("digest")):
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


def check_replay_index(check: Checker, listed: dict[str, dict[str, Any]], manifest: dict[str, Any], path: str) -> None:
    """Rule 13: ``wp-codebox/runtime-replay-reference-index/v1``."""
    doc = load_json(check.bundle, path)
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
