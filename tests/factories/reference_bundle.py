"""Write a bundle the way the reference implementation (WP Codebox's Node writer) does, for interop tests.

Follows the reference's layout as ``scripts/reference_interop.py`` and ``tests/unit/test_reference_interop_*``
describe it: the file order of its writer, Mode A id over the manifest file list, a ``metadata.json`` whose
PHP version is only under ``context.phpWasmRuntimeAssetPreflight``, ``review.json`` without Codebox's
``contentDigestB``, ``changed-files.json`` entries without line counts, and a patch in its own format (one
hunk per file from the common prefix/suffix with 3 lines of context, counts always printed, no
"No newline" marker, a blank line between blocks, mount-relative headers). Built from two real folders:
the mount before and after the change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from codebox_tui.bundle.digests import content_digest, file_list_digest, file_sha256, manifest_self_hash

MODE_B = ["files/changed-files.json", "files/patch.diff"]
CREATED = "2026-11-23T10:00:00.000Z"


def _lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def reference_block(rel: str, before: str | None, after: str | None) -> str:
    """One file's block of the reference's patch format."""
    head = f"diff --git a/{rel} b/{rel}\n"
    if before is None:
        new = _lines(after or "")
        return (
            head
            + f"new file mode 100644\n--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1,{len(new)} @@\n"
            + "".join(f"+{x}\n" for x in new)
        )
    if after is None:
        old = _lines(before)
        return (
            head
            + f"deleted file mode 100644\n--- a/{rel}\n+++ /dev/null\n@@ -1,{len(old)} +0,0 @@\n"
            + "".join(f"-{x}\n" for x in old)
        )
    a, b = _lines(before), _lines(after)
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    start = max(0, p - 3)
    end_a, end_b = min(len(a), len(a) - s + 3), min(len(b), len(b) - s + 3)
    oc, nc = end_a - start, end_b - start
    body = [f" {x}" for x in a[start:p]] + [f"-{x}" for x in a[p : len(a) - s]] + [f"+{x}" for x in b[p : len(b) - s]]
    body += [f" {x}" for x in a[len(a) - s : end_a]]
    header = f"@@ -{start + 1 if oc else 0},{oc} +{start + 1 if nc else 0},{nc} @@\n"
    return head + f"--- a/{rel}\n+++ b/{rel}\n" + header + "".join(f"{x}\n" for x in body)


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()
    }


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def write_reference_bundle(
    out: Path,
    before: Path,
    after: Path,
    *,
    target: str,
    php: str = "8.3",
    wp: str = "6.5.5",
    runtime_id: str = "runtime-mhx3k2ab-q7r8s9",
) -> dict[str, Any]:
    """Write ``out`` (a bundle directory) for the change ``before`` → ``after`` of one read-write mount at
    ``target``. Returns ``{"id", "contentDigestB", "changed"}``."""
    out.mkdir(parents=True)
    old, new = _tree(before), _tree(after)
    changed: list[dict[str, Any]] = []
    blocks: list[str] = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a == b:
            continue
        status = "added" if a is None else "deleted" if b is None else "modified"
        entry: dict[str, Any] = {"path": f"{target}/{rel}", "relativePath": rel, "status": status}
        if a is not None:
            entry |= {"beforeSha256": hashlib.sha256(a.encode()).hexdigest(), "beforeMode": "100644"}
        if b is not None:
            entry |= {"afterSha256": hashlib.sha256(b.encode()).hexdigest(), "afterMode": "100644"}
        entry |= {"mountIndex": 0, "mountTarget": target, "patchPath": "files/diffs/mount-0.patch"}
        changed.append(entry)
        blocks.append(reference_block(rel, a, b))
    patch = "\n".join(blocks)
    runtime = {
        "id": runtime_id,
        "backend": "wordpress-playground",
        "createdAt": CREATED,
        "status": "destroyed",
        "environment": {"kind": "wordpress", "name": "wordpress", "version": wp},
    }
    mount = {"source": str(after), "target": target, "mode": "readwrite"}
    files: list[tuple[str, str, str]] = []

    def write(rel: str, kind: str, content_type: str, data: Any) -> None:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            _dump(path, data)
        files.append((rel, kind, content_type))

    files.append(("manifest.json", "manifest", "application/json"))
    files.append(("metadata.json", "metadata", "application/json"))  # written last: it names the id
    events = [
        {"id": "event-1", "type": "runtime.created", "timestamp": CREATED, "data": {"backend": runtime["backend"]}},
        {"id": "event-2", "type": "runtime.destroyed", "timestamp": CREATED},
    ]
    write(
        "events.jsonl", "events", "application/x-ndjson", "".join(json.dumps(e, sort_keys=True) + "\n" for e in events)
    )
    write(
        "commands.jsonl",
        "commands",
        "application/x-ndjson",
        json.dumps({"command": "wordpress.run-php", "exitCode": 0, "id": "command-1"}, sort_keys=True) + "\n",
    )
    write("logs/runtime.log", "log", "text/plain", "".join(f"[{CREATED}] {e['type']}\n" for e in events))
    write("files/mounts.json", "mounts", "application/json", [mount])
    write(
        "files/diffs.json",
        "mount-diffs",
        "application/json",
        [
            {
                "mountIndex": 0,
                "source": str(after),
                "target": target,
                "artifactPath": "files/diffs/mount-0.patch",
                "changed": bool(patch.strip()),
                "status": "changed" if patch.strip() else "unchanged",
            }
        ],
    )
    write(
        "files/changed-files.json",
        "changed-files",
        "application/json",
        {"schema": "wp-codebox/changed-files/v1", "files": changed},
    )
    write("files/patch.diff", "patch", "text/x-diff", patch)
    digest_b = content_digest(out, MODE_B)
    write(
        "files/workspace-patch.json",
        "workspace-patch",
        "application/json",
        {
            "schema": "wp-codebox/workspace-patch/v1",
            "createdAt": CREATED,
            "contentDigest": {"algorithm": "sha256", "inputs": MODE_B, "value": digest_b},
            "summary": {
                "changed": bool(changed),
                "files": len(changed),
                **{k: sum(1 for c in changed if c["status"] == k) for k in ("added", "modified", "deleted")},
            },
        },
    )
    write(
        "files/diagnostics.json",
        "diagnostics",
        "application/json",
        {
            "schema": "wp-codebox/artifact-diagnostics/v1",
            "status": "clean",
            "summary": {"total": 0, "error": 0, "warning": 0, "notice": 0, "info": 0},
            "diagnostics": [],
        },
    )
    write(
        "files/test-results.json",
        "test-results",
        "application/json",
        {
            "schema": "wp-codebox/test-results/v1",
            "status": "unknown",
            "summary": {"total": 0, "passed": 0, "failed": 0, "skipped": 0, "unknown": 0},
            "suites": [],
            "rawLogReferences": [{"path": "commands.jsonl", "kind": "commands-jsonl"}],
        },
    )
    files.append(("files/review.json", "review", "application/json"))  # names the id: written after it
    write("files/diffs/mount-0.patch", "diff", "text/x-diff", patch)
    for rel, text in new.items():
        if rel in {c["relativePath"] for c in changed}:
            write(f"files/mounts/0/{rel}", "file", "text/plain; charset=utf-8", text)
    entries = [
        {"path": p, "kind": k, "contentType": c, "sha256": {"algorithm": "sha256", "value": "0" * 64}}
        for p, k, c in files
    ]
    mode_a = file_list_digest(entries)
    bundle_id = f"artifact-bundle-sha256-{mode_a}"
    provenance = {
        "runtime": {"backend": "wordpress-playground", "wordpressVersion": wp},
        "packages": {
            "schema": "wp-codebox/package-provenance/v1",
            "environment": {"wordpressVersion": wp, "nodeVersion": "v20.20.2"},
        },
        "mounts": [{"type": "directory", **mount}],
    }
    review_changed = [
        {
            "path": c["path"],
            "status": c["status"],
            "label": f"{c['status']} {c['relativePath']}",
            "mountTarget": target,
            "relativePath": c["relativePath"],
        }
        for c in changed
    ]
    _dump(
        out / "files/review.json",
        {
            "schema": "wp-codebox/artifact-review/v1",
            "artifactId": bundle_id,
            "createdAt": CREATED,
            "provenance": provenance,
            "summary": f"Sandbox produced changes in {len(changed)} file{'s' if len(changed) != 1 else ''}.",
            "stats": {
                **{k: sum(1 for c in changed if c["status"] == k) for k in ("added", "modified", "deleted")},
                "total": len(changed),
            },
            "changedFiles": review_changed,
            "actions": [
                {"kind": "approve", "label": "Approve all changes", "requiresApprovedFiles": True},
                {"kind": "approve-files", "label": "Approve selected files", "requiresApprovedFiles": True},
                {"kind": "discard", "label": "Discard changes"},
                {"kind": "iterate", "label": "Request changes"},
            ],
            "evidence": {
                "workspacePatch": "files/workspace-patch.json",
                "patch": "files/patch.diff",
                "patchSha256": hashlib.sha256(patch.encode()).hexdigest(),
                "artifactContentDigest": mode_a,
                "changedFiles": "files/changed-files.json",
                "diagnostics": "files/diagnostics.json",
                "testResults": "files/test-results.json",
            },
            "riskFlags": [],
        },
    )
    _dump(
        out / "metadata.json",
        {
            "id": bundle_id,
            "contentDigest": mode_a,
            "createdAt": CREATED,
            "runtime": runtime,
            "provenance": provenance,
            "mounts": [mount],
            "policy": {"network": "deny", "commands": ["wordpress.run-php"]},
            "context": {
                "phpWasmRuntimeAssetPreflight": {
                    "schema": "wp-codebox/php-wasm-runtime-asset-preflight/v1",
                    "packageName": "@php-wasm/node",
                    "phpVersion": php,
                    "mode": "jspi",
                    "packageRoot": "/opt/node_modules/@php-wasm/node",
                    "loaderPath": "php_8_3.js",
                    "wasmPath": "php_8_3.wasm",
                    "wasmSize": 1,
                    "wasmSha256": "0" * 64,
                }
            },
            "artifacts": {
                "workspacePatch": "files/workspace-patch.json",
                "changedFiles": "files/changed-files.json",
                "patch": "files/patch.diff",
                "diagnostics": "files/diagnostics.json",
                "testResults": "files/test-results.json",
                "review": "files/review.json",
                "mountDiffs": "files/diffs.json",
            },
        },
    )
    manifest = {
        "contentDigest": {"algorithm": "sha256", "inputs": ["manifest.files"], "value": mode_a},
        "createdAt": CREATED,
        "files": entries,
        "id": bundle_id,
        "runtime": runtime,
    }
    for entry in entries[1:]:
        entry["sha256"] = {"algorithm": "sha256", "value": file_sha256(out / entry["path"])}
    entries[0]["sha256"] = {"algorithm": "sha256", "value": manifest_self_hash(manifest)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return {"id": bundle_id, "contentDigestB": digest_b, "changed": changed}


def reference_preflight_accepts(changed: list[dict[str, Any]], approved_files: list[str]) -> list[str]:
    """The reference's Node apply preflight rule for approved files (spec: trimmed, de-duplicated, and every
    changed file's ``path`` must be approved): the violations it would report (empty = ready)."""
    approved = {a.strip() for a in approved_files if a.strip()}
    return [f"{c['path']} is not approved" for c in changed if c["path"] not in approved]


REFERENCE_PATCH = (
    "diff --git a/includes/new.php b/includes/new.php\nnew file mode 100644\n--- /dev/null\n+++ b/includes/new.php\n"
    "@@ -0,0 +1,2 @@\n+<?php\n+--x\n\n"
    "diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-gone\n\n"
    "diff --git a/plugin.php b/plugin.php\n--- a/plugin.php\n+++ b/plugin.php\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
)
