"""Capture: turn a finished run directory into a content-addressed, hash-verified artifact bundle.

Write order matters because files embed each other's identity: the bundle id depends only on the
manifest's file list (Mode A), so it is known first; then metadata/review embed it; then every file
is hashed; the runtime reference manifest records those hashes; the manifest comes last with its
self-hash.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codebox_tui import __version__
from codebox_tui.bundle import layout
from codebox_tui.bundle.baseline import Baseline
from codebox_tui.bundle.capture_docs import (
    Identity,
    RiskInputs,
    browser_refs,
    build_test_results,
    change_stats,
    diagnostics_document,
    episode_artifacts,
    metadata_document,
    mounted_files_document,
    provenance,
    review_document,
    review_risk_flags,
    workspace_patch_document,
)
from codebox_tui.bundle.changes import CaptureLimits, Change, mount_changes
from codebox_tui.bundle.copies import CopyWriter
from codebox_tui.bundle.diff import FileDiff
from codebox_tui.bundle.digests import MODE_B_INPUTS, content_digest
from codebox_tui.bundle.redact import Redactor
from codebox_tui.bundle.seal import BundleSummary, Evidence, bundle_id_for, seal
from codebox_tui.contracts.bundle import (
    CHANGED_FILES_SCHEMA,
    ChangedFile,
    SkippedEntry,
    TestResults,
)
from codebox_tui.contracts.canonical import MAX_ARRAY_ITEMS, pretty_json
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
from codebox_tui.errors import SandboxError


def _write(
    run_dir: Path, rel: str, text: str, known: dict[str, str] | None = None, redact: Redactor | None = None
) -> None:
    """Write a UTF-8 document; with ``known``, record the sha256 of the bytes written (saves re-reading).
    With ``redact``, every secret form is replaced in the bytes written (the capture's one way to write
    a document)."""
    data = text.encode("utf-8")
    if redact is not None:
        data = redact.data(data)
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if known is not None:
        known[rel] = hashlib.sha256(data).hexdigest()


def _redact_run_dir(run_dir: Path, redact: Redactor) -> None:
    """Every file already in the run folder (event and command streams, logs, handler evidence: text or
    binary) passes through the redactor before it is hashed; a name holding a secret is renamed."""
    for root, dirs, names in os.walk(run_dir):
        for name in [*names, *dirs]:
            if redact.contains(name):
                clean = redact(name)
                os.replace(os.path.join(root, name), os.path.join(root, clean))
                if name in dirs:
                    dirs[dirs.index(name)] = clean
                else:
                    names[names.index(name)] = clean
        for name in names:
            full = Path(root) / name
            if full.is_file() and not full.is_symlink():
                redact.file(full)


@dataclass
class _Collected:
    """Phase 1's result: every read-write mount's changes, the after-state copies queued for writing, and what
    was left out."""

    copies_left: int  # how many more copies the manifest can list (MAX_MANIFEST_ENTRIES)
    changed: list[ChangedFile] = field(default_factory=list)
    skipped: list[SkippedEntry] = field(default_factory=list)
    copy_skipped: list[SkippedEntry] = field(default_factory=list)  # changes whose copy the manifest cap left out
    diffs_json: list[dict[str, Any]] = field(default_factory=list)  # files/diffs.json, one entry per mount
    mount_patches: list[tuple[int, str]] = field(default_factory=list)
    diffs: list[FileDiff] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    captured: list[tuple[str, int, str, int]] = field(default_factory=list)  # (artifact path, mount, rel, size)
    binary_copies: set[str] = field(default_factory=set)


@dataclass
class _Capture:
    """One capture's inputs and shared state; each phase below is a method."""

    run_dir: Path
    redact: Redactor
    limits: CaptureLimits
    created_at: str
    # sha256 of every file this capture writes, taken from the bytes in memory: the manifest pass does not
    # re-read them (verify still reads everything from disk)
    known: dict[str, str] = field(default_factory=dict)

    def put(self, rel: str, text: str) -> None:
        _write(self.run_dir, rel, text, self.known, self.redact if self.redact.active else None)

    def prepare_run_dir(self) -> None:
        """Every stream exists (empty if the run wrote none) and everything the run wrote is redacted."""
        for stream in (layout.EVENTS, layout.COMMANDS, layout.RUNTIME_LOG, layout.COMMANDS_LOG):
            if not (self.run_dir / stream).exists():
                _write(self.run_dir, stream, "")
        if self.redact.active:
            _redact_run_dir(self.run_dir, self.redact)

    # -- 1. collect the changes of every read-write mount ---------------------------------------------
    def collect(
        self,
        baselines: list[Baseline],
        mounts: list[MountSpec],
        evidence: list[Evidence],
        copier: CopyWriter,
        mounts_dir_preexisting: bool,
    ) -> _Collected:
        # what else the manifest will list, so the copies never push it past MAX_MANIFEST_ENTRIES (a change
        # whose copy is left out is still in the patch and changed-files.json)
        others = {e["path"] for e in FIXED_ENTRIES} | {e.path for e in evidence}
        others |= {layout.mount_diff_path(b.mount_index) for b in baselines}
        others |= set(_run_dir_files(self.run_dir, skip_copies=not mounts_dir_preexisting))
        out = _Collected(copies_left=MAX_MANIFEST_ENTRIES - len(others))
        budget = [0]
        for baseline in baselines:
            if not baseline.result_dir.exists():
                # the private copy is gone (the sandbox failed to boot and took it along): no result to
                # compare, and never "everything was deleted"
                out.diffs_json.append(
                    {
                        "mountIndex": baseline.mount_index,
                        "source": str(baseline.source),
                        "target": baseline.target,
                        "writeMode": baseline.write_mode,
                        "artifactPath": None,
                        "changed": False,
                        "status": "skipped",
                        "reason": "private-copy-missing",
                    }
                )
                continue
            changes, mount_skipped = mount_changes(baseline, self.limits, budget, self.redact)
            out.skipped += mount_skipped
            patch_text = "".join(c.diff.text for c in changes)
            out.mount_patches.append((baseline.mount_index, patch_text))
            out.diffs_json.append(
                {
                    "mountIndex": baseline.mount_index,
                    "source": str(baseline.source),
                    "target": baseline.target,
                    "baselineStrategy": baseline.strategy,
                    "writeMode": baseline.write_mode,
                    "artifactPath": layout.mount_diff_path(baseline.mount_index),
                    "changed": bool(patch_text.strip()),
                    "status": "changed" if patch_text.strip() else "unchanged",
                }
            )
            for change in changes:
                self._record_change(out, baseline, change, copier)
        for index, mount in enumerate(mounts):
            if not any(b.mount_index == index for b in baselines):
                out.diffs_json.append(
                    {
                        "mountIndex": index,
                        "source": mount.source,
                        "target": mount.target,
                        "writeMode": mount.write_mode,
                        "artifactPath": None,
                        "changed": False,
                        "status": "skipped",
                        "reason": "readonly-mount" if mount.mode == "readonly" else "missing-baseline-source",
                    }
                )
        out.diffs_json.sort(key=lambda d: d["mountIndex"])
        return out

    def _record_change(self, out: _Collected, baseline: Baseline, change: Change, copier: CopyWriter) -> None:
        """One changed file: its after-state copy queued (while the manifest has room) and its entry."""
        item, new_bytes = change.diff, change.new
        artifact_path = None
        if new_bytes is not None and out.copies_left <= 0:
            out.copy_skipped.append(
                SkippedEntry(
                    mountIndex=baseline.mount_index,
                    relativePath=item.rel,
                    reason="max-files-exceeded",
                    size=len(new_bytes),
                )
            )
        elif new_bytes is not None:
            out.copies_left -= 1
            artifact_path = layout.mount_copy_path(baseline.mount_index, item.rel)
            copier.add(artifact_path, new_bytes)  # already redacted (mount_changes)
            self.known[artifact_path] = (
                change.after_sha if not change.redacted and change.after_sha else hashlib.sha256(new_bytes).hexdigest()
            )
            if item.binary:
                out.binary_copies.add(artifact_path)
            out.captured.append((artifact_path, baseline.mount_index, item.rel, len(new_bytes)))
        added = item.status == "added"
        out.changed.append(
            ChangedFile(
                path=f"{baseline.target.rstrip('/')}/{item.rel}",
                relativePath=item.rel,
                status=item.status,
                beforeSha256=None if added else change.before_sha,
                beforeMode=item.old_mode,
                afterSha256=change.after_sha if new_bytes is not None else None,
                afterMode=item.new_mode,
                mountIndex=baseline.mount_index,
                mountTarget=baseline.target,
                patchPath=layout.mount_diff_path(baseline.mount_index),
                binary=item.binary,
                additions=item.additions,
                deletions=item.deletions,
                beforeSize=None if added else change.before_size,
                afterSize=len(new_bytes) if new_bytes is not None else None,
                artifactPath=artifact_path,
            )
        )
        out.diffs.append(item)
        out.changes.append(change)

    # -- 2. the change documents: patches, changed files, mounts ----------------------------------------
    def write_changes(self, got: _Collected, mounts: list[MountSpec]) -> dict[str, Any]:
        for mount_index, text in got.mount_patches:
            self.put(layout.mount_diff_path(mount_index), text)
        self.put(layout.PATCH, "".join(text for _, text in got.mount_patches))
        changed_doc: dict[str, Any] = {
            "schema": CHANGED_FILES_SCHEMA,
            "files": [c.model_dump(mode="json", exclude_none=True) for c in got.changed],
            "skipped": [s.model_dump(mode="json", exclude_none=True) for s in got.skipped],
        }
        self.put(layout.CHANGED_FILES, pretty_json(changed_doc))
        self.put(layout.MOUNT_DIFFS, pretty_json(got.diffs_json))
        self.put(layout.MOUNTS, pretty_json([m.model_dump(mode="json") for m in mounts]))
        self.put(
            layout.MOUNTED_FILES,
            pretty_json(
                mounted_files_document(got.captured, self.known, [*got.skipped, *got.copy_skipped], self.limits)
            ),
        )
        return changed_doc

    # -- 3. evidence: test results, diagnostics, the workspace patch (Mode B) ------------------------------
    def write_evidence(
        self, got: _Collected, test_suites: list[Any], truncations: list[dict[str, Any]]
    ) -> tuple[TestResults, str]:
        tests = build_test_results(test_suites)
        self.put(layout.TEST_RESULTS, pretty_json(tests.model_dump(mode="json", by_alias=True, exclude_none=True)))
        self.put(layout.DIAGNOSTICS, pretty_json(diagnostics_document(got.skipped, truncations)))
        digest_b = content_digest(self.run_dir, MODE_B_INPUTS)
        self.put(
            layout.WORKSPACE_PATCH,
            pretty_json(workspace_patch_document(self.created_at, digest_b, got.changed, got.diffs_json)),
        )
        return tests, digest_b

    # -- 4. the file list (its Mode A digest is the bundle id) --------------------------------------------
    def list_files(
        self, got: _Collected, evidence: list[Evidence], copier: CopyWriter, mounts_dir_preexisting: bool
    ) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = [dict(e) for e in FIXED_ENTRIES]
        listed = {e["path"] for e in entries}

        def add(path: str, kind: str, content_type: str) -> None:
            if path not in listed:
                entries.append({"path": path, "kind": kind, "contentType": content_type})
                listed.add(path)

        for extra in evidence:
            if (self.run_dir / extra.path).is_file():
                add(extra.path, extra.kind, extra.contentType)
        for mount_index, _ in got.mount_patches:
            # every mount's own patch, in mount order
            entries.append({"path": layout.mount_diff_path(mount_index), "kind": "diff", "contentType": "text/x-diff"})
            listed.add(layout.mount_diff_path(mount_index))
        for artifact_path, _, _, _ in got.captured:
            add(
                artifact_path,
                "file",
                "application/octet-stream" if artifact_path in got.binary_copies else "text/plain; charset=utf-8",
            )
        if mounts_dir_preexisting:
            copier.wait()  # the walk below lists files/mounts/ too: every copy must be on disk first
        for rel in _run_dir_files(self.run_dir, skip_copies=not mounts_dir_preexisting):
            # anything else a command wrote is evidence too
            add(rel, "command-artifact", mimetypes.guess_type(rel)[0] or "application/octet-stream")
        if len(entries) > MAX_MANIFEST_ENTRIES:
            raise SandboxError(
                f"{self.run_dir}: the run left {len(entries)} files to list, more than the {MAX_MANIFEST_ENTRIES} "
                "a bundle manifest can cover (its digests see only that many entries); the files stay in the run "
                "folder, unsealed",
                code="bundle-too-many-files",
                field=str(self.run_dir),
            )
        return entries


def capture_bundle(
    run_dir: Path,
    *,
    runtime: RuntimeInfo,
    mounts: list[MountSpec],
    baselines: list[Baseline],
    policy: RuntimePolicy,
    metadata: dict[str, Any],
    secret_values: list[str],
    evidence: list[Evidence],
    test_suites: list[Any],
    limits: CaptureLimits | None = None,
    truncations: list[dict[str, Any]] | None = None,
    extra_risk_flags: list[str] | None = None,
) -> BundleSummary:
    """Turn the finished run folder into a sealed bundle, phase by phase: collect changes → change documents →
    evidence (test results, diagnostics, Mode B) → file list and bundle id (Mode A) → metadata and review
    (they embed the id) → seal (hashes, reference manifest, replay index, manifest). ``extra_risk_flags`` are
    review risk flags raised before the capture (the site-state diff's: docs/site-state.md)."""
    cap = _Capture(Path(run_dir), Redactor(secret_values), limits or CaptureLimits(), utc_now_iso())
    truncations = list(truncations or [])
    cap.prepare_run_dir()
    # Anything under files/mounts/ is a copy made here, unless the run itself wrote there first.
    mounts_dir_preexisting = os.path.lexists(cap.run_dir / layout.MOUNT_COPIES_DIR)
    # a folder the run wrote itself may hold anything (links included): no tar over it
    files_is_link = os.path.islink(cap.run_dir / layout.FILES_DIR)
    # copies of changed files are written by a small thread pool while the rest of the capture runs:
    # creating hundreds of folders and files is the slow part
    copier = CopyWriter(str(cap.run_dir), use_tar=not mounts_dir_preexisting and not files_is_link)
    try:
        got = cap.collect(baselines, mounts, evidence, copier, mounts_dir_preexisting)
        changed_doc = cap.write_changes(got, mounts)
        tests, digest_b = cap.write_evidence(got, test_suites, truncations)
        entries = cap.list_files(got, evidence, copier, mounts_dir_preexisting)
        bundle_id, digest_a = bundle_id_for(entries)
        identity = Identity(bundle_id, digest_a, digest_b, cap.created_at)
        prov = provenance(runtime, mounts, _codebox_version(), baselines)
        browser = browser_refs(entries)
        episode = episode_artifacts(entries)
        cap.put(
            layout.METADATA,
            pretty_json(
                metadata_document(
                    identity,
                    runtime=runtime,
                    mounts=mounts,
                    baselines=baselines,
                    policy=policy,
                    context=metadata,
                    provenance=prov,
                    browser=browser,
                    redacted=cap.redact.active,
                    episode=episode,
                )
            ),
        )
        risk = review_risk_flags(
            RiskInputs(
                diffs=got.diffs,
                redacted_files=[c.relativePath for c, d in zip(got.changed, got.changes, strict=True) if d.redacted],
                skipped=got.skipped,
                copy_skipped=got.copy_skipped,
                truncations=truncations,
                secrets_redacted=cap.redact.active,
                live_mounts=any(m.live for m in mounts),
                extra=list(extra_risk_flags or []),
            )
        )
        cap.put(
            layout.REVIEW,
            pretty_json(
                review_document(
                    identity,
                    runtime=runtime,
                    mounts=mounts,
                    changed=got.changed,
                    provenance=prov,
                    patch_sha=cap.known[layout.PATCH],
                    browser=browser,
                    tests=tests,
                    risk=risk,
                    episode_trace=episode.get("runtimeEpisodeTrace"),
                )
            ),
        )
        # hashes, the reference manifest, the manifest (last, once every copy is on disk)
        seal(
            cap.run_dir,
            entries,
            cap.known,
            bundle_id=bundle_id,
            digest_a=digest_a,
            runtime=runtime.model_dump(mode="json", exclude_none=True),
            created_at=cap.created_at,
            before_manifest=copier.wait,
        )
        return BundleSummary(
            id=bundle_id,
            content_digest=digest_a,
            content_digest_b=digest_b,
            path=cap.run_dir,
            stats=change_stats(got.changed),
            changed_files=changed_doc["files"],
            skipped=changed_doc["skipped"],
        )
    finally:
        copier.close()


# Listed in every bundle, in this order.
FIXED_ENTRIES: tuple[dict[str, str], ...] = (
    {"path": layout.MANIFEST, "kind": "manifest", "contentType": "application/json"},
    {"path": layout.METADATA, "kind": "metadata", "contentType": "application/json"},
    {"path": layout.EVENTS, "kind": "events", "contentType": "application/x-ndjson"},
    {"path": layout.COMMANDS, "kind": "commands", "contentType": "application/x-ndjson"},
    {"path": layout.RUNTIME_LOG, "kind": "log", "contentType": "text/plain"},
    {"path": layout.COMMANDS_LOG, "kind": "log", "contentType": "text/plain"},
    {"path": layout.MOUNTS, "kind": "mounts", "contentType": "application/json"},
    {"path": layout.MOUNTED_FILES, "kind": "mounted-files", "contentType": "application/json"},
    {"path": layout.MOUNT_DIFFS, "kind": "mount-diffs", "contentType": "application/json"},
    {"path": layout.WORKSPACE_PATCH, "kind": "workspace-patch", "contentType": "application/json"},
    {"path": layout.CHANGED_FILES, "kind": "changed-files", "contentType": "application/json"},
    {"path": layout.PATCH, "kind": "patch", "contentType": "text/x-diff"},
    {"path": layout.DIAGNOSTICS, "kind": "diagnostics", "contentType": "application/json"},
    {"path": layout.TEST_RESULTS, "kind": "test-results", "contentType": "application/json"},
    {"path": layout.REVIEW, "kind": "review", "contentType": "application/json"},
    {"path": layout.REFERENCE_MANIFEST, "kind": "runtime-reference-manifest", "contentType": "application/json"},
    {"path": layout.REPLAY_INDEX, "kind": "runtime-replay-index", "contentType": "application/json"},
)

# The reference's canonical JSON (stableJson) keeps only the first 2,000 items of an array, so the
# manifest self-hash and the Mode A id cover at most this many manifest entries: a bundle never lists
# more (verification rejects one that does).
MAX_MANIFEST_ENTRIES = MAX_ARRAY_ITEMS


def _run_dir_files(run_dir: Path, skip_copies: bool) -> list[str]:
    """Regular files (never links) already in the run folder, sorted; ``files/mounts/`` is skipped when
    it holds only this capture's copies."""
    found: list[str] = []
    copies_root = os.path.join(str(run_dir), *layout.MOUNT_COPIES_DIR.split("/"))
    for root, dirs, names in os.walk(run_dir):
        if root == copies_root and skip_copies:
            dirs[:] = []
            continue
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                found.append(os.path.relpath(full, run_dir).replace(os.sep, "/"))
    return found


def _codebox_version() -> str:
    return __version__
