"""Sealing: the last step of a bundle. Given the file list and the id it yields (Mode A), hash every
listed file, write the runtime reference manifest, then the manifest with its self-hash.

``append_and_reseal`` adds files to an already sealed bundle (e.g. a recipe's verification evidence):
the file list changes, so the id changes, so the documents that embed the id (metadata.json,
review.json, the reference manifest) and the manifest are rewritten, and nothing else is touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codebox_tui.bundle import layout
from codebox_tui.bundle.digests import MODE_A_INPUTS, file_list_digest, file_sha256, manifest_self_hash
from codebox_tui.contracts.bundle import BUNDLE_ID_PREFIX, REFERENCE_MANIFEST_SCHEMA, REPLAY_INDEX_SCHEMA
from codebox_tui.contracts.canonical import MAX_ARRAY_ITEMS, domain_digest, pretty_json, sha256_hex
from codebox_tui.errors import BadInputError


class Evidence(Protocol):
    path: str
    kind: str
    contentType: str


@dataclass
class BundleSummary:
    id: str
    content_digest: str  # Mode A (file list), what the bundle id is made of
    content_digest_b: str  # Mode B (changed-files + patch bytes), what decisions and apply-back check
    path: Path
    stats: dict[str, int]
    changed_files: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)


REFERENCE_MANIFEST_PATH = layout.REFERENCE_MANIFEST
REPLAY_INDEX_PATH = layout.REPLAY_INDEX
# Never listed in the reference manifest: they embed its hashes or the bundle id (spec §1.6).
REFERENCE_EXCLUDED = frozenset(
    {layout.MANIFEST, layout.METADATA, layout.REVIEW, REFERENCE_MANIFEST_PATH, REPLAY_INDEX_PATH}
)
# What the replay index points a replayer at, by the reference's key names (spec §1.6), when listed.
REPLAY_REFERENCES = {
    "runtimeReferenceManifest": REFERENCE_MANIFEST_PATH,
    "commands": layout.COMMANDS,
    "runtimeEvents": layout.EVENTS,
    "mountedFiles": layout.MOUNTED_FILES,
    "mountDiffs": layout.MOUNT_DIFFS,
    "changedFiles": layout.CHANGED_FILES,
    "patch": layout.PATCH,
    "testResults": layout.TEST_RESULTS,
    "trace": layout.EPISODE_TRACE,
    "events": layout.EPISODE_EVENTS,
}
REPLAY_NOTES: dict[str, Any] = {
    "status": "partial",
    "instructions": [
        "Replay the commands in references.commands (commands.jsonl) in order; references.runtimeEvents has the "
        "sandbox lifecycle.",
        "references.changedFiles and references.patch give the read-write mounts' end state against their "
        "baseline; references.mountedFiles lists the copied files.",
    ],
    "limitations": [
        "Codebox records no runtime snapshots: this index points to evidence, it is not a WordPress database or "
        "filesystem checkpoint.",
    ],
}


EPISODE_REPLAY_NOTES: dict[str, Any] = {
    "status": "runtime-state-artifact",
    "instructions": [
        "references.trace is the runtime episode (docs/episodes.md): replay its steps' actions in order; each "
        "snapshot's artifactRefs name a wp-codebox/wordpress-runtime-snapshot/v1 document that `codebox run "
        "--restore` puts back into a fresh sandbox of the same WordPress and PHP versions.",
        *REPLAY_NOTES["instructions"],
    ],
    "limitations": [
        "A snapshot holds the site's database and its wp-content files (read-only mounts excluded), not the "
        "sandbox's other files.",
    ],
}


@dataclass
class EpisodeReferences:
    """What the reference manifest and the replay index cite from a bundle's episode trace (spec §1.6)."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)


def _envelope_ref(kind: str, item: Any) -> dict[str, Any] | None:
    if isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("digest"), dict):
        return {"kind": kind, "id": item["id"], "digest": item["digest"]}
    return None


def episode_references(run_dir: Path, entries: list[dict[str, Any]]) -> EpisodeReferences | None:
    """The actions, observations and snapshots of the bundle's episode trace, when one is listed. The trace is this
    run's own file, but it is read defensively: anything unexpected leaves it out here (and the verifier, which
    checks the trace itself, reports it)."""
    if not any(e["path"] == layout.EPISODE_TRACE and e["kind"] == "runtime-episode-trace" for e in entries):
        return None
    try:
        trace = json.loads((run_dir / layout.EPISODE_TRACE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(trace, dict):
        return None
    out = EpisodeReferences()

    def items(value: Any) -> list[Any]:
        return value if isinstance(value, list) else []

    steps = items(trace.get("steps"))
    for step in steps:
        if (
            isinstance(step, dict)
            and isinstance(step.get("id"), str)
            and isinstance(step.get("index"), int)
            and isinstance(step.get("actionRef"), dict)
            and isinstance(step.get("executionRef"), dict)
        ):
            action = {
                "index": step["index"],
                "id": step["id"],
                "actionRef": step.get("actionRef"),
                "executionRef": step.get("executionRef"),
            }
            if isinstance(step.get("observationRef"), dict):
                action["observationRef"] = step["observationRef"]
            out.actions.append(action)
    reset = trace.get("reset") if isinstance(trace.get("reset"), dict) else {}
    observations: list[Any] = []
    for holder in [reset, *items(trace.get("resets"))]:
        if isinstance(holder, dict) and isinstance(holder.get("observations"), list):
            observations += holder["observations"]
    observations += [step.get("observation") for step in steps if isinstance(step, dict)]
    observations += items(trace.get("observations"))
    for item in observations:
        ref = _envelope_ref("observation", item)
        if ref is not None and isinstance(item.get("type"), str):
            out.observations.append(
                {
                    "id": item["id"],
                    "type": item["type"],
                    "ref": ref,
                    "artifactRefs": [r for r in item.get("artifactRefs") or [] if isinstance(r, dict)],
                }
            )
    for item in items(trace.get("snapshots")):
        if _envelope_ref("snapshot", item) is None or not isinstance(item.get("semantics"), str):
            continue
        state = item["semantics"] == "runtime-state-artifact"
        out.snapshots.append(
            {
                "id": item["id"],
                "semantics": item["semantics"],
                "digest": item["digest"],
                "replay": {
                    "status": "runtime-state-artifact" if state else "metadata-only",
                    "limitations": list(EPISODE_REPLAY_NOTES["limitations"])
                    if state
                    else ["The snapshot records metadata only."],
                },
                "artifactRefs": [r for r in item.get("artifactRefs") or [] if isinstance(r, dict) and "digest" in r],
            }
        )
    return out


def bundle_id_for(entries: list[dict[str, Any]]) -> tuple[str, str]:
    """(bundle id, Mode A digest) of a file list."""
    digest = file_list_digest(entries)
    return BUNDLE_ID_PREFIX + digest, digest


def write_json(run_dir: Path, rel: str, value: Any, known: dict[str, str]) -> None:
    data = pretty_json(value).encode("utf-8")
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    known[rel] = sha256_hex(data)


def seal(
    run_dir: Path,
    entries: list[dict[str, Any]],
    known: dict[str, str],
    *,
    bundle_id: str,
    digest_a: str,
    runtime: dict[str, Any],
    created_at: str,
    before_manifest: Callable[[], None] | None = None,
) -> None:
    """Hash the listed files (``known``: sha256 of files already hashed from the bytes written), write
    the reference manifest and, once ``before_manifest`` returns, the manifest."""
    hashes = {
        e["path"]: known.get(e["path"]) or file_sha256(run_dir / e["path"])
        for e in entries
        if e["path"] not in (layout.MANIFEST, REFERENCE_MANIFEST_PATH, REPLAY_INDEX_PATH)
    }
    refs = sorted(
        (
            {
                "path": e["path"],
                "kind": e["kind"],
                "contentType": e["contentType"],
                "sha256": {"algorithm": "sha256", "value": hashes[e["path"]]},
            }
            for e in entries
            if e["path"] not in REFERENCE_EXCLUDED
        ),
        key=lambda r: r["path"],
    )
    bundle_ref = {"kind": "artifact-bundle", "id": bundle_id, "digest": {"algorithm": "sha256", "value": digest_a}}
    episode = episode_references(run_dir, entries)
    payload: dict[str, Any] = {
        "schema": REFERENCE_MANIFEST_SCHEMA,
        "version": 1,
        "runtime": runtime,
        "artifactBundle": bundle_ref,
        "files": refs,
        "snapshots": episode.snapshots if episode is not None else [],
    }
    by_path = {r["path"]: r for r in refs}
    for key, rel in (("trace", layout.EPISODE_TRACE), ("events", layout.EPISODE_EVENTS)):
        if episode is not None and rel in by_path:
            payload[key] = by_path[rel]
    ref_digest = domain_digest(REFERENCE_MANIFEST_SCHEMA, payload)
    write_json(
        run_dir,
        REFERENCE_MANIFEST_PATH,
        {
            **payload,
            "id": f"runtime-reference-manifest-sha256-{ref_digest}",
            "createdAt": created_at,
            "digest": {"algorithm": "sha256", "value": ref_digest},
        },
        known,
    )
    hashes[REFERENCE_MANIFEST_PATH] = known[REFERENCE_MANIFEST_PATH]
    if any(e["path"] == REPLAY_INDEX_PATH for e in entries):
        _write_replay_index(run_dir, entries, hashes, known, bundle_ref, runtime, created_at, episode)
        hashes[REPLAY_INDEX_PATH] = known[REPLAY_INDEX_PATH]
    files = [
        {**entry, "sha256": {"algorithm": "sha256", "value": hashes.get(entry["path"], "0" * 64)}} for entry in entries
    ]
    manifest: dict[str, Any] = {
        "id": bundle_id,
        "createdAt": created_at,
        "runtime": runtime,
        "contentDigest": {"algorithm": "sha256", "inputs": MODE_A_INPUTS, "value": digest_a},
        "files": files,
    }
    self_hash = manifest_self_hash(manifest)
    if before_manifest is not None:
        before_manifest()  # e.g. wait for copies still being written: the manifest comes last
    for file_entry in files:
        if file_entry["path"] == layout.MANIFEST:
            file_entry["sha256"] = {"algorithm": "sha256", "value": self_hash}
    (run_dir / layout.MANIFEST).write_text(pretty_json(manifest), encoding="utf-8")


def _write_replay_index(
    run_dir: Path,
    entries: list[dict[str, Any]],
    hashes: dict[str, str],
    known: dict[str, str],
    bundle_ref: dict[str, Any],
    runtime: dict[str, Any],
    created_at: str,
    episode: EpisodeReferences | None = None,
) -> None:
    """``files/runtime-replay-index.json`` (spec §1.6): where a replayer finds each piece of evidence, with the
    hashes just computed (so it is written after the reference manifest and before the manifest)."""
    by_path = {e["path"]: e for e in entries}
    references = {
        key: {
            "path": path,
            "kind": by_path[path]["kind"],
            "contentType": by_path[path]["contentType"],
            "sha256": {"algorithm": "sha256", "value": hashes[path]},
        }
        for key, path in REPLAY_REFERENCES.items()
        if path in by_path and path in hashes
    }
    payload = {
        "schema": REPLAY_INDEX_SCHEMA,
        "version": 1,
        "runtime": runtime,
        "artifactBundle": bundle_ref,
        "references": references,
        "actions": episode.actions if episode is not None else [],
        "observations": episode.observations if episode is not None else [],
        "snapshots": episode.snapshots if episode is not None else [],
        "replay": EPISODE_REPLAY_NOTES if episode is not None and episode.snapshots else REPLAY_NOTES,
    }
    digest = domain_digest(REPLAY_INDEX_SCHEMA, payload)
    write_json(
        run_dir,
        REPLAY_INDEX_PATH,
        {
            **payload,
            "id": f"runtime-replay-reference-index-sha256-{digest}",
            "createdAt": created_at,
            "digest": {"algorithm": "sha256", "value": digest},
        },
        known,
    )


def _load(run_dir: Path, rel: str) -> dict[str, Any]:
    try:
        value = json.loads((run_dir / rel).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInputError(
            f"{run_dir / rel}: cannot reseal the bundle, expected a readable JSON document ({exc})",
            code="bundle-unreadable",
            field=rel,
        ) from exc
    if not isinstance(value, dict):
        raise BadInputError(
            f"{run_dir / rel}: cannot reseal the bundle, expected a JSON object", code="bundle-unreadable", field=rel
        )
    return value


def append_and_reseal(run_dir: Path, added: Iterable[Evidence]) -> BundleSummary:
    """List ``added`` files (already written inside ``run_dir``) in a sealed bundle and seal it again.

    Only what depends on the file list is rewritten: metadata.json and review.json (they embed the id),
    the reference manifest and the manifest. Listed files keep the hashes the manifest recorded, except
    those rewritten here; verification re-reads everything, so a file changed in between fails closed."""
    run_dir = Path(run_dir)
    manifest = _load(run_dir, layout.MANIFEST)
    entries: list[dict[str, Any]] = []
    known: dict[str, str] = {}
    for item in manifest.get("files") or []:
        entry = {k: v for k, v in item.items() if k != "sha256"}
        entries.append(entry)
        value = (item.get("sha256") or {}).get("value")
        if isinstance(value, str):
            known[entry["path"]] = value
    listed = {e["path"] for e in entries}
    for extra in added:
        target = run_dir / extra.path
        if extra.path in listed:
            known.pop(extra.path, None)  # rewritten since the seal: hash it again
            continue
        if not target.is_file() or target.is_symlink() or os.path.isabs(extra.path) or ".." in extra.path.split("/"):
            raise BadInputError(
                f"{target}: cannot add it to the bundle, expected a regular file inside {run_dir}",
                code="bundle-evidence-missing",
                field=extra.path,
            )
        entries.append({"path": extra.path, "kind": extra.kind, "contentType": extra.contentType})
        listed.add(extra.path)
    if len(entries) > MAX_ARRAY_ITEMS:
        raise BadInputError(
            f"{run_dir}: cannot add the file(s), the manifest would list {len(entries)} "
            f"(at most {MAX_ARRAY_ITEMS} are covered by its digests)",
            code="bundle-too-many-files",
            field=layout.MANIFEST,
        )
    bundle_id, digest_a = bundle_id_for(entries)
    metadata = _load(run_dir, layout.METADATA)
    metadata["id"] = bundle_id
    metadata["contentDigest"] = {"algorithm": "sha256", "inputs": MODE_A_INPUTS, "value": digest_a}
    write_json(run_dir, layout.METADATA, metadata, known)
    review = _load(run_dir, layout.REVIEW)
    review["artifactId"] = bundle_id
    if isinstance(review.get("evidence"), dict):
        review["evidence"]["artifactContentDigest"] = digest_a
    write_json(run_dir, layout.REVIEW, review, known)
    seal(
        run_dir,
        entries,
        known,
        bundle_id=bundle_id,
        digest_a=digest_a,
        runtime=manifest.get("runtime") or {},
        created_at=str(manifest.get("createdAt")),
    )
    changed = _load(run_dir, layout.CHANGED_FILES)
    return BundleSummary(
        id=bundle_id,
        content_digest=digest_a,
        content_digest_b=str(metadata.get("contentDigestB")),
        path=run_dir,
        stats=dict(review.get("stats") or {}),
        changed_files=list(changed.get("files") or []),
        skipped=list(changed.get("skipped") or []),
    )
