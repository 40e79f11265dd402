"""Collect changes: what each read-write mount's files became, compared with its pre-boot baseline (redacted,
size- and count-limited), and what was left out and why."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from codebox_tui.bundle.baseline import Baseline
from codebox_tui.bundle.copies import prehash, read_source
from codebox_tui.bundle.diff import FileDiff, Listing, diff_file, list_tree, skipped_dir_changes
from codebox_tui.bundle.redact import Redactor
from codebox_tui.contracts.bundle import (
    SkippedEntry,
)


@dataclass(frozen=True)
class CaptureLimits:
    max_file_bytes: int = 5 * 1024 * 1024
    max_total_bytes: int = 64 * 1024 * 1024
    max_files: int = 5000


@dataclass
class Change:
    diff: FileDiff
    new: bytes | None  # redacted: what the bundle carries
    before_sha: str | None
    after_sha: str | None  # of the sandbox's bytes (what apply-back checks)
    before_size: int | None
    redacted: bool = False  # a secret form was found in the file's bytes and replaced


def mount_changes(
    baseline: Baseline, limits: CaptureLimits, budget: list[int], redact: Redactor
) -> tuple[list[Change], list[SkippedEntry]]:
    # what the sandbox left: a copy-on-write mount's private copy (read after the sandbox is gone), or
    # a live mount's folder
    new_listing = list_tree(baseline.result_dir, track_skipped=True, exclude=baseline.skipped_exclude)
    old_files = baseline.entries
    new_files = new_listing.files
    signatures = baseline.signatures
    source_dir = str(baseline.result_dir)
    reported = dict(new_listing.skipped)
    # symlinks and special files of the user's folder that the private copy left out
    reported.update(
        (rel, reason) for rel, reason in baseline.not_copied if rel not in new_files and rel not in reported
    )
    skipped = [
        SkippedEntry(mountIndex=baseline.mount_index, relativePath=rel, reason=reason)
        for rel, reason in sorted(reported.items())
    ]
    secret_paths = {rel for rel in old_files.keys() | new_files.keys() if redact.contains(rel)}
    changes: list[Change] = []
    # files that look the same but cannot be trusted by stat signature (written just before the
    # baseline, or no signature kept): hashed in bulk first, those equal to their baseline are skipped
    untrusted = []
    for rel, entry in new_files.items():
        recorded = signatures.get(rel)
        if recorded is not None and recorded == entry.sig:
            continue  # the usual case: trusted, never read
        base_entry = old_files.get(rel)
        if (
            base_entry is not None
            and base_entry.size == entry.size
            and base_entry.mode == entry.mode
            and rel in baseline.hashes
        ):
            untrusted.append(rel)
    prehashed = prehash(source_dir, untrusted)
    with baseline.reader() as read_old:
        for rel in sorted(old_files.keys() | new_files.keys()):
            if rel in secret_paths:  # the name itself holds a secret: reported by its redacted name only
                if old_files.get(rel) != new_files.get(rel) or (
                    new_files.get(rel) is not None and signatures.get(rel) != new_files[rel].sig
                ):
                    skipped.append(
                        SkippedEntry(mountIndex=baseline.mount_index, relativePath=redact(rel), reason="secret-in-path")
                    )
                continue
            if rel in baseline.unreadable:  # no baseline bytes: never guess "added"
                skipped.append(SkippedEntry(mountIndex=baseline.mount_index, relativePath=rel, reason="unreadable"))
                continue
            old_entry, new_entry = old_files.get(rel), new_files.get(rel)
            same_shape = (
                old_entry is not None
                and new_entry is not None
                and old_entry.size == new_entry.size
                and old_entry.mode == new_entry.mode
            )
            if same_shape and new_entry is not None:
                recorded = signatures.get(rel)
                if recorded is not None and recorded == new_entry.sig:
                    continue  # not written since the baseline was packed (see baseline._pack_tree)
            too_big = [e.size for e in (old_entry, new_entry) if e is not None and e.size > limits.max_file_bytes]
            if too_big and (old_entry is None or new_entry is None or old_entry.size != new_entry.size):
                skipped.append(
                    SkippedEntry(
                        mountIndex=baseline.mount_index,
                        relativePath=rel,
                        reason="max-file-bytes-exceeded",
                        size=max(too_big),
                    )
                )
                continue
            if same_shape and prehashed.get(rel, "-") == baseline.hashes.get(rel):
                continue  # same bytes as the baseline (hashed in bulk above)
            try:
                new = read_source(f"{source_dir}/{rel}") if new_entry else None
                new_sha = hashlib.sha256(new).hexdigest() if new is not None else None
                known = baseline.hashes.get(rel)
                if known is not None and same_shape and new_sha == known:
                    continue  # unchanged: the baseline bytes were hashed when the snapshot was taken
                old = read_old(rel) if old_entry else None
            except OSError:
                skipped.append(SkippedEntry(mountIndex=baseline.mount_index, relativePath=rel, reason="unreadable"))
                continue
            # every byte the bundle carries is redacted, text or binary, any encoding (bundle/redact.py)
            clean_new = redact.data(new) if new is not None else None
            clean_old = redact.data(old) if old is not None else None
            was_redacted = clean_new != new or clean_old != old
            old, new = clean_old, clean_new
            result = diff_file(
                rel, old, new, old_entry.mode if old_entry else None, new_entry.mode if new_entry else None
            )
            if result is None:
                continue
            cost = len(old or b"") + len(new or b"")
            if budget[0] + cost > limits.max_total_bytes or len(changes) >= limits.max_files:
                over_bytes = budget[0] + cost > limits.max_total_bytes
                reason = "max-total-bytes-exceeded" if over_bytes else "max-files-exceeded"
                skipped.append(
                    SkippedEntry(
                        mountIndex=baseline.mount_index,
                        relativePath=rel,
                        reason=reason,
                        size=cost,
                    )
                )
                continue
            budget[0] += cost
            before_sha = None
            if old is not None:
                before_sha = baseline.hashes.get(rel) or hashlib.sha256(old).hexdigest()
            changes.append(
                Change(result, new, before_sha, new_sha, len(old) if old is not None else None, was_redacted)
            )
    skipped += skipped_dir_report(baseline, new_listing)
    # a secret in a name (symlinks, changes inside uncaptured folders …) never reaches a document
    for index, item in enumerate(skipped):
        if item.reason != "secret-in-path" and redact.contains(item.relativePath):
            skipped[index] = item.model_copy(
                update={"relativePath": redact(item.relativePath), "reason": "secret-in-path"}
            )
    return changes, skipped


MAX_SKIPPED_DIR_REPORTS = 1000


def skipped_dir_report(baseline: Baseline, live: Listing) -> list[SkippedEntry]:
    """Changes inside folders whose contents are never captured (.git, node_modules): listed so the
    reviewer sees them (a planted node_modules/.bin script or a nested .git/config would run on the host)."""
    index = baseline.mount_index
    after = live.inside_skipped
    if baseline.skipped_dirs is None or after is None:
        return [SkippedEntry(mountIndex=index, relativePath=".", reason="skipped-directory-not-tracked")]
    changes = skipped_dir_changes(baseline.skipped_dirs, after)
    entries = [
        SkippedEntry(mountIndex=index, relativePath=rel, reason="changed-in-skipped-directory", change=change)
        for rel, change in changes[:MAX_SKIPPED_DIR_REPORTS]
    ]
    if len(changes) > MAX_SKIPPED_DIR_REPORTS:
        entries.append(
            SkippedEntry(
                mountIndex=index,
                relativePath=f"… {len(changes) - MAX_SKIPPED_DIR_REPORTS} more",
                reason="skipped-directory-reports-capped",
                size=len(changes) - MAX_SKIPPED_DIR_REPORTS,
            )
        )
    return entries
