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
import queue
import shutil
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebox_tui.bundle import layout
from codebox_tui.bundle.baseline import Baseline
from codebox_tui.bundle.diff import FileDiff, Listing, diff_file, list_tree, skipped_dir_changes
from codebox_tui.bundle.digests import MODE_A_INPUTS, MODE_B_INPUTS, content_digest
from codebox_tui.bundle.redact import Redactor
from codebox_tui.bundle.seal import BundleSummary, Evidence, bundle_id_for, seal
from codebox_tui.contracts.bundle import (
    CHANGED_FILES_SCHEMA,
    DIAGNOSTICS_SCHEMA,
    REVIEW_SCHEMA,
    WORKSPACE_PATCH_SCHEMA,
    ChangedFile,
    SkippedEntry,
    TestResults,
    TestSuite,
    TestSummary,
)
from codebox_tui.contracts.canonical import MAX_ARRAY_ITEMS, pretty_json
from codebox_tui.contracts.common import utc_now_iso
from codebox_tui.contracts.runtime import MountSpec, RuntimeInfo, RuntimePolicy
from codebox_tui.errors import SandboxError


@dataclass(frozen=True)
class CaptureLimits:
    max_file_bytes: int = 5 * 1024 * 1024
    max_total_bytes: int = 64 * 1024 * 1024
    max_files: int = 5000


ACTIONS = [
    {"kind": "approve", "label": "Approve all changes", "requiresApprovedFiles": True},
    {"kind": "approve-files", "label": "Approve selected files", "requiresApprovedFiles": True},
    {"kind": "discard", "label": "Discard changes"},
    {"kind": "iterate", "label": "Request changes"},
]


def _write(run_dir: Path, rel: str, text: str, known: dict[str, str] | None = None,
           redact: Redactor | None = None) -> None:
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


def _ustar_header(name: str, size: int, mode: int, mtime: int, typeflag: bytes) -> bytes | None:
    """A POSIX ustar header (what ``tarfile`` writes in USTAR_FORMAT, ~10x cheaper to build), or None
    when the name needs more than ustar's 100 plain-ASCII bytes (``tarfile``'s pax headers then)."""
    if typeflag == tarfile.DIRTYPE and not name.endswith("/"):
        name += "/"  # as tarfile names folders
    raw = name.encode("ascii", "strict") if name.isascii() else b""
    if not raw or len(raw) > 100 or size >= 8**11 or mtime >= 8**11:
        return None
    header = bytearray(512)
    header[0:len(raw)] = raw
    header[100:148] = b"%07o\x00%07o\x00%07o\x00%011o\x00%011o\x00" % (mode, 0, 0, size, mtime)
    header[148:156] = b"        "
    header[156:157] = typeflag
    header[257:265] = b"ustar\x0000"
    header[148:156] = b"%06o\x00 " % sum(header)
    return bytes(header)


class _CopyWriter:
    """Writes the captured copies (``files/mounts/<i>/<rel>``) through one ``tar -x`` child process.

    Creating hundreds of files and folders is the slow part of a capture (each creation is a kernel
    call that costs 20 µs to over 300 µs on a busy ext4). A child process does it on the other core,
    outside Python's GIL, while this process diffs and writes the JSON documents: worker threads were
    tried first and lose to GIL hand-offs once creations get slow (every syscall return waits for the
    GIL, and the main thread's own work stalls behind them). The stream is made here from names this
    capture chose (mount-relative paths of regular files) and fed by one thread in large chunks.
    Without ``tar`` (or with a name tar cannot carry) the copy is written in-process. ``wait`` raises if
    any copy could not be written (e.g. a full disk)."""

    CHUNK = 256 * 1024

    def __init__(self, run_dir: str, *, use_tar: bool) -> None:
        self._run_dir = run_dir
        self._tar = shutil.which("tar") if use_tar else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._feeder: threading.Thread | None = None
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._buffer = bytearray()
        self._error: BaseException | None = None
        self._mtime = int(time.time())
        self._folders: set[str] = set()  # folders already in the stream

    def add(self, rel: str, data: bytes) -> None:
        if self._tar is None or not rel.isascii() or "\n" in rel:
            _write_copy(os.path.join(self._run_dir, rel), data)
            return
        if self._proc is None:
            self._start()
        # each folder once, before its files: tar then makes it with one mkdir (without folder entries,
        # GNU tar first fails to open the file, then walks up with mkdir per missing parent)
        missing: list[str] = []
        folder = os.path.dirname(rel)
        while folder and folder not in self._folders:
            missing.append(folder)
            folder = os.path.dirname(folder)
        for folder in reversed(missing):
            self._buffer += self._header(folder, 0, 0o755, tarfile.DIRTYPE)
            self._folders.add(folder)
        self._buffer += self._header(rel, len(data), 0o644, tarfile.REGTYPE)
        self._buffer += data
        if len(data) % tarfile.BLOCKSIZE:
            self._buffer += bytes(tarfile.BLOCKSIZE - len(data) % tarfile.BLOCKSIZE)
        if len(self._buffer) >= self.CHUNK:
            self._queue.put(bytes(self._buffer))
            self._buffer.clear()

    def _header(self, name: str, size: int, mode: int, typeflag: bytes) -> bytes:
        fast = _ustar_header(name, size, mode, self._mtime, typeflag)
        if fast is not None:
            return fast
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime, info.type = size, mode, self._mtime, typeflag
        return info.tobuf(format=tarfile.PAX_FORMAT)

    def _start(self) -> None:
        assert self._tar is not None
        self._proc = subprocess.Popen(
            [self._tar, "-x", "-m", "--no-same-owner", "--no-overwrite-dir", "-f", "-", "-C", self._run_dir],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self._feeder = threading.Thread(target=self._feed, name="codebox-capture-copies", daemon=True)
        self._feeder.start()

    def _feed(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
        try:
            while (chunk := self._queue.get()) is not None:
                stdin.write(chunk)
        except BaseException as exc:
            self._error = exc
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def wait(self) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        self._buffer += bytes(2 * tarfile.BLOCKSIZE)  # end of archive
        self._queue.put(bytes(self._buffer))
        self._buffer.clear()
        self._queue.put(None)
        assert self._feeder is not None
        self._feeder.join()
        stderr = proc.stderr.read() if proc.stderr else b""
        code = proc.wait()
        if proc.stderr:
            proc.stderr.close()
        if code != 0 or self._error is not None:
            raise OSError(f"writing the captured copies under {self._run_dir}/{layout.MOUNT_COPIES_DIR} failed: "
                          f"{stderr.decode(errors='replace').strip() or self._error}")

    def close(self) -> None:
        if self._proc is not None:
            self._queue.put(None)
            if self._feeder is not None:
                self._feeder.join()
            self._proc.kill()
            self._proc.wait()
            if self._proc.stderr:
                self._proc.stderr.close()
            self._proc = None


def _write_copy(dest: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb", buffering=0) as handle:
        handle.write(data)


def _read(path: str) -> bytes:
    """A listed regular file's bytes; never through a link (a file swapped for a symlink since the
    listing fails with ELOOP and is reported unreadable)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb", buffering=0) as handle:
        return handle.readall()


# Below this many files the in-process loop is as fast as starting children.
PREHASH_MIN_FILES = 256
_PREHASH_ARGS_BYTES = 96 * 1024  # per child: far below ARG_MAX


def _prehash(root: str, rels: list[str]) -> dict[str, str]:
    """sha256 of many files at once by ``sha256sum`` children (C speed, one per core), for files capture
    cannot trust by stat signature and would otherwise read and hash one by one in Python. Only used to
    recognise files equal to their baseline (anything else is read here as usual); a file it cannot
    read is simply left out. Without ``sha256sum``: an empty result."""
    exe = shutil.which("sha256sum")
    if exe is None or len(rels) < PREHASH_MIN_FILES:
        return {}
    chunks: list[list[str]] = [[]]
    size = 0
    for rel in rels:
        if size > _PREHASH_ARGS_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(f"./{rel}")
        size += len(rel) + 3
    results: dict[str, str] = {}
    workers = max(1, min(len(chunks), os.cpu_count() or 1))
    running: list[subprocess.Popen[bytes]] = []
    try:
        for start in range(0, len(chunks), workers):
            running = [
                subprocess.Popen([exe, "-z", "--", *chunk], cwd=root, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
                for chunk in chunks[start:start + workers]
            ]
            for proc in running:
                out, _ = proc.communicate(timeout=600)
                for record in out.split(b"\0"):
                    # "<64 hex>  ./<path>" (or " *" in binary mode); -z: names are never escaped
                    if len(record) > 68 and record[64:68] in (b"  ./", b" *./"):
                        results[os.fsdecode(record[68:])] = record[:64].decode("ascii")
            running = []
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        for proc in running:
            proc.kill()
            proc.wait()
        return {}
    return results


@dataclass
class _Change:
    diff: FileDiff
    new: bytes | None  # redacted: what the bundle carries
    before_sha: str | None
    after_sha: str | None  # of the sandbox's bytes (what apply-back checks)
    before_size: int | None
    redacted: bool = False  # a secret form was found in the file's bytes and replaced


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


def _mount_changes(
    baseline: Baseline, limits: CaptureLimits, budget: list[int], redact: Redactor
) -> tuple[list[_Change], list[SkippedEntry]]:
    # what the sandbox left: a copy-on-write mount's private copy (read after the sandbox is gone), or
    # a live mount's folder
    new_listing = list_tree(baseline.result_dir, track_skipped=True, exclude=baseline.skipped_exclude)
    old_files = baseline.entries
    new_files = new_listing.files
    signatures = baseline.signatures
    source_dir = str(baseline.result_dir)
    reported = dict(new_listing.skipped)
    # symlinks and special files of the user's folder that the private copy left out
    reported.update((rel, reason) for rel, reason in baseline.not_copied
                    if rel not in new_files and rel not in reported)
    skipped = [
        SkippedEntry(mountIndex=baseline.mount_index, relativePath=rel, reason=reason)
        for rel, reason in sorted(reported.items())
    ]
    secret_paths = {rel for rel in old_files.keys() | new_files.keys() if redact.contains(rel)}
    changes: list[_Change] = []
    # files that look the same but cannot be trusted by stat signature (written just before the
    # baseline, or no signature kept): hashed in bulk first, those equal to their baseline are skipped
    untrusted = []
    for rel, entry in new_files.items():
        recorded = signatures.get(rel)
        if recorded is not None and recorded == entry.sig:
            continue  # the usual case: trusted, never read
        base_entry = old_files.get(rel)
        if (base_entry is not None and base_entry.size == entry.size and base_entry.mode == entry.mode
                and rel in baseline.hashes):
            untrusted.append(rel)
    prehashed = _prehash(source_dir, untrusted)
    with baseline.reader() as read_old:
        for rel in sorted(old_files.keys() | new_files.keys()):
            if rel in secret_paths:  # the name itself holds a secret: reported by its redacted name only
                if old_files.get(rel) != new_files.get(rel) or (
                        new_files.get(rel) is not None and signatures.get(rel) != new_files[rel].sig):
                    skipped.append(SkippedEntry(mountIndex=baseline.mount_index, relativePath=redact(rel),
                                                reason="secret-in-path"))
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
                new = _read(f"{source_dir}/{rel}") if new_entry else None
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
            changes.append(_Change(result, new, before_sha, new_sha, len(old) if old is not None else None,
                                   was_redacted))
    skipped += _skipped_dir_report(baseline, new_listing)
    # a secret in a name (symlinks, changes inside uncaptured folders …) never reaches a document
    for index, item in enumerate(skipped):
        if item.reason != "secret-in-path" and redact.contains(item.relativePath):
            skipped[index] = item.model_copy(update={"relativePath": redact(item.relativePath),
                                                     "reason": "secret-in-path"})
    return changes, skipped


MAX_SKIPPED_DIR_REPORTS = 1000


def _skipped_dir_report(baseline: Baseline, live: Listing) -> list[SkippedEntry]:
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


def _risk_flags(diffs: list[FileDiff]) -> list[str]:
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


def _test_results(suites: list[Any]) -> TestResults:
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
LIMIT_REASONS = ("max-file-bytes-exceeded", "max-total-bytes-exceeded", "max-files-exceeded",
                 "skipped-directory-not-tracked", "skipped-directory-reports-capped")


def _limit_flags(skipped: list[SkippedEntry], truncations: list[dict[str, Any]]) -> list[str]:
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
) -> BundleSummary:
    run_dir = Path(run_dir)
    limits = limits or CaptureLimits()
    redact = Redactor(secret_values)
    truncations = list(truncations or [])
    created_at = utc_now_iso()
    for stream in (layout.EVENTS, layout.COMMANDS, layout.RUNTIME_LOG, layout.COMMANDS_LOG):
        if not (run_dir / stream).exists():
            _write(run_dir, stream, "")
    if redact.active:
        _redact_run_dir(run_dir, redact)

    # 1. changes per read-write mount (copies of changed files are written by a small thread pool
    # while the rest of the capture runs: creating hundreds of folders and files is the slow part)
    # sha256 of every file this capture writes, taken from the bytes in memory: the manifest pass
    # does not re-read them (verify still reads everything from disk).
    known: dict[str, str] = {}
    # Anything under files/mounts/ is a copy made here, unless the run itself wrote there first.
    mounts_dir_preexisting = os.path.lexists(run_dir / layout.MOUNT_COPIES_DIR)
    run_root = str(run_dir)
    # a folder the run wrote itself may hold anything (links included): no tar over it
    files_is_link = os.path.islink(run_dir / layout.FILES_DIR)
    copier = _CopyWriter(run_root, use_tar=not mounts_dir_preexisting and not files_is_link)
    try:
        budget = [0]
        changed: list[ChangedFile] = []
        skipped: list[SkippedEntry] = []
        diffs_json: list[dict[str, Any]] = []
        mount_patches: list[tuple[int, str]] = []
        all_diffs: list[FileDiff] = []
        all_changes: list[_Change] = []
        captured: list[tuple[str, int, str, int]] = []  # (artifact path, mount index, rel, size)
        binary_copies: set[str] = set()
        # what else the manifest will list, so the copies never push it past MAX_MANIFEST_ENTRIES (a
        # change whose copy is left out is still in the patch and changed-files.json)
        others = {e["path"] for e in FIXED_ENTRIES} | {e.path for e in evidence}
        others |= {layout.mount_diff_path(b.mount_index) for b in baselines}
        others |= set(_run_dir_files(run_dir, skip_copies=not mounts_dir_preexisting))
        copies_left = MAX_MANIFEST_ENTRIES - len(others)
        copy_skipped: list[SkippedEntry] = []
        for baseline in baselines:
            if not baseline.result_dir.exists():
                # the private copy is gone (the sandbox failed to boot and took it along): no result to
                # compare, and never "everything was deleted"
                diffs_json.append({"mountIndex": baseline.mount_index, "source": str(baseline.source),
                                   "target": baseline.target, "writeMode": baseline.write_mode,
                                   "artifactPath": None, "changed": False, "status": "skipped",
                                   "reason": "private-copy-missing"})
                continue
            changes, mount_skipped = _mount_changes(baseline, limits, budget, redact)
            skipped += mount_skipped
            patch_rel = layout.mount_diff_path(baseline.mount_index)
            patch_text = "".join(c.diff.text for c in changes)
            mount_patches.append((baseline.mount_index, patch_text))
            diffs_json.append(
                {
                    "mountIndex": baseline.mount_index,
                    "source": str(baseline.source),
                    "target": baseline.target,
                    "baselineStrategy": baseline.strategy,
                    "writeMode": baseline.write_mode,
                    "artifactPath": patch_rel,
                    "changed": bool(patch_text.strip()),
                    "status": "changed" if patch_text.strip() else "unchanged",
                }
            )
            for change in changes:
                item, new_bytes = change.diff, change.new
                artifact_path = None
                if new_bytes is not None and copies_left <= 0:
                    copy_skipped.append(SkippedEntry(mountIndex=baseline.mount_index, relativePath=item.rel,
                                                     reason="max-files-exceeded", size=len(new_bytes)))
                elif new_bytes is not None:
                    copies_left -= 1
                    artifact_path = layout.mount_copy_path(baseline.mount_index, item.rel)
                    copier.add(artifact_path, new_bytes)  # already redacted (_mount_changes)
                    known[artifact_path] = (
                        change.after_sha if not change.redacted and change.after_sha
                        else hashlib.sha256(new_bytes).hexdigest()
                    )
                    if item.binary:
                        binary_copies.add(artifact_path)
                    captured.append((artifact_path, baseline.mount_index, item.rel, len(new_bytes)))
                changed.append(
                    ChangedFile(
                        path=f"{baseline.target.rstrip('/')}/{item.rel}",
                        relativePath=item.rel,
                        status=item.status,
                        beforeSha256=change.before_sha if item.status != "added" else None,
                        beforeMode=item.old_mode,
                        afterSha256=change.after_sha if new_bytes is not None else None,
                        afterMode=item.new_mode,
                        mountIndex=baseline.mount_index,
                        mountTarget=baseline.target,
                        patchPath=patch_rel,
                        binary=item.binary,
                        additions=item.additions,
                        deletions=item.deletions,
                        beforeSize=change.before_size if item.status != "added" else None,
                        afterSize=len(new_bytes) if new_bytes is not None else None,
                        artifactPath=artifact_path,
                    )
                )
                all_diffs.append(item)
                all_changes.append(change)
        for index, mount in enumerate(mounts):
            if not any(b.mount_index == index for b in baselines):
                diffs_json.append(
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
        diffs_json.sort(key=lambda d: d["mountIndex"])

        # 2. the change documents
        def put(root: Path, rel: str, text: str) -> None:
            _write(root, rel, text, known, redact if redact.active else None)

        patch = "".join(text for _, text in mount_patches)
        for mount_index, text in mount_patches:
            put(run_dir, layout.mount_diff_path(mount_index), text)
        put(run_dir, layout.PATCH, patch)
        changed_doc: dict[str, Any] = {
            "schema": CHANGED_FILES_SCHEMA,
            "files": [c.model_dump(mode="json", exclude_none=True) for c in changed],
            "skipped": [s.model_dump(mode="json", exclude_none=True) for s in skipped],
        }
        put(run_dir, layout.CHANGED_FILES, pretty_json(changed_doc))
        put(run_dir, layout.MOUNT_DIFFS, pretty_json(diffs_json))
        put(run_dir, layout.MOUNTS, pretty_json([m.model_dump(mode="json") for m in mounts]))
        put(
            run_dir,
            layout.MOUNTED_FILES,
            pretty_json(
                {
                    "files": [
                        {
                            "mountIndex": i,
                            "relativePath": rel,
                            "artifactPath": p,
                            "size": size,
                            "sha256": known[p],
                        }
                        for p, i, rel, size in captured
                    ],
                    "skipped": [s.model_dump(mode="json", exclude_none=True) for s in [*skipped, *copy_skipped]],
                    "limits": {
                        "maxFileBytes": limits.max_file_bytes,
                        "maxTotalBytes": limits.max_total_bytes,
                        "maxFiles": limits.max_files,
                        "skippedDirectories": [".git", "node_modules"],
                    },
                }
            ),
        )
        tests = _test_results(test_suites)
        put(
            run_dir,
            layout.TEST_RESULTS,
            pretty_json(tests.model_dump(mode="json", by_alias=True, exclude_none=True)),
        )
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
        put(
            run_dir,
            layout.DIAGNOSTICS,
            pretty_json(
                {
                    "schema": DIAGNOSTICS_SCHEMA,
                    "status": "reported" if diagnostics else "clean",
                    "summary": {
                        "total": len(diagnostics),
                        "error": 0,
                        "warning": len(diagnostics),
                        "notice": 0,
                        "info": 0,
                    },
                    "diagnostics": diagnostics,
                }
            ),
        )
        digest_b = content_digest(run_dir, MODE_B_INPUTS)
        stats = {
            "added": sum(c.status == "added" for c in changed),
            "modified": sum(c.status == "modified" for c in changed),
            "deleted": sum(c.status == "deleted" for c in changed),
            "total": len(changed),
        }
        put(
            run_dir,
            layout.WORKSPACE_PATCH,
            pretty_json(
                {
                    "schema": WORKSPACE_PATCH_SCHEMA,
                    "createdAt": created_at,
                    "contentDigest": {"algorithm": "sha256", "inputs": MODE_B_INPUTS, "value": digest_b},
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
            ),
        )

        # 3. the file list → bundle id (Mode A)
        entries: list[dict[str, Any]] = [dict(e) for e in FIXED_ENTRIES]
        listed = {e["path"] for e in entries}
        for extra in evidence:
            if extra.path not in listed and (run_dir / extra.path).is_file():
                entries.append({"path": extra.path, "kind": extra.kind, "contentType": extra.contentType})
                listed.add(extra.path)
        for mount_index, _ in mount_patches:
            entries.append(
                {"path": layout.mount_diff_path(mount_index), "kind": "diff", "contentType": "text/x-diff"}
            )
        listed |= {e["path"] for e in entries}
        for artifact_path, _, _, _ in captured:
            if artifact_path not in listed:
                entries.append(
                    {
                        "path": artifact_path,
                        "kind": "file",
                        "contentType": "application/octet-stream"
                        if artifact_path in binary_copies
                        else "text/plain; charset=utf-8",
                    }
                )
                listed.add(artifact_path)
        if mounts_dir_preexisting:
            copier.wait()  # the walk below lists files/mounts/ too: every copy must be on disk first
        for rel in _run_dir_files(run_dir, skip_copies=not mounts_dir_preexisting):
            if rel not in listed:  # anything else a command wrote is evidence too
                entries.append(
                    {
                        "path": rel,
                        "kind": "command-artifact",
                        "contentType": mimetypes.guess_type(rel)[0] or "application/octet-stream",
                    }
                )
                listed.add(rel)
        if len(entries) > MAX_MANIFEST_ENTRIES:
            raise SandboxError(
                f"{run_dir}: the run left {len(entries)} files to list, more than the {MAX_MANIFEST_ENTRIES} a "
                "bundle manifest can cover (its digests see only that many entries); the files stay in the run "
                "folder, unsealed",
                code="bundle-too-many-files", field=str(run_dir),
            )
        bundle_id, digest_a = bundle_id_for(entries)

        # 4. documents that embed the id
        provenance = {
            "runtime": {
                "backend": runtime.backend,
                "wordpressVersion": runtime.environment.get("wordpressVersion"),
                "phpVersion": runtime.environment.get("phpVersion"),
            },
            "packages": {"codebox": _codebox_version(), "playground": {"cli": "3.1.56", "wordpressBuilds": "0.9.19"}},
            "mounts": [m.model_dump(mode="json") for m in mounts],
        }
        artifacts_refs = {
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
        browser_refs = [e["path"] for e in entries if e["path"].startswith(layout.BROWSER_DIR + "/")]
        if browser_refs:
            artifacts_refs["browser"] = browser_refs  # type: ignore[assignment]
        put(
            run_dir,
            layout.METADATA,
            pretty_json(
                {
                    "id": bundle_id,
                    "contentDigest": {"algorithm": "sha256", "inputs": MODE_A_INPUTS, "value": digest_a},
                    "contentDigestB": digest_b,
                    "createdAt": created_at,
                    "runtime": runtime.model_dump(mode="json", exclude_none=True),
                    "provenance": provenance,
                    "mounts": [m.model_dump(mode="json") for m in mounts],
                    "policy": policy.model_dump(mode="json"),
                    "context": metadata,
                    "spec": {"includeLogs": True},
                    "baselines": [{"mountIndex": b.mount_index, "strategy": b.strategy, "writeMode": b.write_mode}
                                  for b in baselines],
                    # how each mount reached the host: "copy-on-write" (a private copy; the folder changes
                    # only through apply-back), "live" (written through) or "readonly"
                    "mountWriteModes": [m.write_mode for m in mounts],
                    "artifacts": artifacts_refs,
                    "redaction": {
                        "schema": "wp-codebox/artifact-redaction/v1",
                        "status": "redacted" if redact.active else "clean",
                    },
                }
            ),
        )
        patch_sha = known[layout.PATCH]
        total = len(changed)
        summary_text = (
            "Sandbox produced no file changes."
            if total == 0
            else "Sandbox produced changes in 1 file."
            if total == 1
            else f"Sandbox produced changes in {total} files."
        )
        progress = [
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
            {
                "type": "artifact",
                "label": "Saving the result for review...",
                "action": "capture",
                "timestamp": created_at,
            },
            {"type": "complete", "label": "Ready for your review.", "action": "complete", "timestamp": created_at},
        ]
        risk = _risk_flags(all_diffs) + (["secrets-redacted"] if redact.active else [])
        if any(m.live for m in mounts):
            risk.append("live-mount-written-through")  # the host folder already holds the sandbox's writes
        if any(s.reason == "changed-in-skipped-directory" for s in skipped):
            risk.append("changes-in-uncaptured-directories")
        risk += _limit_flags([*skipped, *copy_skipped], truncations)
        risk += [f"secret-value-in-changed-file:{c.relativePath}" for c, d in zip(changed, all_changes, strict=True)
                 if d.redacted]
        review: dict[str, Any] = {
            "schema": REVIEW_SCHEMA,
            "artifactId": bundle_id,
            "createdAt": created_at,
            "provenance": provenance,
            "summary": summary_text,
            "stats": stats,
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
            "progress": progress,
            "actions": ACTIONS,
            "evidence": {
                "workspacePatch": layout.WORKSPACE_PATCH,
                "patch": layout.PATCH,
                "patchSha256": patch_sha,
                "artifactContentDigest": digest_a,
                "contentDigestB": digest_b,
                "changedFiles": layout.CHANGED_FILES,
                "diagnostics": layout.DIAGNOSTICS,
                "testResults": layout.TEST_RESULTS,
                "runtimeReferenceManifest": layout.REFERENCE_MANIFEST,
                "runtimeReplayReferenceIndex": layout.REPLAY_INDEX,
                **({"browser": browser_refs} if browser_refs else {}),
            },
            "tests": {"status": tests.status, "summary": tests.summary.model_dump()},
            "riskFlags": sorted(set(risk)),
        }
        if runtime.previewUrl:
            review["preview"] = {
                "url": runtime.previewUrl,
                "status": "expired-on-completion",
                "lifecycle": "destroyed-on-completion",
            }
        put(run_dir, layout.REVIEW, pretty_json(review))

        # 5. hashes, the reference manifest, the manifest (last, once every copy is on disk)
        seal(run_dir, entries, known, bundle_id=bundle_id, digest_a=digest_a,
             runtime=runtime.model_dump(mode="json", exclude_none=True), created_at=created_at,
             before_manifest=copier.wait)
        return BundleSummary(
            id=bundle_id,
            content_digest=digest_a,
            content_digest_b=digest_b,
            path=run_dir,
            stats=stats,
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
    {"path": layout.REFERENCE_MANIFEST, "kind": "runtime-reference-manifest",
     "contentType": "application/json"},
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
    from codebox_tui import __version__

    return __version__
