"""The documents a capture writes about the change: test results, diagnostics, risk flags, the workspace
patch, metadata and the review (docs/contracts.md, "Artifact bundle")."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.baseline import Baseline
from codebox_tui.bundle.changes import CaptureLimits
from codebox_tui.bundle.diff import FileDiff
from codebox_tui.bundle.digests import MODE_A_INPUTS
from codebox_tui.contracts.bundle import (
    DIAGNOSTICS_SCHEMA,
    PACKAGE_PROVENANCE_SCHEMA,
    REVIEW_SCHEMA,
    WORKSPACE_PATCH_SCHEMA,
    ChangedFile,
    SkippedEntry,
    TestResults,
    TestSuite,
    TestSummary,
)
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
from codebox_tui.settings import NODE_BRIDGE_DIR

ACTIONS = [
    {"kind": "approve", "label": "Approve all changes", "requiresApprovedFiles": True},
    {"kind": "approve-files", "label": "Approve selected files", "requiresApprovedFiles": True},
    {"kind": "discard", "label": "Discard changes"},
    {"kind": "iterate", "label": "Request changes"},
]


def risk_flags(diffs: list[FileDiff]) -> list[str]:
    flags = []
    for item in diffs:
        if item.binary or item.status != "modified":
            continue
        changed = item.additions + item.deletions
        total = max(changed, 1)
        if max(item.additions, item.deletions) >= 50 and changed / total >= 0.8 and item.text.count("\n ") < 10:
            flags.append(f"suspicious-full-file-rewrite:{item.rel}")
    if any(d.binary for d in diffs):
        flags.append("binary-files")
    if any(".codebox-apply" in d.rel.split("/") for d in diffs):  # a planted apply journal (docs/security-host.md)
        flags.append("apply-staging-folder-in-mount")
    return sorted(flags)


def build_test_results(suites: list[Any]) -> TestResults:
    """All suites, and a summary of the code as the sandbox left it: when a suite ran on both sides of a
    patch (``phase`` "before" / "after", evaluate-patch), the summary and status are the "after" side's,
    never the two sides summed; each side's own counts stay in its suite."""
    parsed = [s if isinstance(s, TestSuite) else TestSuite.model_validate(s) for s in suites]
    current = [s for s in parsed if s.phase != "before"] if any(s.phase == "after" for s in parsed) else parsed
    summary = TestSummary(
        total=sum(s.tests for s in current),
        passed=sum(s.passed for s in current),
        failed=sum(s.failed for s in current),
        skipped=sum(s.skipped for s in current),
        unknown=sum(s.unknown for s in current),
    )
    if not current:
        status = "unknown"
    elif summary.failed:
        status = "failed"
    elif any(s.status == "unknown" for s in current):
        status = "unknown"
    elif all(s.status == "skipped" for s in current):
        status = "skipped"
    else:
        status = "passed"
    return TestResults(
        status=status,
        summary=summary,
        suites=parsed,
        rawLogReferences=[
            {"path": layout.COMMANDS, "kind": "commands-jsonl"},
            {"path": layout.COMMANDS_LOG, "kind": "commands-log"},
        ],
    )


# Skipped-entry reasons that mean a capture limit was reached: each raises a risk flag (fail closed:
# what was not tracked or compared could hide a planted script).
LIMIT_REASONS = (
    "max-file-bytes-exceeded",
    "max-total-bytes-exceeded",
    "max-files-exceeded",
    "skipped-directory-not-tracked",
    "skipped-directory-reports-capped",
)


def limit_flags(skipped: list[SkippedEntry], truncations: list[dict[str, Any]]) -> list[str]:
    flags = {f"capture-limit-exceeded:{s.reason}" for s in skipped if s.reason in LIMIT_REASONS}
    if any(s.reason == "skipped-directory-not-tracked" for s in skipped):
        # changes there could not be ruled out: reported as if there were some
        flags.add("changes-in-uncaptured-directories")
    if any(s.reason == "secret-in-path" for s in skipped):
        flags.add("secret-in-path")
    for cut in truncations:
        for stream in cut.get("streams", {}):
            flags.add(f"output-truncated:{stream}")
    return sorted(flags)


def change_stats(changed: list[ChangedFile]) -> dict[str, int]:
    return {
        "added": sum(c.status == "added" for c in changed),
        "modified": sum(c.status == "modified" for c in changed),
        "deleted": sum(c.status == "deleted" for c in changed),
        "total": len(changed),
    }


def mounted_files_document(
    captured: list[tuple[str, int, str, int]], known: dict[str, str], skipped: list[SkippedEntry], limits: CaptureLimits
) -> dict[str, Any]:
    """``files/mounted-files.json``: the after-state copies (artifact path, mount, relative path, size, hash)
    and what was not copied."""
    return {
        "files": [
            {"mountIndex": i, "relativePath": rel, "artifactPath": p, "size": size, "sha256": known[p]}
            for p, i, rel, size in captured
        ],
        "skipped": [s.model_dump(mode="json", exclude_none=True) for s in skipped],
        "limits": {
            "maxFileBytes": limits.max_file_bytes,
            "maxTotalBytes": limits.max_total_bytes,
            "maxFiles": limits.max_files,
            "skippedDirectories": [".git", "node_modules"],
        },
    }


def diagnostics_document(skipped: list[SkippedEntry], truncations: list[dict[str, Any]]) -> dict[str, Any]:
    """``files/diagnostics.json``: one warning per file left out of the capture and per truncated output stream."""
    diagnostics = [
        {
            "id": f"skipped-{s.mountIndex}-{s.relativePath}",
            "type": "capture-skipped",
            "severity": "warning",
            "message": f"{s.relativePath} was not captured: {s.reason}",
            "category": "artifact-capture",
            "path": s.relativePath,
        }
        for s in skipped
    ]
    diagnostics += [
        {
            "id": f"output-truncated-{cut.get('id')}-{stream}",
            "type": "command-output-truncated",
            "severity": "warning",
            "message": f"{cut.get('command')} {stream}: {info.get('omittedBytes')} of {info.get('totalBytes')} "
            f"bytes omitted (cap {info.get('limitBytes')} bytes per stream)",
            "category": "runtime-output",
        }
        for cut in truncations
        for stream, info in (cut.get("streams") or {}).items()
    ]
    return {
        "schema": DIAGNOSTICS_SCHEMA,
        "status": "reported" if diagnostics else "clean",
        "summary": {"total": len(diagnostics), "error": 0, "warning": len(diagnostics), "notice": 0, "info": 0},
        "diagnostics": diagnostics,
    }


def workspace_patch_document(
    created_at: str, digest_b: str, changed: list[ChangedFile], diffs_json: list[dict[str, Any]]
) -> dict[str, Any]:
    """``files/workspace-patch.json``: the Mode B content digest decisions and apply-back bind to, per mount."""
    stats = change_stats(changed)
    return {
        "schema": WORKSPACE_PATCH_SCHEMA,
        "createdAt": created_at,
        "contentDigest": {"algorithm": "sha256", "inputs": list(layout.MODE_B_INPUTS), "value": digest_b},
        "summary": {
            "changed": bool(changed),
            "files": len(changed),
            "added": stats["added"],
            "modified": stats["modified"],
            "deleted": stats["deleted"],
        },
        "workspaces": [
            {
                "mountIndex": d["mountIndex"],
                "target": d["target"],
                "source": d["source"],
                "status": d["status"],
                "changed": d["changed"],
                "patch": d["artifactPath"],
            }
            for d in diffs_json
        ],
        "promotion": {
            "changedFiles": layout.CHANGED_FILES,
            "patch": layout.PATCH,
            "files": [{"path": c.relativePath, "status": c.status, "intent": "promotion"} for c in changed],
        },
        "evidence": {
            "mountDiffs": layout.MOUNT_DIFFS,
            "diagnostics": layout.DIAGNOSTICS,
            "testResults": layout.TEST_RESULTS,
        },
    }


@dataclass(frozen=True)
class Identity:
    """What the documents written after the file list embed: the bundle id and both content digests."""

    bundle_id: str
    digest_a: str
    digest_b: str
    created_at: str


def workspace_provenance(mounts: list[MountSpec], baselines: list[Baseline]) -> dict[str, Any]:
    """What was mounted (docs/contracts.md, "Workspace provenance"): each mount's host source, sandbox target, mode
    and write mode, and for a read-write mount the digest of the bytes the sandbox was given — sha256 over its
    baseline's sorted ``path NUL sha256 LF`` lines, taken before boot. Read-only mounts are not hashed."""
    by_index = {b.mount_index: b for b in baselines}
    out = []
    for index, mount in enumerate(mounts):
        entry: dict[str, Any] = {
            "index": index,
            "source": mount.source,
            "target": mount.target,
            "mode": mount.mode,
            "writeMode": "live" if mount.live else "copy-on-write" if mount.mode == "readwrite" else "read-only-copy",
            "digest": None,
            "files": None,
        }
        baseline = by_index.get(index)
        if baseline is not None:
            listing = "".join(f"{path}\0{sha}\n" for path, sha in sorted(baseline.hashes.items()))
            entry.update(
                digest="sha256:" + hashlib.sha256(listing.encode("utf-8", "surrogateescape")).hexdigest(),
                files=len(baseline.hashes),
                digestOf="baseline-before-boot",
            )
        out.append(entry)
    return {"mounts": out}


# The Playground packages the sidecar pins (runtime/node/package.json), by the key package provenance names them.
PLAYGROUND_PACKAGES = {"cli": "@wp-playground/cli", "wordpressBuilds": "@wp-playground/wordpress-builds"}


def _pinned_versions() -> dict[str, str]:
    dependencies = json.loads((NODE_BRIDGE_DIR / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return {name: str(version) for name, version in dependencies.items()}


def package_provenance(runtime: RuntimeInfo, codebox_version: str) -> dict[str, Any]:
    """``provenance.packages`` as ``wp-codebox/package-provenance/v1`` (docs/contracts.md, "Runtime provenance"):
    the writer, the Playground packages the run used, each ``{name, version}``, and the WordPress and PHP versions
    that ran. A native run names only the WordPress builds (its core comes from them; PHP is the host's)."""
    pinned = _pinned_versions()
    used = ("cli", "wordpressBuilds") if runtime.backend == "wordpress-playground" else ("wordpressBuilds",)
    return {
        "schema": PACKAGE_PROVENANCE_SCHEMA,
        "wpCodebox": {"name": "codebox", "version": codebox_version},
        "playground": {
            key: {"name": PLAYGROUND_PACKAGES[key], "version": pinned[PLAYGROUND_PACKAGES[key]]} for key in used
        },
        "environment": {
            "wordpressVersion": runtime.environment.get("wordpressVersion"),
            "phpVersion": runtime.environment.get("phpVersion"),
        },
    }


def provenance(
    runtime: RuntimeInfo, mounts: list[MountSpec], codebox_version: str, baselines: list[Baseline] | None = None
) -> dict[str, Any]:
    return {
        "workspace": workspace_provenance(mounts, baselines or []),
        "runtime": {
            "backend": runtime.backend,
            "wordpressVersion": runtime.environment.get("wordpressVersion"),
            "phpVersion": runtime.environment.get("phpVersion"),
        },
        "packages": package_provenance(runtime, codebox_version),
        "mounts": [m.model_dump(mode="json") for m in mounts],
    }


def episode_artifacts(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """metadata.json ``artifacts`` keys of a run's episode (spec §5.4; docs/episodes.md): its trace, its event
    records and the runtime snapshots it listed."""
    out: dict[str, Any] = {}
    for entry in entries:
        if entry["kind"] == "runtime-episode-trace" and entry["path"] == layout.EPISODE_TRACE:
            out["runtimeEpisodeTrace"] = entry["path"]
        elif entry["kind"] == "runtime-episode-events" and entry["path"] == layout.EPISODE_EVENTS:
            out["runtimeEpisodeEvents"] = entry["path"]
        elif entry["kind"] == "runtime-snapshot":
            out.setdefault("runtimeSnapshots", []).append(entry["path"])
    return out


def browser_refs(entries: list[dict[str, Any]]) -> list[str]:
    """The listed browser evidence (screenshots, probe output)."""
    return [e["path"] for e in entries if e["path"].startswith(layout.BROWSER_DIR + "/")]


def metadata_document(
    identity: Identity,
    *,
    runtime: RuntimeInfo,
    mounts: list[MountSpec],
    baselines: list[Baseline],
    policy: RuntimePolicy,
    context: dict[str, Any],
    provenance: dict[str, Any],
    browser: list[str],
    redacted: bool,
    episode: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``metadata.json``: the bundle id and digests, the runtime, mounts and policy, and where each piece of
    evidence is."""
    artifacts: dict[str, Any] = {
        "workspacePatch": layout.WORKSPACE_PATCH,
        "changedFiles": layout.CHANGED_FILES,
        "patch": layout.PATCH,
        "diagnostics": layout.DIAGNOSTICS,
        "testResults": layout.TEST_RESULTS,
        "review": layout.REVIEW,
        "runtimeReferenceManifest": layout.REFERENCE_MANIFEST,
        "runtimeReplayReferenceIndex": layout.REPLAY_INDEX,
        "mountDiffs": layout.MOUNT_DIFFS,
    }
    if browser:
        artifacts["browser"] = browser
    artifacts.update(episode or {})
    return {
        "id": identity.bundle_id,
        "contentDigest": {"algorithm": "sha256", "inputs": MODE_A_INPUTS, "value": identity.digest_a},
        "contentDigestB": identity.digest_b,
        "createdAt": identity.created_at,
        "runtime": runtime.model_dump(mode="json", exclude_none=True),
        "provenance": provenance,
        "mounts": [m.model_dump(mode="json") for m in mounts],
        "policy": policy.model_dump(mode="json"),
        "context": context,
        "spec": {"includeLogs": True},
        "baselines": [
            {"mountIndex": b.mount_index, "strategy": b.strategy, "writeMode": b.write_mode} for b in baselines
        ],
        # how each mount reached the host: "copy-on-write" (a private copy; the folder changes only through
        # apply-back), "live" (written through) or "readonly"
        "mountWriteModes": [m.write_mode for m in mounts],
        "artifacts": artifacts,
        "redaction": {"schema": "wp-codebox/artifact-redaction/v1", "status": "redacted" if redacted else "clean"},
    }


def _summary_text(total: int) -> str:
    if total == 0:
        return "Sandbox produced no file changes."
    if total == 1:
        return "Sandbox produced changes in 1 file."
    return f"Sandbox produced changes in {total} files."


def _progress(
    runtime: RuntimeInfo, mounts: list[MountSpec], created_at: str, episode: bool = False
) -> list[dict[str, Any]]:
    progress: list[dict[str, Any]] = [
        {
            "type": "boot",
            "label": "Spinning up a test copy of your site...",
            "action": "boot",
            "timestamp": runtime.createdAt,
        }
    ]
    progress += [
        {"type": "mount", "label": f"Loading {Path(m.target).name}...", "component": m.target, "action": "mount"}
        for m in mounts
    ]
    progress += [
        {"type": "artifact", "label": "Saving the result for review...", "action": "capture", "timestamp": created_at},
        {"type": "complete", "label": "Ready for your review.", "action": "complete", "timestamp": created_at},
    ]
    if episode:  # spec §4.1: episode persistence appends this item
        progress.append(
            {
                "type": "artifact",
                "component": "runtime-episode",
                "label": "Runtime episode trace persisted",
                "timestamp": created_at,
            }
        )
    return progress


@dataclass(frozen=True)
class RiskInputs:
    """What the review's risk flags are derived from."""

    diffs: list[FileDiff]
    redacted_files: list[str]  # changed files in which a secret form was replaced
    skipped: list[SkippedEntry]  # left out of the changes (limits, uncaptured folders, secret names)
    copy_skipped: list[SkippedEntry]  # changes whose after-state copy was left out (manifest cap)
    truncations: list[dict[str, Any]]
    secrets_redacted: bool
    live_mounts: bool
    extra: list[str] = field(default_factory=list)  # raised before the capture (site-state diff)


def review_risk_flags(inputs: RiskInputs) -> list[str]:
    risk = risk_flags(inputs.diffs) + (["secrets-redacted"] if inputs.secrets_redacted else [])
    if inputs.live_mounts:
        risk.append("live-mount-written-through")  # the host folder already holds the sandbox's writes
    if any(s.reason == "changed-in-skipped-directory" for s in inputs.skipped):
        risk.append("changes-in-uncaptured-directories")
    risk += limit_flags([*inputs.skipped, *inputs.copy_skipped], inputs.truncations)
    risk += [f"secret-value-in-changed-file:{rel}" for rel in inputs.redacted_files]
    risk += inputs.extra
    return sorted(set(risk))


def review_document(
    identity: Identity,
    *,
    runtime: RuntimeInfo,
    mounts: list[MountSpec],
    changed: list[ChangedFile],
    provenance: dict[str, Any],
    patch_sha: str,
    browser: list[str],
    tests: TestResults,
    risk: list[str],
    episode_trace: str | None = None,
) -> dict[str, Any]:
    """``files/review.json``: what the reviewer sees first — summary, stats, changed files, progress, the
    actions offered, the evidence (with the patch hash and both digests), test status and risk flags."""
    review: dict[str, Any] = {
        "schema": REVIEW_SCHEMA,
        "artifactId": identity.bundle_id,
        "createdAt": identity.created_at,
        "provenance": provenance,
        "summary": _summary_text(len(changed)),
        "stats": change_stats(changed),
        "changedFiles": [
            {
                "path": c.path,
                "status": c.status,
                "label": f"{c.status} {c.relativePath}",
                "mountTarget": c.mountTarget,
                "relativePath": c.relativePath,
                "binary": c.binary,
                "additions": c.additions,
                "deletions": c.deletions,
            }
            for c in changed
        ],
        "progress": _progress(runtime, mounts, identity.created_at, episode_trace is not None),
        "actions": ACTIONS,
        "evidence": {
            "workspacePatch": layout.WORKSPACE_PATCH,
            "patch": layout.PATCH,
            "patchSha256": patch_sha,
            "artifactContentDigest": identity.digest_a,
            "contentDigestB": identity.digest_b,
            "changedFiles": layout.CHANGED_FILES,
            "diagnostics": layout.DIAGNOSTICS,
            "testResults": layout.TEST_RESULTS,
            "runtimeReferenceManifest": layout.REFERENCE_MANIFEST,
            "runtimeReplayReferenceIndex": layout.REPLAY_INDEX,
            **({"browser": browser} if browser else {}),
            **({"runtimeEpisodeTrace": episode_trace} if episode_trace else {}),
        },
        "tests": {"status": tests.status, "summary": tests.summary.model_dump()},
        "riskFlags": risk,
    }
    if runtime.previewUrl:
        review["preview"] = {
            "url": runtime.previewUrl,
            "status": "expired-on-completion",
            "lifecycle": "destroyed-on-completion",
        }
    return review
